/* resnet.c - ResNet-20 for CIFAR-sized images (He et al. 2016, section
 * 4.2) with GroupNorm in place of BatchNorm: batch statistics are local to
 * a node's non-IID shard and do not survive gossip averaging, group
 * statistics are per sample. 2 groups per GroupNorm.
 *
 * A 3x3 conv (16) - GN - ReLU stem, three stages of three basic blocks
 * (16, 32, 64 channels; the first block of stages 2 and 3 halves the
 * resolution with stride 2, and its shortcut is a 1x1 stride-2 conv + GN),
 * global average pooling and a linear classifier. A basic block is
 * relu(GN(conv(relu(GN(conv(x))))) + shortcut(x)). Convolutions have no
 * bias (GroupNorm's shift takes its place).
 *
 * Parameters, in PyTorch's module order: the stem conv weight, its GN
 * weight and bias; per block conv1, gn1, conv2, gn2 and, where present,
 * the shortcut's conv and GN; then the classifier's weight and bias. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/gemm.h"
#include "core/internal.h"
#include "nn/layers.h"
#include "model/model.h"

#define RESNET_GROUPS 2
#define RESNET_BLOCKS 9
#define RESNET_UNITS (1 + 2 * RESNET_BLOCKS + 2)
#define RESNET_MAX_BATCH 1024

/* A convolution followed by GroupNorm (and ReLU where the network has
 * one), with the maps its backward pass needs. */
typedef struct unit {
  qgm__conv_t conv;
  char name[40]; /* the convolution's shape, for the layer hook */
  int relu;      /* a ReLU after the GroupNorm */
  size_t off_w, off_gamma, off_beta;
  float *out;   /* conv output, CNHW */
  float *norm;  /* GroupNorm output (after the ReLU, if any) */
  float *stats; /* GroupNorm mean and 1/std per (sample, group) */
} unit_t;

typedef struct block {
  unit_t *a, *b, *shortcut; /* shortcut NULL: identity */
  const float *in;          /* the block's input maps */
  float *out;               /* relu(b + shortcut) */
} block_t;

typedef struct resnet {
  qgm_model_t base; /* first, so a qgm_model_t * converts back */
  unit_t units[RESNET_UNITS];
  size_t nunits;
  block_t blocks[RESNET_BLOCKS];
  size_t off_head;
  qgm_model_t *head; /* the classifier: a linear layer (mlp.c) */
  float *arena;
  float *pooled, *dpooled; /* n x 64 features */
  float *grad[4];          /* gradient maps, rotated through the blocks */
  float *col, *pack;
} resnet_t;

static resnet_t *as_resnet(qgm_model_t *model) { return (resnet_t *)model; }

static void resnet_destroy(qgm_model_t *model) {
  resnet_t *m = as_resnet(model);
  qgm_model_free(m->head);
  free(m->arena);
  free(m);
}

static size_t unit_maps(const unit_t *u, size_t n) {
  return u->conv.cout * n * u->conv.oh * u->conv.ow;
}

static void resnet_init_params(const qgm_model_t *model, float *params,
                               qgm_rng_t *rng) {
  const resnet_t *m = (const resnet_t *)model;
  for (size_t i = 0; i < m->nunits; i++) {
    const unit_t *u = &m->units[i];
    /* He et al.'s initialisation, kaiming_normal_(mode='fan_out'), as the
     * reference CIFAR ResNets use; GroupNorm starts as the identity. */
    size_t fan_out = u->conv.cout * u->conv.k * u->conv.k;
    double sd = sqrt(2.0 / (double)fan_out);
    for (size_t j = 0; j < qgm__conv_num_weights(&u->conv); j++)
      params[u->off_w + j] = (float)(sd * qgm_rng_normal(rng));
    for (size_t j = 0; j < u->conv.cout; j++) {
      params[u->off_gamma + j] = 1.0f;
      params[u->off_beta + j] = 0.0f;
    }
  }
  qgm_model_init_params(m->head, params + m->off_head, rng);
}

/* Layer spans for the layer hook (qgm_set_layer_hook). */
static const char GN_SPAN[] = "groupnorm (+relu)", RESIDUAL_SPAN[] =
    "residual add+relu", POOL_SPAN[] = "avgpool", HEAD_SPAN[] = "linear";

