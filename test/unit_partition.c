/* unit_partition.c - the Dirichlet non-IID partition and the random
 * distributions it is built on. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "qgm.h"

#define N_SYNTH 60000
#define CLASSES 10
#define FASHION_LABELS "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz"

/* 6000 labels of each class in random order, like the Fashion-MNIST
 * training set. The labels come from their own rng stream: with the same
 * (seed, stream) as the partition, its shuffle would replay this one and
 * hand it the labels sorted by class. */
static uint8_t *synthetic_labels(void) {
  uint8_t *labels = malloc(N_SYNTH);
  size_t *perm = malloc(N_SYNTH * sizeof *perm);
  assert_non_null(labels);
  assert_non_null(perm);
  for (size_t i = 0; i < N_SYNTH; i++)
    perm[i] = i;
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 2024, 77);
  qgm_rng_shuffle(&rng, perm, N_SYNTH);
  for (size_t i = 0; i < N_SYNTH; i++)
    labels[perm[i]] = (uint8_t)(i / (N_SYNTH / CLASSES));
  free(perm);
  return labels;
}

static int setup_labels(void **state) {
  *state = synthetic_labels();
  return 0;
}

static int teardown_labels(void **state) {
  free(*state);
  return 0;
}

/* Checks the invariants every successful partition must have: shard length
 * floor(N/n), indices in range, no index twice. */
static void check_shards(const size_t *shards, size_t len, size_t count,
                         int nodes) {
  assert_non_null(shards);
  assert_int_equal(len, count / (size_t)nodes);
  unsigned char *seen = calloc(count, 1);
  assert_non_null(seen);
  for (size_t i = 0; i < (size_t)nodes * len; i++) {
    assert_true(shards[i] < count);
    assert_int_equal(seen[shards[i]], 0);
    seen[shards[i]] = 1;
  }
  free(seen);
}

typedef struct skew {
  double mean_max;  /* mean over nodes of the largest class fraction */
  double worst_max; /* largest class fraction of any node */
  double mean_tv;   /* mean over nodes of the total variation distance
                       between the node's and the global class mix */
} skew_t;

static skew_t measure_skew(const uint8_t *labels, size_t count, int classes,
                           const size_t *shards, size_t len, int nodes) {
  double global[256] = {0};
  for (size_t i = 0; i < count; i++)
    global[labels[i]] += 1.0 / (double)count;
  skew_t s = {0, 0, 0};
  for (int i = 0; i < nodes; i++) {
    size_t hist[256] = {0};
    for (size_t j = 0; j < len; j++)
      hist[labels[shards[(size_t)i * len + j]]]++;
    size_t top = 0;
    double tv = 0.0;
    for (int c = 0; c < classes; c++) {
      if (hist[c] > top)
        top = hist[c];
      tv += fabs((double)hist[c] / (double)len - global[c]);
    }
    double frac = (double)top / (double)len;
    s.mean_max += frac / nodes;
    s.mean_tv += 0.5 * tv / nodes;
    if (frac > s.worst_max)
      s.worst_max = frac;
  }
  return s;
}

/* Skew averaged over `seeds` seeds 1..seeds, worst_max over all of them. */
static skew_t skew_over_seeds(const uint8_t *labels, size_t count, int nodes,
                              double alpha, int seeds) {
  skew_t sum = {0, 0, 0};
  for (int seed = 1; seed <= seeds; seed++) {
    size_t *shards = NULL, len = 0;
    assert_int_equal(qgm_partition_dirichlet(labels, count, CLASSES, nodes,
                                             alpha, (uint64_t)seed, &shards,
                                             &len),
                     QGM_OK);
    check_shards(shards, len, count, nodes);
    skew_t s = measure_skew(labels, count, CLASSES, shards, len, nodes);
    sum.mean_max += s.mean_max / seeds;
    sum.mean_tv += s.mean_tv / seeds;
    if (s.worst_max > sum.worst_max)
      sum.worst_max = s.worst_max;
    free(shards);
  }
  return sum;
}

/* ------------------------------------------------------------ structure */

