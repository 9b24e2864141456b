/* conv_direct_avx512.c - the direct convolution kernels (conv_direct.h)
 * on 16-float vectors. Built with -mavx512f -mfma and only called after
 * conv_direct.c has checked the kernel plan.
 *
 * A forward tile is 2 rows of up to 12 pixels: 24 accumulators, so that a
 * weight vector read feeds 24 multiply-adds whose broadcast operand comes
 * straight from memory; a weight-gradient tile is up to 24 taps, a row
 * tile up to 16 vectors. */
#include "nn/conv_direct.h"

#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>

#define VEC __m512
#define VW 16
#define VZERO _mm512_setzero_ps()
#define VLOAD(p) _mm512_loadu_ps(p)
#define VSTORE(p, v) _mm512_storeu_ps((p), (v))
#define VSET1(x) _mm512_set1_ps(x)
#define VFMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define MAX_PX 12
#define FWD_ROWS 2
#define DW_ACC 24
#define ROWS_ACC 16
#define LANES_BELOW(n) ((__mmask16)((1u << (n)) - 1u))
#define VLOAD_PART(p, n) _mm512_maskz_loadu_ps(LANES_BELOW(n), (p))
#define VSTORE_PART(p, v, n) _mm512_mask_storeu_ps((p), LANES_BELOW(n), (v))
#define KERNEL(name) name##_avx512

#include "nn/conv_direct_body.inc"

#else
/* Not reachable: conv_direct.c only selects these kernels on x86-64 with
 * AVX-512. */
void qgm__direct_forward_sample_avx512(const qgm__direct_geometry_t *g,
                                      const float *in, const float *wt,
                                      const float *bias, float *out,
                                      size_t total) {
  (void)g, (void)in, (void)wt, (void)bias, (void)out, (void)total;
}

void qgm__direct_weight_grad_sample_avx512(const qgm__direct_geometry_t *g,
                                          const float *in, const float *dt,
                                          float *acc) {
  (void)g, (void)in, (void)dt, (void)acc;
}
void qgm__direct_rows_forward_sample_avx512(const qgm__direct_geometry_t *g,
                                           size_t cout, const float *in,
                                           const float *w, const float *bias,
                                           float *out, size_t total) {
  (void)g, (void)cout, (void)in, (void)w, (void)bias, (void)out, (void)total;
}

void qgm__direct_rows_weight_grad_sample_avx512(
    const qgm__direct_geometry_t *g, size_t cout, const float *in,
    const float *dout, size_t total, float *acc) {
  (void)g, (void)cout, (void)in, (void)dout, (void)total, (void)acc;
}
#endif