static qgm_layer_span_t span_begin(const char *layer, int backward,
                                   double flops) {
  qgm_layer_span_t sp = {layer, backward, flops, NULL};
  qgm__layer_mark(&sp, 0);
  return sp;
}

/* The floating-point operations of one product of a convolution over n
 * samples (each of forward, weight gradient and input gradient costs one). */
static double conv_flops(const qgm__conv_t *cv, size_t n) {
  return 2.0 * (double)(qgm__conv_num_weights(cv) * n * cv->oh * cv->ow);
}

static qgm_layer_span_t conv_span_begin(const unit_t *u, int backward,
                                        double flops) {
  qgm_layer_span_t sp = {u->name, backward, flops,
                         qgm__layer_hooked() ? qgm__conv_path(&u->conv) : NULL};
  qgm__layer_mark(&sp, 0);
  return sp;
}

/* Maps in CNHW order for a convolution's input. */
static qgm__maps_t cnhw(const float *x, size_t n, size_t hw) {
  return (qgm__maps_t){x, hw, n * hw};
}

static void unit_forward(resnet_t *m, unit_t *u, const float *params,
                         qgm__maps_t in, size_t n) {
  size_t hw = u->conv.oh * u->conv.ow;
  qgm_layer_span_t sp = conv_span_begin(u, 0, conv_flops(&u->conv, n));
  qgm__conv_forward(&u->conv, params + u->off_w, NULL, in, n, u->out, m->col,
                   m->pack);
  qgm__layer_mark(&sp, 1);
  sp = span_begin(GN_SPAN, 0, 0.0);
  qgm__groupnorm_forward(u->out, u->conv.cout, n, hw, RESNET_GROUPS,
                        params + u->off_gamma, params + u->off_beta, u->relu,
                        u->norm, u->stats);
  qgm__layer_mark(&sp, 1);
}

/* From the gradient at the unit's output (before its ReLU's gradient, if
 * it has one, which the GroupNorm's backward pass applies), the parameter
 * gradients and, if dx is not NULL, the gradient at
 * its input; tmp holds the gradient at the conv output. */
static void unit_backward(resnet_t *m, const unit_t *u, const float *params,
                          qgm__maps_t in, size_t n, const float *dnorm,
                          float *grad, float *dx, float *tmp) {
  size_t hw = u->conv.oh * u->conv.ow;
  qgm_layer_span_t sp = span_begin(GN_SPAN, 1, 0.0);
  qgm__groupnorm_backward(u->out, u->conv.cout, n, hw, RESNET_GROUPS,
                         params + u->off_gamma, params + u->off_beta,
                         u->stats, u->relu, dnorm, tmp, grad + u->off_gamma,
                         grad + u->off_beta);
  qgm__layer_mark(&sp, 1);
  sp = conv_span_begin(u, 1, (dx ? 2 : 1) * conv_flops(&u->conv, n));
  qgm__conv_backward(&u->conv, params + u->off_w, in, n, tmp,
                    grad + u->off_w, NULL, dx, m->col, m->pack);
  qgm__layer_mark(&sp, 1);
}

