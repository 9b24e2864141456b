/* gemm_avx2.c - the AVX2/FMA register tiles: 6 x 16 for qgm__gemm and the
 * 3 x 4 dot-product tile of qgm__gemm_nt; and the packing of operands
 * whose contiguous direction is across the slivers, by 8 x 8 transposes.
 * Built with -mavx2 -mfma and only called after gemm.c has checked the CPU
 * for both.
 *
 * Twelve accumulators (6 rows x two 8-float vectors) plus two B vectors
 * and one broadcast A value fill 15 of the 16 ymm registers: as many
 * independent FMAs in flight as the register file allows, which is what
 * hides the FMA latency. */
#include "nn/gemm.h"

#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#define ROW(r)                                                                \
  do {                                                                        \
    __m256 ar = _mm256_broadcast_ss(a + (r) * rs);                            \
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

/* A's row r, step p at a[r * rs + p * cs]: constants once inlined, so
 * the packed sliver's loop is what it would be written alone. */
static inline __attribute__((always_inline)) void
tile_6x16(size_t k, const float *a, size_t rs, size_t cs, const float *b,
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
    a += cs;
    b += 16;
  }
  STORE(0);
  STORE(1);
  STORE(2);
  STORE(3);
  STORE(4);
  STORE(5);
}

void qgm__gemm_kernel_avx2_6x16(size_t k, const float *a, size_t lda,
                               const float *b, float *c, size_t ldc, int add) {
  if (lda == 0)
    tile_6x16(k, a, 1, QGM__GEMM_AVX2_MR, b, c, ldc, add);
  else
    tile_6x16(k, a, lda, 1, b, c, ldc, add);
}

/* r[0..8) as the rows of an 8 x 8 block become its columns: afterwards
 * lane j of r[i] is what lane i of r[j] was. */
static inline void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; i++) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

/* The first n <= 8 lanes of v at dst: whole, or as 4 + 2 lanes for the
 * 6-row tile (a masked store is microcoded and slow on AMD's cores). */
static inline void store_lanes(float *dst, __m256 v, size_t n) {
  if (n == 8) {
    _mm256_storeu_ps(dst, v);
  } else if (n == 6) {
    _mm_storeu_ps(dst, _mm256_castps256_ps128(v));
    _mm_storel_pi((__m64 *)(void *)(dst + 4), _mm256_extractf128_ps(v, 1));
  } else {
    float lanes[8];
    _mm256_storeu_ps(lanes, v);
    memcpy(dst, lanes, n * sizeof *dst);
  }
}

/* The first n <= 8 floats at src in a vector, the rest of its lanes 0;
 * the mirror of store_lanes. */
static inline __m256 load_lanes(const float *src, size_t n) {
  if (n == 8)
    return _mm256_loadu_ps(src);
  if (n == 6)
    return _mm256_insertf128_ps(
        _mm256_castps128_ps256(_mm_loadu_ps(src)),
        _mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)(const void *)(src + 4)),
        1);
  float lanes[8] = {0};
  memcpy(lanes, src, n * sizeof *src);
  return _mm256_loadu_ps(lanes);
}

void qgm__gemm_store_tile_transposed_avx2(const float *tile, size_t nr,
                                         size_t rows, size_t cols, float *c,
                                         size_t ldc, int add) {
  for (size_t g = 0; g < cols; g += 8) {
    __m256 r[8];
    for (size_t i = 0; i < 8; i++)
      r[i] = i < rows ? _mm256_loadu_ps(tile + i * nr + g)
                      : _mm256_setzero_ps();
    transpose8(r);
    for (size_t q = 0; q < 8 && g + q < cols; q++) {
      float *dst = c + (g + q) * ldc;
      store_lanes(dst, add ? _mm256_add_ps(load_lanes(dst, rows), r[q]) : r[q],
                  rows);
    }
  }
}

void qgm__gemm_pack_a_rows_avx2(size_t mc, size_t kc, const float *a,
                               ptrdiff_t rsa, size_t mr, float *dst) {
  for (size_t i0 = 0; i0 < mc; i0 += mr, dst += mr * kc) {
    const size_t rows = mc - i0 < mr ? mc - i0 : mr;
    const float *src = a + (ptrdiff_t)i0 * rsa;
    size_t p = 0;
    for (; p + 8 <= kc; p += 8) {
      __m256 r[8];
      for (size_t i = 0; i < 8; i++)
        r[i] = i < rows ? _mm256_loadu_ps(src + (ptrdiff_t)i * rsa + p)
                        : _mm256_setzero_ps();
      transpose8(r);
      for (size_t q = 0; q < 8; q++)
        store_lanes(dst + (p + q) * mr, r[q], mr);
    }
    for (; p < kc; p++)
      for (size_t i = 0; i < mr; i++)
        dst[p * mr + i] = i < rows ? src[(ptrdiff_t)i * rsa + (ptrdiff_t)p] : 0.0f;
  }
}

