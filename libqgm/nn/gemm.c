/* gemm.c - qgm__gemm: a packed matrix product (the Goto/BLIS loop nest)
 * around a register-tile micro-kernel chosen at run time: the kernel plan's
 * (kernel_plan.c), or the one a layer selected (qgm__gemm_select).
 *
 * Debian's BLIS 0.9 does not recognise newer CPUs (it picks its portable
 * 'generic' kernels on them, at a third of the machine's speed), so libqgm
 * carries its own AVX-512 and AVX2 tiles and keeps bli_sgemm as the
 * fallback for every other CPU.
 *
 * Loop nest: B is packed in kc x nc panels (kept in L2/L3) as nr-column
 * slivers, A in mc x kc blocks (L2) as mr-row slivers, or read in place
 * where it is row-major; the micro-kernel streams one A sliver against
 * one B sliver (L1). Packing zero-pads the edges, so the kernel always
 * computes a full tile; partial tiles go through a small buffer. */
#include "nn/gemm.h"

#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "nn/kernel_plan.h"
#include "qgm.h"

#include <blis.h>

#define GEMM_MC QGM__GEMM_MC
#define GEMM_KC QGM__GEMM_KC
#define GEMM_NC QGM__GEMM_NC
#define GEMM_MR_MAX QGM__GEMM_MR_MAX
#define GEMM_NR_MAX QGM__GEMM_NR_MAX

/* mc and nc hold whole slivers of every kernel, and every tile fits the
 * edge buffer. */
_Static_assert(GEMM_MC % QGM__GEMM_AVX2_MR == 0 &&
                   GEMM_MC % QGM__GEMM_AVX512_MR == 0,
               "mc is a multiple of every kernel's mr");
_Static_assert(GEMM_NC % QGM__GEMM_AVX2_NR == 0 &&
                   GEMM_NC % QGM__GEMM_AVX512_NR == 0,
               "nc is a multiple of every kernel's nr");
_Static_assert(QGM__GEMM_AVX2_MR <= GEMM_MR_MAX &&
                   QGM__GEMM_AVX512_MR <= GEMM_MR_MAX &&
                   QGM__GEMM_AVX2_NR <= GEMM_NR_MAX &&
                   QGM__GEMM_AVX512_NR <= GEMM_NR_MAX,
               "every tile fits the edge buffer");

typedef struct gemm_impl {
  size_t mr, nr;
  qgm__gemm_kernel_fn kernel;
  size_t nt_mr, nt_nr;
  qgm__gemm_nt_fn nt;
} gemm_impl_t;

/* The register tiles, by kernel (BLIS has none). Every AVX-512 CPU has
 * AVX2, whose packing (gemm_avx2.c) serves both. */
static const gemm_impl_t impls[] = {
    [QGM__KERNEL_AVX512] = {QGM__GEMM_AVX512_MR, QGM__GEMM_AVX512_NR,
                            qgm__gemm_kernel_avx512_8x32, 4, 4,
                            qgm__gemm_nt_avx512_4x4},
    [QGM__KERNEL_AVX2] = {QGM__GEMM_AVX2_MR, QGM__GEMM_AVX2_NR,
                          qgm__gemm_kernel_avx2_6x16, 3, 4,
                          qgm__gemm_nt_avx2_3x4},
};
_Static_assert(QGM__GEMM_AVX2_MR <= 8 && QGM__GEMM_AVX512_MR <= 8 &&
                   QGM__GEMM_AVX2_NR % 8 == 0 && QGM__GEMM_AVX512_NR % 8 == 0,
               "the AVX2 packing fits every kernel's tile");

/* The kernel a layer selected for this thread's products (the evaluation
 * thread runs layers of its own); QGM__KERNEL_COUNT: the plan's dense
 * kernel. */
static _Thread_local qgm__kernel_t selected = QGM__KERNEL_COUNT;

qgm__kernel_t qgm__gemm_select(qgm__kernel_t kernel) {
  qgm__kernel_t previous = selected;
  selected = kernel;
  return previous;
}

static const gemm_impl_t *impl_for_cpu(void) {
  qgm__kernel_t kernel =
      selected == QGM__KERNEL_COUNT ? qgm__kernels()->dense : selected;
  return kernel == QGM__KERNEL_BLIS ? NULL : &impls[kernel];
}

