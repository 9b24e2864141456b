/* conv_direct_avx2.c - the direct convolution kernels (conv_direct.h)
 * on 8-float vectors. Built with -mavx2 -mfma and only called after
 * conv_direct.c has checked the kernel plan.
 *
 * A forward tile is 1 row of up to 12 pixels: 12 accumulators of the 16
 * registers, so that a weight vector read feeds 12 multiply-adds; a
 * weight-gradient tile is up to 12 taps, a row tile up to 8 vectors. */
#include "nn/conv_direct.h"

#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>

#define VEC __m256
#define VW 8
#define VZERO _mm256_setzero_ps()
#define VLOAD(p) _mm256_loadu_ps(p)
#define VSTORE(p, v) _mm256_storeu_ps((p), (v))
#define VSET1(x) _mm256_set1_ps(x)
#define VFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define MAX_PX 12
#define FWD_ROWS 1
#define DW_ACC 12
#define ROWS_ACC 8
/* The lanes below n, as the masked moves take them. */
static inline __m256i lanes_below(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#define VLOAD_PART(p, n) _mm256_maskload_ps((p), lanes_below(n))
#define VSTORE_PART(p, v, n) _mm256_maskstore_ps((p), lanes_below(n), (v))
#define KERNEL(name) name##_avx2

#include "nn/conv_direct_body.inc"

#else
/* Not reachable: conv_direct.c only selects these kernels on x86-64 with
 * AVX2. */
void qgm__direct_forward_sample_avx2(const qgm__direct_geometry_t *g,
                                      const float *in, const float *wt,
                                      const float *bias, float *out,
                                      size_t total) {
  (void)g, (void)in, (void)wt, (void)bias, (void)out, (void)total;
}

void qgm__direct_weight_grad_sample_avx2(const qgm__direct_geometry_t *g,
                                          const float *in, const float *dt,
                                          float *acc) {
  (void)g, (void)in, (void)dt, (void)acc;
}
void qgm__direct_rows_forward_sample_avx2(const qgm__direct_geometry_t *g,
                                           size_t cout, const float *in,
                                           const float *w, const float *bias,
                                           float *out, size_t total) {
  (void)g, (void)cout, (void)in, (void)w, (void)bias, (void)out, (void)total;
}

void qgm__direct_rows_weight_grad_sample_avx2(
    const qgm__direct_geometry_t *g, size_t cout, const float *in,
    const float *dout, size_t total, float *acc) {
  (void)g, (void)cout, (void)in, (void)dout, (void)total, (void)acc;
}
#endif