static float *resnet_forward(qgm_model_t *model, const float *params,
                             const float *x, size_t n) {
  resnet_t *m = as_resnet(model);
  unit_t *stem = &m->units[0];
  qgm__maps_t images = {x, stem->conv.cin * stem->conv.h * stem->conv.w,
                       stem->conv.h * stem->conv.w};
  unit_forward(m, stem, params, images, n);
  for (size_t i = 0; i < RESNET_BLOCKS; i++) {
    block_t *b = &m->blocks[i];
    qgm__maps_t in = cnhw(b->in, n, b->a->conv.h * b->a->conv.w);
    unit_forward(m, b->a, params, in, n);
    unit_forward(m, b->b, params,
                 cnhw(b->a->norm, n, b->b->conv.h * b->b->conv.w), n);
    const float *sc = b->in;
    if (b->shortcut) {
      unit_forward(m, b->shortcut, params, in, n);
      sc = b->shortcut->norm;
    }
    qgm_layer_span_t sp = span_begin(RESIDUAL_SPAN, 0, 0.0);
    qgm__add_relu(b->out, b->b->norm, sc, unit_maps(b->b, n));
    qgm__layer_mark(&sp, 1);
  }
  const unit_t *last = m->blocks[RESNET_BLOCKS - 1].b;
  qgm_layer_span_t sp = span_begin(POOL_SPAN, 0, 0.0);
  qgm__avgpool_forward(m->blocks[RESNET_BLOCKS - 1].out, last->conv.cout, n,
                      last->conv.oh * last->conv.ow, m->pooled);
  qgm__layer_mark(&sp, 1);
  sp = span_begin(HEAD_SPAN, 0, 0.0);
  float *logits =
      m->head->ops->forward(m->head, params + m->off_head, m->pooled, n);
  qgm__layer_mark(&sp, 1);
  return logits;
}

static void resnet_backward(qgm_model_t *model, const float *params,
                            const float *x, size_t n, float *grad) {
  resnet_t *m = as_resnet(model);
  float *dout = m->grad[0], *din = m->grad[1], *t1 = m->grad[2],
        *t2 = m->grad[3];
  qgm_layer_span_t sp = span_begin(HEAD_SPAN, 1, 0.0);
  m->head->ops->backward(m->head, params + m->off_head, m->pooled, n,
                         grad + m->off_head);
  qgm__layer_mark(&sp, 1);
  const unit_t *last = m->blocks[RESNET_BLOCKS - 1].b;
  sp = span_begin(POOL_SPAN, 1, 0.0);
  qgm__avgpool_backward(m->dpooled, last->conv.cout, n,
                       last->conv.oh * last->conv.ow, dout);
  qgm__layer_mark(&sp, 1);
  for (size_t i = RESNET_BLOCKS; i-- > 0;) {
    block_t *b = &m->blocks[i];
    size_t hw_in = b->a->conv.h * b->a->conv.w;
    size_t hw_mid = b->b->conv.h * b->b->conv.w;
    qgm__maps_t in = cnhw(b->in, n, hw_in);
    sp = span_begin(RESIDUAL_SPAN, 1, 0.0);
    qgm__relu_backward(dout, b->out, unit_maps(b->b, n));
    qgm__layer_mark(&sp, 1);
    unit_backward(m, b->b, params, cnhw(b->a->norm, n, hw_mid), n, dout,
                  grad, t2, t1);
    unit_backward(m, b->a, params, in, n, t2, grad, din, t1);
    size_t count = b->a->conv.cin * n * hw_in;
    if (b->shortcut)
      unit_backward(m, b->shortcut, params, in, n, dout, grad, t2, t1);
    sp = span_begin(RESIDUAL_SPAN, 1, 0.0);
    qgm_vec_axpy(din, 1.0f, b->shortcut ? t2 : dout, count);
    qgm__layer_mark(&sp, 1);
    float *swap = dout;
    dout = din;
    din = swap;
  }
  unit_t *stem = &m->units[0];
  qgm__maps_t images = {x, stem->conv.cin * stem->conv.h * stem->conv.w,
                       stem->conv.h * stem->conv.w};
  unit_backward(m, stem, params, images, n, dout, grad, NULL, t1);
}

static const qgm__model_ops_t resnet_ops = {
    .destroy = resnet_destroy,
    .init_params = resnet_init_params,
    .forward = resnet_forward,
    .backward = resnet_backward,
};

/* Adds a unit reading cin maps of h x w; returns it. */
static unit_t *add_unit(resnet_t *m, size_t *params, size_t cin, size_t h,
                        size_t w, size_t cout, size_t k, size_t stride) {
  unit_t *u = &m->units[m->nunits++];
  u->conv = (qgm__conv_t){.cin = cin, .h = h, .w = w, .cout = cout, .k = k,
                         .stride = stride, .pad = k / 2};
  qgm__conv_init(&u->conv);
  snprintf(u->name, sizeof u->name, "conv%zux%zu %zu>%zu %zux%zu/%zu", k, k,
           cin, cout, h, w, stride);
  u->off_w = *params;
  u->off_gamma = u->off_w + qgm__conv_num_weights(&u->conv);
  u->off_beta = u->off_gamma + cout;
  *params = u->off_beta + cout;
  return u;
}