static void test_equal_lengths_and_distinct(void **state) {
  const uint8_t *labels = *state;
  static const int ns[] = {1, 2, 4, 8, 16, 32, 33};
  static const double alphas[] = {0.1, 1.0};
  for (size_t a = 0; a < sizeof alphas / sizeof *alphas; a++)
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
      size_t *shards = NULL, len = 0;
      assert_int_equal(qgm_partition_dirichlet(labels, N_SYNTH, CLASSES,
                                               ns[i], alphas[a], 42, &shards,
                                               &len),
                       QGM_OK);
      check_shards(shards, len, N_SYNTH, ns[i]);
      free(shards);
    }
}

/* Sizes that are not multiples of anything convenient, several chunks,
 * chunks smaller than 2k samples (where the official code never enters its
 * loop) and count == nodes. */
static void test_awkward_sizes(void **state) {
  (void)state;
  static const struct {
    size_t count;
    int nodes;
  } cases[] = {{1, 1}, {7, 7}, {11, 11}, {100, 100}, {1001, 33},
               {12345, 64}, {5000, 1024}, {25, 3}};
  uint8_t *labels = malloc(12345);
  assert_non_null(labels);
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 5, 1);
  for (size_t i = 0; i < 12345; i++)
    labels[i] = (uint8_t)qgm_rng_below(&rng, CLASSES);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    size_t *shards = NULL, len = 0;
    assert_int_equal(qgm_partition_dirichlet(labels, cases[i].count, CLASSES,
                                             cases[i].nodes, 0.5, 9, &shards,
                                             &len),
                     QGM_OK);
    check_shards(shards, len, cases[i].count, cases[i].nodes);
    free(shards);
  }
  free(labels);
}

/* n = 1: one shard holding every index exactly once. */
static void test_single_node_is_permutation(void **state) {
  const uint8_t *labels = *state;
  size_t *shards = NULL, len = 0;
  assert_int_equal(qgm_partition_dirichlet(labels, N_SYNTH, CLASSES, 1, 0.1,
                                           3, &shards, &len),
                   QGM_OK);
  assert_int_equal(len, N_SYNTH);
  check_shards(shards, len, N_SYNTH, 1);
  free(shards);
}

/* alpha = 1e-300 makes every gamma draw underflow to 0, so every class
 * takes the documented fallback: the whole class goes to the node with the
 * fewest samples, lowest id first. With two nodes and two classes of four
 * samples each, node 0 gets class 0 and node 1 gets class 1, so the result
 * is known exactly up to order within each shard. */
static void test_fallback_by_hand(void **state) {
  (void)state;
  static const uint8_t labels[8] = {1, 0, 0, 1, 1, 0, 1, 0};
  size_t *shards = NULL, len = 0;
  assert_int_equal(qgm_partition_dirichlet(labels, 8, 2, 2, 1e-300, 11,
                                           &shards, &len),
                   QGM_OK);
  assert_int_equal(len, 4);
  check_shards(shards, len, 8, 2);
  for (size_t j = 0; j < 4; j++) {
    assert_int_equal(labels[shards[j]], 0);
    assert_int_equal(labels[shards[4 + j]], 1);
  }
  free(shards);
}

/* Tiny alpha on the synthetic set must still finish quickly with valid
 * shards (fallback plus the round cap), including with more nodes per
 * chunk than classes, where the minimum-size target may be unreachable. */
static void test_tiny_alpha_terminates(void **state) {
  const uint8_t *labels = *state;
  static const double alphas[] = {1e-300, 1e-6, 0.001};
  for (size_t a = 0; a < sizeof alphas / sizeof *alphas; a++) {
    size_t *shards = NULL, len = 0;
    assert_int_equal(qgm_partition_dirichlet(labels, N_SYNTH, CLASSES, 32,
                                             alphas[a], 1, &shards, &len),
                     QGM_OK);
    check_shards(shards, len, N_SYNTH, 32);
    free(shards);
  }
  uint8_t *two = malloc(N_SYNTH);
  assert_non_null(two);
  for (size_t i = 0; i < N_SYNTH; i++)
    two[i] = (uint8_t)(labels[i] & 1);
  size_t *shards = NULL, len = 0;
  assert_int_equal(qgm_partition_dirichlet(two, N_SYNTH, 2, 100, 0.01, 1,
                                           &shards, &len),
                   QGM_OK);
  check_shards(shards, len, N_SYNTH, 100);
  free(shards);
  free(two);
}

