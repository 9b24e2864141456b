/* model.h - the contract between the generic qgm_model_* entry points
 * (model.c) and each model kind (mlp.c, later lenet.c, resnet.c); not
 * installed.
 *
 * A kind only maps a batch to logits and logit gradients to parameter
 * gradients. The loss, its gradient at the logits, argmax and chunking live
 * once in model.c, so every kind gets the same numerics and the same
 * argument checks, and adding a kind touches no other kind's file. */
#ifndef QGM_MODEL_H
#define QGM_MODEL_H

#include <stddef.h>

#include "qgm.h"

typedef struct qgm_model_ops {
  /* Releases the kind's state and the model itself (it owns the memory
   * of the struct that embeds qgm_model_t). */
  void (*destroy)(qgm_model_t *model);
  /* Draws every parameter from rng, in layout order. */
  void (*init_params)(const qgm_model_t *model, float *params,
                      qgm_rng_t *rng);
  /* Logits of n <= max_batch samples (row-major n x classes), in the
   * model's arena; valid until the next forward. */
  float *(*forward)(qgm_model_t *model, const float *params, const float *x,
                    size_t n);
  /* Given d(loss)/d(logits) in the buffer the last forward returned (it
   * may be overwritten), writes d(loss)/d(params) to grad. Must follow a
   * forward on the same params, x and n. */
  void (*backward)(qgm_model_t *model, const float *params, const float *x,
                   size_t n, float *grad);
} qgm__model_ops_t;

/* The common head of every model kind; a kind embeds it as its first
 * member so that a qgm_model_t * converts back to the kind's struct. */
#define QGM__MODEL_MAX_MATRICES 16

struct qgm_model {
  const qgm__model_ops_t *ops;
  size_t num_params;
  size_t input_dim;
  size_t classes;
  size_t max_batch;
  /* The weight matrices of the parameter vector (qgm_model_matrices),
   * which a kind lists when it builds its layout. */
  qgm_matrix_block_t matrices[QGM__MODEL_MAX_MATRICES];
  size_t nmatrices;
};

/* The largest width, class count or batch any kind accepts: it keeps every
 * dimension and stride exact in BLIS's signed dim_t/inc_t and leaves
 * products of two of them far from size_t overflow on 64-bit hosts. */
#define QGM__MODEL_DIM_MAX ((size_t)1 << 30)

/* Makes later backward passes of an MLP (from qgm_mlp_create) also write
 * d(loss)/d(input), n x input, to dinput (NULL: stop): how a network that
 * ends in fully connected layers reuses the MLP as its head. */
void qgm__mlp_set_input_grad(qgm_model_t *mlp, float *dinput);

/* Draws n values uniform in +-1/sqrt(fan_in): PyTorch's default for the
 * weights and biases of Linear and Conv2d layers. */
void qgm__init_uniform(float *p, size_t n, size_t fan_in, qgm_rng_t *rng);

/* The kinds behind qgm_model_create. */
int qgm__lenet_create(const qgm_model_spec_t *spec, qgm_model_t **out);
int qgm__resnet_create(const qgm_model_spec_t *spec, qgm_model_t **out);
int qgm__linear_create(const qgm_model_spec_t *spec, qgm_model_t **out);

#endif /* QGM_MODEL_H */
