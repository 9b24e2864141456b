/* lenet.c - LeNet-5: conv 5x5 (6) - ReLU - maxpool 2 - conv 5x5 (16) -
 * ReLU - maxpool 2 - 120 - 84 - classes, with ReLU between the fully
 * connected layers (the modern form of the network, as in PyTorch's
 * examples). The first convolution pads by 2, so 28x28 images give the
 * classic 16 x 5 x 5 features and 32x32 ones 16 x 6 x 6.
 *
 * Parameters, in PyTorch's order: conv1 weight (6 x C x 5 x 5) and bias,
 * conv2 weight (16 x 6 x 5 x 5) and bias, then the fully connected head,
 * which is an MLP of its own (mlp.c) sharing the parameter vector. */
#include <stdlib.h>

#include "nn/gemm.h"
#include "core/internal.h"
#include "nn/layers.h"
#include "model/model.h"

#define LENET_MAX_BATCH 4096

typedef struct lenet {
  qgm_model_t base; /* first, so a qgm_model_t * converts back */
  qgm__conv_t conv1, conv2;
  size_t h1, w1, h2, w2; /* after the first and second pooling */
  size_t features;       /* 16 * h2 * w2, the head's input */
  size_t off_w1, off_b1, off_w2, off_b2, off_head;
  qgm_model_t *head;
  float *arena;
  /* Feature maps (CNHW) and their gradients. */
  float *c1, *p1, *c2, *p2, *rows;
  float *dc1, *dp1, *dc2, *dp2, *drows;
  float *col, *pack;
} lenet_t;

static lenet_t *as_lenet(qgm_model_t *model) { return (lenet_t *)model; }

static void lenet_destroy(qgm_model_t *model) {
  lenet_t *m = as_lenet(model);
  qgm_model_free(m->head);
  free(m->arena);
  free(m);
}

static void lenet_init_params(const qgm_model_t *model, float *params,
                              qgm_rng_t *rng) {
  const lenet_t *m = (const lenet_t *)model;
  size_t fan1 = m->conv1.cin * 25, fan2 = m->conv2.cin * 25;
  qgm__init_uniform(params + m->off_w1, m->off_w2 - m->off_w1, fan1, rng);
  qgm__init_uniform(params + m->off_w2, m->off_head - m->off_w2, fan2, rng);
  qgm_model_init_params(m->head, params + m->off_head, rng);
}

/* Layer spans for the layer hook (qgm_set_layer_hook), one per layer and
 * pass, each convolution's with its path. */
static const char CONV1_SPAN[] = "conv1 5x5", POOL1_SPAN[] = "relu+maxpool 1",
                  CONV2_SPAN[] = "conv2 5x5", POOL2_SPAN[] = "relu+maxpool 2",
                  HEAD_SPAN[] = "fully connected";

static qgm_layer_span_t span_begin(const char *layer, int backward,
                                   const qgm__conv_t *cv, double flops) {
  qgm_layer_span_t sp = {layer, backward, flops,
                         cv && qgm__layer_hooked() ? qgm__conv_path(cv)
                                                   : NULL};
  qgm__layer_mark(&sp, 0);
  return sp;
}

/* The floating-point operations of one product of a convolution over n
 * samples (forward, weight gradient and input gradient cost one each). */
static double conv_flops(const qgm__conv_t *cv, size_t n) {
  return 2.0 * (double)(qgm__conv_num_weights(cv) * n * cv->oh * cv->ow);
}

static float *lenet_forward(qgm_model_t *model, const float *params,
                            const float *x, size_t n) {
  lenet_t *m = as_lenet(model);
  const qgm__conv_t *a = &m->conv1, *b = &m->conv2;
  qgm__maps_t in = {x, a->cin * a->h * a->w, a->h * a->w};
  qgm_layer_span_t sp = span_begin(CONV1_SPAN, 0, a, conv_flops(a, n));
  qgm__conv_forward(a, params + m->off_w1, params + m->off_b1, in, n, m->c1,
                   m->col, m->pack);
  qgm__layer_mark(&sp, 1);
  /* Each ReLU in its pooling's pass (c1, c2 keep the convolutions'
   * outputs, from which the backward pass finds both gradients). */
  sp = span_begin(POOL1_SPAN, 0, NULL, 0.0);
  qgm__maxpool2_forward(m->c1, 6 * n, a->oh, a->ow, 1, m->p1);
  qgm__layer_mark(&sp, 1);
  qgm__maps_t mid = {m->p1, m->h1 * m->w1, n * m->h1 * m->w1};
  sp = span_begin(CONV2_SPAN, 0, b, conv_flops(b, n));
  qgm__conv_forward(b, params + m->off_w2, params + m->off_b2, mid, n, m->c2,
                   m->col, m->pack);
  qgm__layer_mark(&sp, 1);
  sp = span_begin(POOL2_SPAN, 0, NULL, 0.0);
  qgm__maxpool2_forward(m->c2, 16 * n, b->oh, b->ow, 1, m->p2);
  qgm__cnhw_to_rows(m->rows, m->p2, 16, n, m->h2 * m->w2);
  qgm__layer_mark(&sp, 1);
  sp = span_begin(HEAD_SPAN, 0, NULL, 0.0);
  float *logits =
      m->head->ops->forward(m->head, params + m->off_head, m->rows, n);
  qgm__layer_mark(&sp, 1);
  return logits;
}

