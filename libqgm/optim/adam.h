/* adam.h - Adam's rule (PyTorch's: bias-corrected moments, eps added to
 * the corrected root), shared by decentralized Adam (optim_adam.c) and the
 * asynchronous server's Adam base (async.c); not installed. */
#ifndef QGM_OPTIM_ADAM_H
#define QGM_OPTIM_ADAM_H

#include <math.h>

/* The defaults of qgm_optim_config_t's 0 and of the server. */
#define QGM__ADAM_BETA2 0.999f
#define QGM__ADAM_EPS 1e-8f

typedef struct qgm_adam_step {
  float beta1, beta2, eps;
  float step_size;    /* lr / (1 - beta1^t) */
  float inv_sqrt_bc2; /* 1 / sqrt(1 - beta2^t) */
} qgm__adam_step_t;

/* The coefficients of step t = 1, 2, ... */
static inline qgm__adam_step_t qgm__adam_at(float beta1, float beta2, float eps,
                                          float lr, double t) {
  const double bc1 = 1.0 - pow(beta1, t), bc2 = 1.0 - pow(beta2, t);
  return (qgm__adam_step_t){beta1, beta2, eps, (float)(lr / bc1),
                           (float)(1.0 / sqrt(bc2))};
}

/* One coordinate: the moments *m, *v take direction d; returns the amount
 * the parameter moves down. */
static inline float qgm__adam_update(const qgm__adam_step_t *c, float *m,
                                    float *v, float d) {
  const float mi = c->beta1 * *m + (1.0f - c->beta1) * d;
  const float vi = c->beta2 * *v + (1.0f - c->beta2) * d * d;
  *m = mi;
  *v = vi;
  return c->step_size * mi / (sqrtf(vi) * c->inv_sqrt_bc2 + c->eps);
}

#endif /* QGM_OPTIM_ADAM_H */
