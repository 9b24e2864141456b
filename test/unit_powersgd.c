/* unit_powersgd.c - --compress=powersgd:R against closed forms: the spec
 * and its refusals; PowerSGD's all-reduce (its messages' lengths, R rows
 * and R cols floats per matrix and the other coordinates; a matrix of
 * rank <= R recovered exactly; the warm-started power iteration
 * converging to the best rank-R error of Eckart-Young; the error
 * feedback's invariant, what it delivers plus the new error is what it
 * was given); the Gram-Schmidt step's orthonormal columns; and
 * PowerGossip (the mean kept, the other coordinates gossiped exactly, a
 * rank-1 difference gone after one round of each side). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compress/lowrank.h"
#include "helpers.h"

/* Two matrices with vector coordinates before, between and after them:
 * 3 + 35 + 2 + 24 + 6 = 70 floats, 11 of them outside the matrices. */
static const qgm_matrix_block_t blocks[] = {{3, 5, 7}, {40, 6, 4}};
#define N 70
#define NBLOCKS 2

/* PowerSGD's all-reduce on one node (its sums are its own messages):
 * out = P P^T M on the matrices, M elsewhere. With fresh, the error
 * feedback is cleared first, so M = v. */
static void lowrank(qgm_powersgd_t *p, const float *v, int fresh,
                    float *out) {
  float *first = malloc(qgm_powersgd_first_len(p) * sizeof(float));
  float *second = malloc(qgm_powersgd_second_len(p) * sizeof(float));
  assert_non_null(first);
  assert_non_null(second);
  size_t len;
  float *e = qgm_powersgd_error(p, &len);
  if (fresh)
    memset(e, 0, len * sizeof *e);
  qgm_powersgd_first(p, v, first);
  qgm_powersgd_second(p, first, 1.0f, second);
  qgm_powersgd_decode(p, second, 1.0f, out);
  free(first);
  free(second);
}

static void fill_normal(float *v, size_t n, uint64_t seed) {
  qgm_rng_t rng;
  qgm_rng_seed(&rng, seed, 0);
  for (size_t i = 0; i < n; i++)
    v[i] = (float)qgm_rng_normal(&rng);
}

/* The squared distance over block b only. */
static double block_dist2(const qgm_matrix_block_t *b, const float *x,
                          const float *y) {
  double s = 0.0;
  for (size_t i = 0; i < b->rows * b->cols; i++) {
    const double d = (double)x[b->at + i] - (double)y[b->at + i];
    s += d * d;
  }
  return s;
}

static double block_norm2(const qgm_matrix_block_t *b, const float *x) {
  double s = 0.0;
  for (size_t i = 0; i < b->rows * b->cols; i++)
    s += (double)x[b->at + i] * (double)x[b->at + i];
  return s;
}

static int in_a_block(size_t i) {
  for (size_t b = 0; b < NBLOCKS; b++)
    if (i >= blocks[b].at && i < blocks[b].at + blocks[b].rows * blocks[b].cols)
      return 1;
  return 0;
}

