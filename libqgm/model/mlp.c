/* mlp.c - the multi-layer perceptron model kind: fully connected layers with
 * ReLU between them, on qgm__gemm.
 *
 * Parameters are the caller's flat vector, layer by layer: weight (out x in,
 * row-major, as PyTorch's nn.Linear stores it) then bias (out). The model
 * only owns an arena of activations sized for max_batch, so a node can keep
 * one model and point it at any parameter vector (its own, a peer's, an
 * average) without copies. */
#include <math.h>
#include <stdlib.h>

#include "nn/gemm.h"
#include "core/internal.h"
#include "nn/layers.h"
#include "model/model.h"
#include "qgm.h"

#define MLP_MAX_HIDDEN 8
#define MLP_MAX_LAYERS (MLP_MAX_HIDDEN + 1)
_Static_assert(MLP_MAX_LAYERS <= QGM__MODEL_MAX_MATRICES,
               "every layer's weights are one of the model's matrices");

typedef struct mlp {
  qgm_model_t base; /* first, so a qgm_model_t * converts back */
  size_t nlayers;
  /* dims[0] = input, dims[1..nlayers-1] = hidden, dims[nlayers] = classes */
  size_t dims[MLP_MAX_LAYERS + 1];
  size_t w_off[MLP_MAX_LAYERS];
  size_t b_off[MLP_MAX_LAYERS];
  float *arena;
  /* act[l]: layer l's output for the batch, n x dims[l + 1], after ReLU for
   * hidden layers; act[nlayers - 1] holds the logits, then their gradient. */
  float *act[MLP_MAX_LAYERS];
  /* Back-propagated gradients at hidden layers alternate between these two,
   * since layer l's gradient is computed from layer l+1's. */
  float *delta[2];
  float *pack;   /* qgm__gemm's packing scratch */
  float *dinput; /* where backward puts d(loss)/d(input), or NULL */
} mlp_t;

static mlp_t *as_mlp(qgm_model_t *model) { return (mlp_t *)model; }

static const mlp_t *as_const_mlp(const qgm_model_t *model) {
  return (const mlp_t *)model;
}

static void mlp_destroy(qgm_model_t *model) {
  mlp_t *m = as_mlp(model);
  free(m->arena);
  free(m);
}

static void mlp_init_params(const qgm_model_t *model, float *params,
                            qgm_rng_t *rng) {
  const mlp_t *m = as_const_mlp(model);
  for (size_t l = 0; l < m->nlayers; l++)
    qgm__init_uniform(params + m->w_off[l],
                     m->dims[l] * m->dims[l + 1] + m->dims[l + 1], m->dims[l],
                     rng);
}

static float *mlp_forward(qgm_model_t *model, const float *params,
                          const float *x, size_t n) {
  mlp_t *m = as_mlp(model);
  const float *in = x;
  for (size_t l = 0; l < m->nlayers; l++) {
    size_t din = m->dims[l], dout = m->dims[l + 1];
    float *out = m->act[l];
    /* out = in * W^T: W is dout x din row-major, so reading it with row
     * stride 1 and column stride din is W^T in place. */
    qgm__gemm(n, dout, din, in, (ptrdiff_t)din, 1, params + m->w_off[l], 1,
             (ptrdiff_t)din, QGM__GEMM_SET, out, dout, m->pack);
    /* Bias and ReLU in one pass while the rows are still in cache. */
    qgm__rows_add_bias(out, params + m->b_off[l], n, dout,
                      l + 1 < m->nlayers);
    in = out;
  }
  return m->act[m->nlayers - 1];
}

static void mlp_backward(qgm_model_t *model, const float *params,
                         const float *x, size_t n, float *grad) {
  mlp_t *m = as_mlp(model);
  float *d = m->act[m->nlayers - 1];
  for (size_t l = m->nlayers; l-- > 0;) {
    size_t din = m->dims[l], dout = m->dims[l + 1];
    const float *in = l > 0 ? m->act[l - 1] : x;

    /* dW = d^T * in: d is n x dout row-major, read transposed by swapping
     * its strides. */
    qgm__gemm(dout, din, n, d, 1, (ptrdiff_t)dout, in, (ptrdiff_t)din, 1,
             QGM__GEMM_SET, grad + m->w_off[l], din, m->pack);

    qgm__rows_sum(grad + m->b_off[l], d, n, dout);

    /* Upstream of the input only a network feeding this MLP needs a
     * gradient. */
    if (l == 0 && m->dinput == NULL)
      break;

    /* The gradient at the previous layer's output: d * W, then through its
     * ReLU. act > 0 exactly where the pre-activation was > 0, so the stored
     * output doubles as the mask and no pre-activation is kept. */
    float *nd = l == 0 ? m->dinput : m->delta[(m->nlayers - 1 - l) & 1];
    qgm__gemm(n, din, dout, d, (ptrdiff_t)dout, 1, params + m->w_off[l],
             (ptrdiff_t)din, 1, QGM__GEMM_SET, nd, din, m->pack);
    if (l > 0)
      qgm__relu_backward(nd, in, n * din);
    d = nd;
  }
}

