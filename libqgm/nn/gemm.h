/* gemm.h - the single-precision matrix product every model kind runs on;
 * not installed.
 *
 * C (m x n, row-major, row stride ldc) = A (m x k) * B (k x n) [+ C], where
 * A and B are read through arbitrary row and column strides, so a transpose
 * is only a swap of strides and never a copy. */
#ifndef QGM_GEMM_H
#define QGM_GEMM_H

#include <stddef.h>
#include <string.h>

#include "nn/isa.h"

/* Scratch the caller provides for the packed panels of A and B (models keep
 * it in their arena, so a product allocates nothing). */
/* The blocking (gemm.c): B in kc x nc panels (L3), A in mc x kc blocks
 * (L2), and the largest register tile of any kernel. */
#define QGM__GEMM_MC 192
#define QGM__GEMM_KC 256
#define QGM__GEMM_NC 1024
#define QGM__GEMM_MR_MAX 8
#define QGM__GEMM_NR_MAX 32
#define QGM__GEMM_PACK_FLOATS                                                 \
  ((size_t)(QGM__GEMM_MC * QGM__GEMM_KC + QGM__GEMM_KC * QGM__GEMM_NC))
/* The micro-kernels' register tiles, mr x nr. */
#define QGM__GEMM_AVX2_MR 6
#define QGM__GEMM_AVX2_NR 16
#define QGM__GEMM_AVX512_MR 8
#define QGM__GEMM_AVX512_NR 32

typedef enum { QGM__GEMM_SET = 0, QGM__GEMM_ADD = 1 } qgm__gemm_mode_t;

/* C = A * B (QGM__GEMM_SET; C is not read, so it may hold garbage) or
 * C += A * B (QGM__GEMM_ADD). pack holds QGM__GEMM_PACK_FLOATS floats,
 * 64-byte aligned. m, n or k may be 0 (k == 0 sets C to 0 or leaves it). */
void qgm__gemm(size_t m, size_t n, size_t k, const float *a, ptrdiff_t rsa,
              ptrdiff_t csa, const float *b, ptrdiff_t rsb, ptrdiff_t csb,
              qgm__gemm_mode_t mode, float *c, size_t ldc, float *pack);

/* Makes this thread's later products use `kernel` (QGM__KERNEL_COUNT: the
 * kernel plan's dense one) and returns the kernel they used: a layer
 * selects its plan entry's kernel for its products and restores the
 * previous one after them. */
qgm__kernel_t qgm__gemm_select(qgm__kernel_t kernel);

/* The width of the column slivers qgm__gemm_packed_b reads: the current
 * kernel's tile width, or 0 under BLIS, which takes no packed operand (the
 * caller then builds B as a plain matrix and calls qgm__gemm). */
size_t qgm__gemm_nr(void);

/* As qgm__gemm, with B (k x n) already in the packed layout, so that a
 * producer such as im2col writes it once instead of writing a matrix that
 * is then packed: column j, row p is at pb[(j / nr) * k * nr + p * nr +
 * j % nr], nr = qgm__gemm_nr() (not 0), pb 64-byte aligned. The last
 * sliver's columns past n are read but their products discarded. */
void qgm__gemm_packed_b(size_t m, size_t n, size_t k, const float *a,
                       ptrdiff_t rsa, ptrdiff_t csa, const float *pb,
                       qgm__gemm_mode_t mode, float *c, size_t ldc,
                       float *pack);

/* The height of the row slivers qgm__gemm_packed_a reads: the current
 * kernel's tile height, or 0 under BLIS. */
size_t qgm__gemm_mr(void);

/* As qgm__gemm, with A (m x k) already packed, so that an operand of many
 * products (a convolution's transformed weights) is packed once: row i,
 * column p at pa[(i / mr) * k * mr + p * mr + i % mr], mr =
 * qgm__gemm_mr() (not 0), zero past row m, as qgm__gemm_pack_a(m, k, ...,
 * mr, pa) writes it. B is packed here from (b, rsb, csb) into pack, or,
 * if pb is not NULL, already packed there as for qgm__gemm_packed_b (b is
 * then not read, nor pack written). */
void qgm__gemm_packed_a(size_t m, size_t n, size_t k, const float *pa,
                       const float *b, ptrdiff_t rsb, ptrdiff_t csb,
                       const float *pb, qgm__gemm_mode_t mode, float *c,
                       size_t ldc, float *pack);

