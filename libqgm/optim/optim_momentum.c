/* optim_momentum.c - the SGD family: plain, heavy-ball and Nesterov
 * momentum, their quasi-global variants, and the all-reduce baseline.
 *
 * Notation (docs/ALGORITHMS.md): g' = g + lambda x is the gradient with
 * L2; the quasi-global variants build the half-step from a temporary
 * mhat = beta m + g' and feed m, after the gossip, with the model's whole
 * change d = (x_t - x_{t+1}) / lr, consensus correction included.
 *
 * Each rule is one fused loop: the step is memory-bound, and one pass over
 * x, g and m beats a chain of level-1 calls that would stream the same
 * vectors several times. */
#include "core/internal.h"
#include "optim/optim.h"

enum { M = 0 }; /* buf[M]: the momentum */

QGM__AVX2_CLONES
static void dsgd_local(qgm_optim_t *o, float lr) {
  const size_t n = o->dim;
  const float wd = o->cfg.weight_decay;
  const float *restrict x = o->x, *restrict g = o->g;
  float *restrict msg = o->msg;
  for (size_t i = 0; i < n; i++)
    msg[i] = x[i] - lr * (g[i] + wd * x[i]);
}

QGM__AVX2_CLONES
static void dsgdm_local(qgm_optim_t *o, float lr) {
  const size_t n = o->dim;
  const float beta = o->cfg.momentum, wd = o->cfg.weight_decay;
  const float *restrict x = o->x, *restrict g = o->g;
  float *restrict m = o->buf[M], *restrict msg = o->msg;
  for (size_t i = 0; i < n; i++) {
    float mi = beta * m[i] + (g[i] + wd * x[i]);
    m[i] = mi;
    msg[i] = x[i] - lr * mi;
  }
}

QGM__AVX2_CLONES
static void dsgdm_n_local(qgm_optim_t *o, float lr) {
  const size_t n = o->dim;
  const float beta = o->cfg.momentum, wd = o->cfg.weight_decay;
  const float *restrict x = o->x, *restrict g = o->g;
  float *restrict m = o->buf[M], *restrict msg = o->msg;
  for (size_t i = 0; i < n; i++) {
    float gi = g[i] + wd * x[i];
    float mi = beta * m[i] + gi;
    m[i] = mi;
    msg[i] = x[i] - lr * (gi + beta * mi);
  }
}

/* m is only read here: the quasi-global momentum is updated after the
 * gossip, from the model change that includes the neighbours. */
QGM__AVX2_CLONES
static void qg_dsgdm_local(qgm_optim_t *o, float lr) {
  const size_t n = o->dim;
  const float beta = o->cfg.momentum, wd = o->cfg.weight_decay;
  const float *restrict x = o->x, *restrict g = o->g, *restrict m = o->buf[M];
  float *restrict msg = o->msg;
  for (size_t i = 0; i < n; i++)
    msg[i] = x[i] - lr * (beta * m[i] + (g[i] + wd * x[i]));
}

QGM__AVX2_CLONES
static void qg_dsgdm_n_local(qgm_optim_t *o, float lr) {
  const size_t n = o->dim;
  const float beta = o->cfg.momentum, wd = o->cfg.weight_decay;
  const float *restrict x = o->x, *restrict g = o->g, *restrict m = o->buf[M];
  float *restrict msg = o->msg;
  for (size_t i = 0; i < n; i++) {
    float gi = g[i] + wd * x[i];
    float mhat = beta * m[i] + gi;
    msg[i] = x[i] - lr * (gi + beta * mhat);
  }
}

static void take_mix(qgm_optim_t *o, float lr) {
  (void)lr;
  qgm__optim_take_mix(o);
}

/* d = (x_t - x_{t+1}) / lr; m = beta m + (1 - beta) d. With lr == 0 the
 * model does not move and d is undefined; m is then left as it was. */
QGM__AVX2_CLONES
static void qg_after_gossip(qgm_optim_t *o, float lr) {
  if (lr > 0.0f) {
    const size_t n = o->dim;
    const float beta = o->cfg.momentum, c = (1.0f - beta) / lr;
    const float *restrict x = o->x, *restrict mix = o->mix;
    float *restrict m = o->buf[M];
    for (size_t i = 0; i < n; i++)
      m[i] = beta * m[i] + c * (x[i] - mix[i]);
  }
  qgm__optim_take_mix(o);
}

