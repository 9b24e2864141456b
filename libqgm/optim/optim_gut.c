/* optim_gut.c - Global Update Tracking (Aketi, Hashemi, Roy, NeurIPS 2023):
 * GUT, and QG-GUTm, its variant with momentum.
 *
 * Each node tracks the model's whole update (its gradient and the gossip's
 * consensus move) instead of its gradient. The authors' code
 * (aparna-aketi/global_update_tracking) gossips the model, takes the
 * gradient at the mixed model, and folds the tracking correction into the
 * gradient of a heavy-ball SGD step. Written in qgmd's adapt-then-combine
 * split, with x_t the mixed model, their rule is
 *
 *   msg     = x_t - lr (beta m + g'_t + mu e)
 *   x_{t+1} = W msg,   r = (msg - x_{t+1}) / lr   (the consensus move)
 *   e      <- beta m + mu e + (1 + beta) r
 *   m      <- beta m + g'_t + mu e + r            (= (x_t - x_{t+1}) / lr)
 *
 * with beta = 0 for GUT (which keeps no m) and beta = --momentum for
 * QG-GUTm. m is the model's whole change, as quasi-global momentum's
 * direction; e is the correction, in their terms
 * mu (sum_j W_ij y_j^{t-1} - delta_i^{t-1}) with the (1 + beta) shift of
 * their code. With beta = 0 and mu = 1 this is D^2 (optim_track.c) bit for
 * bit: GUT is D^2 with its correction scaled by mu < 1. The message is the
 * half-step, x-sized, as DSGD's: no extra bytes. */
#include "core/internal.h"
#include "optim/optim.h"

enum { GUT_E = 0 };                 /* gut: buf[GUT_E] = e */
enum { QG_GUTM_M = 0, QG_GUTM_E = 1 }; /* qg-gutm */

/* The mu of o: the configured one, or the algorithm's default. */
static float scaling(const qgm_optim_t *o, float fallback) {
  return o->cfg.tracking_scale > 0.0f ? o->cfg.tracking_scale : fallback;
}

QGM__AVX2_CLONES
static void gut_local(qgm_optim_t *o, float lr) {
  const size_t n = o->dim;
  const float wd = o->cfg.weight_decay, mu = scaling(o, QGM_GUT_SCALING);
  const float *restrict x = o->x, *restrict g = o->g,
                        *restrict e = o->buf[GUT_E];
  float *restrict msg = o->msg;
  for (size_t i = 0; i < n; i++)
    msg[i] = x[i] - lr * ((g[i] + wd * x[i]) + mu * e[i]);
}

/* e = mu e + r. With lr == 0 the model did not move and r is undefined:
 * e is kept, as D^2 keeps its own. */
QGM__AVX2_CLONES
static void gut_after_gossip(qgm_optim_t *o, float lr) {
  if (lr > 0.0f) {
    const size_t n = o->dim;
    const float inv = 1.0f / lr, mu = scaling(o, QGM_GUT_SCALING);
    const float *restrict msg = o->msg, *restrict mix = o->mix;
    float *restrict e = o->buf[GUT_E];
    for (size_t i = 0; i < n; i++)
      e[i] = mu * e[i] + (msg[i] - mix[i]) * inv;
  }
  qgm__optim_take_mix(o);
}

/* m and e are only read here: both are fed after the gossip, from the
 * consensus move. */
QGM__AVX2_CLONES
static void qg_gutm_local(qgm_optim_t *o, float lr) {
  const size_t n = o->dim;
  const float beta = o->cfg.momentum, wd = o->cfg.weight_decay,
              mu = scaling(o, QGM_QG_GUTM_SCALING);
  const float *restrict x = o->x, *restrict g = o->g,
                        *restrict m = o->buf[QG_GUTM_M],
                        *restrict e = o->buf[QG_GUTM_E];
  float *restrict msg = o->msg;
  for (size_t i = 0; i < n; i++)
    msg[i] = x[i] - lr * (beta * m[i] + (g[i] + wd * x[i]) + mu * e[i]);
}

QGM__AVX2_CLONES
static void qg_gutm_after_gossip(qgm_optim_t *o, float lr) {
  if (lr > 0.0f) {
    const size_t n = o->dim;
    const float beta = o->cfg.momentum, wd = o->cfg.weight_decay,
                mu = scaling(o, QGM_QG_GUTM_SCALING), inv = 1.0f / lr;
    const float *restrict x = o->x, *restrict g = o->g,
                          *restrict msg = o->msg, *restrict mix = o->mix;
    float *restrict m = o->buf[QG_GUTM_M], *restrict e = o->buf[QG_GUTM_E];
    for (size_t i = 0; i < n; i++) {
      const float r = (msg[i] - mix[i]) * inv;
      const float mi = m[i], ei = e[i];
      m[i] = beta * mi + (g[i] + wd * x[i]) + mu * ei + r;
      e[i] = beta * mi + mu * ei + (1.0f + beta) * r;
    }
  }
  qgm__optim_take_mix(o);
}

const optim_kind_t qgm_optim_gut = {
    "gut", QGM_COMBINE_NEIGHBOURS, 1, {"e"}, gut_local, gut_after_gossip,
    NULL, 0};
const optim_kind_t qgm_optim_qg_gutm = {
    "qg-gutm", QGM_COMBINE_NEIGHBOURS, 1, {"m", "e"}, qg_gutm_local,
    qg_gutm_after_gossip, NULL, 0};
