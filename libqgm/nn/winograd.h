/* winograd.h - 3x3 stride-1 convolutions as Winograd F(2x2, 3x3)
 * (winograd.c); conv.c's path for them under the AVX2 kernel. Not
 * installed. */
#ifndef QGM_WINOGRAD_H
#define QGM_WINOGRAD_H

#include <stddef.h>

#include "nn/layers.h"

/* 1 if cv is a convolution this path computes: 3x3, stride 1, padding 1,
 * at least 8 input and 8 output channels. */
int qgm_winograd_fits(const qgm_conv_t *cv);
/* The scratch the two passes below need, in floats (cv fits). */
size_t qgm_winograd_scratch_floats(const qgm_conv_t *cv);
/* As qgm_conv_forward without a bias; scratch holds
 * qgm_winograd_scratch_floats(cv) floats, pack QGM_GEMM_PACK_FLOATS. */
void qgm_winograd_forward(const qgm_conv_t *cv, const float *w,
                          qgm_maps_t in, size_t n, float *out, float *scratch,
                          float *pack);
/* As qgm_conv_backward without a bias gradient: dw, and dx if not NULL. */
void qgm_winograd_backward(const qgm_conv_t *cv, const float *w,
                           qgm_maps_t in, size_t n, const float *dout,
                           float *dw, float *dx, float *scratch, float *pack);

#endif /* QGM_WINOGRAD_H */
