/* layers.h - the layer kernels the convolutional model kinds are built
 * from (act.c, conv.c, pool.c, groupnorm.c); not installed.
 *
 * Kernels take pointers and sizes and own no memory. Inside a network,
 * feature maps are stored channel-major over the whole batch (C x N x H x
 * W, "CNHW"), so that a convolution of the whole batch is one matrix
 * product W (Cout x Cin*k*k) * columns (Cin*k*k x N*H*W) whose result is
 * already the next layer's input: no transposes between layers. Model
 * inputs (N x C x H x W, "NCHW") enter through the first convolution,
 * which reads any layout through a sample and a channel stride. */
#ifndef QGM_LAYERS_H
#define QGM_LAYERS_H

#include <stddef.h>

#include "core/internal.h"
#include "qgm.h"

/* ------------------------------------------------------------ elementwise */

/* Each row of a rows x cols matrix += bias (cols), then ReLU if relu. */
void qgm__rows_add_bias(float *restrict x, const float *restrict bias,
                       size_t rows, size_t cols, int relu);
/* out[j] = sum over rows of x[i][j] (a bias gradient of row-major data). */
void qgm__rows_sum(float *restrict out, const float *restrict x, size_t rows,
                  size_t cols);
/* The sum of n floats, in sixteen vectorisable partial sums. */
double qgm__sum(const float *restrict x, size_t n);
/* out[i] = sum over cols of x[i][j] (a bias gradient of CNHW data). */
void qgm__cols_sum(float *restrict out, const float *restrict x, size_t rows,
                  size_t cols);
void qgm__relu(float *restrict x, size_t n);
/* out = relu(a + b): a residual connection. */
void qgm__add_relu(float *restrict out, const float *restrict a,
                  const float *restrict b, size_t n);
/* d[i] = 0 where the ReLU output y[i] is 0 (y > 0 iff its input was). */
void qgm__relu_backward(float *restrict d, const float *restrict y, size_t n);
/* CNHW (c x n x hw) <-> NCHW rows (n x c*hw), for the flatten before a
 * linear layer and its gradient. */
void qgm__cnhw_to_rows(float *restrict rows, const float *restrict x,
                      size_t c, size_t n, size_t hw);
void qgm__rows_to_cnhw(float *restrict x, const float *restrict rows,
                      size_t c, size_t n, size_t hw);

/* ------------------------------------------------------------ convolution */

typedef struct qgm_conv {
  size_t cin, h, w;   /* input maps */
  size_t cout, k;     /* k x k kernels */
  size_t stride, pad; /* zero padding on every side */
  size_t oh, ow;      /* output maps (set by qgm__conv_init) */
} qgm__conv_t;

/* The column matrix's share of a convolution's scratch, in floats: the
 * products run over column chunks of this size, so that the columns stay
 * in L2 whatever the batch. */
#define QGM__CONV_COL_FLOATS ((size_t)1 << 18)
#define QGM__CONV_MAX_K 11

/* Fills oh, ow; 0, or -1 when the kernel does not fit the padded input or
 * the column matrix of 32 output pixels (one sliver of the widest GEMM
 * tile) exceeds the scratch: cin * k * k <= QGM__CONV_COL_FLOATS / 32. */
int qgm__conv_init(qgm__conv_t *cv);
size_t qgm__conv_num_weights(const qgm__conv_t *cv); /* cout * cin * k * k */
/* The path and kernel the kernel plan gives cv now, as "winograd-avx2" or
 * "direct-avx512" (the layer spans'); valid until the thread's next call. */
const char *qgm__conv_path(const qgm__conv_t *cv);
/* The `col` scratch the convolution needs, in floats: the column chunk
 * plus one zero-bordered copy of a sample's input maps and k floats. */
size_t qgm__conv_scratch_floats(const qgm__conv_t *cv);

/* Where sample s, channel c of an n-sample input starts: x + s*sn + c*sc
 * (NCHW: sn = C*H*W, sc = H*W; CNHW: sn = H*W, sc = N*H*W). */
