/* unit_topology_hosts.c - the hierarchical topology: W = W_H (x) J/L
 * entry by entry (for nodes placed host by host and round-robin), the
 * spectral gap of W_H, the refusals, the slices, and the in-process mix
 * against the dense product. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "qgm.h"

#define N 8
#define HOSTS 4
#define L (N / HOSTS)

/* The hierarchical topology of nodes on hosts; its return code, with the
 * reason in why. */
static int create(int nodes, int hosts, const int *host_of,
                  const char *between, qgm_topology_t **t,
                  qgm_topology_error_t *why) {
  qgm_topology_spec_t spec = {.name = "hier",
                              .nodes = nodes,
                              .hosts = hosts,
                              .host_of = host_of,
                              .host_topology = between};
  *t = NULL;
  return qgm_topology_create_ex(&spec, t, why);
}

static qgm_topology_t *hier(const char *between, const int *host_of) {
  qgm_topology_t *t;
  qgm_topology_error_t why;
  if (create(N, HOSTS, host_of, between, &t, &why) != 0)
    fail_msg("hier over %s: %s", between, why.text);
  return t;
}

/* W_ij = W_H[host(i)][host(j)] / L for every round of W_H's period. */
static void assert_kronecker(const qgm_topology_t *t, const char *between,
                             const int *host_of) {
  qgm_topology_t *g = NULL;
  assert_int_equal(qgm_topology_create(between, HOSTS, &g), 0);
  assert_int_equal(qgm_topology_period(t), qgm_topology_period(g));
  double w[N * N], wh[HOSTS * HOSTS];
  for (int r = 0; r < 2 * qgm_topology_period(g); r++) {
    qgm_topology_weights(t, (uint64_t)r, w);
    qgm_topology_weights(g, (uint64_t)r, wh);
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) {
        int hi = host_of ? host_of[i] : i / L, hj = host_of ? host_of[j] : j / L;
        assert_near(w[i * N + j], wh[hi * HOSTS + hj] / L, 1e-15);
      }
  }
  for (int i = 0; i < N; i++) {
    int h = qgm_topology_host_of(t, i), s = qgm_topology_host_slot(t, i);
    assert_int_equal(h, host_of ? host_of[i] : i / L);
    assert_int_equal(qgm_topology_host_member(t, h, s), i);
  }
  qgm_topology_free(g);
}

static void test_w_is_host_graph_times_host_average(void **state) {
  (void)state;
  static const int round_robin[N] = {0, 1, 2, 3, 0, 1, 2, 3};
  static const char *const between[] = {"ring", "complete", "star",
                                        "one-peer-exp"};
  for (size_t b = 0; b < sizeof between / sizeof *between; b++) {
    qgm_topology_t *t = hier(between[b], NULL);
    assert_int_equal(qgm_topology_hosts(t), HOSTS);
    assert_int_equal(qgm_topology_per_host(t), L);
    assert_kronecker(t, between[b], NULL);
    qgm_topology_free(t);
    t = hier(between[b], round_robin);
    assert_kronecker(t, between[b], round_robin);
    qgm_topology_free(t);
  }
  qgm_topology_t *flat = NULL;
  assert_int_equal(qgm_topology_create("ring", N, &flat), 0);
  assert_int_equal(qgm_topology_hosts(flat), 0);
  qgm_topology_free(flat);
}

/* The eigenvalues of W_H (x) J/L are W_H's and zeros: the gap is W_H's.
 * A ring of 4 with weights 1/3 has eigenvalues 1, 1/3, 1/3, -1/3, so its
 * gap is 2/3; one-peer-exp on 4 hosts averages exactly over its period. */
static void test_gap_is_the_host_graphs(void **state) {
  (void)state;
  double gap;
  qgm_topology_t *t = hier("ring", NULL);
  assert_int_equal(qgm_topology_spectral_gap(t, &gap), 0);
  assert_near(gap, 2.0 / 3.0, 1e-12);
  qgm_topology_free(t);
  t = hier("one-peer-exp", NULL);
  assert_int_equal(qgm_topology_spectral_gap(t, &gap), 0);
  assert_near(gap, 1.0, 1e-12);
  qgm_topology_free(t);
}

