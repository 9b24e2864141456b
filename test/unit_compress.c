/* unit_compress.c - the compression operators and CHOCO's copies: spec
 * parsing, exact message sizes, hand-computed messages byte for byte, the
 * closed-form contraction of top-k and scaled sign, the unbiasedness of
 * the scaled rand-k and QSGD (statistical, fixed seed, tolerance 5 standard
 * deviations of the mean), and that every holder of a copy ends with the
 * same bits as its owner. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

static qgm_compress_t *make(const char *spec, size_t n) {
  qgm_compress_spec_t s;
  assert_int_equal(qgm_compress_parse(spec, &s), 0);
  qgm_compress_t *c = NULL;
  assert_int_equal(qgm_compress_create(&s, n, &c), 0);
  return c;
}

/* C(v): the message applied to zeros. */
static void compress(qgm_compress_t *c, const float *v, qgm_rng_t *enc,
                     qgm_rng_t *dec, float *out) {
  uint8_t *msg = malloc(qgm_compress_bytes(c));
  assert_non_null(msg);
  assert_int_equal(qgm_compress_encode(c, v, NULL, enc, msg, NULL), 0);
  memset(out, 0, qgm_compress_len(c) * sizeof *out);
  assert_int_equal(qgm_compress_apply(c, msg, dec, out), 0);
  free(msg);
}

static double norm2(const float *v, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++)
    s += (double)v[i] * v[i];
  return s;
}

