/* unit_gemm.c - qgm__gemm, qgm__gemm_packed_b and qgm__gemm_nt against a
 * double-precision loop (and qgm__gemm against bli_sgemm) for every kernel
 * this CPU has, on every stride pattern the models use and on shapes that
 * are not multiples of the register tile or block sizes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/gemm.h"
#include "helpers.h"
#include "core/internal.h"
#include "qgm.h"

/* The operands of one product: A (m x k) and B (k x n) read through their
 * strides, and, for qgm__gemm_packed_b, B in the kernel's packed layout. */
typedef struct operands {
  size_t m, n, k;
  const float *a, *b, *packed;
  ptrdiff_t rsa, csa, rsb, csb;
} operands_t;

typedef void (*product_fn)(const operands_t *o, qgm__gemm_mode_t mode,
                           float *c, size_t ldc);

static void by_gemm(const operands_t *o, qgm__gemm_mode_t mode, float *c,
                    size_t ldc) {
  qgm__gemm(o->m, o->n, o->k, o->a, o->rsa, o->csa, o->b, o->rsb, o->csb, mode,
           c, ldc, test_pack);
}

static void by_packed_b(const operands_t *o, qgm__gemm_mode_t mode, float *c,
                        size_t ldc) {
  qgm__gemm_packed_b(o->m, o->n, o->k, o->a, o->rsa, o->csa, o->packed, mode,
                    c, ldc, test_pack);
}

/* A row-major, B stored as its n x k transpose (rsb = 1). */
static void by_nt(const operands_t *o, qgm__gemm_mode_t mode, float *c,
                  size_t ldc) {
  qgm__gemm_nt(o->m, o->n, o->k, o->a, (size_t)o->rsa, o->b, (size_t)o->csb,
              mode, c, ldc);
}

/* The product in both modes against a double-precision reference. The
 * error bound is k * eps * sum|a||b|, the textbook bound for float dot
 * products, with values in [-1, 1] so sum|a||b| <= k. */
static void check_product(const operands_t *o, product_fn product) {
  const size_t m = o->m, n = o->n, k = o->k;
  size_t ldc = n + 3; /* a row stride wider than n */
  float *c = malloc((m * ldc + 1) * sizeof *c);
  assert_non_null(c);
  for (int mode = 0; mode < 2; mode++) {
    /* Garbage in C must not leak into a SET product; in ADD it is the
     * starting value. */
    for (size_t i = 0; i < m * ldc; i++)
      c[i] = mode ? (float)(i % 7) - 3.0f : NAN;
    product(o, (qgm__gemm_mode_t)mode, c, ldc);
    double tol = 2.0 * (double)(k + 2) * 6e-8 * (double)(k + 1);
    for (size_t i = 0; i < m; i++) {
      for (size_t j = 0; j < n; j++) {
        double ref = mode ? (double)((i * ldc + j) % 7) - 3.0 : 0.0;
        for (size_t p = 0; p < k; p++)
          ref += (double)o->a[(ptrdiff_t)i * o->rsa + (ptrdiff_t)p * o->csa] *
                 (double)o->b[(ptrdiff_t)p * o->rsb + (ptrdiff_t)j * o->csb];
        assert_near(c[i * ldc + j], ref, tol);
      }
      /* The padding between rows is never written. */
      for (size_t j = n; j < ldc; j++)
        if (mode)
          assert_float_equal(c[i * ldc + j], (float)((i * ldc + j) % 7) - 3,
                             0.0);
        else
          assert_true(isnan(c[i * ldc + j]));
    }
  }
  free(c);
}

/* B (k x n, row-major) in qgm__gemm_packed_b's layout for sliver width nr;
 * the last sliver's unused columns hold NaN, which must not reach C. */
static float *pack_like_kernel(const float *b, size_t k, size_t n,
                               size_t nr) {
  size_t slivers = (n + nr - 1) / nr;
  float *pb = qgm_alloc_floats(slivers * k * nr);
  assert_non_null(pb);
  for (size_t q = 0; q < slivers; q++)
    for (size_t p = 0; p < k; p++)
      for (size_t j = 0; j < nr; j++)
        pb[(q * k + p) * nr + j] =
            q * nr + j < n ? b[p * n + q * nr + j] : NAN;
  return pb;
}

/* One shape with A stored transposed or not (ta) and B likewise (tb)
 * through qgm__gemm; then, with B row-major, through qgm__gemm_packed_b
 * (when the kernel packs) and, with B transposed and A not, through
 * qgm__gemm_nt. */