void qgm__mlp_set_input_grad(qgm_model_t *model, float *dinput) {
  as_mlp(model)->dinput = dinput;
}

static const qgm__model_ops_t mlp_ops = {
    .destroy = mlp_destroy,
    .init_params = mlp_init_params,
    .forward = mlp_forward,
    .backward = mlp_backward,
};

/* a + b, or 0 if that overflows (callers never add to a real 0 size). */
static size_t add_size(size_t a, size_t b) {
  return a > (size_t)-1 - b ? 0 : a + b;
}

/* Room for a max_batch x width buffer, rounded up to whole 64-byte lines so
 * that every buffer carved from the arena stays aligned; 0 on overflow. */
static size_t arena_slot(size_t max_batch, size_t width) {
  size_t floats = qgm__mul_size(max_batch, width);
  if (floats == 0)
    return 0;
  floats = add_size(floats, 15);
  return floats == 0 ? 0 : floats & ~(size_t)15;
}

int qgm_mlp_create(size_t input, const size_t *hidden, size_t nhidden,
                   size_t classes, size_t max_batch, qgm_model_t **out) {
  if (out == NULL)
    return QGM_EINVAL;
  *out = NULL;
  if (nhidden > MLP_MAX_HIDDEN || (nhidden > 0 && hidden == NULL) ||
      input == 0 || input > QGM__MODEL_DIM_MAX || classes == 0 ||
      classes > QGM__MODEL_DIM_MAX || max_batch == 0 ||
      max_batch > QGM__MODEL_DIM_MAX)
    return QGM_EINVAL;
  for (size_t i = 0; i < nhidden; i++)
    if (hidden[i] == 0 || hidden[i] > QGM__MODEL_DIM_MAX)
      return QGM_EINVAL;

  mlp_t *m = calloc(1, sizeof *m);
  if (m == NULL)
    return QGM_ENOMEM;
  m->nlayers = nhidden + 1;
  m->dims[0] = input;
  for (size_t i = 0; i < nhidden; i++)
    m->dims[i + 1] = hidden[i];
  m->dims[m->nlayers] = classes;

  /* Sizes are checked even though the dimension cap makes 64-bit overflow
   * impossible, because size_t may be 32 bits. */
  size_t params = 0, arena = 0, widest = 0;
  int overflow = 0;
  for (size_t l = 0; l < m->nlayers && !overflow; l++) {
    size_t din = m->dims[l], dout = m->dims[l + 1];
    size_t weights = qgm__mul_size(din, dout);
    m->w_off[l] = params;
    /* PyTorch's Linear weight: dout rows of din inputs. */
    m->base.matrices[l] = (qgm_matrix_block_t){params, dout, din};
    m->b_off[l] = add_size(params, weights);
    params = add_size(m->b_off[l], dout);
    size_t slot = arena_slot(max_batch, dout);
    arena = add_size(arena, slot);
    if (weights == 0 || m->b_off[l] == 0 || params == 0 || slot == 0 ||
        arena == 0)
      overflow = 1;
    if (l + 1 < m->nlayers && dout > widest)
      widest = dout;
  }
  size_t delta_slot = 0;
  if (!overflow && widest > 0) {
    delta_slot = arena_slot(max_batch, widest);
    arena = add_size(arena, qgm__mul_size(delta_slot, 2));
    if (delta_slot == 0 || qgm__mul_size(delta_slot, 2) == 0 || arena == 0)
      overflow = 1;
  }
  arena = add_size(arena, QGM__GEMM_PACK_FLOATS);
  if (overflow || arena == 0) {
    free(m);
    return QGM_EINVAL;
  }

  m->arena = qgm_alloc_floats(arena);
  if (m->arena == NULL) {
    free(m);
    return QGM_ENOMEM;
  }
  float *p = m->arena;
  for (size_t l = 0; l < m->nlayers; l++) {
    m->act[l] = p;
    p += arena_slot(max_batch, m->dims[l + 1]);
  }
  m->delta[0] = widest > 0 ? p : NULL;
  m->delta[1] = widest > 0 ? p + delta_slot : NULL;
  m->pack = p + 2 * delta_slot;

  m->base.nmatrices = m->nlayers;
  m->base.ops = &mlp_ops;
  m->base.num_params = params;
  m->base.input_dim = input;
  m->base.classes = classes;
  m->base.max_batch = max_batch;
  *out = &m->base;
  return QGM_OK;
}