static uint32_t u32_at(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static float f32_at(const uint8_t *p) {
  uint32_t u = u32_at(p);
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static void test_parse(void **state) {
  (void)state;
  qgm_compress_spec_t s;
  assert_int_equal(qgm_compress_parse("topk:0.01", &s), 0);
  assert_int_equal(s.kind, QGM_COMPRESS_TOPK);
  assert_near(s.fraction, 0.01, 0);
  assert_int_equal(qgm_compress_parse("qsgd:4", &s), 0);
  assert_int_equal(s.kind, QGM_COMPRESS_QSGD);
  assert_int_equal(s.bits, 4);
  assert_int_equal(qgm_compress_parse("sign", &s), 0);
  assert_int_equal(s.kind, QGM_COMPRESS_SIGN);
  assert_int_equal(qgm_compress_parse("none", &s), 0);
  assert_int_equal(s.kind, QGM_COMPRESS_NONE);
  const char *bad[] = {"", "topk", "topk:", "topk:0", "topk:1.5", "topk:x",
                       "randk:-0.1", "qsgd:1", "qsgd:17", "qsgd:4.5",
                       "sign:2", "none:1", "top-k:0.1", "zip"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (qgm_compress_parse(bad[i], &s) != QGM_EINVAL)
      fail_msg("'%s' was accepted", bad[i]);
  assert_string_equal(qgm_compress_names(),
                      "none, topk:F, randk:F, qsgd:BITS, sign, powersgd:R");
}

/* Sizes by the formats: 8k (top-k), 4k (rand-k), 4 per block of 256 plus
 * the packed codes (quantisers), 4n (none); k = ceil(F n). */
static void test_sizes(void **state) {
  (void)state;
  const struct {
    const char *spec;
    size_t n, kept, bytes;
  } cases[] = {
      {"none", 1000, 1000, 4000},     {"topk:0.01", 1000, 10, 80},
      {"topk:0.0101", 1000, 11, 88},  {"randk:0.01", 1000, 10, 40},
      {"qsgd:8", 1000, 1000, 16 + 1000}, {"qsgd:4", 1000, 1000, 16 + 500},
      {"qsgd:3", 1001, 1001, 16 + 376}, {"sign", 1000, 1000, 16 + 125},
      {"topk:0.01", 203530, 2036, 16288}, {"topk:1e-9", 50, 1, 8},
      {"topk:0.07", 100, 7, 56},           {"randk:0.1", 203530, 20353, 81412},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    qgm_compress_t *c = make(cases[i].spec, cases[i].n);
    assert_int_equal(qgm_compress_kept(c), cases[i].kept);
    assert_int_equal(qgm_compress_bytes(c), cases[i].bytes);
    qgm_compress_free(c);
  }
}

/* The 3 largest magnitudes of 6 (ties broken towards the lower index),
 * indices rising, then the values. */
static void test_topk_by_hand(void **state) {
  (void)state;
  const float v[6] = {0.5f, -3.0f, 1.0f, 3.0f, -0.25f, 3.0f};
  qgm_compress_t *c = make("topk:0.5", 6);
  uint8_t msg[24];
  assert_int_equal(qgm_compress_bytes(c), sizeof msg);
  assert_int_equal(qgm_compress_encode(c, v, NULL, NULL, msg, NULL), 0);
  const uint32_t idx[3] = {1, 3, 5};
  const float val[3] = {-3.0f, 3.0f, 3.0f};
  for (int j = 0; j < 3; j++) {
    assert_int_equal(u32_at(msg + 4 * j), idx[j]);
    assert_true(f32_at(msg + 12 + 4 * j) == val[j]);
  }
  qgm_compress_free(c);
  /* Ties at the threshold: the lowest indices. */
  const float flat[5] = {1.0f, -1.0f, 1.0f, 1.0f, 0.5f};
  c = make("topk:0.4", 5);
  uint8_t two[16];
  assert_int_equal(qgm_compress_encode(c, flat, NULL, NULL, two, NULL), 0);
  assert_int_equal(u32_at(two), 0);
  assert_int_equal(u32_at(two + 4), 1);
  qgm_compress_free(c);
}

static const float *order_by; /* for by_magnitude */

/* Larger magnitude first, then the lower index. */
static int by_magnitude(const void *a, const void *b) {
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  float x = fabsf(order_by[i]), y = fabsf(order_by[j]);
  return x > y ? -1 : x < y ? 1 : (i > j) - (i < j);
}

static int ascending(const void *a, const void *b) {
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  return (i > j) - (i < j);
}

/* Many ties (5 levels over 1000 entries, and negative zeros): the indices
 * are those of a full sort by (magnitude, index), for several k. */
static void test_topk_matches_a_sort(void **state) {
  (void)state;
  enum { N = 1000 };
  float v[N];
  uint32_t idx[N];
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 17, 0);
  for (int i = 0; i < N; i++) {
    v[i] = 0.5f * (float)((int)qgm_rng_below(&rng, 5) - 2);
    if (v[i] == 0.0f && qgm_rng_below(&rng, 2))
      v[i] = -0.0f;
    idx[i] = (uint32_t)i;
  }
  order_by = v;
  qsort(idx, N, sizeof *idx, by_magnitude);
  const char *specs[] = {"topk:0.001", "topk:0.3", "topk:0.55", "topk:0.9",
                         "topk:1"};
  for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
    qgm_compress_t *c = make(specs[s], N);
    const size_t k = qgm_compress_kept(c);
    uint8_t *msg = malloc(qgm_compress_bytes(c));
    uint32_t *expect = malloc(k * sizeof *expect);
    assert_non_null(msg);
    assert_non_null(expect);
    memcpy(expect, idx, k * sizeof *expect);
    qsort(expect, k, sizeof *expect, ascending);
    assert_int_equal(qgm_compress_encode(c, v, NULL, NULL, msg, NULL), 0);
    for (size_t j = 0; j < k; j++)
      if (u32_at(msg + 4 * j) != expect[j])
        fail_msg("%s: index %zu is %u, expected %u", specs[s], j,
                 u32_at(msg + 4 * j), expect[j]);
    free(msg);
    free(expect);
    qgm_compress_free(c);
  }
}

/* ||C(v) - v||^2 = ||v||^2 - sum of the k largest squares <= (1 - k/n)
 * ||v||^2, with the kept entries exactly v's. */
static void test_topk_contracts(void **state) {
  (void)state;
  const size_t n = 1000;
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 7, 0);
  float *v = test_uniform(n, &rng), *cv = malloc(n * sizeof *cv);
  assert_non_null(cv);
  for (int f = 0; f < 3; f++) {
    const double fraction[3] = {0.01, 0.1, 0.5};
    char spec[32];
    snprintf(spec, sizeof spec, "topk:%g", fraction[f]);
    qgm_compress_t *c = make(spec, n);
    const size_t k = qgm_compress_kept(c);
    compress(c, v, NULL, NULL, cv);
    double err = 0.0, kept_sq = 0.0, smallest_kept = INFINITY,
           largest_dropped = 0.0;
    size_t nonzero = 0;
    for (size_t i = 0; i < n; i++) {
      err += ((double)cv[i] - v[i]) * ((double)cv[i] - v[i]);
      if (cv[i] != 0.0f) {
        assert_true(cv[i] == v[i]);
        nonzero++;
        kept_sq += (double)v[i] * v[i];
        smallest_kept = fmin(smallest_kept, fabs(v[i]));
      } else {
        largest_dropped = fmax(largest_dropped, fabs(v[i]));
      }
    }
    assert_int_equal(nonzero, k);
    assert_true(smallest_kept >= largest_dropped);
    assert_near(err, norm2(v, n) - kept_sq, 1e-9 * norm2(v, n));
    assert_true(err <= (1.0 - (double)k / n) * norm2(v, n));
    qgm_compress_free(c);
  }
  free(v);
  free(cv);
}