static void check_shape(size_t m, size_t n, size_t k, int ta, int tb,
                        qgm_rng_t *rng) {
  float *a = malloc((m * k + 1) * sizeof *a), *b = malloc((k * n + 1) * 4);
  assert_non_null(a);
  assert_non_null(b);
  test_fill_uniform(a, m * k, rng);
  test_fill_uniform(b, k * n, rng);
  /* A is m x k; stored row-major (ta = 0) or as its k x m transpose. */
  operands_t o = {m, n, k, a, b, NULL, ta ? 1 : (ptrdiff_t)k,
                  ta ? (ptrdiff_t)m : 1, tb ? 1 : (ptrdiff_t)n,
                  tb ? (ptrdiff_t)k : 1};
  check_product(&o, by_gemm);
  if (!tb && qgm__gemm_nr() != 0) {
    float *pb = pack_like_kernel(b, k, n, qgm__gemm_nr());
    o.packed = pb;
    check_product(&o, by_packed_b);
    free(pb);
  }
  if (!ta && tb)
    check_product(&o, by_nt);
  free(a);
  free(b);
}

static const size_t shapes[][3] = {
    {1, 1, 1},     {5, 7, 3},     {6, 16, 9},    {8, 32, 17},
    {13, 33, 257}, {64, 256, 60}, {200, 40, 31}, {7, 1030, 5},
    {3, 5, 520},   {64, 10, 256}, {16, 300, 144}, {6, 150, 6400},
    {5, 7, 15},    {4, 4, 16},    {9, 13, 33},
};

static void run_all_shapes(const char *kernel) {
  if (qgm_gemm_use(kernel) != 0) {
    print_message("kernel %s not available on this CPU: skipped\n", kernel);
    return;
  }
  assert_string_equal(qgm_gemm_kernel_name(), kernel);
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 7, 0);
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int t = 0; t < 4; t++)
      check_shape(shapes[s][0], shapes[s][1], shapes[s][2], t & 1, t >> 1,
                  &rng);
  qgm_gemm_use(NULL);
}

static void test_avx512(void **state) {
  (void)state;
  run_all_shapes("avx512");
}

static void test_avx2(void **state) {
  (void)state;
  run_all_shapes("avx2");
}

static void test_blis_fallback(void **state) {
  (void)state;
  run_all_shapes("blis");
}

/* The AVX2 packings write exactly what the scalar ones do, for both
 * kernels' tiles (6 x 16 and 8 x 32: the AVX-512 kernel uses them too)
 * and blocks with edges in every direction. */
static void test_avx2_packing_is_the_scalar_layout(void **state) {
  (void)state;
  if (qgm_gemm_use("avx2") != 0) {
    print_message("avx2 not available on this CPU: skipped\n");
    return;
  }
  qgm_gemm_use(NULL);
  static const size_t tiles[][2] = {{6, 16}, {8, 32}};
  static const size_t blocks[][2] = {{1, 1}, {6, 8}, {13, 17}, {48, 256},
                                     {7, 33}, {192, 9}};
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 11, 0);
  for (size_t t = 0; t < 2; t++)
    for (size_t s = 0; s < sizeof blocks / sizeof blocks[0]; s++) {
      const size_t rows = blocks[s][0], kc = blocks[s][1], ld = kc + 3;
      const size_t mr = tiles[t][0], nr = tiles[t][1];
      const size_t room = (rows + nr) * kc;
      float *src = malloc(rows * ld * sizeof *src);
      float *want = malloc(room * sizeof *want), *got = malloc(room * sizeof *got);
      assert_non_null(want);
      assert_non_null(got);
      assert_non_null(src);
      test_fill_uniform(src, rows * ld, &rng);
      /* A (rows x kc) with column stride 1. */
      memset(want, 0, room * sizeof *want);
      memset(got, 0, room * sizeof *got);
      qgm__gemm_pack_a(rows, kc, src, (ptrdiff_t)ld, 1, mr, want);
      qgm__gemm_pack_a_rows_avx2(rows, kc, src, (ptrdiff_t)ld, mr, got);
      assert_memory_equal(got, want, room * sizeof *got);
      /* B (kc x rows) with row stride 1: column j starts at src + j ld. */
      memset(want, 0, room * sizeof *want);
      memset(got, 0, room * sizeof *got);
      qgm__gemm_pack_b(kc, rows, src, 1, (ptrdiff_t)ld, nr, want);
      qgm__gemm_pack_b_cols_avx2(kc, rows, src, (ptrdiff_t)ld, nr, got);
      assert_memory_equal(got, want, room * sizeof *got);
      free(src);
      free(want);
      free(got);
    }
}

