/* gemm_avx512.c - the AVX-512 register tiles: 8 x 32 for qgm__gemm and the
 * 4 x 4 dot-product tile of qgm__gemm_nt. Built with
 * -mavx512f -mfma and only called after gemm.c has checked the CPU.
 *
 * Sixteen accumulators (8 rows x two 16-float vectors) keep 16 FMAs
 * independent, twice what two FMA pipes of latency 4 need; 8 rows make a
 * 64-sample batch an exact number of tiles. */
#include "nn/gemm.h"

#if defined(__x86_64__) && defined(__AVX512F__)
#include <immintrin.h>

#define ROW(r)                                                                \
  do {                                                                        \
    __m512 ar = _mm512_set1_ps(a[(r) * rs]);                                  \
    c##r##0 = _mm512_fmadd_ps(ar, b0, c##r##0);                               \
    c##r##1 = _mm512_fmadd_ps(ar, b1, c##r##1);                               \
  } while (0)

#define STORE(r)                                                              \
  do {                                                                        \
    float *cr = c + (r) * ldc;                                                \
    if (add) {                                                                \
      c##r##0 = _mm512_add_ps(c##r##0, _mm512_loadu_ps(cr));                  \
      c##r##1 = _mm512_add_ps(c##r##1, _mm512_loadu_ps(cr + 16));             \
    }                                                                         \
    _mm512_storeu_ps(cr, c##r##0);                                            \
    _mm512_storeu_ps(cr + 16, c##r##1);                                       \
  } while (0)

/* A's row r, step p at a[r * rs + p * cs]: constants once inlined, so
 * the packed sliver's loop is what it would be written alone. */
static inline __attribute__((always_inline)) void
tile_8x32(size_t k, const float *a, size_t rs, size_t cs, const float *b,
          float *c, size_t ldc, int add) {
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00,
         c20 = c00, c21 = c00, c30 = c00, c31 = c00, c40 = c00, c41 = c00,
         c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
  for (size_t p = 0; p < k; p++) {
    __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
    ROW(0);
    ROW(1);
    ROW(2);
    ROW(3);
    ROW(4);
    ROW(5);
    ROW(6);
    ROW(7);
    a += cs;
    b += 32;
  }
  STORE(0);
  STORE(1);
  STORE(2);
  STORE(3);
  STORE(4);
  STORE(5);
  STORE(6);
  STORE(7);
}

void qgm__gemm_kernel_avx512_8x32(size_t k, const float *a, size_t lda,
                                 const float *b, float *c, size_t ldc,
                                 int add) {
  if (lda == 0)
    tile_8x32(k, a, 1, QGM__GEMM_AVX512_MR, b, c, ldc, add);
  else
    tile_8x32(k, a, lda, 1, b, c, ldc, add);
}

/* Sixteen accumulators again, each a 16-lane partial dot product; eight
 * loads feed sixteen FMAs, and the k % 16 tail is one masked step. The
 * loops over the tile are unrolled by hand-given pragmas: left to itself,
 * gcc keeps the accumulator array on the stack and stores all sixteen
 * every iteration. */
#define NT_STEP(load)                                                         \
  do {                                                                        \
    __m512 bv[4];                                                             \
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) bv[j] = load(b[j]);   \
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {                     \
      __m512 av = load(a[i]);                                                 \
      _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)                     \
          acc[4 * i + j] = _mm512_fmadd_ps(av, bv[j], acc[4 * i + j]);          \
    }                                                                         \
  } while (0)

/* The sixteen sums of v[0..15], sum i in lane i: pairs of vectors folded
 * into one, 45 shuffles and adds where a horizontal sum apiece takes
 * about 130 (a product of k = 32 to 128, Winograd's weight gradient,
 * spends a third of its time on them). First within 128-bit lanes: two
 * sums per vector, then four; then across those lanes. */
static inline __m512 reduce16(const __m512 v[16]) {
  __m512 two[8], four[4], eight[2];
  _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) two[i] = _mm512_add_ps(
      _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]),
      _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) four[i] = _mm512_add_ps(
      _mm512_shuffle_ps(two[2 * i], two[2 * i + 1], _MM_SHUFFLE(1, 0, 1, 0)),
      _mm512_shuffle_ps(two[2 * i], two[2 * i + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  _Pragma("GCC unroll 2") for (int i = 0; i < 2; i++) eight[i] =
      _mm512_add_ps(_mm512_shuffle_f32x4(four[2 * i], four[2 * i + 1],
                                         _MM_SHUFFLE(2, 0, 2, 0)),
                    _mm512_shuffle_f32x4(four[2 * i], four[2 * i + 1],
                                         _MM_SHUFFLE(3, 1, 3, 1)));
  return _mm512_add_ps(
      _mm512_shuffle_f32x4(eight[0], eight[1], _MM_SHUFFLE(2, 0, 2, 0)),
      _mm512_shuffle_f32x4(eight[0], eight[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

void qgm__gemm_nt_avx512_4x4(size_t k, const float *const *a,
                            const float *const *b, float *out) {
  __m512 acc[16]; /* row i of a, row j of b: acc[4 * i + j] */
  _Pragma("GCC unroll 16") for (int t = 0; t < 16; t++) acc[t] =
      _mm512_setzero_ps();
  size_t p = 0;
#define FULL(row) _mm512_loadu_ps((row) + p)
  for (; p + 16 <= k; p += 16)
    NT_STEP(FULL);
  if (p < k) {
    __mmask16 mask = (__mmask16)((1u << (k - p)) - 1);
#define MASKED(row) _mm512_maskz_loadu_ps(mask, (row) + p)
    NT_STEP(MASKED);
  }
  _mm512_storeu_ps(out, reduce16(acc));
}

#else
/* Not reachable: gemm.c only selects these kernels on x86-64 with
 * AVX-512. */
void qgm__gemm_kernel_avx512_8x32(size_t k, const float *a, size_t lda,
                                 const float *b, float *c, size_t ldc,
                                 int add) {
  (void)k, (void)a, (void)lda, (void)b, (void)c, (void)ldc, (void)add;
}

void qgm__gemm_nt_avx512_4x4(size_t k, const float *const *a,
                            const float *const *b, float *out) {
  (void)k, (void)a, (void)b, (void)out;
}
#endif