/* One block of 4: scale mean |v| = 3, sign bits 0b1010; and the closed
 * form ||C(v) - v||^2 = ||v||^2 - ||v||_1^2 / b per block, which is at most
 * (1 - 1/b) ||v||^2, over blocks of 256 and a short last one. */
static void test_sign_by_hand_and_closed_form(void **state) {
  (void)state;
  const float v[4] = {1.0f, -2.0f, 3.0f, -6.0f};
  qgm_compress_t *c = make("sign", 4);
  uint8_t msg[5];
  assert_int_equal(qgm_compress_bytes(c), sizeof msg);
  assert_int_equal(qgm_compress_encode(c, v, NULL, NULL, msg, NULL), 0);
  assert_true(f32_at(msg) == 3.0f);
  assert_int_equal(msg[4], 0x0a);
  float cv[4];
  compress(c, v, NULL, NULL, cv);
  const float expect[4] = {3.0f, -3.0f, 3.0f, -3.0f};
  assert_memory_equal(cv, expect, sizeof cv);
  qgm_compress_free(c);

  const size_t n = 700; /* blocks of 256, 256 and 188 */
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 8, 0);
  float *x = test_uniform(n, &rng), *cx = malloc(n * sizeof *cx);
  assert_non_null(cx);
  c = make("sign", n);
  compress(c, x, NULL, NULL, cx);
  double err = 0.0, closed = 0.0;
  for (size_t b = 0; b < n; b += QGM_COMPRESS_BLOCK) {
    size_t len = n - b < QGM_COMPRESS_BLOCK ? n - b : QGM_COMPRESS_BLOCK;
    double l1 = 0.0;
    for (size_t i = b; i < b + len; i++)
      l1 += fabs(x[i]);
    closed += norm2(x + b, len) - l1 * l1 / (double)len;
  }
  for (size_t i = 0; i < n; i++)
    err += ((double)cx[i] - x[i]) * ((double)cx[i] - x[i]);
  assert_near(err, closed, 1e-5 * closed);
  assert_true(err <= (1.0 - 1.0 / QGM_COMPRESS_BLOCK) * norm2(x, n));
  qgm_compress_free(c);
  free(x);
  free(cx);
}

/* A vector with one nonzero entry is its own block norm: its level is s
 * whatever the rounding draws, so C(v) = v / tau exactly up to the float
 * scale; tau = 1 + min(B / s^2, sqrt(B) / s) = 1 + 256/127^2 for 8 bits. */
/* The two forms of a block by hand. qsgd:8 of one nonzero coordinate:
 * its level is s = 127 exactly, so the short form (five 2-bit codes, then
 * the one escaped 8-bit code) takes 3 bytes against the long form's 5,
 * and the scale's top bit says so. qsgd:2 (s = 1) is always long: its
 * codes are 2 bits already. */