static void test_huge_alpha(void **state) {
  const uint8_t *labels = *state;
  /* Gamma draws near 1e300 would overflow a plain sum; the partition must
   * still come out near-uniform rather than degenerate. */
  size_t *shards = NULL, len = 0;
  assert_int_equal(qgm_partition_dirichlet(labels, N_SYNTH, CLASSES, 8,
                                           1e300, 1, &shards, &len),
                   QGM_OK);
  check_shards(shards, len, N_SYNTH, 8);
  skew_t s = measure_skew(labels, N_SYNTH, CLASSES, shards, len, 8);
  assert_true(s.worst_max < 0.15);
  free(shards);
}

static void test_all_classes_256(void **state) {
  (void)state;
  uint8_t *labels = malloc(N_SYNTH);
  assert_non_null(labels);
  for (size_t i = 0; i < N_SYNTH; i++)
    labels[i] = (uint8_t)(i * 7919 % 256);
  size_t *shards = NULL, len = 0;
  assert_int_equal(qgm_partition_dirichlet(labels, N_SYNTH, 256, 20, 0.3, 1,
                                           &shards, &len),
                   QGM_OK);
  check_shards(shards, len, N_SYNTH, 20);
  free(shards);
  free(labels);
}

/* ---------------------------------------------------------- determinism */

static void test_seed_determinism(void **state) {
  const uint8_t *labels = *state;
  size_t *a = NULL, *b = NULL, *c = NULL, la = 0, lb = 0, lc = 0;
  assert_int_equal(qgm_partition_dirichlet(labels, N_SYNTH, CLASSES, 16, 0.1,
                                           7, &a, &la),
                   QGM_OK);
  assert_int_equal(qgm_partition_dirichlet(labels, N_SYNTH, CLASSES, 16, 0.1,
                                           7, &b, &lb),
                   QGM_OK);
  assert_int_equal(qgm_partition_dirichlet(labels, N_SYNTH, CLASSES, 16, 0.1,
                                           8, &c, &lc),
                   QGM_OK);
  assert_int_equal(la, lb);
  assert_int_equal(la, lc);
  assert_memory_equal(a, b, 16 * la * sizeof *a);
  assert_memory_not_equal(a, c, 16 * la * sizeof *a);
  /* Not just reordered: node 0 holds a different set of samples. */
  size_t same = 0;
  unsigned char *in0 = calloc(N_SYNTH, 1);
  assert_non_null(in0);
  for (size_t j = 0; j < la; j++)
    in0[a[j]] = 1;
  for (size_t j = 0; j < lc; j++)
    same += in0[c[j]];
  assert_true(same < la);
  free(in0);
  free(a);
  free(b);
  free(c);
}

/* ----------------------------------------------------------------- skew */

/* Measured over seeds 1..200 on these labels (worst node of all seeds):
 * alpha = 1000 gave a largest class fraction of at most 0.128 (n=8) and
 * 0.128 (n=16), against 0.1 for a perfectly uniform node. The spread comes
 * from Dir(1000 * 1_k) itself (relative sd of each proportion about
 * sqrt((k-1)/(1000k+1)) ~ 3%) and from step 4's slicing, which moves a few
 * hundred samples of the first or last class across node boundaries. 0.15
 * leaves ~2% of margin above the worst of 3200 nodes. */
static void test_large_alpha_is_near_uniform(void **state) {
  const uint8_t *labels = *state;
  static const int ns[] = {8, 16};
  for (size_t i = 0; i < 2; i++) {
    skew_t s = skew_over_seeds(labels, N_SYNTH, ns[i], 1000.0, 5);
    assert_true(s.worst_max < 0.15);
    assert_true(s.mean_max < 0.12);
    assert_true(s.mean_tv < 0.04);
  }
}

/* alpha = 0.1 (the paper's "highly non-IID"): over seeds 1..200 the mean
 * largest class fraction of one seed ranged over [0.43, 0.72] (n=8) and
 * [0.45, 0.67] (n=16), about 0.57 on average. Averaged over five seeds the
 * sd is ~0.03, so 0.45 is about four sd below the expected value and still
 * 4.5x the IID value of 0.1. */
static void test_small_alpha_is_skewed(void **state) {
  const uint8_t *labels = *state;
  static const int ns[] = {8, 16};
  for (size_t i = 0; i < 2; i++) {
    skew_t s = skew_over_seeds(labels, N_SYNTH, ns[i], 0.1, 5);
    assert_true(s.mean_max > 0.45);
    assert_true(s.mean_tv > 0.5);
    /* Some node is dominated by a single class. */
    assert_true(s.worst_max > 0.6);
  }
}

