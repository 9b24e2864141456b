/* unit_powersgd.c - the low-rank compressor (powersgd:R) and PowerSGD's
 * all-reduce state, against closed forms: the spec and its refusals, the
 * message's length (R (rows + cols) floats per matrix and the other
 * coordinates), P's orthonormal columns, a matrix of rank <= R recovered
 * exactly, the warm-started power iteration converging to the best rank-R
 * error of Eckart-Young, and the error feedback's invariant (what the
 * all-reduce delivers plus the new error is what it was given). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

/* Two matrices with vector coordinates before, between and after them:
 * 3 + 35 + 2 + 24 + 6 = 70 floats, 11 of them outside the matrices. */
static const qgm_matrix_block_t blocks[] = {{3, 5, 7}, {40, 6, 4}};
#define N 70
#define NBLOCKS 2

static qgm_compress_t *make(int rank, const qgm_matrix_block_t *m,
                            size_t count, size_t n) {
  qgm_compress_spec_t s = {.kind = QGM_COMPRESS_POWERSGD, .rank = rank,
                           .matrices = m, .nmatrices = count};
  qgm_compress_t *c = NULL;
  assert_int_equal(qgm_compress_create(&s, n, &c), 0);
  return c;
}

static float get_le_float(const uint8_t *p) {
  uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
               (uint32_t)p[3] << 24;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* C(v) (the message applied to zeros); msg gets the message. */
static void compress(qgm_compress_t *c, const float *v, uint8_t *msg,
                     float *out) {
  assert_int_equal(qgm_compress_encode(c, v, NULL, NULL, msg, NULL), 0);
  memset(out, 0, qgm_compress_len(c) * sizeof *out);
  assert_int_equal(qgm_compress_apply(c, msg, NULL, out), 0);
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
 * thinner than the rank are refused; the largest rank is the least side. */
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
    qgm_compress_spec_t s = {.kind = QGM_COMPRESS_POWERSGD,
                             .rank = cases[i].rank, .matrices = cases[i].m,
                             .nmatrices = cases[i].count};
    qgm_compress_t *c = NULL;
    assert_int_equal(qgm_compress_create(&s, N, &c), QGM_EINVAL);
    qgm_powersgd_t *p = NULL;
    assert_int_equal(qgm_powersgd_create(N, cases[i].rank, cases[i].m,
                                         cases[i].count, &p),
                     QGM_EINVAL);
  }
}

/* R (rows + cols) floats per matrix, then the other coordinates: for the
 * test's blocks at R = 2, 2 (5 + 7) + 2 (6 + 4) + 11 = 55 floats; for the
 * default MLP (784-256-10, its layers from qgm_model_matrices) at R = 2,
 * 2 (256 + 784) + 2 (10 + 256) + 266 biases = 2878 floats. */
static void test_sizes(void **state) {
  (void)state;
  qgm_compress_t *c = make(2, blocks, NBLOCKS, N);
  assert_int_equal(qgm_compress_kept(c), 55);
  assert_int_equal(qgm_compress_bytes(c), 4 * 55);
  size_t len;
  assert_non_null(qgm_compress_state(c, &len));
  assert_int_equal(len, 2 * 7 + 2 * 4); /* the warm start: every Q */
  qgm_compress_free(c);

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
  c = make(2, m, count, n);
  assert_int_equal(qgm_compress_bytes(c), 4 * 2878);
  qgm_compress_free(c);
  qgm_powersgd_t *p = NULL;
  assert_int_equal(qgm_powersgd_create(n, 2, m, count, &p), 0);
  assert_int_equal(qgm_powersgd_first_len(p), 2 * (256 + 10) + 266);
  assert_int_equal(qgm_powersgd_second_len(p), 2 * (784 + 256));
  qgm_powersgd_free(p);
  qgm_model_free(mlp);
  /* No matrices at all: every coordinate travels as it is. */
  c = make(3, NULL, 0, 10);
  assert_int_equal(qgm_compress_bytes(c), 40);
  qgm_compress_free(c);
}

/* P's R columns, per matrix, are orthonormal (to float rounding), read
 * from the message's bytes; the other coordinates arrive exactly. */