size_t qgm__gemm_nr(void) {
  const gemm_impl_t *impl = impl_for_cpu();
  return impl ? impl->nr : 0;
}

/* The loop order follows whichever stride of A is 1, so the reads stay
 * sequential. */
void qgm__gemm_pack_a(size_t mc, size_t kc, const float *a, ptrdiff_t rsa,
                     ptrdiff_t csa, size_t mr, float *dst) {
  for (size_t i0 = 0; i0 < mc; i0 += mr, dst += mr * kc) {
    size_t rows = mc - i0 < mr ? mc - i0 : mr;
    const float *src = a + (ptrdiff_t)i0 * rsa;
    if (csa == 1) {
      for (size_t r = 0; r < rows; r++)
        for (size_t p = 0; p < kc; p++)
          dst[p * mr + r] = src[(ptrdiff_t)r * rsa + (ptrdiff_t)p];
    } else {
      for (size_t p = 0; p < kc; p++)
        for (size_t r = 0; r < rows; r++)
          dst[p * mr + r] = src[(ptrdiff_t)r * rsa + (ptrdiff_t)p * csa];
    }
    for (size_t r = rows; r < mr; r++)
      for (size_t p = 0; p < kc; p++)
        dst[p * mr + r] = 0.0f;
  }
}

void qgm__gemm_pack_b(size_t kc, size_t nc, const float *b, ptrdiff_t rsb,
                     ptrdiff_t csb, size_t nr, float *dst) {
  for (size_t j0 = 0; j0 < nc; j0 += nr, dst += nr * kc) {
    size_t cols = nc - j0 < nr ? nc - j0 : nr;
    const float *src = b + (ptrdiff_t)j0 * csb;
    if (csb == 1 && cols == nr) {
      for (size_t p = 0; p < kc; p++)
        qgm__gemm_copy_sliver_row(dst + p * nr, src + (ptrdiff_t)p * rsb, nr);
    } else if (csb == 1) {
      for (size_t p = 0; p < kc; p++) {
        memcpy(dst + p * nr, src + (ptrdiff_t)p * rsb, cols * sizeof *dst);
        memset(dst + p * nr + cols, 0, (nr - cols) * sizeof *dst);
      }
    } else {
      for (size_t j = 0; j < cols; j++)
        for (size_t p = 0; p < kc; p++)
          dst[p * nr + j] = src[(ptrdiff_t)p * rsb + (ptrdiff_t)j * csb];
      for (size_t p = 0; p < kc; p++)
        memset(dst + p * nr + cols, 0, (nr - cols) * sizeof *dst);
    }
  }
}

/* Where the micro-kernel finds an mc x kc block of A: packed as mr-row
 * slivers astride floats apart, or (rows not NULL) read in place from a
 * row-major matrix of row stride lda, where only a last sliver of fewer
 * than mr rows is packed, at pa. */
typedef struct a_block {
  const float *pa;
  size_t astride;
  const float *rows;
  size_t lda;
} a_block_t;

/* One tile of the product from the kernel's buffer into C at (i0, j0), or
 * with `transposed` into C^T: element (i, j) to c[j * ldc + i]. */
static void store_tile(const float *tile, size_t nr, size_t rows, size_t cols,
                       float *c, size_t ldc, size_t i0, size_t j0, int add,
                       int transposed) {
  if (transposed) {
    qgm__gemm_store_tile_transposed_avx2(tile, nr, rows, cols,
                                        c + j0 * ldc + i0, ldc, add);
    return;
  }
  /* The branch outside the loops lets them run in vectors: the last rows
   * of a matrix with few of them (16 channels over 6-row tiles) take a
   * third of its tiles. */
  for (size_t r = 0; r < rows; r++) {
    float *dst = c + (i0 + r) * ldc + j0;
    const float *src = tile + r * nr;
    if (add)
      for (size_t j = 0; j < cols; j++)
        dst[j] += src[j];
    else
      memcpy(dst, src, cols * sizeof *dst);
  }
}

/* The mc x nc block of the product from A's block and packed B, whose
 * slivers lie bstride floats apart (kc * nr when packed here, more for a
 * prepacked operand whose slivers span all of k); into C, or transposed
 * into C^T. */