static void test_qsgd_by_hand(void **state) {
  (void)state;
  float v[5] = {0.0f, 0.0f, -2.0f, 0.0f, 0.0f}, cv[5];
  qgm_compress_t *c = make("qsgd:8", 5);
  const double tau = 1.0 + 256.0 / (127.0 * 127.0);
  assert_near(qgm_compress_unbiased_scale(c), tau, 1e-6);
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 9, 0);
  uint8_t msg[4 + 5];
  size_t bytes = 0;
  assert_int_equal(qgm_compress_bytes(c), sizeof msg);
  assert_int_equal(qgm_compress_encode(c, v, NULL, &rng, msg, &bytes), 0);
  assert_int_equal(bytes, 4 + 3);
  assert_int_equal(u32_at(msg) >> 31, 1); /* short */
  msg[3] &= 0x7f;
  assert_near(f32_at(msg), 2.0 / 127.0, 1e-9);
  const uint8_t short_form[3] = {3 << 4, 0, 0x80 | 127};
  assert_memory_equal(msg + 4, short_form, 3);
  compress(c, v, &rng, NULL, cv);
  for (int i = 0; i < 5; i++)
    assert_near(cv[i], i == 2 ? -2.0 / tau : 0.0, 1e-6);
  qgm_compress_free(c);

  c = make("qsgd:2", 5);
  uint8_t two[4 + 2];
  assert_int_equal(qgm_compress_bytes(c), sizeof two);
  assert_int_equal(qgm_compress_encode(c, v, NULL, &rng, two, &bytes), 0);
  assert_int_equal(bytes, sizeof two);
  assert_int_equal(u32_at(two), u32_at((const uint8_t *)&(float){2.0f}));
  const uint8_t long_form[2] = {(1 | 2) << 4, 0}; /* level 1, negative */
  assert_memory_equal(two + 4, long_form, 2);
  qgm_compress_free(c);
}

/* Messages whose blocks take both forms decode to the levels QSGD
 * allows: tau |C(v)_i| / step is floor(s |v_i| / ||v_b||) or one more,
 * with v_i's sign, whichever form the block took. A block of small
 * values next to one spike goes short, a block of equal values at
 * qsgd:7 (levels near 63 / 16 = 3.9, all escaped) long. A short block
 * that claims more escapes than its long form would hold is refused. */
static void test_qsgd_mixed_forms(void **state) {
  (void)state;
  const size_t n = 3 * QGM_COMPRESS_BLOCK + 7;
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 21, 0);
  float *v = test_uniform(n, &rng), *cv = malloc(n * sizeof *cv);
  assert_non_null(cv);
  v[3] = 40.0f; /* block 0: one spike */
  for (size_t i = QGM_COMPRESS_BLOCK; i < 2 * QGM_COMPRESS_BLOCK; i++)
    v[i] = -0.5f; /* block 1: equal values */
  qgm_compress_t *c = make("qsgd:7", n);
  const int s = 63;
  const double tau = qgm_compress_unbiased_scale(c);
  uint8_t *msg = malloc(qgm_compress_bytes(c));
  assert_non_null(msg);
  size_t bytes = 0;
  assert_int_equal(qgm_compress_encode(c, v, NULL, &rng, msg, &bytes), 0);
  assert_true(bytes < qgm_compress_bytes(c));
  assert_int_equal(u32_at(msg) >> 31, 1);     /* block 0: short */
  assert_int_equal(u32_at(msg + 4) >> 31, 0); /* block 1: long */
  memset(cv, 0, n * sizeof *cv);
  assert_int_equal(qgm_compress_apply(c, msg, NULL, cv), 0);
  for (size_t b = 0; b * QGM_COMPRESS_BLOCK < n; b++) {
    const size_t at = b * QGM_COMPRESS_BLOCK;
    const size_t len = n - at < QGM_COMPRESS_BLOCK ? n - at : QGM_COMPRESS_BLOCK;
    const double norm = sqrt(norm2(v + at, len));
    for (size_t i = at; i < at + len; i++) {
      const double level = tau * fabs(cv[i]) / (norm / s);
      const double low = floor(s * fabs(v[i]) / norm);
      assert_true(fabs(level - nearbyint(level)) < 1e-3);
      assert_true(nearbyint(level) == low || nearbyint(level) == low + 1);
      assert_true(cv[i] == 0.0f || (cv[i] < 0.0f) == (v[i] < 0.0f));
    }
  }
  /* Block 0's 2-bit codes all "escaped": 64 + 256 * 7 / 8 bytes, more
   * than its long form's 224. */
  memset(msg + 4 * 4, 0xff, QGM_COMPRESS_BLOCK / 4);
  assert_int_equal(qgm_compress_apply(c, msg, NULL, cv), QGM_EINVAL);
  free(msg);
  free(v);
  free(cv);
  qgm_compress_free(c);
}

