/* exchange_relay.c - RelaySum, RelaySGD's exchange (exchange.h): every
 * neighbour of the tree gets its own message, the sums relayed from the
 * others, built and mixed by libqgm's qgm_relay_* (the state is
 * job/exchange_plan_relay.c's). */
#include <stdlib.h>
#include <string.h>

#include "exchange_kind.h"

/* The kind's own buffers: one message per possible peer. */
static float **outboxes(const qgmd_exchange_t *x) { return x->kind_state; }

static int init(qgmd_exchange_t *x) {
  if (qgm_topology_hosts(x->topology) > 0)
    return QGM_EINVAL; /* a host's nodes share one message between hosts */
  x->len = qgm_relay_message_len(x->state);
  const size_t k = x->max_degree > 0 ? (size_t)x->max_degree : 1;
  float **outbox = calloc(k, sizeof *outbox);
  x->kind_state = outbox; /* freed by free_relay */
  if (!outbox)
    return QGM_ENOMEM;
  for (int j = 0; j < x->max_degree; j++)
    if (!(outbox[j] = malloc(x->len * sizeof(float))))
      return QGM_ENOMEM;
  return qgmd__exchange_alloc_recv(x, x->len * sizeof(float));
}

/* A static tree: the peers a node sends to are those it receives from, in
 * the same order, which is the order of the relay's peers. */
static int start(qgmd_exchange_t *x) {
  const int k = qgm_topology_send_peers(x->topology, x->rank, x->round,
                                        x->send_peers);
  float **outbox = outboxes(x);
  for (int j = 0; j < k; j++)
    qgm_relay_message(x->state, j, x->send, outbox[j]);
  qgmd_message_t m = qgmd__exchange_floats(NULL, x->len);
  m.each = outbox;
  return qgmd__exchange_post_peers(x, &m);
}

/* Overlap is refused at set-up: base is NULL. */
static void finish(qgmd_exchange_t *x, qgm_optim_t *o, float lr,
                   const float *base) {
  (void)base;
  for (int j = 0; j < x->degree; j++)
    memcpy(qgm_relay_inbox(x->state, j), x->recv[j], x->len * sizeof(float));
  qgm_relay_mix(x->state, x->send, qgm_optim_mix_buffer(o));
  qgm_optim_after_gossip(o, lr);
}

static void free_relay(qgmd_exchange_t *x) {
  float **outbox = outboxes(x);
  for (int j = 0; outbox && j < x->max_degree; j++)
    free(outbox[j]);
  free(outbox);
}

const qgmd_exchange_ops_t qgmd_exchange_relay = {
    .init = init, .start = start, .finish = finish, .free = free_relay};