/* The kernels agree with BLIS on the MLP's real shapes to float rounding. */
static void test_matches_blis_mlp_shapes(void **state) {
  (void)state;
  enum { M = 64, N = 256, K = 784 };
  float *a = malloc(M * K * 4), *b = malloc(K * N * 4), *c1 = malloc(M * N * 4),
        *c2 = malloc(M * N * 4);
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 11, 0);
  test_fill_uniform(a, M * K, &rng);
  test_fill_uniform(b, K * N, &rng);
  qgm_gemm_use("blis");
  qgm__gemm(M, N, K, a, K, 1, b, 1, K, QGM__GEMM_SET, c1, N, test_pack);
  qgm_gemm_use(NULL);
  qgm__gemm(M, N, K, a, K, 1, b, 1, K, QGM__GEMM_SET, c2, N, test_pack);
  for (size_t i = 0; i < M * N; i++)
    assert_near(c2[i], c1[i], 1e-4);
  free(a);
  free(b);
  free(c1);
  free(c2);
}

/* A read in place and the product computed as its transpose (A
 * row-major, B column-major, k x n the larger) sum the same products in
 * the same order as packed operands: C is the same bit for bit, in both
 * modes, on shapes with partial tiles (so a packed last sliver) and k
 * past one block. */
static void check_paths_sum_alike(const char *kernel) {
  if (qgm_gemm_use(kernel) != 0) {
    print_message("kernel %s not available on this CPU: skipped\n", kernel);
    return;
  }
  static const size_t mnk[][3] = {{64, 256, 784}, {13, 33, 257}, {3, 70, 9}};
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 13, 0);
  for (size_t s = 0; s < sizeof mnk / sizeof mnk[0]; s++) {
    const size_t m = mnk[s][0], n = mnk[s][1], k = mnk[s][2];
    float *a = malloc(m * k * 4), *at = malloc(m * k * 4),
          *bt = malloc(k * n * 4), *b = malloc(k * n * 4),
          *c1 = malloc(m * n * 4), *c2 = malloc(m * n * 4);
    assert_true(a && at && bt && b && c1 && c2);
    test_fill_uniform(a, m * k, &rng); /* row-major */
    test_fill_uniform(bt, k * n, &rng); /* B stored as its n x k transpose */
    for (size_t i = 0; i < m; i++)
      for (size_t p = 0; p < k; p++)
        at[p * m + i] = a[i * k + p];
    for (size_t p = 0; p < k; p++)
      for (size_t j = 0; j < n; j++)
        b[p * n + j] = bt[j * k + p];
    for (int mode = 0; mode < 2; mode++) {
      test_fill_uniform(c1, m * n, &rng);
      memcpy(c2, c1, m * n * 4);
      qgm__gemm(m, n, k, a, (ptrdiff_t)k, 1, bt, 1, (ptrdiff_t)k,
               (qgm__gemm_mode_t)mode, c1, n, test_pack);
      qgm__gemm(m, n, k, at, 1, (ptrdiff_t)m, b, (ptrdiff_t)n, 1,
               (qgm__gemm_mode_t)mode, c2, n, test_pack);
      assert_memory_equal(c1, c2, m * n * 4);
    }
    free(a), free(at), free(bt), free(b), free(c1), free(c2);
  }
  qgm_gemm_use(NULL);
}

static void test_paths_sum_alike(void **state) {
  (void)state;
  check_paths_sum_alike("avx512");
  check_paths_sum_alike("avx2");
}

static void test_k_zero(void **state) {
  (void)state;
  float c[6] = {1, 2, 3, 4, 5, 6}, a = 0, b = 0;
  qgm__gemm(2, 3, 0, &a, 1, 1, &b, 1, 1, QGM__GEMM_ADD, c, 3, test_pack);
  assert_float_equal(c[5], 6.0f, 0.0);
  qgm__gemm(2, 2, 0, &a, 1, 1, &b, 1, 1, QGM__GEMM_SET, c, 3, test_pack);
  assert_float_equal(c[0], 0.0f, 0.0);
  assert_float_equal(c[4], 0.0f, 0.0);
  assert_float_equal(c[2], 3.0f, 0.0); /* outside the 2 x 2 block */
}

/* The public product: against the same product in double, 1e-5 of the
 * magnitude summed over k (operands in [-1, 1]: k * 1 at most). */