/* E[tau C(v)] = v coordinate by coordinate: tau C(v)_i is a draw between
 * two neighbouring levels (step ||v_block|| / s), so its standard deviation
 * is at most step / 2 and the mean of T draws is within 5 step / (2
 * sqrt(T)). And the mean of ||C(v) - v||^2 stays below (1 - 1/tau)
 * ||v||^2, the contraction the scaling buys. */
static void test_qsgd_unbiased_and_contractive(void **state) {
  (void)state;
  const size_t n = 600, trials = 4000;
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 10, 0);
  float *v = test_uniform(n, &rng), *cv = malloc(n * sizeof *cv);
  double *mean = calloc(n, sizeof *mean);
  assert_non_null(cv);
  assert_non_null(mean);
  qgm_compress_t *c = make("qsgd:4", n);
  const double tau = qgm_compress_unbiased_scale(c);
  assert_near(tau, 1.0 + 16.0 / 7.0, 1e-6); /* min(256/49, 16/7) */
  double err = 0.0;
  for (size_t t = 0; t < trials; t++) {
    compress(c, v, &rng, NULL, cv);
    for (size_t i = 0; i < n; i++) {
      mean[i] += tau * cv[i] / (double)trials;
      err += ((double)cv[i] - v[i]) * ((double)cv[i] - v[i]) / trials;
    }
  }
  for (size_t i = 0; i < n; i++) {
    size_t b = i / QGM_COMPRESS_BLOCK * QGM_COMPRESS_BLOCK;
    size_t len = n - b < QGM_COMPRESS_BLOCK ? n - b : QGM_COMPRESS_BLOCK;
    double step = sqrt(norm2(v + b, len)) / 7.0;
    assert_near(mean[i], v[i], 5.0 * step / 2.0 / sqrt((double)trials));
  }
  assert_true(err <= (1.0 - 1.0 / tau) * norm2(v, n));
  qgm_compress_free(c);
  free(v);
  free(cv);
  free(mean);
}

/* Rand-k: k coordinates, v's values, positions from the rng alone (the
 * receiver's copy of the seed finds them); (n/k) C(v) is unbiased: each
 * coordinate is v_i n/k with probability k/n, standard deviation |v_i|
 * sqrt(n/k - 1), so the mean of T draws is within 5 |v_i| sqrt((n/k - 1)
 * / T); and E||C(v) - v||^2 = (1 - k/n) ||v||^2 (within 1%: the draws'
 * spread is 0.03% of it here). */
static void test_randk(void **state) {
  (void)state;
  const size_t n = 100, trials = 20000;
  qgm_rng_t rng, enc, dec;
  qgm_rng_seed(&rng, 11, 0);
  float *v = test_uniform(n, &rng), *cv = malloc(n * sizeof *cv);
  double *mean = calloc(n, sizeof *mean);
  assert_non_null(cv);
  assert_non_null(mean);
  qgm_compress_t *c = make("randk:0.1", n);
  const double scale = qgm_compress_unbiased_scale(c);
  assert_near(scale, 10.0, 0);
  double err = 0.0;
  for (size_t t = 0; t < trials; t++) {
    qgm_rng_seed(&enc, 12, t);
    dec = enc;
    compress(c, v, &enc, &dec, cv);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
      if (cv[i] != 0.0f) {
        assert_true(cv[i] == v[i]);
        kept++;
      }
      mean[i] += scale * cv[i] / (double)trials;
      err += ((double)cv[i] - v[i]) * ((double)cv[i] - v[i]) / trials;
    }
    assert_int_equal(kept, 10);
  }
  for (size_t i = 0; i < n; i++)
    assert_near(mean[i], v[i], 5.0 * fabs(v[i]) * sqrt(9.0 / trials));
  assert_near(err, 0.9 * norm2(v, n), 0.01 * norm2(v, n));
  qgm_compress_free(c);
  free(v);
  free(cv);
  free(mean);
}

/* Against a public copy: the copy becomes ref + C(v - ref); keeping every
 * coordinate reproduces v bit for bit; a message whose indices do not
 * rise is refused. */