static void test_parse(void **state) {
  (void)state;
  qgm_compress_spec_t s;
  assert_int_equal(qgm_compress_parse("powersgd:2", &s), 0);
  assert_int_equal(s.kind, QGM_COMPRESS_POWERSGD);
  assert_int_equal(s.rank, 2);
  assert_null(s.matrices);
  assert_int_equal(qgm_compress_parse("powersgd:64", &s), 0);
  const char *bad[] = {"powersgd", "powersgd:", "powersgd:0", "powersgd:-1",
                       "powersgd:abc", "powersgd:2.5", "powersgd:65",
                       "powersgd:2x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (qgm_compress_parse(bad[i], &s) != QGM_EINVAL)
      fail_msg("'%s' was accepted", bad[i]);
}

/* Blocks that overlap, leave the vector, are out of order, or are
 * thinner than the rank are refused; the largest rank is the least side.
 * powersgd is no operator of CHOCO's. */
static void test_refusals(void **state) {
  (void)state;
  assert_int_equal(qgm_matrices_max_rank(blocks, NBLOCKS), 4);
  assert_int_equal(qgm_matrices_max_rank(NULL, 0), 0);
  const qgm_matrix_block_t overlap[] = {{0, 5, 7}, {30, 2, 2}};
  const qgm_matrix_block_t outside[] = {{60, 5, 3}};
  const qgm_matrix_block_t backwards[] = {{40, 2, 2}, {0, 2, 2}};
  const struct {
    const qgm_matrix_block_t *m;
    size_t count;
    int rank;
  } cases[] = {{overlap, 2, 1}, {outside, 1, 1}, {backwards, 2, 1},
               {blocks, NBLOCKS, 5}, {blocks, NBLOCKS, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    qgm_powersgd_t *p = NULL;
    assert_int_equal(qgm_powersgd_create(N, cases[i].rank, cases[i].m,
                                         cases[i].count, &p),
                     QGM_EINVAL);
    qgm_powergossip_t *g = NULL;
    assert_int_equal(qgm_powergossip_create(N, cases[i].rank, cases[i].m,
                                            cases[i].count, 2, 1.0, &g),
                     QGM_EINVAL);
  }
  qgm_compress_spec_t s = {.kind = QGM_COMPRESS_POWERSGD, .rank = 1,
                           .matrices = blocks, .nmatrices = NBLOCKS};
  qgm_compress_t *c = NULL;
  assert_int_equal(qgm_compress_create(&s, N, &c), QGM_EINVAL);
}

/* The all-reduce's first message is R rows per matrix and the other
 * coordinates, the second R cols per matrix: for the test's blocks at
 * R = 2, 2 (5 + 6) + 11 = 33 and 2 (7 + 4) = 22 floats; for the default
 * MLP (784-256-10, its layers from qgm_model_matrices) 2 (256 + 10) + 266
 * biases = 798 and 2 (784 + 256) = 2080, 2878 in all against 203530.
 * PowerGossip's messages take one side a round: 33 floats on even rounds,
 * 2 (7 + 4) + 11 = 33 on odd ones here too (and 798, then 2346 for the
 * MLP). */
static void test_sizes(void **state) {
  (void)state;
  qgm_powersgd_t *p = NULL;
  assert_int_equal(qgm_powersgd_create(N, 2, blocks, NBLOCKS, &p), 0);
  assert_int_equal(qgm_powersgd_first_len(p), 33);
  assert_int_equal(qgm_powersgd_second_len(p), 22);
  size_t len;
  assert_non_null(qgm_powersgd_warm(p, &len));
  assert_int_equal(len, 22);
  assert_non_null(qgm_powersgd_error(p, &len));
  assert_int_equal(len, N);
  qgm_powersgd_free(p);
  qgm_powergossip_t *g = NULL;
  assert_int_equal(
      qgm_powergossip_create(N, 2, blocks, NBLOCKS, 3, 1.0, &g), 0);
  assert_int_equal(qgm_powergossip_len(g, 0), 33);
  assert_int_equal(qgm_powergossip_len(g, 1), 33);
  assert_int_equal(qgm_powergossip_peers(g), 3);
  assert_non_null(qgm_powergossip_warm(g, 2, &len));
  assert_int_equal(len, 22 + 22); /* U, then V */
  qgm_powergossip_free(g);

  const size_t hidden[] = {256};
  qgm_model_t *mlp = NULL;
  assert_int_equal(qgm_mlp_create(784, hidden, 1, 10, 8, &mlp), 0);
  size_t count;
  const qgm_matrix_block_t *m = qgm_model_matrices(mlp, &count);
  assert_int_equal(count, 2);
  assert_int_equal(m[0].at, 0);
  assert_int_equal(m[0].rows, 256);
  assert_int_equal(m[0].cols, 784);
  assert_int_equal(m[1].at, 784 * 256 + 256);
  assert_int_equal(m[1].rows, 10);
  assert_int_equal(m[1].cols, 256);
  const size_t n = qgm_model_num_params(mlp);
  assert_int_equal(n, 203530);
  assert_int_equal(qgm_powersgd_create(n, 2, m, count, &p), 0);
  assert_int_equal(qgm_powersgd_first_len(p), 2 * (256 + 10) + 266);
  assert_int_equal(qgm_powersgd_second_len(p), 2 * (784 + 256));
  qgm_powersgd_free(p);
  assert_int_equal(qgm_powergossip_create(n, 2, m, count, 2, 1.0, &g), 0);
  assert_int_equal(qgm_powergossip_len(g, 0), 798);
  assert_int_equal(qgm_powergossip_len(g, 1), 2 * (784 + 256) + 266);
  assert_int_equal(qgm_powergossip_max_len(g), 2346);
  qgm_powergossip_free(g);
  qgm_model_free(mlp);
}

/* Gram-Schmidt (twice over) leaves R orthonormal columns per block, to
 * float rounding, even where a column is the sum of the ones before it
 * plus a residue a million times smaller. */
static void test_orthonormal(void **state) {
  (void)state;
  const int R = 3;
  qgm__lowrank_t lr;
  assert_int_equal(qgm__lowrank_init(&lr, N, R, blocks, NBLOCKS), 0);
  float *p = malloc(lr.p_len * sizeof *p), noise[8];
  fill_normal(p, lr.p_len, 7);
  fill_normal(noise, 5, 8);
  for (size_t i = 0; i < 5; i++) /* block 0's third column */
    p[2 * 5 + i] = p[i] + p[5 + i] + 1e-6f * noise[i];
  qgm__lowrank_orthonormalise(&lr, p);
  const float *at = p;
  for (size_t b = 0; b < NBLOCKS; b++) {
    const size_t rows = blocks[b].rows;
    for (int r = 0; r < R; r++)
      for (int q = 0; q < R; q++) {
        double d = 0.0;
        for (size_t i = 0; i < rows; i++)
          d += (double)at[(size_t)r * rows + i] * at[(size_t)q * rows + i];
        if (fabs(d - (r == q ? 1.0 : 0.0)) > 1e-6)
          fail_msg("block %zu: column %d . column %d = %g", b, r, q, d);
      }
    at += (size_t)R * rows;
  }
  free(p);
  qgm__lowrank_free(&lr);
}

/* A block of rank <= R, sum of R outer products, comes back to float
 * tolerance: P spans its column space, so P P^T M = M; the other
 * coordinates come back exactly. */
static void test_exact_rank_recovered(void **state) {
  (void)state;
  const int R = 2;
  qgm_powersgd_t *p = NULL;
  assert_int_equal(qgm_powersgd_create(N, R, blocks, NBLOCKS, &p), 0);
  float v[N], out[N], u[16], w[16];
  fill_normal(v, N, 11);
  for (size_t b = 0; b < NBLOCKS; b++) {
    const qgm_matrix_block_t *m = &blocks[b];
    for (size_t i = 0; i < m->rows * m->cols; i++)
      v[m->at + i] = 0.0f;
    for (int r = 0; r < (b == 0 ? R : 1); r++) { /* rank 2, then rank 1 */
      fill_normal(u, m->rows, 100 + b * 10 + (size_t)r);
      fill_normal(w, m->cols, 200 + b * 10 + (size_t)r);
      for (size_t i = 0; i < m->rows; i++)
        for (size_t j = 0; j < m->cols; j++)
          v[m->at + i * m->cols + j] += u[i] * w[j];
    }
  }
  for (int round = 0; round < 3; round++) {
    lowrank(p, v, 1, out);
    for (size_t b = 0; b < NBLOCKS; b++)
      assert_true(block_dist2(&blocks[b], out, v) <
                  1e-10 * block_norm2(&blocks[b], v));
    for (size_t i = 0; i < N; i++)
      if (!in_a_block(i))
        assert_true(out[i] == v[i]);
  }
  qgm_powersgd_free(p);
}

/* M = sum_k s_k e_{row k} e_{col k}^T with s = 8, 4, 2, 1, 0.5 (its SVD,
 * rows and columns permuted): the warm start carries the power iteration
 * from one step to the next, so approximating M again and again (the
 * error feedback cleared) converges to the best rank-2 approximation,
 * whose squared error is 2^2 + 1^2 + 0.5^2 = 5.25 (Eckart-Young). */
static void test_power_iteration_converges(void **state) {
  (void)state;
  const qgm_matrix_block_t one[] = {{0, 6, 9}};
  const size_t n = 54;
  const double s[] = {8, 4, 2, 1, 0.5};
  const size_t rows[] = {3, 0, 5, 1, 4}, cols[] = {7, 2, 0, 8, 4};
  float v[54] = {0}, out[54];
  for (size_t k = 0; k < 5; k++)
    v[rows[k] * 9 + cols[k]] = (float)s[k];
  qgm_powersgd_t *p = NULL;
  assert_int_equal(qgm_powersgd_create(n, 2, one, 1, &p), 0);
  double first = 0.0, last = 0.0;
  for (int round = 0; round < 60; round++) {
    lowrank(p, v, 1, out);
    last = block_dist2(&one[0], out, v);
    if (round == 0)
      first = last;
  }
  assert_true(first > 5.25 + 1e-3); /* the fixed first Q is not the best */
  assert_true(fabs(last - 5.25) < 1e-4);
  qgm_powersgd_free(p);
}

/* PowerSGD's all-reduce on one node (the sums are its own messages):
 * out + e_new = g + e_old to float tolerance on the matrices, out = g and
 * e = 0 elsewhere; and with two nodes, the other coordinates are the mean
 * and the warm start, a mean, is the same on both. */
static void test_error_feedback(void **state) {
  (void)state;
  qgm_powersgd_t *p = NULL;
  assert_int_equal(qgm_powersgd_create(N, 2, blocks, NBLOCKS, &p), 0);
  float *first = malloc(qgm_powersgd_first_len(p) * sizeof(float));
  float *second = malloc(qgm_powersgd_second_len(p) * sizeof(float));
  float g[N], m[N], out[N];
  for (int step = 0; step < 4; step++) {
    fill_normal(g, N, 300 + (uint64_t)step);
    size_t len;
    const float *e = qgm_powersgd_error(p, &len);
    assert_int_equal(len, N);
    for (size_t i = 0; i < N; i++)
      m[i] = g[i] + e[i];
    qgm_powersgd_first(p, g, first);
    qgm_powersgd_second(p, first, 1.0f, second);
    qgm_powersgd_decode(p, second, 1.0f, out);
    e = qgm_powersgd_error(p, &len);
    double worst = 0.0;
    for (size_t i = 0; i < N; i++) {
      if (!in_a_block(i)) {
        assert_true(out[i] == m[i]);
        assert_true(e[i] == 0.0f);
        continue;
      }
      worst = fmax(worst, fabs((double)out[i] + e[i] - m[i]));
    }
    assert_true(worst < 1e-6);
  }
  qgm_powersgd_free(p);

  /* Two nodes: messages summed, scaled by 1/2. */
  qgm_powersgd_t *a = NULL, *b = NULL;
  assert_int_equal(qgm_powersgd_create(N, 2, blocks, NBLOCKS, &a), 0);
  assert_int_equal(qgm_powersgd_create(N, 2, blocks, NBLOCKS, &b), 0);
  const size_t f = qgm_powersgd_first_len(a), q = qgm_powersgd_second_len(a);
  float *fa = malloc(f * sizeof(float)), *fb = malloc(f * sizeof(float));
  float *qa = malloc(q * sizeof(float)), *qb = malloc(q * sizeof(float));
  float ga[N], gb[N], oa[N], ob[N];
  fill_normal(ga, N, 400);
  fill_normal(gb, N, 401);
  qgm_powersgd_first(a, ga, fa);
  qgm_powersgd_first(b, gb, fb);
  for (size_t i = 0; i < f; i++)
    fa[i] += fb[i];
  qgm_powersgd_second(a, fa, 0.5f, qa);
  qgm_powersgd_second(b, fa, 0.5f, qb);
  for (size_t i = 0; i < q; i++)
    qa[i] += qb[i];
  qgm_powersgd_decode(a, qa, 0.5f, oa);
  qgm_powersgd_decode(b, qa, 0.5f, ob);
  for (size_t i = 0; i < N; i++) {
    assert_true(oa[i] == ob[i]);
    if (!in_a_block(i))
      assert_true(fabs(oa[i] - 0.5 * ((double)ga[i] + gb[i])) < 1e-6);
  }
  size_t la, lb;
  const float *wa = qgm_powersgd_warm(a, &la), *wb = qgm_powersgd_warm(b, &lb);
  assert_int_equal(la, q);
  assert_memory_equal(wa, wb, q * sizeof(float));
  qgm_powersgd_free(a);
  qgm_powersgd_free(b);
  free(fa);
  free(fb);
  free(qa);
  free(qb);
  free(first);
  free(second);
}

/* One PowerGossip round between nodes a < b with weight w, in place. */
static void gossip_pair(qgm_powergossip_t *a, qgm_powergossip_t *b,
                        uint64_t round, double w, float *xa, float *xb) {
  const size_t len = qgm_powergossip_max_len(a);
  float *ma = malloc(len * sizeof(float)), *mb = malloc(len * sizeof(float));
  float oa[N], ob[N];
  qgm_powergossip_message(a, round, 0, xa, ma);
  qgm_powergossip_message(b, round, 0, xb, mb);
  const float *mine_a[1] = {ma}, *mine_b[1] = {mb};
  const double weights[1] = {w};
  const int lower_a[1] = {1}, lower_b[1] = {0};
  qgm_powergossip_mix(a, round, xa, mine_a, mine_b, weights, lower_a, oa);
  qgm_powergossip_mix(b, round, xb, mine_b, mine_a, weights, lower_b, ob);
  memcpy(xa, oa, sizeof oa);
  memcpy(xb, ob, sizeof ob);
  free(ma);
  free(mb);
}

/* Two nodes, one edge: the sum of the two models is kept (to float
 * rounding), the other coordinates are gossiped exactly
 * (x + w (x_j - x)), both ends keep the same warm start, and with w = 1/2
 * a difference of rank 1 per matrix is gone after an even round and an
 * odd one: the odd round's U spans the difference's columns. */
static void test_powergossip_pair(void **state) {
  (void)state;
  qgm_powergossip_t *a = NULL, *b = NULL;
  assert_int_equal(
      qgm_powergossip_create(N, 1, blocks, NBLOCKS, 1, 1.0, &a), 0);
  assert_int_equal(
      qgm_powergossip_create(N, 1, blocks, NBLOCKS, 1, 1.0, &b), 0);
  float xa[N], xb[N], u[16], w[16], sum[N];
  fill_normal(xa, N, 21);
  memcpy(xb, xa, sizeof xa);
  for (size_t k = 0; k < NBLOCKS; k++) {
    const qgm_matrix_block_t *m = &blocks[k];
    fill_normal(u, m->rows, 30 + k);
    fill_normal(w, m->cols, 40 + k);
    for (size_t i = 0; i < m->rows; i++)
      for (size_t j = 0; j < m->cols; j++)
        xb[m->at + i * m->cols + j] += u[i] * w[j];
  }
  for (size_t i = 0; i < N; i++)
    if (!in_a_block(i))
      xb[i] += 1.0f; /* the biases differ by 1 */
  for (size_t i = 0; i < N; i++)
    sum[i] = xa[i] + xb[i];
  const float bias_a = xa[0], bias_b = xb[0];
  gossip_pair(a, b, 0, 0.5, xa, xb);
  assert_true(xa[0] == bias_a + 0.5f * (bias_b - bias_a));
  for (size_t i = 0; i < N; i++)
    assert_true(fabs((double)xa[i] + xb[i] - sum[i]) < 1e-5);
  double after_even = 0.0;
  for (size_t k = 0; k < NBLOCKS; k++)
    after_even += block_dist2(&blocks[k], xa, xb);
  assert_true(after_even > 1e-3); /* the first V is no right vector of D */
  gossip_pair(a, b, 1, 0.5, xa, xb);
  for (size_t i = 0; i < N; i++) {
    assert_true(fabs((double)xa[i] - xb[i]) < 1e-5);
    assert_true(fabs((double)xa[i] + xb[i] - sum[i]) < 1e-5);
  }
  size_t la, lb;
  const float *wa = qgm_powergossip_warm(a, 0, &la);
  const float *wb = qgm_powergossip_warm(b, 0, &lb);
  assert_int_equal(la, lb);
  assert_memory_equal(wa, wb, la * sizeof(float));
  qgm_powergossip_free(a);
  qgm_powergossip_free(b);
}

/* Identical neighbours leave a warm start of zeros; the next round takes
 * the first draws again instead of losing the direction for good, so a
 * difference that appears later is still gossiped away. */
static void test_powergossip_refills_zero_warm_start(void **state) {
  (void)state;
  qgm_powergossip_t *a = NULL, *b = NULL;
  assert_int_equal(
      qgm_powergossip_create(N, 1, blocks, NBLOCKS, 1, 1.0, &a), 0);
  assert_int_equal(
      qgm_powergossip_create(N, 1, blocks, NBLOCKS, 1, 1.0, &b), 0);
  float xa[N], xb[N];
  fill_normal(xa, N, 50);
  memcpy(xb, xa, sizeof xa);
  gossip_pair(a, b, 0, 0.5, xa, xb); /* U = D V = 0 */
  size_t len;
  const float *warm = qgm_powergossip_warm(a, 0, &len);
  for (size_t i = 0; i < 5 + 6; i++) /* U: one column of rows per block */
    assert_true(warm[i] == 0.0f);
  for (size_t i = 0; i < N; i++)
    if (in_a_block(i))
      xb[i] += 1.0f; /* now they differ by all-ones, rank 1 */
  gossip_pair(a, b, 1, 0.5, xa, xb);
  gossip_pair(a, b, 2, 0.5, xa, xb);
  gossip_pair(a, b, 3, 0.5, xa, xb);
  for (size_t k = 0; k < NBLOCKS; k++)
    assert_true(block_dist2(&blocks[k], xa, xb) < 1e-8);
  qgm_powergossip_free(a);
  qgm_powergossip_free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_sizes),
      cmocka_unit_test(test_orthonormal),
      cmocka_unit_test(test_exact_rank_recovered),
      cmocka_unit_test(test_power_iteration_converges),
      cmocka_unit_test(test_error_feedback),
      cmocka_unit_test(test_powergossip_pair),
      cmocka_unit_test(test_powergossip_refills_zero_warm_start),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
