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
#include "optim/optim.h"

enum { M = 0 }; /* buf[M]: the momentum */

static void dsgd_local(qgm_optim_t *o, float lr) {
  const size_t n = o->dim;
  const float wd = o->cfg.weight_decay;
  const float *restrict x = o->x, *restrict g = o->g;
  float *restrict msg = o->msg;
  for (size_t i = 0; i < n; i++)
    msg[i] = x[i] - lr * (g[i] + wd * x[i]);
}

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
static void qg_dsgdm_local(qgm_optim_t *o, float lr) {
  const size_t n = o->dim;
  const float beta = o->cfg.momentum, wd = o->cfg.weight_decay;
  const float *restrict x = o->x, *restrict g = o->g, *restrict m = o->buf[M];
  float *restrict msg = o->msg;
  for (size_t i = 0; i < n; i++)
    msg[i] = x[i] - lr * (beta * m[i] + (g[i] + wd * x[i]));
}

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

/* The centralized baseline: the message is the gradient with L2, the
 * transport averages it over all nodes, and every node applies the same
 * Nesterov step to its (identical) model. */
static void allreduce_local(qgm_optim_t *o, float lr) {
  (void)lr;
  const size_t n = o->dim;
  const float wd = o->cfg.weight_decay;
  const float *restrict x = o->x, *restrict g = o->g;
  float *restrict msg = o->msg;
  for (size_t i = 0; i < n; i++)
    msg[i] = g[i] + wd * x[i];
}

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
    "dsgd", QGM_COMBINE_NEIGHBOURS, 1, {NULL}, dsgd_local, take_mix};
const optim_kind_t qgm_optim_dsgdm = {
    "dsgdm", QGM_COMBINE_NEIGHBOURS, 1, {"m"}, dsgdm_local, take_mix};
const optim_kind_t qgm_optim_dsgdm_n = {
    "dsgdm-n", QGM_COMBINE_NEIGHBOURS, 1, {"m"}, dsgdm_n_local, take_mix};
const optim_kind_t qgm_optim_qg_dsgdm = {
    "qg-dsgdm", QGM_COMBINE_NEIGHBOURS, 1, {"m"}, qg_dsgdm_local,
    qg_after_gossip};
const optim_kind_t qgm_optim_qg_dsgdm_n = {
    "qg-dsgdm-n", QGM_COMBINE_NEIGHBOURS, 1, {"m"}, qg_dsgdm_n_local,
    qg_after_gossip};
const optim_kind_t qgm_optim_allreduce = {
    "allreduce", QGM_COMBINE_GLOBAL_MEAN, 1, {"m"}, allreduce_local,
    allreduce_after_gossip};
/* RelaySGD with local Nesterov momentum (the "+momentum" rows of Vogels et
 * al. 2021): DSGDm-N's local step, mixed by RelaySum (optim_relay.c)
 * instead of W. */
const optim_kind_t qgm_optim_relaysgd = {
    "relaysgd", QGM_COMBINE_RELAY, 1, {"m"}, dsgdm_n_local, take_mix};