typedef struct qgm_maps {
  const float *x;
  size_t sn, sc;
} qgm__maps_t;

/* Copies sample s's input maps (x + s*sn + c*sc) into the interior of
 * cin zero-bordered maps of (h + 2 pad) x (w + 2 pad) at dst, whose
 * borders the caller has zeroed. */
void qgm__conv_pad_sample(const qgm__conv_t *cv, const float *x, size_t sn,
                         size_t sc, size_t s, float *dst);

/* out (CNHW: cout x n x oh x ow) = conv(in) [+ bias if not NULL]. w is
 * cout x cin x k x k, as PyTorch's Conv2d stores it. */
void qgm__conv_forward(const qgm__conv_t *cv, const float *w, const float *bias,
                      qgm__maps_t in, size_t n, float *out, float *col,
                      float *pack);
/* From dout (CNHW), writes dw and dbias (if not NULL) and, if dx is not
 * NULL, dx in CNHW (cin x n x h x w). */
void qgm__conv_backward(const qgm__conv_t *cv, const float *w, qgm__maps_t in,
                       size_t n, const float *dout, float *dw, float *dbias,
                       float *dx, float *col, float *pack);

/* ---------------------------------------------------------------- pooling */

/* 2 x 2 max pooling, stride 2, over planes of h x w (h, w even); out holds
 * planes x h/2 x w/2, with relu the pooling of ReLU(x) (the ReLU fused:
 * no pass of its own over the maps). The backward pass finds each
 * window's maximum again (first one on ties, as the forward did) instead
 * of storing indices. ReLU and pooling commute, so the gradient of the
 * fused pass is qgm__relu_backward on the pooled gradient and output,
 * then qgm__maxpool2_backward from x: the same floats as the two layers
 * one after the other. */
void qgm__maxpool2_forward(const float *x, size_t planes, size_t h, size_t w,
                          int relu, float *out);
void qgm__maxpool2_backward(const float *x, size_t planes, size_t h, size_t w,
                           const float *dout, float *dx);
/* Global average pooling of CNHW maps into rows (n x c). */
void qgm__avgpool_forward(const float *x, size_t c, size_t n, size_t hw,
                         float *rows);
void qgm__avgpool_backward(const float *drows, size_t c, size_t n, size_t hw,
                          float *dx);

/* -------------------------------------------------------------- GroupNorm */

/* GroupNorm of CNHW maps (c x n x hw): per sample, each group of c/groups
 * channels is normalised to mean 0 and variance 1 (biased variance, eps
 * 1e-5, as torch.nn.GroupNorm), then scaled by gamma and shifted by beta per
 * channel, then, if relu, through a ReLU (the same floats as qgm__relu
 * after it, in the same pass). stats holds 2 * n * groups floats (mean,
 * 1/std) for the backward pass. */
void qgm__groupnorm_forward(const float *x, size_t c, size_t n, size_t hw,
                           size_t groups, const float *gamma,
                           const float *beta, int relu, float *y,
                           float *stats);
/* From dy at the output, dx, dgamma and dbeta, for the forward pass of
 * the same x, gamma, beta and relu that wrote stats. With relu, the ReLU's
 * gradient is applied to dy first, as qgm__relu_backward with that
 * pass's output would (the same mask, bit for bit). dx may be dy. */
void qgm__groupnorm_backward(const float *x, size_t c, size_t n, size_t hw,
                            size_t groups, const float *gamma,
                            const float *beta, const float *stats, int relu,
                            const float *dy, float *dx, float *dgamma,
                            float *dbeta);

/* -------------------------------------------------------------- profiling */

/* Calls the hook of qgm_set_layer_hook, if one is installed, at the start
 * (end = 0) and the end (end = 1) of a layer (profile.c). */
void qgm__layer_mark(const qgm_layer_span_t *span, int end);
/* 1 if a hook is installed: what only a hook reads (a span's path) is
 * worked out then only. */
int qgm__layer_hooked(void);

#endif /* QGM_LAYERS_H */
