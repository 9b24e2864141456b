/* conv_direct.h - stride-1 convolutions computed straight from the input
 * maps, with the output channels across the vector lanes (conv_direct.c);
 * not installed.
 *
 * The im2col paths of conv.c run one product over a column matrix they
 * first copy out of the input, in the GEMM kernel's packed layout. Where
 * output rows are short (LeNet's second convolution: rows of 10 pixels out
 * of a 14-wide map) that copy costs almost as much as the product. Here
 * the lanes hold a block of output channels, so the input side of every
 * multiply-add is one float broadcast from wherever it lies in the maps,
 * and nothing is copied: a tile of output pixels keeps one vector per
 * pixel, and each weight vector read feeds the whole tile. The weight
 * gradient is the same product with the output gradient's channels across
 * the lanes. Both need the output channels to be a multiple of the vector
 * width; conv.c takes these paths where they fit and the kernel plan gives
 * the convolution an x86 vector kernel (not BLIS). */
#ifndef QGM_CONV_DIRECT_H
#define QGM_CONV_DIRECT_H

#include <stddef.h>

#include "nn/isa.h"
#include "nn/layers.h"

/* The largest kernel size the direct paths unroll for. */
#define QGM__DIRECT_MAX_K 7

/* 1 if the direct paths take cv on `kernel`: stride 1, k at most
 * QGM__DIRECT_MAX_K, output channels a multiple of the kernel's vector
 * width, and its scratch within qgm__conv_scratch_floats(cv). */
int qgm__direct_fits(const qgm__conv_t *cv, qgm__kernel_t kernel);

/* out (CNHW: channel co of sample s at out + co*n*oh*ow + s*oh*ow) = the
 * convolution of in with w (cout x cin*k*k), plus bias (cout; may be
 * NULL). scratch: qgm__conv_scratch_floats(cv) floats. */
void qgm__direct_forward(const qgm__conv_t *cv, qgm__kernel_t kernel,
                        const float *w, const float *bias, qgm__maps_t in,
                        size_t n, float *out, float *scratch);

/* dw (cout x cin*k*k) = the weight gradient from dout (CNHW, as out
 * above). scratch as for qgm__direct_forward. */
void qgm__direct_weight_grad(const qgm__conv_t *cv, qgm__kernel_t kernel,
                            qgm__maps_t in, size_t n, const float *dout,
                            float *dw, float *scratch);

/* ------------------------------------------------ the kernels per width */

/* One sample's maps as the kernels read them: channel c, row y, column x
 * at in[c * chan + y * rs + x] (the padded copy where cv pads). */
typedef struct qgm_direct_geometry {
  size_t cin, k, oh, ow;
  size_t chan, rs;
} qgm__direct_geometry_t;

/* One sample, one block of VW output channels (16 for AVX-512, 8 for
 * AVX2): out (channel j of the block at out + j*total) = the convolution
 * of in with wt (cin*k*k rows of VW floats), plus bias (VW; may be NULL). */
void qgm__direct_forward_sample_avx512(const qgm__direct_geometry_t *g,
                                      const float *in, const float *wt,
                                      const float *bias, float *out,
                                      size_t total);
void qgm__direct_forward_sample_avx2(const qgm__direct_geometry_t *g,
                                    const float *in, const float *wt,
                                    const float *bias, float *out,
                                    size_t total);
/* acc (cin*k*k rows of VW floats) += the weight gradient of one sample
 * and block, from dt (its oh*ow pixels' VW output gradients). */
void qgm__direct_weight_grad_sample_avx512(const qgm__direct_geometry_t *g,
                                          const float *in, const float *dt,
                                          float *acc);
void qgm__direct_weight_grad_sample_avx2(const qgm__direct_geometry_t *g,
                                        const float *in, const float *dt,
                                        float *acc);
/* The row paths, for any number of output channels: one sample's out
 * (channel co at out + co*total) from its padded maps `in` (followed by a
 * vector of slack) and w (cout x cin*k*k), plus bias (may be NULL); and
 * acc (cout*cin*k*k vectors of partial sums, VW floats each) += its
 * weight gradient from dout (channel co at dout + co*total). */
void qgm__direct_rows_forward_sample_avx512(const qgm__direct_geometry_t *g,
                                           size_t cout, const float *in,
                                           const float *w, const float *bias,
                                           float *out, size_t total);
void qgm__direct_rows_forward_sample_avx2(const qgm__direct_geometry_t *g,
                                         size_t cout, const float *in,
                                         const float *w, const float *bias,
                                         float *out, size_t total);
void qgm__direct_rows_weight_grad_sample_avx512(
    const qgm__direct_geometry_t *g, size_t cout, const float *in,
    const float *dout, size_t total, float *acc);
void qgm__direct_rows_weight_grad_sample_avx2(
    const qgm__direct_geometry_t *g, size_t cout, const float *in,
    const float *dout, size_t total, float *acc);

#endif /* QGM_CONV_DIRECT_H */
