/* exchange_rounds.c - --gossip-rounds=R (job/gossip_rounds.c): the
 * neighbours' exchange of whole vectors, R phases a step, each sending
 * the mix of the phase before (with --gossip-acceleration=chebyshev, that
 * mix combined with the phase's message and the one before); the last
 * one's mix ends the optimizer's step as the neighbours' exchange ends
 * it. The messages travel by MPI between processes of one host too: the
 * slots read in place hold one message a round. The arithmetic is
 * job/exchange_plan_rounds.c's, which qgm-sim runs. */
#include "exchange_kind.h"

static int init(qgmd_exchange_t *x) {
  return qgmd__exchange_alloc_recv(x, x->len * sizeof(float));
}

static int start(qgmd_exchange_t *x) {
  x->phase = 0;
  ((qgmd_rounds_state_t *)x->state)->first = x->send;
  const qgmd_message_t m = qgmd__exchange_floats(x->send, x->len);
  return qgmd__exchange_post_peers(x, &m);
}

/* The message before phase k's, y_{k-1} (phase 0 has none: its weight
 * is 0, and the phase's own message stands in). */
static const float *message_before(const qgmd_exchange_t *x) {
  const qgmd_rounds_state_t *s = x->state;
  if (x->phase == 0)
    return x->send;
  return x->phase == 1 ? s->first : s->mix[x->phase % 2];
}

/* Phase k's mix of y_k into out, and with Chebyshev rounds y_{k+1}, the
 * mix combined in the same pass (out may be the message before). */
static void mix_phase(qgmd_exchange_t *x, float *out) {
  if (!x->plan.chebyshev) {
    qgmd__exchange_mix_peers(x, out, NULL);
    return;
  }
  const int k = x->phase;
  qgm_vec_gossip_mix_chebyshev(out, x->send, x->degree,
                               qgmd__exchange_messages(x), x->weights,
                               x->plan.chebyshev_b[k], x->plan.chebyshev_e[k],
                               message_before(x), x->len);
}

/* The phase's mix, into the vector the phase did not send, becomes the
 * next phase's message. */
static int advance(qgmd_exchange_t *x) {
  if (x->phase + 1 >= x->plan.rounds)
    return 0;
  qgmd_rounds_state_t *s = x->state;
  float *next = s->mix[x->phase & 1];
  mix_phase(x, next);
  x->phase++;
  x->send = next;
  const qgmd_message_t m = qgmd__exchange_floats(next, x->len);
  return qgmd__exchange_post_peers(x, &m);
}

/* The last phase's mix and the optimizer's update in one pass, as the
 * neighbours' exchange ends a round (base is NULL: --overlap is
 * refused); Chebyshev rounds combine the mix in the optimizer's mix
 * buffer first. */
static void finish(qgmd_exchange_t *x, qgm_optim_t *o, float lr,
                   const float *base) {
  (void)base;
  if (x->plan.chebyshev) {
    float *mix = qgm_optim_mix_buffer(o);
    mix_phase(x, mix);
    qgmd_chebyshev_share(&x->plan, mix,
                         ((qgmd_rounds_state_t *)x->state)->first);
    qgm_optim_after_gossip(o, lr);
    return;
  }
  const float *send = x->send;
  qgm_optim_gossip_step(o, lr, send, send, x->degree,
                        qgmd__exchange_messages(x), x->weights);
}

const qgmd_exchange_ops_t qgmd_exchange_rounds = {
    .init = init, .start = start, .advance = advance, .finish = finish};