static void test_apply_to_a_copy(void **state) {
  (void)state;
  const size_t n = 300;
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 13, 0);
  float *v = test_uniform(n, &rng), *ref = test_uniform(n, &rng);
  float *copy = malloc(n * sizeof *copy), *diff = malloc(n * sizeof *diff);
  float *cd = malloc(n * sizeof *cd);
  assert_non_null(copy);
  assert_non_null(diff);
  assert_non_null(cd);
  for (size_t i = 0; i < n; i++)
    diff[i] = v[i] - ref[i];
  const char *specs[] = {"topk:1", "randk:1", "none", "topk:0.1", "sign",
                         "qsgd:6"};
  for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
    qgm_compress_t *c = make(specs[s], n);
    uint8_t *msg = malloc(qgm_compress_bytes(c));
    assert_non_null(msg);
    qgm_rng_t enc, dec, again;
    qgm_rng_seed(&enc, 14, s);
    dec = again = enc;
    assert_int_equal(qgm_compress_encode(c, v, ref, &enc, msg, NULL), 0);
    memcpy(copy, ref, n * sizeof *copy);
    assert_int_equal(qgm_compress_apply(c, msg, &dec, copy), 0);
    if (s < 3) {
      assert_memory_equal(copy, v, n * sizeof *v);
    } else {
      compress(c, diff, &again, NULL, cd);
      for (size_t i = 0; i < n; i++) {
        double expect = s == 3 && cd[i] != 0.0f ? v[i] : ref[i] + cd[i];
        assert_near(copy[i], expect, 1e-6);
      }
    }
    free(msg);
    qgm_compress_free(c);
  }
  qgm_compress_t *c = make("topk:0.01", n);
  uint8_t msg[24];
  assert_int_equal(qgm_compress_encode(c, v, NULL, NULL, msg, NULL), 0);
  memcpy(msg + 4, msg, 4); /* the second index repeats the first */
  assert_int_equal(qgm_compress_apply(c, msg, NULL, copy), QGM_EINVAL);
  memset(msg, 0xff, 4); /* out of range */
  assert_int_equal(qgm_compress_apply(c, msg, NULL, copy), QGM_EINVAL);
  qgm_compress_free(c);
  free(v);
  free(ref);
  free(copy);
  free(diff);
  free(cd);
}

/* Two nodes, each with a copy of the other: after rounds of sends the
 * receiver's copy of node 0 has the bits of node 0's own copy, for every
 * operator (rand-k's positions and QSGD's roundings come from the seed,
 * the sender and the round). */
static void test_choco_copies_agree(void **state) {
  (void)state;
  const size_t n = 500;
  const char *specs[] = {"topk:0.05", "randk:0.05", "qsgd:4", "sign"};
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 15, 0);
  float *x = test_uniform(n, &rng);
  for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
    qgm_choco_config_t cfg = {.dim = n, .peers = 1, .seed = 5, .gamma = 0.5};
    assert_int_equal(qgm_compress_parse(specs[s], &cfg.compress), 0);
    qgm_choco_t *a = NULL, *b = NULL;
    cfg.node = 0;
    assert_int_equal(qgm_choco_create(&cfg, &a), 0);
    cfg.node = 1;
    assert_int_equal(qgm_choco_create(&cfg, &b), 0);
    uint8_t *msg = malloc(qgm_choco_message_bytes(a));
    assert_non_null(msg);
    double before = norm2(x, n);
    for (uint64_t round = 0; round < 5; round++) {
      assert_int_equal(qgm_choco_send(a, round, x, msg, NULL), 0);
      assert_int_equal(qgm_choco_receive(b, 0, 0, round, msg), 0);
    }
    size_t la, lb;
    float *ca = qgm_choco_copies(a, &la), *cb = qgm_choco_copies(b, &lb);
    assert_int_equal(la, 2 * n);
    assert_memory_equal(ca, cb + n, n * sizeof *ca);
    /* Error feedback: the copy approaches x. */
    double after = qgm_vec_dist2(ca, x, n);
    assert_true(after < 0.9 * before);
    /* The mix: base + gamma W (xhat_1 - xhat_0) at node 1, whose own copy
     * is still 0: base + 0.5 * 0.5 * (xhat_0 - 0). */
    float *mix = malloc(n * sizeof *mix), *zero = calloc(n, sizeof *zero);
    assert_non_null(mix);
    assert_non_null(zero);
    const double w = 0.5;
    qgm_choco_mix(b, mix, zero, &w);
    for (size_t i = 0; i < n; i++)
      assert_near(mix[i], 0.25 * ca[i], 1e-7);
    free(mix);
    free(zero);
    free(msg);
    qgm_choco_free(a);
    qgm_choco_free(b);
  }
  free(x);
}

