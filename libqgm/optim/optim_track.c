/* optim_track.c - the bias-correcting algorithms: D^2 and gradient
 * tracking. Both remove DSGD's fixed-step bias on heterogeneous data, so
 * with a constant step size they converge to the exact optimum.
 *
 * D^2 (Tang et al., ICML 2018):
 *   x_half = x_t - lr (d_prev + g'_t - g'_prev),  d_prev = (x_{t-1} - x_t)/lr
 * with plain SGD as the first step. It keeps one vector,
 * e = d_prev - g'_prev, updated after the gossip from the step just taken
 * (e = (x_t - x_{t+1}) / lr - g'_t), so the local step reads x, g and e
 * only and the update after it msg, mix and e. d_prev is divided by the step's own lr and multiplied by the next
 * one, which keeps the rule meaningful when the schedule changes lr.
 *
 * Gradient tracking (Nedic et al. 2017; Nesterov momentum on the tracker
 * as in Lin et al. 2021): the model buffer holds [x, y] and is itself the
 * message; after the gossip it holds [W x, W y]:
 *   y_t = (W y_{t-1}) + g'_t - g'_{t-1}   (y_0 = g'_0: both start at 0)
 *   m = beta m + y_t
 *   x_{t+1} = (W x_t) - lr (y_t + beta m)
 *
 * Momentum Tracking (Takezawa, Bao, Niwa, Sato, Yamada, TMLR 2023) tracks
 * the local heavy-ball momentum u instead of the gradient, with the same
 * [x, v] message:
 *   u_t = beta u_{t-1} + g'_t
 *   v_t = (W v_{t-1}) + u_t - u_{t-1}   (v_0 = u_0 = g'_0)
 *   x_{t+1} = (W x_t) - lr v_t
 * u_t - u_{t-1} = g'_t - (1 - beta) u_{t-1}, so u is the only state. */
#include "optim/optim.h"

enum { E = 0 };                /* d2: buf[E] = d_prev - g'_prev */
enum { GT_M = 0, GT_GPREV = 1 }; /* gt */
enum { MT_U = 0 };               /* mt: buf[MT_U] = u, listed as "m" */

static void d2_local(qgm_optim_t *o, float lr) {
  const size_t n = o->dim;
  const float wd = o->cfg.weight_decay;
  const float *restrict x = o->x, *restrict g = o->g, *restrict e = o->buf[E];
  float *restrict msg = o->msg;
  for (size_t i = 0; i < n; i++)
    msg[i] = x[i] - lr * (e[i] + (g[i] + wd * x[i]));
}

/* e_{t+1} = (x_t - x_{t+1}) / lr - g'_t, computed as e_t + (msg - mix) / lr
 * (the same in exact arithmetic, since x_t - msg = lr (e_t + g'_t)). The
 * mean of e over the nodes must stay 0 for D^2 to be exact, and in this
 * form the rounding acts on msg - mix, which vanishes at the fixed point,
 * instead of on x_t - x_{t+1}, whose rounding would repeat identically at
 * every step and walk the average model away from the optimum. With
 * lr == 0 the step says nothing about a direction: e is kept. */
static void d2_after_gossip(qgm_optim_t *o, float lr) {
  if (lr > 0.0f) {
    const size_t n = o->dim;
    const float inv = 1.0f / lr;
    const float *restrict msg = o->msg, *restrict mix = o->mix;
    float *restrict e = o->buf[E];
    for (size_t i = 0; i < n; i++)
      e[i] += (msg[i] - mix[i]) * inv;
  }
  qgm__optim_take_mix(o);
}

static void gt_local(qgm_optim_t *o, float lr) {
  (void)lr;
  const size_t n = o->dim;
  const float beta = o->cfg.momentum, wd = o->cfg.weight_decay;
  const float *restrict x = o->x, *restrict g = o->g;
  float *restrict y = o->x + n, *restrict m = o->buf[GT_M],
                  *restrict gprev = o->buf[GT_GPREV];
  for (size_t i = 0; i < n; i++) {
    float gi = g[i] + wd * x[i];
    float yi = y[i] + gi - gprev[i];
    y[i] = yi;
    gprev[i] = gi;
    m[i] = beta * m[i] + yi;
  }
}

static void gt_after_gossip(qgm_optim_t *o, float lr) {
  const size_t n = o->dim;
  const float beta = o->cfg.momentum;
  const float *restrict y = o->x + n, *restrict m = o->buf[GT_M];
  float *restrict wx = o->mix;
  for (size_t i = 0; i < n; i++)
    wx[i] -= lr * (y[i] + beta * m[i]);
  qgm__optim_take_mix(o);
}

static void mt_local(qgm_optim_t *o, float lr) {
  (void)lr;
  const size_t n = o->dim;
  const float beta = o->cfg.momentum, wd = o->cfg.weight_decay;
  const float *restrict x = o->x, *restrict g = o->g;
  float *restrict v = o->x + n, *restrict u = o->buf[MT_U];
  for (size_t i = 0; i < n; i++) {
    float gi = g[i] + wd * x[i];
    v[i] += gi - (1.0f - beta) * u[i];
    u[i] = beta * u[i] + gi;
  }
}

/* x_{t+1} = (W x_t) - lr v_t with the node's own v_t, still in o->x. */
static void mt_after_gossip(qgm_optim_t *o, float lr) {
  const size_t n = o->dim;
  const float *restrict v = o->x + n;
  float *restrict wx = o->mix;
  for (size_t i = 0; i < n; i++)
    wx[i] -= lr * v[i];
  qgm__optim_take_mix(o);
}

const optim_kind_t qgm_optim_d2 = {
    "d2", QGM_COMBINE_NEIGHBOURS, 1, {"e"}, d2_local, d2_after_gossip, NULL,
    0};
const optim_kind_t qgm_optim_gt = {
    "gt", QGM_COMBINE_NEIGHBOURS, 2, {"m", "g-prev"}, gt_local,
    gt_after_gossip, NULL, 0};
const optim_kind_t qgm_optim_mt = {
    "mt", QGM_COMBINE_NEIGHBOURS, 2, {"m"}, mt_local, mt_after_gossip, NULL,
    0};