/* Mean total variation distance from the global class mix, averaged over
 * three seeds, measured (n=8, 20 seeds): 0.67, 0.38, 0.14, 0.014 for alpha
 * 0.1, 1, 10, 1000. The gaps are many times the seed-to-seed noise, so
 * strict monotonicity is a safe assertion; the mean largest class fraction
 * (0.58, 0.30, 0.16, 0.107) must fall as well. */
static void test_skew_monotone_in_alpha(void **state) {
  const uint8_t *labels = *state;
  static const double alphas[] = {0.1, 1.0, 10.0, 1000.0};
  static const int ns[] = {8, 16};
  for (size_t i = 0; i < 2; i++) {
    skew_t prev = {2.0, 2.0, 2.0};
    for (size_t a = 0; a < 4; a++) {
      skew_t s = skew_over_seeds(labels, N_SYNTH, ns[i], alphas[a], 3);
      assert_true(s.mean_tv < prev.mean_tv);
      assert_true(s.mean_max < prev.mean_max);
      prev = s;
    }
  }
}

/* The real Fashion-MNIST training labels, read here with zlib directly so
 * that this test does not depend on the IDX reader. */
static void test_fashion_mnist_labels(void **state) {
  (void)state;
  gzFile f = gzopen(FASHION_LABELS, "rb");
  if (!f) {
    skip();
    return;
  }
  unsigned char head[8];
  assert_int_equal(gzread(f, head, 8), 8);
  assert_int_equal(head[2], 0x08);
  assert_int_equal(head[3], 0x01);
  size_t count = (size_t)head[4] << 24 | (size_t)head[5] << 16 |
                 (size_t)head[6] << 8 | head[7];
  assert_int_equal(count, 60000);
  uint8_t *labels = malloc(count);
  assert_non_null(labels);
  assert_int_equal(gzread(f, labels, (unsigned)count), (int)count);
  gzclose(f);

  skew_t iid = skew_over_seeds(labels, count, 16, 1000.0, 2);
  skew_t non = skew_over_seeds(labels, count, 16, 0.1, 2);
  assert_true(iid.worst_max < 0.15);
  assert_true(non.mean_max > 0.4);
  free(labels);
}

/* --------------------------------------------------------------- errors */

static void test_invalid_arguments(void **state) {
  const uint8_t *labels = *state;
  size_t sentinel = 0, len = 99;
  size_t *shards = &sentinel;
  assert_int_equal(qgm_partition_dirichlet(NULL, 10, CLASSES, 2, 1.0, 1,
                                           &shards, &len),
                   QGM_EINVAL);
  assert_null(shards);
  assert_int_equal(len, 0);
  assert_int_equal(
      qgm_partition_dirichlet(labels, 10, CLASSES, 2, 1.0, 1, NULL, &len),
      QGM_EINVAL);
  assert_int_equal(
      qgm_partition_dirichlet(labels, 10, CLASSES, 2, 1.0, 1, &shards, NULL),
      QGM_EINVAL);
  static const int bad_nodes[] = {0, -1, -1000};
  for (size_t i = 0; i < 3; i++)
    assert_int_equal(qgm_partition_dirichlet(labels, 10, CLASSES,
                                             bad_nodes[i], 1.0, 1, &shards,
                                             &len),
                     QGM_EINVAL);
  static const int bad_classes[] = {0, -3, 257, 1000};
  for (size_t i = 0; i < 4; i++)
    assert_int_equal(qgm_partition_dirichlet(labels, 10, bad_classes[i], 2,
                                             1.0, 1, &shards, &len),
                     QGM_EINVAL);
  const double bad_alpha[] = {0.0, -0.5, -INFINITY, INFINITY, NAN};
  for (size_t i = 0; i < 5; i++)
    assert_int_equal(qgm_partition_dirichlet(labels, 10, CLASSES, 2,
                                             bad_alpha[i], 1, &shards, &len),
                     QGM_EINVAL);
  /* A label outside [0, classes), even the very last one. */
  uint8_t bad[5] = {0, 1, 2, 1, 3};
  assert_int_equal(
      qgm_partition_dirichlet(bad, 5, 3, 2, 1.0, 1, &shards, &len),
      QGM_EINVAL);
  assert_int_equal(
      qgm_partition_dirichlet(bad, 5, 4, 2, 1.0, 1, &shards, &len), QGM_OK);
  free(shards);
  shards = NULL;
  /* classes == 256 accepts label 255. */
  static const uint8_t top[2] = {255, 0};
  assert_int_equal(
      qgm_partition_dirichlet(top, 2, 256, 2, 1.0, 1, &shards, &len), QGM_OK);
  free(shards);
  shards = NULL;
  /* Fewer samples than nodes. */
  assert_int_equal(qgm_partition_dirichlet(labels, 5, CLASSES, 6, 1.0, 1,
                                           &shards, &len),
                   QGM_ETOOSMALL);
  assert_null(shards);
  assert_int_equal(qgm_partition_dirichlet(labels, 0, CLASSES, 1, 1.0, 1,
                                           &shards, &len),
                   QGM_ETOOSMALL);
  assert_null(shards);
}