/* The identity compressor (top-k keeping every coordinate) with gamma = 1
 * is plain gossip bit for bit: over rounds of new messages on a 5-node
 * ring, CHOCO's mix equals qgm_mix_messages' (the daemon's arithmetic). */
static void test_choco_identity_is_plain_gossip(void **state) {
  (void)state;
  enum { N = 5, ROUNDS = 3 };
  const size_t n = 333;
  qgm_topology_t *t = NULL;
  assert_int_equal(qgm_topology_ring(N, &t), 0);
  qgm_choco_t *c[N];
  float *msgs[N], *plain[N], *mixed[N];
  uint8_t *wire[N];
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 16, 0);
  for (int i = 0; i < N; i++) {
    qgm_choco_config_t cfg = {.dim = n, .node = i, .peers = 2, .seed = 1,
                              .gamma = 1.0};
    assert_int_equal(qgm_compress_parse("topk:1", &cfg.compress), 0);
    assert_int_equal(qgm_choco_create(&cfg, &c[i]), 0);
    wire[i] = malloc(qgm_choco_message_bytes(c[i]));
    plain[i] = malloc(n * sizeof(float));
    mixed[i] = malloc(n * sizeof(float));
    msgs[i] = malloc(n * sizeof(float));
    assert_non_null(wire[i]);
    assert_non_null(plain[i]);
    assert_non_null(mixed[i]);
    assert_non_null(msgs[i]);
  }
  for (uint64_t round = 0; round < ROUNDS; round++) {
    for (int i = 0; i < N; i++) {
      test_fill_uniform(msgs[i], n, &rng);
      assert_int_equal(qgm_choco_send(c[i], round, msgs[i], wire[i], NULL), 0);
    }
    assert_int_equal(qgm_mix_messages(t, round, QGM_COMBINE_NEIGHBOURS,
                                      (const float *const *)msgs, plain, n),
                     0);
    for (int i = 0; i < N; i++) {
      int peers[2];
      double w[2], self;
      int k = qgm_topology_neighbors(t, i, round, peers, w, &self);
      assert_int_equal(k, 2);
      for (int j = 0; j < k; j++)
        assert_int_equal(
            qgm_choco_receive(c[i], j, peers[j], round, wire[peers[j]]), 0);
      qgm_choco_mix(c[i], mixed[i], msgs[i], w);
      assert_memory_equal(mixed[i], plain[i], n * sizeof(float));
    }
  }
  for (int i = 0; i < N; i++) {
    qgm_choco_free(c[i]);
    free(wire[i]);
    free(plain[i]);
    free(mixed[i]);
    free(msgs[i]);
  }
  qgm_topology_free(t);
}

/* QSGD's roundings come from qgm_rng_uniforms: the draws of as many
 * qgm_rng_uniform calls, in order, leaving the generator where they
 * would (so the message bytes do not depend on which is used). */
static void test_uniforms_are_uniform_draws(void **state) {
  (void)state;
  qgm_rng_t a, b;
  qgm_rng_seed(&a, 11, 7);
  qgm_rng_seed(&b, 11, 7);
  double bulk[300];
  qgm_rng_uniforms(&a, bulk, 300);
  for (int i = 0; i < 300; i++) {
    double one = qgm_rng_uniform(&b);
    assert_true(bulk[i] == one);
    assert_true(one >= 0.0 && one < 1.0);
  }
  assert_true(qgm_rng_u64(&a) == qgm_rng_u64(&b));
}