static void build(resnet_t *m, size_t channels, size_t h, size_t w) {
  size_t params = 0;
  add_unit(m, &params, channels, h, w, 16, 3, 1)->relu = 1; /* the stem */
  size_t cin = 16;
  for (size_t i = 0; i < RESNET_BLOCKS; i++) {
    size_t stage = i / 3, cout = (size_t)16 << stage;
    size_t stride = (i % 3 == 0 && stage > 0) ? 2 : 1;
    block_t *b = &m->blocks[i];
    b->a = add_unit(m, &params, cin, h, w, cout, 3, stride);
    b->a->relu = 1;
    h = b->a->conv.oh;
    w = b->a->conv.ow;
    b->b = add_unit(m, &params, cout, h, w, cout, 3, 1);
    if (stride != 1 || cin != cout)
      b->shortcut = add_unit(m, &params, cin, b->a->conv.h, b->a->conv.w,
                             cout, 1, stride);
    cin = cout;
  }
  m->off_head = params;
}

static void layout(void *owner, qgm__carver_t *c) {
  resnet_t *m = owner;
  size_t nb = m->base.max_batch, widest = 0, scratch = 0;
  for (size_t i = 0; i < m->nunits; i++) {
    unit_t *u = &m->units[i];
    if (qgm__conv_scratch_floats(&u->conv) > scratch)
      scratch = qgm__conv_scratch_floats(&u->conv);
    size_t maps = unit_maps(u, nb), in = u->conv.cin * nb * u->conv.h *
                                             u->conv.w;
    u->out = qgm__carve(c, maps);
    u->norm = qgm__carve(c, maps);
    u->stats = qgm__carve(c, 2 * nb * RESNET_GROUPS);
    if (maps > widest)
      widest = maps;
    if (in > widest)
      widest = in;
  }
  const float *prev = m->units[0].norm;
  for (size_t i = 0; i < RESNET_BLOCKS; i++) {
    m->blocks[i].in = prev;
    m->blocks[i].out = qgm__carve(c, unit_maps(m->blocks[i].b, nb));
    prev = m->blocks[i].out;
  }
  for (size_t i = 0; i < 4; i++)
    m->grad[i] = qgm__carve(c, widest);
  m->pooled = qgm__carve(c, nb * 64);
  m->dpooled = qgm__carve(c, nb * 64);
  m->col = qgm__carve(c, scratch);
  m->pack = qgm__carve(c, QGM__GEMM_PACK_FLOATS);
}

int qgm__resnet_create(const qgm_model_spec_t *spec, qgm_model_t **out) {
  *out = NULL;
  /* Two stride-2 stages need maps of at least 4 x 4. */
  if (spec->channels == 0 || spec->channels > 64 || spec->height < 4 ||
      spec->width < 4 || spec->height > 1024 || spec->width > 1024 ||
      spec->classes == 0 || spec->classes > 4096 || spec->max_batch == 0 ||
      spec->max_batch > RESNET_MAX_BATCH)
    return QGM_EINVAL;
  resnet_t *m = calloc(1, sizeof *m);
  if (!m)
    return QGM_ENOMEM;
  m->base.max_batch = spec->max_batch;
  build(m, spec->channels, spec->height, spec->width);
  int rc = qgm_mlp_create(64, NULL, 0, spec->classes, spec->max_batch,
                          &m->head);
  if (rc == 0) {
    m->arena = qgm__arena_build(m, layout);
    rc = m->arena ? 0 : QGM_ENOMEM;
  }
  if (rc != 0) {
    resnet_destroy(&m->base);
    return rc;
  }
  qgm__mlp_set_input_grad(m->head, m->dpooled);
  m->base.ops = &resnet_ops;
  m->base.num_params = m->off_head + qgm_model_num_params(m->head);
  m->base.input_dim = spec->channels * spec->height * spec->width;
  m->base.classes = spec->classes;
  *out = &m->base;
  return QGM_OK;
}
