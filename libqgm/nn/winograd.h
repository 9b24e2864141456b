/* winograd.h - 3x3 stride-1 convolutions as Winograd F(4x4, 3x3)
 * (winograd.c); conv.c's path for them where the kernel plan says so.
 * Not installed. */
#ifndef QGM_WINOGRAD_H
#define QGM_WINOGRAD_H

#include <stddef.h>

#include "nn/gemm.h"
#include "nn/layers.h"

/* 1 if cv is a convolution this path computes: 3x3, stride 1, padding 1,
 * at least 8 input and 8 output channels. */
int qgm__winograd_fits(const qgm__conv_t *cv);
/* The scratch the two passes below need, in floats (cv fits). */
size_t qgm__winograd_scratch_floats(const qgm__conv_t *cv);
/* As qgm__conv_forward without a bias; scratch holds
 * qgm__winograd_scratch_floats(cv) floats, pack QGM__GEMM_PACK_FLOATS. */
void qgm__winograd_forward(const qgm__conv_t *cv, const float *w,
                          qgm__maps_t in, size_t n, float *out, float *scratch,
                          float *pack);
/* As qgm__conv_backward without a bias gradient: dw, and dx if not NULL. */
void qgm__winograd_backward(const qgm__conv_t *cv, const float *w,
                           qgm__maps_t in, size_t n, const float *dout,
                           float *dw, float *dx, float *scratch, float *pack);

/* ----------------------------- between winograd.c and winograd_avx2.c */

enum {
  QGM__WINO_M = 4,      /* a tile: 4 x 4 output pixels */
  QGM__WINO_ALPHA = 6,  /* its window: 6 x 6 input pixels */
  QGM__WINO_XI = 36,    /* positions of a transformed window */
  QGM__WINO_LANES = 8,  /* tiles the transforms take at once */
  QGM__WINO_ROUND = QGM__GEMM_NR_MAX, /* a multiple of every kernel's
                                         sliver width */
  QGM__WINO_PAD_SLACK = 8, /* floats past the padded planes windows touch */
};

/* The tiles of a convolution and the padded planes they read. */
typedef struct qgm_wino_geom {
  size_t th, tw, tiles; /* tiles per sample: th x tw */
  size_t ph, pw, chan;  /* a padded plane: 4 th + 2 by 4 tw + 2 */
  size_t per_chunk;     /* samples per chunk */
  size_t t_round;       /* a chunk's tiles, rounded up to QGM__WINO_ROUND:
                           the row length of the plain matrices */
} qgm__wino_geom_t;

/* t rounded up to a multiple of QGM__WINO_ROUND. */
static inline size_t qgm__winograd_round(size_t t) {
  return (t + QGM__WINO_ROUND - 1) / QGM__WINO_ROUND * QGM__WINO_ROUND;
}

/* U[xi][co][ci] = (G g G^T)[xi] for every kernel g = w[co][ci]. */
void qgm__winograd_weights(const qgm__conv_t *cv, const float *w, float *u);
/* dw[co][ci] = G^T dU G: the gradient of qgm__winograd_weights. */
void qgm__winograd_weight_grad(const qgm__conv_t *cv, const float *du,
                              float *dw);
/* Samples [s0, s0 + ns) of `in` into zero-bordered planes of ph x pw, the
 * image at row 1, column 1 (the rows and columns past it, where the size
 * is not a multiple of 4, stay 0, as does the slack). */
void qgm__winograd_pad(const qgm__conv_t *cv, const qgm__wino_geom_t *g,
                      qgm__maps_t in, size_t s0, size_t ns, float *padded);
/* V[xi] = (B^T d B)[xi] of every tile of the ns padded samples, as cin x
 * tiles matrices `stride` floats apart, in slivers of `width` columns:
 * (c, t) at (t / width) * cin * width + c * width + t % width. width =
 * t_round is a plain row-major matrix; width = QGM__WINO_ROUND the GEMM's
 * packed B layout. Columns up to qgm__winograd_round(ns * tiles) are
 * written (those past the tiles repeat the last one). The planes are read
 * two floats past their end. */
void qgm__winograd_input(const qgm__conv_t *cv, const qgm__wino_geom_t *g,
                        size_t ns, const float *padded, float *v,
                        size_t stride, size_t width);
/* out (CNHW, n samples; the chunk's are s0 .. s0 + ns) = A^T M A, M as
 * plain cout x t_round matrices `stride` apart. */
void qgm__winograd_output(const qgm__conv_t *cv, const qgm__wino_geom_t *g,
                         size_t n, size_t s0, size_t ns, const float *m,
                         size_t stride, float *out);
/* dM = A dY A^T from dout (CNHW): the gradient of qgm__winograd_output. */
void qgm__winograd_output_grad(const qgm__conv_t *cv, const qgm__wino_geom_t *g,
                              size_t n, size_t s0, size_t ns,
                              const float *dout, float *dm, size_t stride);
/* dx (CNHW) of the chunk's samples from dV = the gradient at V (plain
 * cin x t_round matrices), through the padded planes (scratch, written two
 * floats past their end). */
void qgm__winograd_input_grad(const qgm__conv_t *cv, const qgm__wino_geom_t *g,
                             size_t n, size_t s0, size_t ns, const float *dv,
                             size_t stride, float *padded, float *dx);

#endif /* QGM_WINOGRAD_H */