static void test_orthonormal(void **state) {
  (void)state;
  const int R = 3;
  qgm_compress_t *c = make(R, blocks, NBLOCKS, N);
  uint8_t *msg = malloc(qgm_compress_bytes(c));
  float v[N], out[N];
  fill_normal(v, N, 7);
  compress(c, v, msg, out);
  size_t at = 0; /* P of every block first, in block order */
  for (size_t b = 0; b < NBLOCKS; b++) {
    const size_t rows = blocks[b].rows;
    for (int r = 0; r < R; r++)
      for (int s = 0; s < R; s++) {
        double d = 0.0;
        for (size_t i = 0; i < rows; i++)
          d += (double)get_le_float(msg + 4 * (at + (size_t)r * rows + i)) *
               (double)get_le_float(msg + 4 * (at + (size_t)s * rows + i));
        assert_true(fabs(d - (r == s ? 1.0 : 0.0)) < 1e-6);
      }
    at += (size_t)R * rows;
  }
  for (size_t i = 0; i < N; i++)
    if (!in_a_block(i))
      assert_true(out[i] == v[i]);
  /* A projection: never longer than what it compresses. */
  for (size_t b = 0; b < NBLOCKS; b++)
    assert_true(block_norm2(&blocks[b], out) <=
                block_norm2(&blocks[b], v) * (1.0 + 1e-6));
  free(msg);
  qgm_compress_free(c);
}

/* A block of rank <= R, sum of R outer products, comes back to float
 * tolerance: P spans its column space, so P P^T M = M. */
static void test_exact_rank_recovered(void **state) {
  (void)state;
  const int R = 2;
  qgm_compress_t *c = make(R, blocks, NBLOCKS, N);
  uint8_t *msg = malloc(qgm_compress_bytes(c));
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
    compress(c, v, msg, out);
    for (size_t b = 0; b < NBLOCKS; b++)
      assert_true(block_dist2(&blocks[b], out, v) <
                  1e-10 * block_norm2(&blocks[b], v));
  }
  free(msg);
  qgm_compress_free(c);
}

/* M = sum_k s_k e_{row k} e_{col k}^T with s = 8, 4, 2, 1, 0.5 (its SVD,
 * rows and columns permuted): the warm start carries the power iteration
 * from one message to the next, so compressing M again and again
 * converges to the best rank-2 approximation, whose squared error is
 * 2^2 + 1^2 + 0.5^2 = 5.25 (Eckart-Young). */
static void test_power_iteration_converges(void **state) {
  (void)state;
  const qgm_matrix_block_t one[] = {{0, 6, 9}};
  const size_t n = 54;
  const double s[] = {8, 4, 2, 1, 0.5};
  const size_t rows[] = {3, 0, 5, 1, 4}, cols[] = {7, 2, 0, 8, 4};
  float v[54] = {0}, out[54];
  for (size_t k = 0; k < 5; k++)
    v[rows[k] * 9 + cols[k]] = (float)s[k];
  qgm_compress_t *c = make(2, one, 1, n);
  uint8_t *msg = malloc(qgm_compress_bytes(c));
  double first = 0.0, last = 0.0;
  for (int round = 0; round < 60; round++) {
    compress(c, v, msg, out);
    last = block_dist2(&one[0], out, v);
    if (round == 0)
      first = last;
  }
  assert_true(first > 5.25 + 1e-3); /* the fixed first Q is not the best */
  assert_true(fabs(last - 5.25) < 1e-4);
  free(msg);
  qgm_compress_free(c);
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

/* CHOCO's copies with the low-rank operator: the owner's copy and a
 * holder's end with the same bits, the copies converge on a vector that
 * stays put (error feedback through the copies), and the operator's
 * state is its warm start. */
static void test_choco_copies(void **state) {
  (void)state;
  qgm_choco_config_t cfg = {
      .compress = {.kind = QGM_COMPRESS_POWERSGD, .rank = 1,
                   .matrices = blocks, .nmatrices = NBLOCKS},
      .dim = N, .node = 0, .peers = 1, .seed = 5, .gamma = 1.0};
  qgm_choco_t *owner = NULL, *holder = NULL;
  assert_int_equal(qgm_choco_create(&cfg, &owner), 0);
  cfg.node = 1;
  assert_int_equal(qgm_choco_create(&cfg, &holder), 0);
  uint8_t *msg = malloc(qgm_choco_message_bytes(owner));
  float v[N];
  fill_normal(v, N, 9);
  double before = 0.0, after = 0.0;
  for (int round = 0; round < 40; round++) {
    assert_int_equal(qgm_choco_send(owner, (uint64_t)round, v, msg, NULL), 0);
    assert_int_equal(qgm_choco_receive(holder, 0, 0, (uint64_t)round, msg), 0);
    size_t len;
    const float *mine = qgm_choco_copies(owner, &len);
    const float *theirs = qgm_choco_copies(holder, &len) + N;
    assert_memory_equal(mine, theirs, N * sizeof(float));
    double d = 0.0;
    for (size_t i = 0; i < N; i++)
      d += ((double)mine[i] - v[i]) * ((double)mine[i] - v[i]);
    if (round == 0)
      before = d;
    after = d;
  }
  assert_true(after < 1e-8 * before);
  size_t len;
  assert_non_null(qgm_choco_operator_state(owner, &len));
  assert_int_equal(len, 7 + 4);
  free(msg);
  qgm_choco_free(owner);
  qgm_choco_free(holder);
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
      cmocka_unit_test(test_choco_copies),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
