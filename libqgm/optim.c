/* optim.c - decentralized optimizers as flat-vector state machines.
 *
 * Every algorithm is split at the gossip: qgm_optim_local_step produces the
 * message (the half-step model), the transport averages messages into the
 * mix buffer, and qgm_optim_after_gossip finishes the step. The update rules
 * are those of DESIGN.md section 2 (Lin et al., ICML 2021, Algorithm 1).
 *
 * The multi-operand updates are written as single fused loops: the step is
 * memory-bound, and one pass over x, g and m beats a chain of level-1 BLIS
 * calls that would stream the same vectors several times. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "qgm.h"

struct qgm_optim {
  qgm_optim_config_t cfg;
  size_t dim;
  float *x;   /* x_t */
  float *g;   /* gradient of the local loss at x_t, written by the caller */
  float *m;   /* momentum buffer; NULL for plain DSGD */
  float *msg; /* half-step model sent to the neighbours */
  float *mix; /* sum_j W_ij msg_j, written by the caller */
};

static const char *const algorithm_names[] = {
    [QGM_ALG_DSGD] = "dsgd",
    [QGM_ALG_DSGDM_N] = "dsgdm-n",
    [QGM_ALG_QG_DSGDM_N] = "qg-dsgdm-n",
};
#define NUM_ALGORITHMS (sizeof algorithm_names / sizeof algorithm_names[0])

int qgm_algorithm_parse(const char *name, qgm_algorithm_t *out) {
  if (!name || !out)
    return QGM_EINVAL;
  for (size_t i = 0; i < NUM_ALGORITHMS; i++)
    if (strcmp(name, algorithm_names[i]) == 0) {
      *out = (qgm_algorithm_t)i;
      return 0;
    }
  return QGM_EINVAL;
}

const char *qgm_algorithm_name(qgm_algorithm_t alg) {
  return (size_t)alg < NUM_ALGORITHMS ? algorithm_names[alg] : "unknown";
}

const char *qgm_algorithm_names(void) { return "dsgd, dsgdm-n, qg-dsgdm-n"; }

static int has_momentum(qgm_algorithm_t alg) { return alg != QGM_ALG_DSGD; }

int qgm_optim_create(const qgm_optim_config_t *cfg, size_t dim,
                     qgm_optim_t **out) {
  if (!cfg || !out || dim == 0 || (size_t)cfg->algorithm >= NUM_ALGORITHMS ||
      !(cfg->momentum >= 0.0f && cfg->momentum < 1.0f) ||
      !(cfg->weight_decay >= 0.0f))
    return QGM_EINVAL;
  qgm_optim_t *o = calloc(1, sizeof *o);
  if (!o)
    return QGM_ENOMEM;
  o->cfg = *cfg;
  o->dim = dim;
  o->x = qgm_alloc_floats(dim);
  o->g = qgm_alloc_floats(dim);
  o->msg = qgm_alloc_floats(dim);
  o->mix = qgm_alloc_floats(dim);
  if (has_momentum(cfg->algorithm))
    o->m = qgm_alloc_floats(dim);
  if (!o->x || !o->g || !o->msg || !o->mix ||
      (has_momentum(cfg->algorithm) && !o->m)) {
    qgm_optim_free(o);
    return QGM_ENOMEM;
  }
  memset(o->x, 0, dim * sizeof(float));
  memset(o->g, 0, dim * sizeof(float));
  if (o->m)
    memset(o->m, 0, dim * sizeof(float));
  *out = o;
  return 0;
}

void qgm_optim_free(qgm_optim_t *o) {
  if (!o)
    return;
  free(o->x);
  free(o->g);
  free(o->m);
  free(o->msg);
  free(o->mix);
  free(o);
}

size_t qgm_optim_dim(const qgm_optim_t *o) { return o->dim; }
float *qgm_optim_params(qgm_optim_t *o) { return o->x; }
float *qgm_optim_grad(qgm_optim_t *o) { return o->g; }
const float *qgm_optim_momentum(const qgm_optim_t *o) { return o->m; }
size_t qgm_optim_message_len(const qgm_optim_t *o) { return o->dim; }
float *qgm_optim_mix_buffer(qgm_optim_t *o) { return o->mix; }

const float *qgm_optim_local_step(qgm_optim_t *o, float lr) {
  const size_t n = o->dim;
  const float beta = o->cfg.momentum, wd = o->cfg.weight_decay;
  float *restrict x = o->x, *restrict g = o->g, *restrict m = o->m,
                  *restrict msg = o->msg;
  switch (o->cfg.algorithm) {
  case QGM_ALG_DSGD:
    for (size_t i = 0; i < n; i++)
      msg[i] = x[i] - lr * (g[i] + wd * x[i]);
    break;
  case QGM_ALG_DSGDM_N:
    for (size_t i = 0; i < n; i++) {
      float gi = g[i] + wd * x[i];
      float mi = beta * m[i] + gi;
      m[i] = mi;
      msg[i] = x[i] - lr * (gi + beta * mi);
    }
    break;
  case QGM_ALG_QG_DSGDM_N:
    /* m is only read here: the quasi-global momentum is updated after the
     * gossip, from the model change that includes the neighbours. */
    for (size_t i = 0; i < n; i++) {
      float gi = g[i] + wd * x[i];
      float mhat = beta * m[i] + gi;
      msg[i] = x[i] - lr * (gi + beta * mhat);
    }
    break;
  }
  return msg;
}

void qgm_optim_after_gossip(qgm_optim_t *o, float lr) {
  /* With lr == 0 the model does not move and d is undefined; the momentum
   * is then left as it was. */
  if (o->cfg.algorithm == QGM_ALG_QG_DSGDM_N && lr > 0.0f) {
    const size_t n = o->dim;
    const float beta = o->cfg.momentum, c = (1.0f - beta) / lr;
    float *restrict x = o->x, *restrict m = o->m;
    const float *restrict mix = o->mix;
    /* d = (x_t - x_{t+1}) / lr; m = beta*m + (1-beta)*d */
    for (size_t i = 0; i < n; i++)
      m[i] = beta * m[i] + c * (x[i] - mix[i]);
  }
  /* x_{t+1} is the mixed vector; swapping buffers saves a copy. */
  float *next = o->mix;
  o->mix = o->x;
  o->x = next;
}