/* ------------------------------------------------------------------ rng */

/* Gamma(a, 1) has mean a and variance a; its fourth central moment is
 * 3a^2 + 6a, so the sample variance has standard error
 * sqrt((2a^2 + 6a) / M). Both estimates must lie within 5 standard errors. */
static void test_gamma_moments(void **state) {
  (void)state;
  static const double shapes[] = {0.1, 1.0, 5.0};
  const size_t M = 200000;
  for (size_t s = 0; s < 3; s++) {
    double a = shapes[s];
    qgm_rng_t rng;
    qgm_rng_seed(&rng, 123, s);
    double sum = 0.0, sum2 = 0.0;
    for (size_t i = 0; i < M; i++) {
      double x = qgm_rng_gamma(&rng, a);
      assert_true(x >= 0.0 && isfinite(x));
      sum += x;
      sum2 += x * x;
    }
    double mean = sum / (double)M;
    double var = (sum2 - (double)M * mean * mean) / (double)(M - 1);
    assert_true(fabs(mean - a) < 5.0 * sqrt(a / (double)M));
    assert_true(fabs(var - a) < 5.0 * sqrt((2.0 * a * a + 6.0 * a) / (double)M));
  }
}

static void test_uniform_range_and_mean(void **state) {
  (void)state;
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 1, 0);
  const size_t M = 100000;
  double sum = 0.0;
  for (size_t i = 0; i < M; i++) {
    double u = qgm_rng_uniform(&rng);
    assert_true(u >= 0.0 && u < 1.0);
    sum += u;
  }
  /* sd of U(0,1) is 1/sqrt(12). */
  assert_true(fabs(sum / (double)M - 0.5) < 5.0 / sqrt(12.0 * (double)M));
}

static void test_below_range(void **state) {
  (void)state;
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 2, 0);
  for (int i = 0; i < 1000; i++)
    assert_int_equal(qgm_rng_below(&rng, 1), 0);
  /* Every value of a small bound shows up about equally often: binomial
   * counts within 5 sd of M/7. */
  const size_t M = 70000;
  size_t hist[7] = {0};
  for (size_t i = 0; i < M; i++) {
    uint64_t r = qgm_rng_below(&rng, 7);
    assert_true(r < 7);
    hist[r]++;
  }
  double expect = (double)M / 7.0, sd = sqrt((double)M * (1.0 / 7) * (6.0 / 7));
  for (int v = 0; v < 7; v++)
    assert_true(fabs((double)hist[v] - expect) < 5.0 * sd);
  /* Bounds just above 2^63 reject almost half the raw draws; results stay
   * below the bound, and the top half of the range is reached. */
  const uint64_t big = (UINT64_C(1) << 63) + 1;
  int high = 0;
  for (int i = 0; i < 1000; i++) {
    uint64_t r = qgm_rng_below(&rng, big);
    assert_true(r < big);
    high += r >= (UINT64_C(1) << 62);
  }
  assert_true(high > 0);
  for (int i = 0; i < 1000; i++)
    assert_true(qgm_rng_below(&rng, UINT64_MAX) < UINT64_MAX);
}

/* The job's stream rule: the model is stream 0, node i's sampler stream
 * 1 + i, as runs before the rule had a name drew them (their records and
 * checkpoints replay); no two of them coincide. */
