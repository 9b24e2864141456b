/* exchange_powergossip.c - PowerGossip (gossip with --compress=powersgd:R;
 * libqgm's qgm_powergossip_* has the rule, job/exchange_plan_powergossip.c
 * the state): every neighbour gets its own message, this round's power
 * iteration step on the edge's difference (X V or X^T U per weight
 * matrix, and the other coordinates), in one phase, as RelaySum's
 * messages go (exchange_neighbours.c's phase). Static symmetric graphs
 * only: an edge's warm start must see every round. */
#include <stdlib.h>
#include <string.h>

#include "exchange_kind.h"

typedef struct powergossip_boxes {
  float **outbox; /* by neighbour: this node's message to it */
  float **each;   /* by send peer: the same messages, as post_peers sends */
  int *lower;     /* by neighbour: whether this node's rank is the lower */
} powergossip_boxes_t;

static powergossip_boxes_t *boxes_of(const qgmd_exchange_t *x) {
  return x->kind_state;
}

static int init(qgmd_exchange_t *x) {
  if (qgm_topology_hosts(x->topology) > 0 ||
      qgm_topology_period(x->topology) != 1 ||
      !qgmd__exchange_symmetric(x->topology))
    return QGM_EINVAL; /* refused with a reason at the flags' check */
  const size_t k = x->max_degree > 0 ? (size_t)x->max_degree : 1;
  const size_t len = qgm_powergossip_max_len(x->state);
  powergossip_boxes_t *b = calloc(1, sizeof *b);
  x->kind_state = b; /* freed by free_boxes */
  if (!b || !(b->outbox = calloc(k, sizeof *b->outbox)) ||
      !(b->each = calloc(k, sizeof *b->each)) ||
      !(b->lower = calloc(k, sizeof *b->lower)))
    return QGM_ENOMEM;
  for (size_t j = 0; j < k; j++)
    if (!(b->outbox[j] = malloc(len * sizeof(float))))
      return QGM_ENOMEM;
  return qgmd__exchange_alloc_recv(x, len * sizeof(float));
}

static int start(qgmd_exchange_t *x) {
  powergossip_boxes_t *b = boxes_of(x);
  double self;
  const int k = qgm_topology_neighbors(x->topology, x->rank, x->round,
                                       x->peers, x->weights, &self);
  const int sends = qgm_topology_send_peers(x->topology, x->rank, x->round,
                                            x->send_peers);
  for (int j = 0; j < k; j++) {
    qgm_powergossip_message(x->state, x->round, j, x->send, b->outbox[j]);
    b->lower[j] = x->rank < x->peers[j];
  }
  /* Each send peer is a neighbour (the graph is symmetric): its message. */
  for (int s = 0; s < sends; s++)
    for (int j = 0; j < k; j++)
      if (x->peers[j] == x->send_peers[s])
        b->each[s] = b->outbox[j];
  const size_t len = qgm_powergossip_len(x->state, x->round);
  qgmd_message_t m = qgmd__exchange_floats(NULL, len);
  m.room = (int)qgm_powergossip_max_len(x->state);
  m.each = b->each;
  return qgmd__exchange_post_peers(x, &m);
}

/* With base (overlap): base + (mix - send), the round's move applied to
 * the model that went on meanwhile, as the other gossip kinds do. */
static void finish(qgmd_exchange_t *x, qgm_optim_t *o, float lr,
                   const float *base) {
  powergossip_boxes_t *b = boxes_of(x);
  float *mix = qgm_optim_mix_buffer(o);
  qgm_powergossip_mix(x->state, x->round, x->send,
                      (const float *const *)b->outbox,
                      (const float *const *)x->recv, x->weights, b->lower,
                      mix);
  if (base) {
    const float *send = x->send;
    for (size_t i = 0; i < x->len; i++)
      mix[i] = base[i] + (mix[i] - send[i]);
  }
  qgm_optim_after_gossip(o, lr);
}

static void free_boxes(qgmd_exchange_t *x) {
  powergossip_boxes_t *b = boxes_of(x);
  if (!b)
    return;
  for (int j = 0; b->outbox && j < (x->max_degree > 0 ? x->max_degree : 1);
       j++)
    free(b->outbox[j]);
  free(b->outbox);
  free(b->each);
  free(b->lower);
  free(b);
}

const qgmd_exchange_ops_t qgmd_exchange_powergossip = {
    .init = init, .start = start, .finish = finish, .free = free_boxes};