static void assert_refused(int nodes, int hosts, const int *host_of,
                           const char *between, int rc, const char *says) {
  qgm_topology_t *t;
  qgm_topology_error_t why;
  assert_int_equal(create(nodes, hosts, host_of, between, &t, &why), rc);
  assert_null(t);
  if (!strstr(why.text, says))
    fail_msg("'%s' does not say '%s'", why.text, says);
}

static void test_refusals(void **state) {
  (void)state;
  static const int uneven[4] = {0, 0, 0, 1};
  static const int outside[4] = {0, 1, 2, 0};
  assert_refused(8, 3, NULL, "ring", QGM_ENODES, "8 nodes cannot go on 3");
  assert_refused(8, 0, NULL, "ring", QGM_ENODES, "cannot go on 0 hosts");
  assert_refused(4, 2, uneven, "ring", QGM_ENODES,
                 "host 0 has 3 nodes, not the 2 each of 4 nodes on 2 hosts");
  /* 7 ranks placed 2, 2, 2, 1 by MPI: no even count to name. */
  static const int seven[7] = {0, 0, 1, 1, 2, 2, 3};
  assert_refused(7, 4, seven, "ring", QGM_ENODES,
                 "7 nodes cannot be split evenly over 4 hosts (host 0 has 2 "
                 "nodes)");
  static const int lone[3] = {0, 0, 1};
  assert_refused(3, 2, lone, "ring", QGM_ENODES, "(host 0 has 2 nodes)");
  assert_refused(4, 2, outside, "ring", QGM_EINVAL, "node 2 is placed on "
                                                    "host 2 of 2");
  assert_refused(8, 4, NULL, "hier", QGM_EINVAL, "built-in");
  assert_refused(8, 4, NULL, "social", QGM_ENODES, "between the 4 hosts");
}

static void test_slices_cover_the_vector(void **state) {
  (void)state;
  static const size_t offsets[3] = {0, 4, 7}, counts[3] = {4, 3, 3};
  for (int s = 0; s < 3; s++) {
    size_t at, n;
    qgm_host_slice(10, 3, s, &at, &n);
    assert_int_equal(at, offsets[s]);
    assert_int_equal(n, counts[s]);
  }
  for (size_t len = 0; len < 40; len++)
    for (int parts = 1; parts <= 7; parts++) {
      size_t next = 0;
      for (int s = 0; s < parts; s++) {
        size_t at, n;
        qgm_host_slice(len, parts, s, &at, &n);
        assert_int_equal(at, next);
        assert_true(n == len / (size_t)parts || n == len / (size_t)parts + 1);
        next = at + n;
      }
      assert_int_equal(next, len);
    }
}

/* qgm_mix_messages on a hierarchical topology is the dense product W x,
 * and every node of a host ends with the same vector. */
static void test_in_process_mix_is_w_times_x(void **state) {
  (void)state;
  enum { LEN = 37 };
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 11, 0);
  float *msgs[N], *mixes[N];
  for (int i = 0; i < N; i++) {
    msgs[i] = test_uniform(LEN, &rng);
    mixes[i] = test_uniform(LEN, &rng);
  }
  qgm_topology_t *t = hier("one-peer-exp", NULL);
  double w[N * N];
  for (uint64_t r = 0; r < 2; r++) {
    assert_int_equal(qgm_mix_messages(t, r, QGM_COMBINE_NEIGHBOURS,
                                      (const float *const *)msgs, mixes, LEN),
                     0);
    qgm_topology_weights(t, r, w);
    for (int i = 0; i < N; i++)
      for (int e = 0; e < LEN; e++) {
        double want = 0.0;
        for (int j = 0; j < N; j++)
          want += w[i * N + j] * msgs[j][e];
        assert_near(mixes[i][e], want, 1e-6);
        assert_near(mixes[i][e], mixes[qgm_topology_host_member(
                                     t, qgm_topology_host_of(t, i), 0)][e],
                    0.0);
      }
  }
  qgm_topology_free(t);
  for (int i = 0; i < N; i++) {
    free(msgs[i]);
    free(mixes[i]);
  }
}