/* What CHOCO refuses, each with its reason. */
static void test_choco_refusals(void **state) {
  (void)state;
  assert_null(qgm_choco_refuses(QGM_ALG_QG_DSGDM_N, NULL));
  assert_null(qgm_choco_refuses(QGM_ALG_DADAM, NULL));
  assert_non_null(qgm_choco_refuses(QGM_ALG_GT, NULL));
  assert_non_null(qgm_choco_refuses(QGM_ALG_D2, NULL));
  assert_non_null(qgm_choco_refuses(QGM_ALG_ALLREDUCE, NULL));
  qgm_topology_t *t = NULL;
  assert_int_equal(qgm_topology_create("one-peer-exp", 8, &t), 0);
  assert_non_null(qgm_choco_refuses(QGM_ALG_DSGD, t));
  qgm_topology_free(t);
  assert_int_equal(qgm_topology_create("ring", 8, &t), 0);
  assert_null(qgm_choco_refuses(QGM_ALG_DSGD, t));
  qgm_topology_free(t);
  /* Hosts on a static graph compress; on a changing one they cannot. */
  qgm_topology_spec_t spec = {.name = "hier", .nodes = 8, .hosts = 4};
  assert_int_equal(qgm_topology_create_ex(&spec, &t, NULL), 0);
  assert_null(qgm_choco_refuses(QGM_ALG_QG_DSGDM_N, t));
  qgm_topology_free(t);
  spec.host_topology = "one-peer-exp";
  assert_int_equal(qgm_topology_create_ex(&spec, &t, NULL), 0);
  assert_non_null(qgm_choco_refuses(QGM_ALG_QG_DSGDM_N, t));
  qgm_topology_free(t);
}

/* A node's state on a hierarchical topology: 3 hosts of 2 nodes on a
 * ring of hosts, a vector of 11 floats. Slot 0 holds the first 6 (the
 * larger slice), slot 1 the last 5; each keeps its own copy and those of
 * the 2 neighbouring hosts, all starting at x0's slice. On a flat ring
 * the copies are whole. */
static void test_choco_node_state(void **state) {
  (void)state;
  float x0[11];
  for (int i = 0; i < 11; i++)
    x0[i] = (float)i;
  qgm_topology_spec_t spec = {.name = "hier", .nodes = 6, .hosts = 3};
  qgm_topology_t *t = NULL;
  assert_int_equal(qgm_topology_create_ex(&spec, &t, NULL), 0);
  qgm_choco_config_t cc = {.gamma = 0.5};
  assert_int_equal(qgm_compress_parse("topk:0.5", &cc.compress), 0);
  const size_t at[2] = {0, 6}, dim[2] = {6, 5};
  for (int node = 2; node < 4; node++) { /* host 1, slots 0 and 1 */
    qgm_choco_t *c = NULL;
    assert_int_equal(qgm_choco_create_node(t, node, 11, cc, x0, &c), 0);
    size_t len;
    const float *copies = qgm_choco_copies(c, &len);
    const int slot = node - 2;
    assert_int_equal(len, 3 * dim[slot]);
    for (size_t k = 0; k < len; k++)
      assert_true(copies[k] == x0[at[slot] + k % dim[slot]]);
    /* top-k 1/2 of the slice: ceil(3) or ceil(2.5) = 3 coordinates. */
    assert_int_equal(qgm_choco_message_bytes(c), 8 * 3);
    qgm_choco_free(c);
  }
  qgm_topology_free(t);
  assert_int_equal(qgm_topology_create("ring", 6, &t), 0);
  qgm_choco_t *c = NULL;
  assert_int_equal(qgm_choco_create_node(t, 0, 11, cc, x0, &c), 0);
  size_t len;
  qgm_choco_copies(c, &len);
  assert_int_equal(len, 3 * 11);
  qgm_choco_free(c);
  qgm_topology_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_sizes),
      cmocka_unit_test(test_topk_by_hand),
      cmocka_unit_test(test_topk_matches_a_sort),
      cmocka_unit_test(test_topk_contracts),
      cmocka_unit_test(test_sign_by_hand_and_closed_form),
      cmocka_unit_test(test_qsgd_by_hand),
      cmocka_unit_test(test_qsgd_mixed_forms),
      cmocka_unit_test(test_qsgd_unbiased_and_contractive),
      cmocka_unit_test(test_randk),
      cmocka_unit_test(test_apply_to_a_copy),
      cmocka_unit_test(test_choco_copies_agree),
      cmocka_unit_test(test_choco_identity_is_plain_gossip),
      cmocka_unit_test(test_uniforms_are_uniform_draws),
      cmocka_unit_test(test_choco_refusals),
      cmocka_unit_test(test_choco_node_state),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