static void test_matmul(void **state) {
  (void)state;
  const size_t m = 13, n = 37, k = 300; /* edge tiles and two k panels */
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 11, 0);
  float *a = test_uniform(m * k, &rng), *b = test_uniform(k * n, &rng);
  float *c = qgm_alloc_floats(m * n);
  assert_int_equal(qgm_matmul(m, n, k, a, b, c), QGM_OK);
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      double ref = 0.0;
      for (size_t p = 0; p < k; p++)
        ref += (double)a[i * k + p] * b[p * n + j];
      assert_near(c[i * n + j], ref, 1e-5 * (double)k);
    }
  free(a), free(b), free(c);
}

/* The plan reads back what it writes; a partial plan keeps the CPU's
 * other entries. */
static void test_kernel_plan_text(void **state) {
  (void)state;
  assert_int_equal(qgm_kernels_use(NULL), 0);
  char own[128];
  snprintf(own, sizeof own, "%s", qgm_kernels());
  assert_int_equal(strncmp(own, "dense=", 6), 0);
  assert_int_equal(qgm_kernels_use(own), 0);
  assert_string_equal(qgm_kernels(), own);
  assert_int_equal(qgm_kernels_use("conv3x3=direct-blis,conv=blis"), 0);
  char expect[160];
  snprintf(expect, sizeof expect, "%.*s,conv=blis,conv3x3=direct-blis",
           (int)(strchr(own, ',') - own), own);
  assert_string_equal(qgm_kernels(), expect);
  assert_int_equal(qgm_kernels_use(NULL), 0);
  assert_string_equal(qgm_kernels(), own);
}

/* Malformed plans, plans of kernels the CPU lacks and Winograd on BLIS
 * (which takes no packed operand) change nothing. */
static void test_kernel_plan_refuses(void **state) {
  (void)state;
  static const char *const bad[] = {
      "", "dense", "dense=", "dense=avx9", "dense=blis,", ",dense=blis",
      "dense=blis,dense=avx2", "speed=blis", "conv3x3=blis",
      "conv3x3=fast-blis", "conv3x3=winograd-blis", "conv=winograd-blis",
      "dense=BLIS", "conv3x3=winograd-"};
  assert_int_equal(qgm_kernels_use(NULL), 0);
  char own[128];
  snprintf(own, sizeof own, "%s", qgm_kernels());
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(qgm_kernels_use(bad[i]), -1);
    assert_string_equal(qgm_kernels(), own);
  }
  if (!qgm__kernel_supported(QGM__KERNEL_AVX512))
    assert_int_equal(qgm_kernels_use("dense=avx512"), -1);
}

/* qgm_gemm_use overrides every entry (Winograd needs a packed kernel);
 * a layer's selection holds for its thread's products until restored. */
static void test_forced_kernel_and_layer_selection(void **state) {
  (void)state;
  assert_int_equal(qgm_gemm_use("blis"), 0);
  assert_string_equal(qgm_kernels(), "dense=blis,conv=blis,conv3x3=direct-blis");
  assert_int_equal(qgm__gemm_nr(), 0);
  assert_int_equal(qgm_gemm_use(NULL), 0);
  if (!qgm__kernel_supported(QGM__KERNEL_AVX512))
    skip();
  assert_int_equal(qgm_kernels_use("dense=avx2"), 0);
  assert_int_equal(qgm__gemm_nr(), QGM__GEMM_AVX2_NR);
  assert_int_equal(qgm__gemm_select(QGM__KERNEL_AVX512), QGM__KERNEL_COUNT);
  assert_int_equal(qgm__gemm_nr(), QGM__GEMM_AVX512_NR);
  assert_int_equal(qgm__gemm_mr(), QGM__GEMM_AVX512_MR);
  assert_int_equal(qgm__gemm_select(QGM__KERNEL_COUNT), QGM__KERNEL_AVX512);
  assert_int_equal(qgm__gemm_nr(), QGM__GEMM_AVX2_NR);
  assert_int_equal(qgm_kernels_use(NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_avx512),
      cmocka_unit_test(test_avx2),
      cmocka_unit_test(test_avx2_packing_is_the_scalar_layout),
      cmocka_unit_test(test_blis_fallback),
      cmocka_unit_test(test_matches_blis_mlp_shapes),
      cmocka_unit_test(test_paths_sum_alike),
      cmocka_unit_test(test_k_zero),
      cmocka_unit_test(test_matmul),
      cmocka_unit_test(test_kernel_plan_text),
      cmocka_unit_test(test_kernel_plan_refuses),
      cmocka_unit_test(test_forced_kernel_and_layer_selection),
  };
  return cmocka_run_group_tests(tests, test_pack_setup, test_pack_teardown);
}