static void test_mean_sums_in_order(void **state) {
  (void)state;
  const float a[2] = {1.0f, 1e8f}, b[2] = {2.0f, 1.0f}, c[2] = {3.0f, -1e8f};
  const float *v[3] = {a, b, c};
  float out[2];
  qgm_vec_mean(out, v, 3, 2);
  assert_near(out[0], 2.0, 1e-7);
  /* (1e8 + 1) rounds to 1e8 in float, then - 1e8 gives 0: the order is
   * part of the contract, so that the daemon and the simulator agree. */
  assert_near(out[1], 0.0, 0.0);
}

/* The tree of qgm.h's definition, literally: widths 1, 2, 4, ... */
static void tree_by_definition(float *out, float *const *v, int k, size_t n) {
  for (int width = 1; width < k; width *= 2)
    for (int i = 0; i + width < k; i += 2 * width)
      for (size_t e = 0; e < n; e++)
        v[i][e] += v[i + width][e];
  memcpy(out, v[0], n * sizeof *out);
}

static void test_tree_sum_is_its_definition(void **state) {
  (void)state;
  /* (1 + 1e8) + (-1e8 + 1) is 1e8 - 1e8 = 0 in float; summed in order,
   * the same four give 1. */
  const float a[1] = {1.0f}, b[1] = {1e8f}, c[1] = {-1e8f}, d[1] = {1.0f};
  const float *four[4] = {a, b, c, d};
  float out[1];
  qgm_vec_tree_sum(out, four, 4, 1);
  assert_true(out[0] == 0.0f);
  /* Every count up to 17 and a length past the kernel's blocks. */
  enum { K = 17, LEN = 600 };
  static float data[K][LEN], copy[K][LEN], want[LEN], got[LEN];
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 11, 0);
  for (int i = 0; i < K; i++)
    for (size_t e = 0; e < LEN; e++)
      data[i][e] = (float)(qgm_rng_normal(&rng) * pow(10.0, (double)(i % 7)));
  for (int k = 1; k <= K; k++) {
    const float *v[K];
    float *w[K];
    for (int i = 0; i < k; i++) {
      memcpy(copy[i], data[i], sizeof data[i]);
      v[i] = data[i];
      w[i] = copy[i];
    }
    tree_by_definition(want, w, k, LEN);
    qgm_vec_tree_sum(got, v, k, LEN);
    assert_memory_equal(got, want, sizeof want);
  }
}

/* A sum of aligned blocks' sums is the sum of them all, bit for bit: what
 * lets the all-reduce sum a host's group first (exchange_global.c). */
static void test_tree_sum_of_blocks_is_the_whole_tree(void **state) {
  (void)state;
  enum { K = 12, LEN = 300 };
  static float data[K][LEN], whole[LEN], blocks[K][LEN], again[LEN];
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 12, 0);
  for (int i = 0; i < K; i++)
    for (size_t e = 0; e < LEN; e++)
      data[i][e] = (float)(qgm_rng_normal(&rng) * pow(10.0, (double)(i % 5)));
  const float *v[K];
  for (int i = 0; i < K; i++)
    v[i] = data[i];
  qgm_vec_tree_sum(whole, v, K, LEN);
  for (int size = 1; size <= 4; size *= 2) { /* 12 = 12 x 1, 6 x 2, 3 x 4 */
    const float *sums[K];
    for (int g = 0; g < K / size; g++) {
      qgm_vec_tree_sum(blocks[g], v + g * size, size, LEN);
      sums[g] = blocks[g];
    }
    qgm_vec_tree_sum(again, sums, K / size, LEN);
    assert_memory_equal(again, whole, sizeof whole);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_w_is_host_graph_times_host_average),
      cmocka_unit_test(test_gap_is_the_host_graphs),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_slices_cover_the_vector),
      cmocka_unit_test(test_in_process_mix_is_w_times_x),
      cmocka_unit_test(test_mean_sums_in_order),
      cmocka_unit_test(test_tree_sum_is_its_definition),
      cmocka_unit_test(test_tree_sum_of_blocks_is_the_whole_tree),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