/* C (m x n) = or += A * B^T, A m x k and B n x k, both row-major with row
 * strides lda and ldb: every element of C is a dot product of two
 * contiguous rows, so nothing is packed. For long k and small m, n (the
 * weight gradient of a convolution, k its output pixels). */
void qgm__gemm_nt(size_t m, size_t n, size_t k, const float *a, size_t lda,
                 const float *b, size_t ldb, qgm__gemm_mode_t mode, float *c,
                 size_t ldc);

/* As qgm__gemm_nt, but row j of B starts at b + b_offsets[j]: rows that
 * overlap, such as the shifted windows of a convolution's input, read in
 * place instead of copied into a matrix. */
void qgm__gemm_nt_offsets(size_t m, size_t n, size_t k, const float *a,
                         size_t lda, const float *b, const size_t *b_offsets,
                         qgm__gemm_mode_t mode, float *c, size_t ldc);

/* Copies one row of a packed sliver, nr floats: for the kernels' widths a
 * constant size the compiler copies inline (a libc call per row of 16 or
 * 32 floats costs more than the copy). */
static inline void qgm__gemm_copy_sliver_row(float *dst, const float *src,
                                            size_t nr) {
  if (nr == QGM__GEMM_AVX512_NR)
    memcpy(dst, src, QGM__GEMM_AVX512_NR * sizeof *dst);
  else if (nr == QGM__GEMM_AVX2_NR)
    memcpy(dst, src, QGM__GEMM_AVX2_NR * sizeof *dst);
  else
    memcpy(dst, src, nr * sizeof *dst);
}

/* A register-tile micro-kernel: C (mr x nr, row stride ldc) = or += the
 * product of an A sliver and a packed B sliver (k steps of nr floats). A's
 * sliver is packed (lda 0: k steps of mr floats) or mr rows of a row-major
 * matrix read in place (row stride lda), which leaves its transposing copy
 * out; the sums are the same either way, bit for bit. */
typedef void (*qgm__gemm_kernel_fn)(size_t k, const float *a, size_t lda,
                                   const float *b, float *c, size_t ldc,
                                   int add);

/* A dot-product tile of qgm__gemm_nt, mr x nr (at most 4 x 4): out[i * nr +
 * j] = the dot product over k of rows a[i] and b[j]. */
#define QGM__GEMM_NT_MAX 4
typedef void (*qgm__gemm_nt_fn)(size_t k, const float *const *a,
                               const float *const *b, float *out);

void qgm__gemm_kernel_avx2_6x16(size_t k, const float *a, size_t lda,
                               const float *b, float *c, size_t ldc, int add);
void qgm__gemm_kernel_avx512_8x32(size_t k, const float *a, size_t lda,
                                 const float *b, float *c, size_t ldc,
                                 int add);
void qgm__gemm_nt_avx2_3x4(size_t k, const float *const *a,
                          const float *const *b, float *out);
void qgm__gemm_nt_avx512_4x4(size_t k, const float *const *a,
                            const float *const *b, float *out);

/* The packed layouts (gemm.c): A's mc x kc block as mr-row slivers,
 * sliver s holding for each p the mr values A[s*mr .. s*mr+mr)[p], zero
 * past row mc; B's kc x nc panel as nr-column slivers, the mirror image.
 * Any strides. */
void qgm__gemm_pack_a(size_t mc, size_t kc, const float *a, ptrdiff_t rsa,
                     ptrdiff_t csa, size_t mr, float *dst);
void qgm__gemm_pack_b(size_t kc, size_t nc, const float *b, ptrdiff_t rsb,
                     ptrdiff_t csb, size_t nr, float *dst);
/* The same layouts by 8 x 8 AVX2 transposes, for the operands whose
 * contiguous direction runs across the slivers: A with column stride 1
 * (mr <= 8), B with row stride 1 (nr a multiple of 8). */
void qgm__gemm_pack_a_rows_avx2(size_t mc, size_t kc, const float *a,
                               ptrdiff_t rsa, size_t mr, float *dst);
void qgm__gemm_pack_b_cols_avx2(size_t kc, size_t nc, const float *b,
                               ptrdiff_t csb, size_t nr, float *dst);
/* C^T's share of a kernel's tile (rows x cols of an mr x nr buffer with
 * row stride nr, mr <= 8, nr a multiple of 8): element (i, j) to, or
 * added to, c[j * ldc + i]. */
void qgm__gemm_store_tile_transposed_avx2(const float *tile, size_t nr,
                                         size_t rows, size_t cols, float *c,
                                         size_t ldc, int add);

#endif /* QGM_GEMM_H */
