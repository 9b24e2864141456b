/* model.c - the generic qgm_model_* entry points: argument checks, softmax
 * cross-entropy, argmax and chunking, shared by every model kind behind the
 * ops table in model.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "core/internal.h"
#include "qgm.h"

void qgm_model_free(qgm_model_t *model) {
  if (model != NULL)
    model->ops->destroy(model);
}

size_t qgm_model_num_params(const qgm_model_t *model) {
  return model->num_params;
}

const qgm_matrix_block_t *qgm_model_matrices(const qgm_model_t *model,
                                              size_t *count) {
  *count = model->nmatrices;
  return model->matrices;
}

size_t qgm_model_input_dim(const qgm_model_t *model) {
  return model->input_dim;
}

size_t qgm_model_max_batch(const qgm_model_t *model) {
  return model->max_batch;
}

void qgm_model_init_params(const qgm_model_t *model, float *params,
                           qgm_rng_t *rng) {
  model->ops->init_params(model, params, rng);
}

/* An out-of-range label would index past the logits row, so labels are
 * checked before any work is done. */
static int labels_valid(const uint8_t *y, size_t n, size_t classes) {
  for (size_t i = 0; i < n; i++)
    if ((size_t)y[i] >= classes)
      return 0;
  return 1;
}

/* Cross-entropy of one logits row, stable by subtracting the row max (so
 * every exponent is <= 0 and the sum is >= 1). When probs_scale is not 0
 * the row is replaced by probs_scale * (softmax - onehot(label)), the
 * gradient of the batch-mean loss at these logits. */
static double row_cross_entropy(float *z, size_t classes, size_t label,
                                float probs_scale) {
  float max = z[0];
  for (size_t j = 1; j < classes; j++)
    if (z[j] > max)
      max = z[j];
  double zy = (double)z[label] - (double)max;
  double sum = 0.0;
  if (probs_scale != 0.0f) {
    for (size_t j = 0; j < classes; j++) {
      float e = expf(z[j] - max);
      z[j] = e;
      sum += e;
    }
    float inv = (float)(1.0 / sum) * probs_scale;
    for (size_t j = 0; j < classes; j++)
      z[j] *= inv;
    z[label] -= probs_scale;
  } else {
    /* Evaluation reports summed losses, so it pays for double exp to keep
     * the per-sample terms accurate before they are added up. */
    for (size_t j = 0; j < classes; j++)
      sum += exp((double)z[j] - (double)max);
  }
  return log(sum) - zy;
}

int qgm_model_loss_grad(qgm_model_t *model, const float *params,
                        const float *x, const uint8_t *y, size_t n,
                        float *grad, float *loss) {
  if (model == NULL || params == NULL || x == NULL || y == NULL ||
      grad == NULL || loss == NULL || n == 0 || n > model->max_batch)
    return QGM_EINVAL;
  size_t classes = model->classes;
  if (!labels_valid(y, n, classes))
    return QGM_EINVAL;

  float *logits = model->ops->forward(model, params, x, n);
  float scale = (float)(1.0 / (double)n);
  double total = 0.0;
  for (size_t i = 0; i < n; i++)
    total += row_cross_entropy(logits + i * classes, classes, y[i], scale);
  model->ops->backward(model, params, x, n, grad);
  *loss = (float)(total / (double)n);
  return QGM_OK;
}

int qgm_model_evaluate(qgm_model_t *model, const float *params,
                       const float *x, const uint8_t *y, size_t n,
                       size_t *correct, double *loss_sum) {
  if (model == NULL || params == NULL || correct == NULL ||
      loss_sum == NULL || (n > 0 && (x == NULL || y == NULL)))
    return QGM_EINVAL;
  size_t classes = model->classes;
  if (!labels_valid(y, n, classes))
    return QGM_EINVAL;

  size_t hits = 0;
  double total = 0.0;
  for (size_t start = 0; start < n; start += model->max_batch) {
    size_t m = n - start < model->max_batch ? n - start : model->max_batch;
    float *logits =
        model->ops->forward(model, params, x + start * model->input_dim, m);
    for (size_t i = 0; i < m; i++) {
      float *z = logits + i * classes;
      /* Strict > keeps the lowest index on ties, as torch.argmax does. */
      size_t best = 0;
      for (size_t j = 1; j < classes; j++)
        if (z[j] > z[best])
          best = j;
      size_t label = y[start + i];
      hits += best == label;
      total += row_cross_entropy(z, classes, label, 0.0f);
    }
  }
  *correct = hits;
  *loss_sum = total;
  return QGM_OK;
}

void qgm__init_uniform(float *p, size_t n, size_t fan_in, qgm_rng_t *rng) {
  /* PyTorch's kaiming_uniform_(a=sqrt(5)) on a weight reduces to this
   * bound, and its bias rule uses the same one. */
  double bound = 1.0 / sqrt((double)fan_in);
  for (size_t i = 0; i < n; i++)
    p[i] = (float)((2.0 * qgm_rng_uniform(rng) - 1.0) * bound);
}

static int create_mlp(const qgm_model_spec_t *spec, qgm_model_t **out) {
  return qgm_mlp_create(spec->channels * spec->height * spec->width,
                        spec->hidden, spec->nhidden, spec->classes,
                        spec->max_batch, out);
}

static int create_softmax(const qgm_model_spec_t *spec, qgm_model_t **out) {
  return qgm_mlp_create(spec->channels * spec->height * spec->width, NULL, 0,
                        spec->classes, spec->max_batch, out);
}

/* The models by name: the only list of them. */
static const struct model_kind {
  const char *name;
  int (*create)(const qgm_model_spec_t *, qgm_model_t **);
  int convolutional; /* keeps a chunk's feature maps */
} kinds[] = {
    {"mlp", create_mlp, 0},
    {"softmax", create_softmax, 0},
    {"lenet", qgm__lenet_create, 1},
    {"resnet20-gn", qgm__resnet_create, 1},
    {"linear", qgm__linear_create, 0},
};
#define NUM_KINDS (sizeof kinds / sizeof kinds[0])

static const struct model_kind *kind_of(const char *name) {
  for (size_t i = 0; name && i < NUM_KINDS; i++)
    if (strcmp(kinds[i].name, name) == 0)
      return &kinds[i];
  return NULL;
}

int qgm_model_create(const qgm_model_spec_t *spec, qgm_model_t **out) {
  if (!spec || !out)
    return QGM_EINVAL;
  *out = NULL;
  const struct model_kind *k = kind_of(spec->name);
  return k ? k->create(spec, out) : QGM_EINVAL;
}

static const char *kind_name(size_t i) { return kinds[i].name; }

const char *qgm_model_names(void) {
  static char names[128];
  return names[0] ? names
                  : qgm__join_names(names, sizeof names, NUM_KINDS, kind_name);
}

size_t qgm_model_chunk(const char *name, size_t batch) {
  const struct model_kind *k = kind_of(name);
  return (k && k->convolutional) || batch >= 256 ? batch : 256;
}