static void macro_kernel(const gemm_impl_t *impl, size_t mc, size_t nc,
                         size_t kc, const a_block_t *ab, const float *pb,
                         size_t bstride, float *c, size_t ldc, int add,
                         int transposed) {
  const size_t mr = impl->mr, nr = impl->nr;
  _Alignas(64) float tile[GEMM_MR_MAX * GEMM_NR_MAX];
  for (size_t j0 = 0; j0 < nc; j0 += nr) {
    size_t cols = nc - j0 < nr ? nc - j0 : nr;
    for (size_t i0 = 0; i0 < mc; i0 += mr) {
      size_t rows = mc - i0 < mr ? mc - i0 : mr;
      const float *a = ab->pa + i0 / mr * ab->astride,
                  *b = pb + j0 / nr * bstride;
      size_t lda = 0;
      if (ab->rows && rows == mr) {
        a = ab->rows + i0 * ab->lda;
        lda = ab->lda;
      } else if (ab->rows) { /* the packed last sliver */
        a = ab->pa;
      }
      if (rows == mr && cols == nr && !transposed) {
        impl->kernel(kc, a, lda, b, c + i0 * ldc + j0, ldc, add);
        continue;
      }
      impl->kernel(kc, a, lda, b, tile, nr, 0);
      store_tile(tile, nr, rows, cols, c, ldc, i0, j0, add, transposed);
    }
  }
}

/* The packings for the kernels' slivers: the contiguous direction of a
 * row-major A (or a column-major B) runs across them, where the scalar
 * loops would write one float per mr (nr); transposed in 8 x 8 blocks
 * instead, on every CPU with a kernel. */
static void pack_a(const gemm_impl_t *impl, size_t mc, size_t kc,
                   const float *a, ptrdiff_t rsa, ptrdiff_t csa, float *dst) {
  if (csa == 1 && rsa != 1)
    qgm__gemm_pack_a_rows_avx2(mc, kc, a, rsa, impl->mr, dst);
  else
    qgm__gemm_pack_a(mc, kc, a, rsa, csa, impl->mr, dst);
}

static void pack_b(const gemm_impl_t *impl, size_t kc, size_t nc,
                   const float *b, ptrdiff_t rsb, ptrdiff_t csb, float *dst) {
  if (rsb == 1 && csb != 1)
    qgm__gemm_pack_b_cols_avx2(kc, nc, b, csb, impl->nr, dst);
  else
    qgm__gemm_pack_b(kc, nc, b, rsb, csb, impl->nr, dst);
}

static void gemm_blis(size_t m, size_t n, size_t k, const float *a,
                      ptrdiff_t rsa, ptrdiff_t csa, const float *b,
                      ptrdiff_t rsb, ptrdiff_t csb, qgm__gemm_mode_t mode,
                      float *c, size_t ldc) {
  float one = 1.0f, beta = mode == QGM__GEMM_ADD ? 1.0f : 0.0f;
  /* BLIS takes non-const operands even though it only reads them. */
  bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, (dim_t)m, (dim_t)n,
            (dim_t)k, &one, (float *)a, (inc_t)rsa, (inc_t)csa, (float *)b,
            (inc_t)rsb, (inc_t)csb, &beta, c, (inc_t)ldc, 1);
}

/* All products: A is read in place where it is row-major, else packed
 * here from (a, rsa, csa), or prepacked in pa with slivers spanning all of
 * k; B is packed here from (b, rsb, csb), or prepacked in pb. With
 * `transposed` the product goes to C^T. */
