/* exchange_rounds.c - --gossip-rounds=R (job/gossip_rounds.c): the
 * neighbours' exchange of whole vectors, R phases a step, each sending
 * the mix of the phase before; the last one's mix ends the optimizer's
 * step as the neighbours' exchange ends it. The messages travel by MPI
 * between processes of one host too: the slots read in place hold one
 * message a round. */
#include "exchange_kind.h"

static int init(qgmd_exchange_t *x) {
  return qgmd__exchange_alloc_recv(x, x->len * sizeof(float));
}

static int start(qgmd_exchange_t *x) {
  x->phase = 0;
  const qgmd_message_t m = qgmd__exchange_floats(x->send, x->len);
  return qgmd__exchange_post_peers(x, &m);
}

/* The phase's mix, into the vector the phase did not send, becomes the
 * next phase's message. */
static int advance(qgmd_exchange_t *x) {
  if (x->phase + 1 >= x->plan.rounds)
    return 0;
  qgmd_rounds_state_t *s = x->state;
  float *mix = s->mix[x->phase & 1];
  qgmd__exchange_mix_peers(x, mix, NULL);
  x->phase++;
  x->send = mix;
  const qgmd_message_t m = qgmd__exchange_floats(mix, x->len);
  return qgmd__exchange_post_peers(x, &m);
}

/* The last phase's mix and the optimizer's update in one pass, as the
 * neighbours' exchange ends a round (base is NULL: --overlap is
 * refused). */
static void finish(qgmd_exchange_t *x, qgm_optim_t *o, float lr,
                   const float *base) {
  (void)base;
  const float *send = x->send;
  qgm_optim_gossip_step(o, lr, send, send, x->degree,
                        qgmd__exchange_messages(x), x->weights);
}

const qgmd_exchange_ops_t qgmd_exchange_rounds = {
    .init = init, .start = start, .advance = advance, .finish = finish};