static void lenet_backward(qgm_model_t *model, const float *params,
                           const float *x, size_t n, float *grad) {
  lenet_t *m = as_lenet(model);
  const qgm__conv_t *a = &m->conv1, *b = &m->conv2;
  qgm_layer_span_t sp = span_begin(HEAD_SPAN, 1, NULL, 0.0);
  m->head->ops->backward(m->head, params + m->off_head, m->rows, n,
                         grad + m->off_head);
  qgm__layer_mark(&sp, 1);
  sp = span_begin(POOL2_SPAN, 1, NULL, 0.0);
  qgm__rows_to_cnhw(m->dp2, m->drows, 16, n, m->h2 * m->w2);
  qgm__relu_backward(m->dp2, m->p2, n * m->features);
  qgm__maxpool2_backward(m->c2, 16 * n, b->oh, b->ow, m->dp2, m->dc2);
  qgm__layer_mark(&sp, 1);
  qgm__maps_t mid = {m->p1, m->h1 * m->w1, n * m->h1 * m->w1};
  sp = span_begin(CONV2_SPAN, 1, b, 2 * conv_flops(b, n));
  qgm__conv_backward(b, params + m->off_w2, mid, n, m->dc2, grad + m->off_w2,
                    grad + m->off_b2, m->dp1, m->col, m->pack);
  qgm__layer_mark(&sp, 1);
  sp = span_begin(POOL1_SPAN, 1, NULL, 0.0);
  qgm__relu_backward(m->dp1, m->p1, 6 * n * m->h1 * m->w1);
  qgm__maxpool2_backward(m->c1, 6 * n, a->oh, a->ow, m->dp1, m->dc1);
  qgm__layer_mark(&sp, 1);
  qgm__maps_t in = {x, a->cin * a->h * a->w, a->h * a->w};
  /* No gradient for the input images. */
  sp = span_begin(CONV1_SPAN, 1, a, conv_flops(a, n));
  qgm__conv_backward(a, params + m->off_w1, in, n, m->dc1, grad + m->off_w1,
                    grad + m->off_b1, NULL, m->col, m->pack);
  qgm__layer_mark(&sp, 1);
}

static const qgm__model_ops_t lenet_ops = {
    .destroy = lenet_destroy,
    .init_params = lenet_init_params,
    .forward = lenet_forward,
    .backward = lenet_backward,
};

static void layout(void *owner, qgm__carver_t *c) {
  lenet_t *m = owner;
  size_t nb = m->base.max_batch;
  size_t s1 = 6 * nb * m->conv1.oh * m->conv1.ow;
  size_t q1 = 6 * nb * m->h1 * m->w1;
  size_t s2 = 16 * nb * m->conv2.oh * m->conv2.ow;
  size_t q2 = nb * m->features;
  m->c1 = qgm__carve(c, s1);
  m->dc1 = qgm__carve(c, s1);
  m->p1 = qgm__carve(c, q1);
  m->dp1 = qgm__carve(c, q1);
  m->c2 = qgm__carve(c, s2);
  m->dc2 = qgm__carve(c, s2);
  m->p2 = qgm__carve(c, q2);
  m->dp2 = qgm__carve(c, q2);
  m->rows = qgm__carve(c, q2);
  m->drows = qgm__carve(c, q2);
  size_t col1 = qgm__conv_scratch_floats(&m->conv1),
         col2 = qgm__conv_scratch_floats(&m->conv2);
  m->col = qgm__carve(c, col1 > col2 ? col1 : col2);
  m->pack = qgm__carve(c, QGM__GEMM_PACK_FLOATS);
}

int qgm__lenet_create(const qgm_model_spec_t *spec, qgm_model_t **out) {
  *out = NULL;
  size_t h = spec->height, w = spec->width;
  /* Both poolings need even maps: h, w multiples of 4, at least 12. */
  if (spec->channels == 0 || spec->channels > 64 || h % 4 || w % 4 ||
      h < 12 || w < 12 || h > 1024 || w > 1024 || spec->classes == 0 ||
      spec->classes > 4096 || spec->max_batch == 0 ||
      spec->max_batch > LENET_MAX_BATCH)
    return QGM_EINVAL;
  lenet_t *m = calloc(1, sizeof *m);
  if (!m)
    return QGM_ENOMEM;
  m->conv1 = (qgm__conv_t){.cin = spec->channels, .h = h, .w = w, .cout = 6,
                          .k = 5, .stride = 1, .pad = 2};
  qgm__conv_init(&m->conv1);
  m->h1 = h / 2;
  m->w1 = w / 2;
  m->conv2 = (qgm__conv_t){.cin = 6, .h = m->h1, .w = m->w1, .cout = 16,
                          .k = 5, .stride = 1, .pad = 0};
  qgm__conv_init(&m->conv2);
  m->h2 = m->conv2.oh / 2;
  m->w2 = m->conv2.ow / 2;
  m->features = 16 * m->h2 * m->w2;
  m->off_w1 = 0;
  m->off_b1 = qgm__conv_num_weights(&m->conv1);
  m->off_w2 = m->off_b1 + 6;
  m->off_b2 = m->off_w2 + qgm__conv_num_weights(&m->conv2);
  m->off_head = m->off_b2 + 16;

  const size_t widths[2] = {120, 84};
  int rc = qgm_mlp_create(m->features, widths, 2, spec->classes,
                          spec->max_batch, &m->head);
  m->base.max_batch = spec->max_batch;
  if (rc == 0) {
    m->arena = qgm__arena_build(m, layout);
    rc = m->arena ? 0 : QGM_ENOMEM;
  }
  if (rc != 0) {
    lenet_destroy(&m->base);
    return rc;
  }
  qgm__mlp_set_input_grad(m->head, m->drows);
  m->base.ops = &lenet_ops;
  m->base.num_params = m->off_head + qgm_model_num_params(m->head);
  m->base.input_dim = spec->channels * h * w;
  m->base.classes = spec->classes;
  *out = &m->base;
  return QGM_OK;
}