static void gemm_blocked(const gemm_impl_t *impl, size_t m, size_t n,
                         size_t k, const float *a, ptrdiff_t rsa,
                         ptrdiff_t csa, const float *pa_all, const float *b,
                         ptrdiff_t rsb, ptrdiff_t csb, const float *pb,
                         qgm__gemm_mode_t mode, float *c, size_t ldc,
                         float *pack, int transposed) {
  const size_t mr = impl->mr, nr = impl->nr;
  float *pa = pack, *own = pack + GEMM_MC * GEMM_KC;
  for (size_t jc = 0; jc < n; jc += GEMM_NC) {
    size_t nc = n - jc < GEMM_NC ? n - jc : GEMM_NC;
    for (size_t pc = 0; pc < k; pc += GEMM_KC) {
      size_t kc = k - pc < GEMM_KC ? k - pc : GEMM_KC;
      int add = mode == QGM__GEMM_ADD || pc > 0;
      const float *panel;
      size_t bstride;
      if (pb) {
        panel = pb + jc * k + pc * nr;
        bstride = k * nr;
      } else {
        pack_b(impl, kc, nc, b + (ptrdiff_t)pc * rsb + (ptrdiff_t)jc * csb,
               rsb, csb, own);
        panel = own;
        bstride = kc * nr;
      }
      for (size_t ic = 0; ic < m; ic += GEMM_MC) {
        size_t mc = m - ic < GEMM_MC ? m - ic : GEMM_MC;
        a_block_t ab = {pa, kc * mr, NULL, 0};
        if (pa_all) { /* ic is a multiple of mr: GEMM_MC is */
          ab.pa = pa_all + ic * k + pc * mr;
          ab.astride = k * mr;
        } else {
          const float *at = a + (ptrdiff_t)ic * rsa + (ptrdiff_t)pc * csa;
          if (csa == 1 && rsa > 0) {
            const size_t whole = mc - mc % mr;
            ab.rows = at;
            ab.lda = (size_t)rsa;
            pack_a(impl, mc - whole, kc, at + (ptrdiff_t)whole * rsa, rsa, csa,
                   pa);
          } else {
            pack_a(impl, mc, kc, at, rsa, csa, pa);
          }
        }
        float *cb = transposed ? c + jc * ldc + ic : c + ic * ldc + jc;
        macro_kernel(impl, mc, nc, kc, &ab, panel, bstride, cb, ldc, add,
                     transposed);
      }
    }
  }
}

/* What k == 0 means: C = 0, or C unchanged. */
static void gemm_empty(size_t m, size_t n, qgm__gemm_mode_t mode, float *c,
                       size_t ldc) {
  if (mode == QGM__GEMM_SET)
    for (size_t i = 0; i < m; i++)
      memset(c + i * ldc, 0, n * sizeof *c);
}

void qgm__gemm(size_t m, size_t n, size_t k, const float *a, ptrdiff_t rsa,
              ptrdiff_t csa, const float *b, ptrdiff_t rsb, ptrdiff_t csb,
              qgm__gemm_mode_t mode, float *c, size_t ldc, float *pack) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    gemm_empty(m, n, mode, c, ldc);
    return;
  }
  const gemm_impl_t *impl = impl_for_cpu();
  if (!impl) {
    gemm_blis(m, n, k, a, rsa, csa, b, rsb, csb, mode, c, ldc);
    return;
  }
  /* A row-major and B column-major: A would be read in place and B packed
   * by transposes. C^T = B^T A^T reads B^T in place instead and transposes
   * A, k x m, and the tiles of C, m x n: fewer floats where k x n is the
   * larger (a fully connected layer's weights against its batch). The
   * same products are summed in the same order either way. */
  if (csa == 1 && rsb == 1 && csb != 1 && m * (k + n) < k * n) {
    gemm_blocked(impl, n, m, k, b, csb, rsb, NULL, a, csa, rsa, NULL, mode, c,
                 ldc, pack, 1);
    return;
  }
  gemm_blocked(impl, m, n, k, a, rsa, csa, NULL, b, rsb, csb, NULL, mode, c,
               ldc, pack, 0);
}

void qgm__gemm_packed_b(size_t m, size_t n, size_t k, const float *a,
                       ptrdiff_t rsa, ptrdiff_t csa, const float *pb,
                       qgm__gemm_mode_t mode, float *c, size_t ldc,
                       float *pack) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    gemm_empty(m, n, mode, c, ldc);
    return;
  }
  /* Callers only pack B after qgm__gemm_nr() said a kernel reads it. */
  gemm_blocked(impl_for_cpu(), m, n, k, a, rsa, csa, NULL, NULL, 0, 0, pb,
               mode, c, ldc, pack, 0);
}

size_t qgm__gemm_mr(void) {
  const gemm_impl_t *impl = impl_for_cpu();
  return impl ? impl->mr : 0;
}