static void test_rng_job_streams(void **state) {
  (void)state;
  enum { NODES = 8 };
  qgm_rng_t streams[NODES + 1], want;
  qgm_rng_seed_model(&streams[0], 7);
  qgm_rng_seed(&want, 7, 0);
  assert_memory_equal(&streams[0], &want, sizeof want);
  for (uint64_t i = 0; i < NODES; i++) {
    qgm_rng_seed_sampler(&streams[1 + i], 7, i);
    qgm_rng_seed(&want, 7, 1 + i);
    assert_memory_equal(&streams[1 + i], &want, sizeof want);
  }
  uint64_t first[NODES + 1];
  for (int k = 0; k <= NODES; k++)
    first[k] = qgm_rng_u64(&streams[k]);
  for (int k = 0; k <= NODES; k++)
    for (int j = 0; j < k; j++)
      assert_true(first[j] != first[k]);
}

static void test_rng_determinism(void **state) {
  (void)state;
  qgm_rng_t a, b, c, d;
  qgm_rng_seed(&a, 99, 3);
  qgm_rng_seed(&b, 99, 3);
  qgm_rng_seed(&c, 99, 4);
  qgm_rng_seed(&d, 100, 3);
  int diff_stream = 0, diff_seed = 0;
  for (int i = 0; i < 1000; i++) {
    uint64_t x = qgm_rng_u64(&a);
    assert_true(x == qgm_rng_u64(&b));
    diff_stream += x != qgm_rng_u64(&c);
    diff_seed += x != qgm_rng_u64(&d);
  }
  assert_int_equal(diff_stream, 1000);
  assert_int_equal(diff_seed, 1000);
  /* The state is a value: a copy continues the same sequence. */
  qgm_rng_t copy = a;
  for (int i = 0; i < 100; i++) {
    assert_true(qgm_rng_uniform(&a) == qgm_rng_uniform(&copy));
    assert_true(qgm_rng_below(&a, 1000) == qgm_rng_below(&copy, 1000));
    assert_true(qgm_rng_gamma(&a, 0.3) == qgm_rng_gamma(&copy, 0.3));
  }
}

static void test_shuffle_is_permutation(void **state) {
  (void)state;
  size_t items[1000];
  for (size_t i = 0; i < 1000; i++)
    items[i] = i;
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 4, 0);
  qgm_rng_shuffle(&rng, items, 1000);
  unsigned char seen[1000] = {0};
  size_t fixed = 0;
  for (size_t i = 0; i < 1000; i++) {
    assert_true(items[i] < 1000);
    assert_int_equal(seen[items[i]], 0);
    seen[items[i]] = 1;
    fixed += items[i] == i;
  }
  /* A random permutation has about one fixed point. */
  assert_true(fixed < 20);
  qgm_rng_shuffle(&rng, items, 0);
  qgm_rng_shuffle(&rng, items, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_equal_lengths_and_distinct,
                                      setup_labels, teardown_labels),
      cmocka_unit_test(test_awkward_sizes),
      cmocka_unit_test_setup_teardown(test_single_node_is_permutation,
                                      setup_labels, teardown_labels),
      cmocka_unit_test(test_fallback_by_hand),
      cmocka_unit_test_setup_teardown(test_tiny_alpha_terminates,
                                      setup_labels, teardown_labels),
      cmocka_unit_test_setup_teardown(test_huge_alpha, setup_labels,
                                      teardown_labels),
      cmocka_unit_test(test_all_classes_256),
      cmocka_unit_test_setup_teardown(test_seed_determinism, setup_labels,
                                      teardown_labels),
      cmocka_unit_test_setup_teardown(test_large_alpha_is_near_uniform,
                                      setup_labels, teardown_labels),
      cmocka_unit_test_setup_teardown(test_small_alpha_is_skewed,
                                      setup_labels, teardown_labels),
      cmocka_unit_test_setup_teardown(test_skew_monotone_in_alpha,
                                      setup_labels, teardown_labels),
      cmocka_unit_test(test_fashion_mnist_labels),
      cmocka_unit_test_setup_teardown(test_invalid_arguments, setup_labels,
                                      teardown_labels),
      cmocka_unit_test(test_gamma_moments),
      cmocka_unit_test(test_uniform_range_and_mean),
      cmocka_unit_test(test_below_range),
      cmocka_unit_test(test_rng_determinism),
      cmocka_unit_test(test_rng_job_streams),
      cmocka_unit_test(test_shuffle_is_permutation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
