/* exchange_choco.c - compressed gossip (exchange.h): CHOCO-gossip's packed
 * bytes instead of floats, flat between the graph's neighbours or, on a
 * hierarchical topology, as the phase between hosts. The copies and their
 * arithmetic are libqgm's; the node's state is job/exchange_plan_choco.c's. */
#include "exchange_kind.h"
#include "exchange_plan_choco.h"
#include "log.h"

static qgm_choco_t *choco_of(const qgmd_exchange_t *x) {
  const qgmd_choco_state_t *s = x->state;
  return s->choco;
}

static int hierarchical(const qgmd_exchange_t *x) {
  return qgm_topology_hosts(x->topology) > 0;
}

/* CHOCO's packed bytes of v, which it encodes now. */
static qgmd_message_t message(qgmd_exchange_t *x, const float *v, size_t n) {
  (void)n; /* the copies' length */
  qgmd_choco_state_t *s = x->state;
  size_t bytes; /* s->wire has the room */
  qgm_choco_send(s->choco, x->round, v, s->wire, &bytes);
  return (qgmd_message_t){s->wire, (int)bytes,
                          (int)qgm_choco_message_bytes(s->choco), MPI_BYTE,
                          (double)bytes, NULL};
}

/* Every peer's message of the round updates its copy. */
static void receive_copies(qgmd_exchange_t *x) {
  for (int j = 0; j < x->degree; j++)
    if (qgm_choco_receive(choco_of(x), j, x->peers[j], x->round,
                          (const uint8_t *)x->recv[j]) != 0) {
      LOG(LOG_ERROR, "a compressed message from rank %d is malformed",
          x->peers[j]);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Between hosts: this node's slice of the host's mix, from the public
 * copies of the hosts' slices. */
static void mix_hosts(qgmd_exchange_t *x, float *out, const float *mean) {
  receive_copies(x);
  qgm_choco_mix(choco_of(x), out, mean, x->weights);
}

static const qgmd_hosts_codec_t compressed = {message, NULL, mix_hosts};

static int init(qgmd_exchange_t *x) {
  const size_t wire = qgm_choco_message_bytes(choco_of(x));
  return hierarchical(x) ? qgmd__hosts_init(x, wire)
                         : qgmd__exchange_alloc_recv(x, wire);
}

static int start(qgmd_exchange_t *x) {
  if (hierarchical(x))
    return qgmd__hosts_start(x);
  const qgmd_message_t m = message(x, x->send, x->len);
  return qgmd__exchange_post_peers(x, &m);
}

static int advance(qgmd_exchange_t *x) {
  return hierarchical(x) ? qgmd__hosts_advance(x, &compressed) : 0;
}

/* mix = (base or send) + gamma sum_j W_ij (xhat_j - xhat_i); on a
 * hierarchical topology, the mix of the hosts' means applied to base as
 * in the plain case. */
static void finish(qgmd_exchange_t *x, qgm_optim_t *o, float lr,
                   const float *base) {
  float *mix = qgm_optim_mix_buffer(o);
  if (hierarchical(x)) {
    qgmd__hosts_mix(x, mix, base);
  } else {
    receive_copies(x);
    qgm_choco_mix(choco_of(x), mix, base ? base : x->send, x->weights);
  }
  qgm_optim_after_gossip(o, lr);
}

const qgmd_exchange_ops_t qgmd_exchange_choco = {
    .init = init, .start = start, .advance = advance, .finish = finish,
    .free = qgmd__hosts_free};