void qgm__gemm_packed_a(size_t m, size_t n, size_t k, const float *pa,
                       const float *b, ptrdiff_t rsb, ptrdiff_t csb,
                       const float *pb, qgm__gemm_mode_t mode, float *c,
                       size_t ldc, float *pack) {
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    gemm_empty(m, n, mode, c, ldc);
    return;
  }
  /* As for B: only after qgm__gemm_mr() said a kernel reads it. */
  gemm_blocked(impl_for_cpu(), m, n, k, NULL, 0, 0, pa, b, rsb, csb, pb, mode,
               c, ldc, pack, 0);
}

/* Row j of B: b + b_offsets[j], or b + j * ldb without offsets. */
static const float *nt_row(const float *b, size_t ldb, const size_t *b_offsets,
                           size_t j) {
  return b + (b_offsets ? b_offsets[j] : j * ldb);
}

static void gemm_nt_rows(size_t m, size_t n, size_t k, const float *a,
                         size_t lda, const float *b, size_t ldb,
                         const size_t *b_offsets, qgm__gemm_mode_t mode,
                         float *c, size_t ldc) {
  if (m == 0 || n == 0)
    return;
  const gemm_impl_t *impl = impl_for_cpu();
  if (!impl || k == 0) {
    if (!b_offsets) {
      gemm_blis(m, n, k, a, (ptrdiff_t)lda, 1, b, 1, (ptrdiff_t)ldb, mode, c,
                ldc);
      return;
    }
    for (size_t i = 0; i < m; i++)
      for (size_t j = 0; j < n; j++) {
        const float *ra = a + i * lda, *rb = nt_row(b, ldb, b_offsets, j);
        float sum = 0.0f;
        for (size_t p = 0; p < k; p++)
          sum += ra[p] * rb[p];
        c[i * ldc + j] = mode == QGM__GEMM_ADD ? c[i * ldc + j] + sum : sum;
      }
    return;
  }
  const size_t mr = impl->nt_mr, nr = impl->nt_nr;
  /* Edge tiles repeat the last row of A or B instead of needing kernels of
   * every smaller shape; the repeated products are dropped. */
  for (size_t i0 = 0; i0 < m; i0 += mr)
    for (size_t j0 = 0; j0 < n; j0 += nr) {
      const float *ra[QGM__GEMM_NT_MAX], *rb[QGM__GEMM_NT_MAX];
      float out[QGM__GEMM_NT_MAX * QGM__GEMM_NT_MAX];
      for (size_t i = 0; i < mr; i++)
        ra[i] = a + (i0 + i < m ? i0 + i : m - 1) * lda;
      for (size_t j = 0; j < nr; j++)
        rb[j] = nt_row(b, ldb, b_offsets, j0 + j < n ? j0 + j : n - 1);
      impl->nt(k, ra, rb, out);
      for (size_t i = 0; i < mr && i0 + i < m; i++)
        for (size_t j = 0; j < nr && j0 + j < n; j++) {
          float *cij = c + (i0 + i) * ldc + j0 + j;
          *cij = mode == QGM__GEMM_ADD ? *cij + out[i * nr + j]
                                      : out[i * nr + j];
        }
    }
}

void qgm__gemm_nt(size_t m, size_t n, size_t k, const float *a, size_t lda,
                 const float *b, size_t ldb, qgm__gemm_mode_t mode, float *c,
                 size_t ldc) {
  gemm_nt_rows(m, n, k, a, lda, b, ldb, NULL, mode, c, ldc);
}

void qgm__gemm_nt_offsets(size_t m, size_t n, size_t k, const float *a,
                         size_t lda, const float *b, const size_t *b_offsets,
                         qgm__gemm_mode_t mode, float *c, size_t ldc) {
  gemm_nt_rows(m, n, k, a, lda, b, 0, b_offsets, mode, c, ldc);
}

int qgm_matmul(size_t m, size_t n, size_t k, const float *a, const float *b,
               float *c) {
  float *pack = qgm_alloc_floats(QGM__GEMM_PACK_FLOATS);
  if (!pack)
    return QGM_ENOMEM;
  qgm__gemm(m, n, k, a, (ptrdiff_t)k, 1, b, (ptrdiff_t)n, 1, QGM__GEMM_SET, c,
           n, pack);
  free(pack);
  return QGM_OK;
}
