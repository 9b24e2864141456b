/* optim_adam.c - decentralized Adam and its quasi-global variant.
 *
 * dadam is PyTorch's Adam (L2 added to the gradient, bias-corrected
 * moments) applied locally, followed by the gossip of the half-step.
 *
 * qg-dadam follows the "original implementation" of the paper's official
 * code (epfml/quasi-global-momentum, code/pcode/optim/
 * decentralized_qg_adam.py, with global-wise normalisation):
 *   mt = beta1 m + g'                       (not (1 - beta1) g': as there)
 *   vt = beta2 v + (1 - beta2) g'^2
 *   x_half = x - lr / bc1 * mt / (sqrt(vt) / sqrt(bc2) + eps)
 *   gossip: x_{t+1} = sum_j W_ij x_half_j
 *   u = (x_t - x_{t+1}) / (||x_t - x_{t+1}||_2 + 1e-8)
 *   m = beta1 m + (1 - beta1) u;  v = beta2 v + (1 - beta2) u^2
 * with bc1 = 1 - beta1^t, bc2 = 1 - beta2^t at step t = 1, 2, ...
 * The moments thus see the normalised direction of the whole model
 * change, gossip included, instead of the local gradient. */
#include <math.h>

#include "optim/adam.h"
#include "optim/optim.h"

enum { M = 0, V = 1 };

static qgm__adam_step_t adam_coefficients(const qgm_optim_t *o, float lr) {
  return qgm__adam_at(o->cfg.momentum, o->cfg.adam_beta2, o->cfg.adam_eps, lr,
                     (double)(o->steps + 1));
}

static void dadam_local(qgm_optim_t *o, float lr) {
  const qgm__adam_step_t c = adam_coefficients(o, lr);
  const float wd = o->cfg.weight_decay;
  const size_t n = o->dim;
  const float *restrict x = o->x, *restrict g = o->g;
  float *restrict m = o->buf[M], *restrict v = o->buf[V],
                  *restrict msg = o->msg;
  for (size_t i = 0; i < n; i++)
    msg[i] = x[i] - qgm__adam_update(&c, &m[i], &v[i], g[i] + wd * x[i]);
}

static void dadam_after_gossip(qgm_optim_t *o, float lr) {
  (void)lr;
  qgm__optim_take_mix(o);
}

static void qg_dadam_local(qgm_optim_t *o, float lr) {
  const qgm__adam_step_t c = adam_coefficients(o, lr);
  const float wd = o->cfg.weight_decay;
  const size_t n = o->dim;
  const float *restrict x = o->x, *restrict g = o->g, *restrict m = o->buf[M],
                        *restrict v = o->buf[V];
  float *restrict msg = o->msg;
  for (size_t i = 0; i < n; i++) {
    float gi = g[i] + wd * x[i];
    float mt = c.beta1 * m[i] + gi;
    float vt = c.beta2 * v[i] + (1.0f - c.beta2) * gi * gi;
    msg[i] = x[i] - c.step_size * mt / (sqrtf(vt) * c.inv_sqrt_bc2 + c.eps);
  }
}

/* Two passes: the normalisation needs the whole change's norm first. */
static void qg_dadam_after_gossip(qgm_optim_t *o, float lr) {
  (void)lr;
  const size_t n = o->dim;
  const float *restrict x = o->x, *restrict mix = o->mix;
  float *restrict m = o->buf[M], *restrict v = o->buf[V];
  double norm2 = 0.0;
  for (size_t i = 0; i < n; i++) {
    float d = x[i] - mix[i];
    norm2 += (double)(d * d);
  }
  const float beta1 = o->cfg.momentum, beta2 = o->cfg.adam_beta2;
  const float scale = (float)(1.0 / (sqrt(norm2) + 1e-8));
  for (size_t i = 0; i < n; i++) {
    float u = (x[i] - mix[i]) * scale;
    m[i] = beta1 * m[i] + (1.0f - beta1) * u;
    v[i] = beta2 * v[i] + (1.0f - beta2) * u * u;
  }
  qgm__optim_take_mix(o);
}

const optim_kind_t qgm_optim_dadam = {
    "dadam", QGM_COMBINE_NEIGHBOURS, 1, {"m", "v"}, dadam_local,
    dadam_after_gossip, NULL, 0};
const optim_kind_t qgm_optim_qg_dadam = {
    "qg-dadam", QGM_COMBINE_NEIGHBOURS, 1, {"m", "v"}, qg_dadam_local,
    qg_dadam_after_gossip, NULL, 0};