void qgm__gemm_pack_b_cols_avx2(size_t kc, size_t nc, const float *b,
                               ptrdiff_t csb, size_t nr, float *dst) {
  for (size_t j0 = 0; j0 < nc; j0 += nr, dst += nr * kc) {
    const size_t cols = nc - j0 < nr ? nc - j0 : nr;
    const float *src = b + (ptrdiff_t)j0 * csb;
    for (size_t g = 0; g < nr; g += 8) {
      size_t p = 0;
      for (; p + 8 <= kc; p += 8) {
        __m256 r[8];
        for (size_t j = 0; j < 8; j++)
          r[j] = g + j < cols
                     ? _mm256_loadu_ps(src + (ptrdiff_t)(g + j) * csb + p)
                     : _mm256_setzero_ps();
        transpose8(r);
        for (size_t q = 0; q < 8; q++)
          _mm256_storeu_ps(dst + (p + q) * nr + g, r[q]);
      }
      for (; p < kc; p++)
        for (size_t j = 0; j < 8; j++)
          dst[p * nr + g + j] =
              g + j < cols ? src[(ptrdiff_t)(g + j) * csb + (ptrdiff_t)p] : 0.0f;
    }
  }
}

/* The sum of a vector's eight lanes. */
static float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/* Twelve accumulators, four B vectors and the A row read straight from
 * memory by the FMA fill the sixteen registers; the k % 8 tail is one
 * masked step. The pragmas unroll the tile's loops, so that gcc keeps the
 * accumulators in registers (see gemm_avx512.c). */
#define NT_STEP(load)                                                         \
  do {                                                                        \
    __m256 bv[4];                                                             \
    _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) bv[j] = load(b[j]);   \
    _Pragma("GCC unroll 3") for (int i = 0; i < 3; i++) {                     \
      __m256 av = load(a[i]);                                                 \
      _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++)                     \
          acc[i][j] = _mm256_fmadd_ps(av, bv[j], acc[i][j]);                  \
    }                                                                         \
  } while (0)

void qgm__gemm_nt_avx2_3x4(size_t k, const float *const *a,
                          const float *const *b, float *out) {
  __m256 acc[3][4];
  _Pragma("GCC unroll 3") for (int i = 0; i < 3; i++)
      _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) acc[i][j] =
          _mm256_setzero_ps();
  size_t p = 0;
#define FULL(row) _mm256_loadu_ps((row) + p)
  for (; p + 8 <= k; p += 8)
    NT_STEP(FULL);
  if (p < k) {
    /* Lane l is loaded iff l < k - p (the mask's sign bits). */
    __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(k - p)),
                                      _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
#define MASKED(row) _mm256_maskload_ps((row) + p, mask)
    NT_STEP(MASKED);
  }
  _Pragma("GCC unroll 3") for (int i = 0; i < 3; i++)
      _Pragma("GCC unroll 4") for (int j = 0; j < 4; j++) out[i * 4 + j] =
          hsum(acc[i][j]);
}

#else
/* Not reachable: gemm.c only selects these kernels on x86-64 with AVX2. */
void qgm__gemm_kernel_avx2_6x16(size_t k, const float *a, size_t lda,
                               const float *b, float *c, size_t ldc, int add) {
  (void)k, (void)a, (void)lda, (void)b, (void)c, (void)ldc, (void)add;
}

void qgm__gemm_nt_avx2_3x4(size_t k, const float *const *a,
                          const float *const *b, float *out) {
  (void)k, (void)a, (void)b, (void)out;
}

void qgm__gemm_pack_a_rows_avx2(size_t mc, size_t kc, const float *a,
                               ptrdiff_t rsa, size_t mr, float *dst) {
  (void)mc, (void)kc, (void)a, (void)rsa, (void)mr, (void)dst;
}

void qgm__gemm_pack_b_cols_avx2(size_t kc, size_t nc, const float *b,
                               ptrdiff_t csb, size_t nr, float *dst) {
  (void)kc, (void)nc, (void)b, (void)csb, (void)nr, (void)dst;
}

void qgm__gemm_store_tile_transposed_avx2(const float *tile, size_t nr,
                                         size_t rows, size_t cols, float *c,
                                         size_t ldc, int add) {
  (void)tile, (void)nr, (void)rows, (void)cols, (void)c, (void)ldc, (void)add;
}
#endif