/* The same after the mix of k peers, in one pass: mix_i as
 * qgm_vec_gossip_mix forms it (base_i, then w_j (peer_j,i - own_i) added
 * in order j), m from it, and x_{t+1} = mix_i written over x_t. k is a
 * constant where this is inlined, so that the loop vectorises. */
static inline __attribute__((always_inline)) void
qg_mix_and_update_k(qgm_optim_t *o, float lr, const float *restrict base,
                    const float *restrict own, int k,
                    const float *const *peers, const double *weights) {
  const size_t n = o->dim;
  const float beta = o->cfg.momentum, c = (1.0f - beta) / lr;
  float *restrict x = o->x, *restrict m = o->buf[M];
  const float *restrict p0 = peers[0], *restrict p1 = peers[k - 1];
  const float w0 = (float)weights[0], w1 = (float)weights[k - 1];
  for (size_t i = 0; i < n; i++) {
    float mix = base[i];
    mix += w0 * (p0[i] - own[i]);
    if (k == 2)
      mix += w1 * (p1[i] - own[i]);
    m[i] = beta * m[i] + c * (x[i] - mix);
    x[i] = mix;
  }
}

/* Where the one pass applies: one or two peers, a step that moves (lr >
 * 0), and inputs apart from x (with --overlap=on own is x_t itself). */
QGM__AVX2_CLONES
static int qg_mix_and_update(qgm_optim_t *o, float lr, const float *base,
                             const float *own, int k,
                             const float *const *peers,
                             const double *weights) {
  if (!(lr > 0.0f) || base == o->x || own == o->x)
    return 1;
  if (k == 1)
    qg_mix_and_update_k(o, lr, base, own, 1, peers, weights);
  else if (k == 2)
    qg_mix_and_update_k(o, lr, base, own, 2, peers, weights);
  else
    return 1;
  return 0;
}

/* The centralized baseline: the message is the gradient with L2, the
 * transport averages it over all nodes, and every node applies the same
 * Nesterov step to its (identical) model. */
QGM__AVX2_CLONES
static void allreduce_local(qgm_optim_t *o, float lr) {
  (void)lr;
  const size_t n = o->dim;
  const float wd = o->cfg.weight_decay;
  const float *restrict x = o->x, *restrict g = o->g;
  float *restrict msg = o->msg;
  for (size_t i = 0; i < n; i++)
    msg[i] = g[i] + wd * x[i];
}

QGM__AVX2_CLONES
static void allreduce_after_gossip(qgm_optim_t *o, float lr) {
  const size_t n = o->dim;
  const float beta = o->cfg.momentum;
  const float *restrict gbar = o->mix;
  float *restrict x = o->x, *restrict m = o->buf[M];
  for (size_t i = 0; i < n; i++) {
    float mi = beta * m[i] + gbar[i];
    m[i] = mi;
    x[i] -= lr * (gbar[i] + beta * mi);
  }
}

const optim_kind_t qgm_optim_dsgd = {
    "dsgd", QGM_COMBINE_NEIGHBOURS, 1, {NULL}, dsgd_local, take_mix,
    NULL, 0};
const optim_kind_t qgm_optim_dsgdm = {
    "dsgdm", QGM_COMBINE_NEIGHBOURS, 1, {"m"}, dsgdm_local, take_mix,
    NULL, 0};
const optim_kind_t qgm_optim_dsgdm_n = {
    "dsgdm-n", QGM_COMBINE_NEIGHBOURS, 1, {"m"}, dsgdm_n_local, take_mix,
    NULL, 0};
const optim_kind_t qgm_optim_qg_dsgdm = {
    "qg-dsgdm", QGM_COMBINE_NEIGHBOURS, 1, {"m"}, qg_dsgdm_local,
    qg_after_gossip, qg_mix_and_update, 0};
const optim_kind_t qgm_optim_qg_dsgdm_n = {
    "qg-dsgdm-n", QGM_COMBINE_NEIGHBOURS, 1, {"m"}, qg_dsgdm_n_local,
    qg_after_gossip, qg_mix_and_update, 0};
const optim_kind_t qgm_optim_allreduce = {
    "allreduce", QGM_COMBINE_GLOBAL_MEAN, 1, {"m"}, allreduce_local,
    allreduce_after_gossip, NULL, 0};
/* RelaySGD with local Nesterov momentum (the "+momentum" rows of Vogels et
 * al. 2021): DSGDm-N's local step, mixed by RelaySum (optim_relay.c)
 * instead of W. */
