/* gemm_avx2.c - the 6 x 16 AVX2/FMA register tile of qgm_gemm. Built with
 * -mavx2 -mfma and only called after gemm.c has checked the CPU for both.
 *
 * Twelve accumulators (6 rows x two 8-float vectors) plus two B vectors
 * and one broadcast A value fill 15 of the 16 ymm registers: as many
 * independent FMAs in flight as the register file allows, which is what
 * hides the FMA latency. */
#include "gemm.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#define ROW(r)                                                                \
  do {                                                                        \
    __m256 ar = _mm256_broadcast_ss(a + (r));                                 \
    c##r##0 = _mm256_fmadd_ps(ar, b0, c##r##0);                               \
    c##r##1 = _mm256_fmadd_ps(ar, b1, c##r##1);                               \
  } while (0)

#define STORE(r)                                                              \
  do {                                                                        \
    float *cr = c + (r) * ldc;                                                \
    if (add) {                                                                \
      c##r##0 = _mm256_add_ps(c##r##0, _mm256_loadu_ps(cr));                  \
      c##r##1 = _mm256_add_ps(c##r##1, _mm256_loadu_ps(cr + 8));              \
    }                                                                         \
    _mm256_storeu_ps(cr, c##r##0);                                            \
    _mm256_storeu_ps(cr + 8, c##r##1);                                        \
  } while (0)

void qgm_gemm_kernel_avx2_6x16(size_t k, const float *a, const float *b,
                               float *c, size_t ldc, int add) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00,
         c20 = c00, c21 = c00, c30 = c00, c31 = c00, c40 = c00, c41 = c00,
         c50 = c00, c51 = c00;
  for (size_t p = 0; p < k; p++) {
    __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
    ROW(0);
    ROW(1);
    ROW(2);
    ROW(3);
    ROW(4);
    ROW(5);
    a += 6;
    b += 16;
  }
  STORE(0);
  STORE(1);
  STORE(2);
  STORE(3);
  STORE(4);
  STORE(5);
}

#else
/* Not reachable: gemm.c only selects this kernel on x86-64 with AVX2. */
void qgm_gemm_kernel_avx2_6x16(size_t k, const float *a, const float *b,
                               float *c, size_t ldc, int add) {
  (void)k, (void)a, (void)b, (void)c, (void)ldc, (void)add;
}
#endif
