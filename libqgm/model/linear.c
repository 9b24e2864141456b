/* linear.c - a bias-free linear classifier: logits = W x, W classes x d,
 * row-major (PyTorch's nn.Linear(d, classes, bias=False) layout). */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "model/model.h"

typedef struct linear {
  qgm_model_t base; /* first, so a qgm_model_t * converts back */
  float *logits;    /* max_batch x classes */
} linear_t;

static void linear_destroy(qgm_model_t *model) {
  linear_t *m = (linear_t *)model;
  free(m->logits);
  free(m);
}

static void linear_init_params(const qgm_model_t *model, float *params,
                               qgm_rng_t *rng) {
  qgm__init_uniform(params, model->num_params, model->input_dim, rng);
}

static float *linear_forward(qgm_model_t *model, const float *params,
                             const float *x, size_t n) {
  linear_t *m = (linear_t *)model;
  const size_t d = model->input_dim, k = model->classes;
  for (size_t i = 0; i < n; i++)
    for (size_t c = 0; c < k; c++) {
      float z = 0.0f;
      for (size_t j = 0; j < d; j++)
        z += params[c * d + j] * x[i * d + j];
      m->logits[i * k + c] = z;
    }
  return m->logits;
}

/* dW[c][j] = sum over the batch of dlogits[i][c] x[i][j]. */
static void linear_backward(qgm_model_t *model, const float *params,
                            const float *x, size_t n, float *grad) {
  (void)params;
  const linear_t *m = (const linear_t *)model;
  const size_t d = model->input_dim, k = model->classes;
  memset(grad, 0, model->num_params * sizeof *grad);
  for (size_t i = 0; i < n; i++)
    for (size_t c = 0; c < k; c++)
      for (size_t j = 0; j < d; j++)
        grad[c * d + j] += m->logits[i * k + c] * x[i * d + j];
}

static const qgm__model_ops_t linear_ops = {
    .destroy = linear_destroy,
    .init_params = linear_init_params,
    .forward = linear_forward,
    .backward = linear_backward,
};

int qgm__linear_create(const qgm_model_spec_t *spec, qgm_model_t **out) {
  *out = NULL;
  const size_t d = spec->channels * spec->height * spec->width;
  if (d == 0 || d > QGM__MODEL_DIM_MAX || spec->classes == 0 ||
      spec->classes > 4096 || spec->max_batch == 0 ||
      spec->max_batch > QGM__MODEL_DIM_MAX / spec->classes)
    return QGM_EINVAL;
  linear_t *m = calloc(1, sizeof *m);
  if (!m || !(m->logits = qgm_alloc_floats(spec->max_batch * spec->classes))) {
    free(m);
    return QGM_ENOMEM;
  }
  m->base.ops = &linear_ops;
  m->base.num_params = spec->classes * d;
  m->base.input_dim = d;
  m->base.classes = spec->classes;
  m->base.max_batch = spec->max_batch;
  /* W is a weight matrix: --compress=powersgd:R approximates it. */
  m->base.matrices[0] = (qgm_matrix_block_t){0, spec->classes, d};
  m->base.nmatrices = 1;
  *out = &m->base;
  return QGM_OK;
}