const optim_kind_t qgm_optim_relaysgd = {
    "relaysgd", QGM_COMBINE_RELAY, 1, {"m"}, dsgdm_n_local, take_mix,
    NULL, 0};

/* SGP (Assran et al., ICML 2019, with Nesterov momentum as in their
 * experiments): push-sum over [x, w] with x = w z, the gradient at the
 * de-biased model z. The buffer keeps z and w rather than x, so that the
 * model every reader sees (evaluation, averaging, checkpoint "x") is z.
 * The message is the half-step of the de-biased model, w (z - lr (g' +
 * beta m)), not the paper's w z - lr (...): that one moves z by lr u / w,
 * and a node whose weight has fallen (asynchrony, lost messages) takes
 * long steps (docs/ALGORITHMS.md, "Push-sum under asynchrony"). With
 * w = 1, as on a doubly stochastic graph without lost messages, both are
 * DSGDm-N's message bit for bit, and so is the division after the mix. */
QGM__AVX2_CLONES
static void sgp_local(qgm_optim_t *o, float lr) {
  const size_t n = o->dim;
  const float beta = o->cfg.momentum, wd = o->cfg.weight_decay;
  const float *restrict z = o->x, *restrict g = o->g;
  const float w = o->x[n];
  float *restrict m = o->buf[M], *restrict msg = o->msg;
  for (size_t i = 0; i < n; i++) {
    float gi = g[i] + wd * z[i];
    float mi = beta * m[i] + gi;
    m[i] = mi;
    msg[i] = w * (z[i] - lr * (gi + beta * mi));
  }
  msg[n] = w;
}

/* The mix holds [x', w']: z = x' / w'. */
QGM__AVX2_CLONES
static void sgp_after_gossip(qgm_optim_t *o, float lr) {
  (void)lr;
  const size_t n = o->dim;
  const float w = o->mix[n];
  const float *restrict x = o->mix;
  float *restrict z = o->x;
  for (size_t i = 0; i < n; i++)
    z[i] = x[i] / w;
  z[n] = w;
}

const optim_kind_t qgm_optim_sgp = {
    "sgp", QGM_COMBINE_PUSH_SUM, 1, {"m"}, sgp_local, sgp_after_gossip,
    NULL, 1};

/* QG-SGP: SGP's push-sum with QG-DSGDm-N's quasi-global momentum, fed by
 * the de-biased model's whole change d = (z_t - z_{t+1}) / lr, push-sum's
 * re-weighting included. Under the de-biased step the combination that
 * d makes of the neighbours' directions has weights summing to 1 at any
 * push-sum weights (docs/ALGORITHMS.md, "Quasi-global momentum with
 * push-sum"). With w = 1 it is QG-DSGDm-N bit for bit. */
QGM__AVX2_CLONES
static void qg_sgp_local(qgm_optim_t *o, float lr) {
  const size_t n = o->dim;
  const float beta = o->cfg.momentum, wd = o->cfg.weight_decay;
  const float *restrict z = o->x, *restrict g = o->g, *restrict m = o->buf[M];
  const float w = o->x[n];
  float *restrict msg = o->msg;
  for (size_t i = 0; i < n; i++) {
    float gi = g[i] + wd * z[i];
    float mhat = beta * m[i] + gi;
    msg[i] = w * (z[i] - lr * (gi + beta * mhat));
  }
  msg[n] = w;
}

/* z' = x' / w', and m = beta m + (1 - beta) (z - z') / lr (m is left as it
 * was where lr == 0, as QG-DSGDm-N's). */
QGM__AVX2_CLONES
static void qg_sgp_after_gossip(qgm_optim_t *o, float lr) {
  const size_t n = o->dim;
  const float w = o->mix[n];
  const float *restrict x = o->mix;
  float *restrict z = o->x, *restrict m = o->buf[M];
  if (lr > 0.0f) {
    const float beta = o->cfg.momentum, c = (1.0f - beta) / lr;
    for (size_t i = 0; i < n; i++) {
      float zi = x[i] / w;
      m[i] = beta * m[i] + c * (z[i] - zi);
      z[i] = zi;
    }
  } else {
    for (size_t i = 0; i < n; i++)
      z[i] = x[i] / w;
  }
  z[n] = w;
}

const optim_kind_t qgm_optim_qg_sgp = {
    "qg-sgp", QGM_COMBINE_PUSH_SUM, 1, {"m"}, qg_sgp_local,
    qg_sgp_after_gossip, NULL, 1};
