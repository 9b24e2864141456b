/* unit_topology.c - every built-in graph: W doubly stochastic (and
 * symmetric where it must be) for several n, neighbours, spectral gaps
 * against closed forms, the Davis graph, and the one-peer exponential
 * graph's exact averaging. */
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

#define MAX_N 40
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* The dense W of one round, built from qgm_topology_neighbors (not from
 * qgm_topology_weights, which is checked against it) while checking the
 * neighbour contract: k <= max_degree, peers distinct and never the node,
 * and send_peers the transpose of neighbours. */
static void dense(const qgm_topology_t *t, uint64_t round, double *w) {
  int n = qgm_topology_nodes(t);
  int peers[MAX_N];
  double weights[MAX_N];
  memset(w, 0, sizeof(double) * (size_t)(n * n));
  for (int i = 0; i < n; i++) {
    double self;
    int k = qgm_topology_neighbors(t, i, round, peers, weights, &self);
    assert_true(k >= 0 && k <= qgm_topology_max_degree(t));
    w[i * n + i] = self;
    for (int j = 0; j < k; j++) {
      assert_int_not_equal(peers[j], i);
      assert_near(w[i * n + peers[j]], 0.0, 0.0); /* distinct */
      w[i * n + peers[j]] = weights[j];
    }
  }
  for (int i = 0; i < n; i++) { /* j sends to i  <=>  W_ij > 0 */
    int k = qgm_topology_send_peers(t, i, round, peers);
    assert_true(k >= 0 && k <= qgm_topology_max_degree(t));
    int receivers = 0;
    for (int j = 0; j < n; j++)
      receivers += j != i && w[j * n + i] > 0.0;
    assert_int_equal(k, receivers);
    for (int j = 0; j < k; j++)
      assert_true(w[peers[j] * n + i] > 0.0);
  }
  double *api = malloc(sizeof(double) * (size_t)(n * n));
  qgm_topology_weights(t, round, api);
  for (int i = 0; i < n * n; i++)
    assert_near(api[i], w[i], 0.0);
  free(api);
}

static void assert_doubly_stochastic(const double *w, int n, int symmetric) {
  for (int i = 0; i < n; i++) {
    double row = 0.0, col = 0.0;
    for (int j = 0; j < n; j++) {
      assert_true(w[i * n + j] >= 0.0);
      row += w[i * n + j];
      col += w[j * n + i];
      if (symmetric)
        assert_near(w[i * n + j], w[j * n + i], 1e-15);
    }
    assert_near(row, 1.0, 1e-12);
    assert_near(col, 1.0, 1e-12);
  }
}

static qgm_topology_t *make(const char *name, int n) {
  qgm_topology_t *t = NULL;
  int rc = qgm_topology_create(name, n, &t);
  if (rc != 0)
    fail_msg("%s with %d nodes: %s", name, n, qgm_strerror(rc));
  return t;
}

static void test_every_graph_is_doubly_stochastic(void **state) {
  (void)state;
  static const char *const names[] = {"ring", "torus", "complete",
                                      "star", "exp",   "one-peer-exp"};
  static const int sizes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 32, 33};
  double w[MAX_N * MAX_N];
  for (size_t a = 0; a < sizeof names / sizeof *names; a++)
    for (size_t b = 0; b < sizeof sizes / sizeof *sizes; b++) {
      qgm_topology_t *t = make(names[a], sizes[b]);
      int one_peer = strcmp(names[a], "one-peer-exp") == 0;
      assert_int_equal(qgm_topology_period(t) > 1,
                       one_peer && sizes[b] > 2);
      for (int r = 0; r < 2 * qgm_topology_period(t); r++) {
        dense(t, (uint64_t)r, w);
        assert_doubly_stochastic(w, sizes[b], !one_peer);
      }
      qgm_topology_free(t);
    }
  qgm_topology_t *t = make("social", 32);
  dense(t, 0, w);
  assert_doubly_stochastic(w, 32, 1);
  qgm_topology_free(t);
}

static void test_ring_neighbours(void **state) {
  (void)state;
  qgm_topology_t *t = make("ring", 5);
  int peers[2];
  double weights[2], self;
  assert_int_equal(qgm_topology_neighbors(t, 0, 7, peers, weights, &self), 2);
  assert_int_equal(peers[0], 1);
  assert_int_equal(peers[1], 4);
  assert_near(weights[0], 1.0 / 3.0, 1e-15);
  assert_near(self, 1.0 / 3.0, 1e-15);
  assert_int_equal(qgm_topology_neighbors(t, 5, 0, peers, weights, &self),
                   QGM_EINVAL);
  qgm_topology_free(t);

  assert_int_equal(qgm_topology_ring(2, &t), 0);
  assert_int_equal(qgm_topology_neighbors(t, 1, 0, peers, weights, &self), 1);
  assert_int_equal(peers[0], 0);
  assert_near(self, 0.5, 1e-15);
  qgm_topology_free(t);

  assert_int_equal(qgm_topology_ring(0, &t), QGM_ENODES);
  assert_int_equal(qgm_topology_create("moebius", 4, &t), QGM_EINVAL);
  qgm_topology_free(NULL);
}

static double gap_of(const char *name, int n) {
  qgm_topology_t *t = make(name, n);
  double gap = -1.0;
  assert_int_equal(qgm_topology_spectral_gap(t, &gap), 0);
  qgm_topology_free(t);
  return gap;
}

/* W = (I + S + S^-1)/3 has eigenvalues (1 + 2 cos(2 pi k / n))/3; for n >= 5
 * the largest in magnitude after k = 0 is k = 1. */
static void test_ring_gap_closed_form(void **state) {
  (void)state;
  for (int n = 5; n <= 40; n += 7) {
    double lambda2 = (1.0 + 2.0 * cos(2.0 * M_PI / n)) / 3.0;
    assert_near(gap_of("ring", n), 1.0 - lambda2, 1e-12);
  }
}

/* Torus: (1 + 2 cos(2 pi a / r) + 2 cos(2 pi b / c))/5; complete: W = J/n
 * (gap 1); star with Metropolis weights 1/n: the leaves' differences decay
 * by 1 - 1/n (gap 1/n). */
static void test_other_gaps_closed_form(void **state) {
  (void)state;
  const int shapes[][2] = {{3, 3}, {3, 4}, {4, 4}, {4, 6}};
  for (size_t s = 0; s < 4; s++) {
    int r = shapes[s][0], c = shapes[s][1];
    double largest = 0.0;
    for (int a = 0; a < r; a++)
      for (int b = 0; b < c; b++)
        if (a || b) {
          double l = fabs(1.0 + 2.0 * cos(2.0 * M_PI * a / r) +
                          2.0 * cos(2.0 * M_PI * b / c)) / 5.0;
          largest = l > largest ? l : largest;
        }
    assert_near(gap_of("torus", r * c), 1.0 - largest, 1e-12);
  }
  assert_near(gap_of("complete", 32), 1.0, 1e-12);
  assert_near(gap_of("star", 9), 1.0 / 9.0, 1e-12);
}

static void test_torus_shape(void **state) {
  (void)state;
  qgm_topology_t *t = make("torus", 12); /* 3 x 4: four distinct peers */
  assert_int_equal(qgm_topology_max_degree(t), 4);
  assert_int_equal((int)qgm_topology_edges(t), 24);
  int peers[4];
  double w[4], self;
  /* node 5 = row 1, col 1: 4 and 6 beside it, 1 and 9 above and below. */
  assert_int_equal(qgm_topology_neighbors(t, 5, 0, peers, w, &self), 4);
  assert_int_equal(peers[0], 1);
  assert_int_equal(peers[1], 4);
  assert_int_equal(peers[2], 6);
  assert_int_equal(peers[3], 9);
  assert_near(self, 0.2, 1e-15);
  qgm_topology_free(t);

  qgm_topology_spec_t spec = {.name = "torus", .nodes = 12,
                              .torus_rows = 2, .torus_cols = 6};
  qgm_topology_error_t err;
  assert_int_equal(qgm_topology_create_ex(&spec, &t, &err), 0);
  /* 2 rows: the node above is the node below, so 3 distinct peers. */
  assert_int_equal(qgm_topology_max_degree(t), 3);
  qgm_topology_free(t);
  spec.torus_rows = 5;
  assert_int_equal(qgm_topology_create_ex(&spec, &t, &err), QGM_ENODES);
  assert_non_null(strstr(err.text, "5x6"));

  int rows, cols;
  assert_int_equal(qgm_torus_parse("4x8", &rows, &cols), 0);
  assert_int_equal(rows * 10 + cols, 48);
  assert_int_equal(qgm_torus_parse("", &rows, &cols), 0);
  assert_int_equal(rows + cols, 0);
  assert_int_equal(qgm_torus_parse("4x", &rows, &cols), QGM_EINVAL);
  assert_int_equal(qgm_torus_parse("4*4", &rows, &cols), QGM_EINVAL);
  assert_int_equal(qgm_torus_parse("0x4", &rows, &cols), QGM_EINVAL);
}

/* Uniform on an irregular graph uses the largest degree, so W stays
 * doubly stochastic; Metropolis uses the larger degree of each edge. */
static void test_mixing_rules(void **state) {
  (void)state;
  qgm_topology_spec_t spec = {.name = "star", .nodes = 5,
                              .mixing = QGM_MIXING_UNIFORM};
  qgm_topology_t *t = NULL;
  assert_int_equal(qgm_topology_create_ex(&spec, &t, NULL), 0);
  int peers[4];
  double w[4], self;
  assert_int_equal(qgm_topology_neighbors(t, 3, 0, peers, w, &self), 1);
  assert_near(w[0], 0.2, 1e-15);
  assert_near(self, 0.8, 1e-15);
  qgm_topology_free(t);

  /* Davis: Evelyn (node 0, 8 events) and event E1 (node 18, 3 women). */
  spec = (qgm_topology_spec_t){.name = "social", .nodes = 32};
  assert_int_equal(qgm_topology_create_ex(&spec, &t, NULL), 0);
  assert_int_equal(qgm_topology_mixing(t), QGM_MIXING_METROPOLIS);
  double dense_w[32 * 32];
  qgm_topology_weights(t, 0, dense_w);
  assert_near(dense_w[0 * 32 + 18], 1.0 / 9.0, 1e-15);
  qgm_topology_free(t);

  qgm_mixing_t m;
  assert_int_equal(qgm_mixing_parse("metropolis", &m), 0);
  assert_int_equal(m, QGM_MIXING_METROPOLIS);
  assert_string_equal(qgm_mixing_name(QGM_MIXING_UNIFORM), "uniform");
  assert_int_equal(qgm_mixing_parse("max-degree", &m), QGM_EINVAL);
}

/* Breadth-first search from node 0 over W's support. */
static int reachable(const double *w, int n) {
  int seen[MAX_N] = {1}, queue[MAX_N] = {0}, head = 0, tail = 1;
  while (head < tail) {
    int i = queue[head++];
    for (int j = 0; j < n; j++)
      if (w[i * n + j] > 0.0 && !seen[j]) {
        seen[j] = 1;
        queue[tail++] = j;
      }
  }
  return tail;
}

static void test_davis_graph(void **state) {
  (void)state;
  qgm_topology_t *t = make("social", 32);
  assert_int_equal(qgm_topology_nodes(t), 32);
  assert_int_equal((int)qgm_topology_edges(t), 89);
  double w[32 * 32];
  dense(t, 0, w);
  assert_int_equal(reachable(w, 32), 32);
  /* Bipartite: women 0-17 only meet events 18-31. */
  for (int i = 0; i < 18; i++)
    for (int j = 0; j < 18; j++)
      if (i != j)
        assert_near(w[i * 32 + j], 0.0, 0.0);
  /* The embedded list is the file in topologies/. */
  qgm_topology_t *f = make("file:topologies/davis-southern-women.edges", 32);
  assert_true(qgm_topology_hash(f) == qgm_topology_hash(t));
  qgm_topology_free(f);
  qgm_topology_free(t);
  assert_int_equal(qgm_topology_create("social", 16, &t), QGM_ENODES);
}

/* Round r mixes with the node 2^r away, so after log2(n) rounds every node
 * holds exactly the average: the product of the W's is J/n. */
static void test_one_peer_exp_averages_exactly(void **state) {
  (void)state;
  static double w[MAX_N * MAX_N], p[MAX_N * MAX_N], next[MAX_N * MAX_N];
  for (int n = 2, rounds = 1; n <= 32; n *= 2, rounds++) {
    qgm_topology_t *t = make("one-peer-exp", n);
    assert_int_equal(qgm_topology_period(t), rounds);
    assert_int_equal(qgm_topology_max_degree(t), 1);
    for (int i = 0; i < n * n; i++)
      p[i] = i % (n + 1) == 0;
    for (int r = 0; r < rounds; r++) {
      dense(t, (uint64_t)r, w);
      for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
          double s = 0.0;
          for (int k = 0; k < n; k++)
            s += w[i * n + k] * p[k * n + j];
          next[i * n + j] = s;
        }
      memcpy(p, next, sizeof(double) * (size_t)(n * n));
    }
    for (int i = 0; i < n * n; i++)
      assert_near(p[i], 1.0 / n, 1e-15);
    double gap;
    assert_int_equal(qgm_topology_spectral_gap(t, &gap), 0);
    assert_near(gap, 1.0, 1e-7); /* sqrt of an eigenvalue ~1e-16 */
    qgm_topology_free(t);
  }
  /* n = 6 is not a power of two: a period leaves something to average. */
  double gap = gap_of("one-peer-exp", 6);
  assert_true(gap > 0.5 && gap < 0.999);
}

static void test_hashes(void **state) {
  (void)state;
  qgm_topology_t *a = make("ring", 8), *b = make("ring", 8);
  qgm_topology_t *c = make("exp", 8), *d = make("ring", 9);
  assert_true(qgm_topology_hash(a) == qgm_topology_hash(b));
  assert_true(qgm_topology_hash(a) != qgm_topology_hash(c));
  assert_true(qgm_topology_hash(a) != qgm_topology_hash(d));
  qgm_topology_free(a);
  qgm_topology_free(b);
  qgm_topology_free(c);
  qgm_topology_free(d);
  /* FNV-1a test vectors. */
  assert_true(qgm_hash64("", 0, QGM_HASH_INIT) == 0xcbf29ce484222325ULL);
  assert_true(qgm_hash64("a", 1, QGM_HASH_INIT) == 0xaf63dc4c8601ec8cULL);
  assert_true(qgm_hash64("foobar", 6, QGM_HASH_INIT) ==
              0x85944171f73967e8ULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_graph_is_doubly_stochastic),
      cmocka_unit_test(test_ring_neighbours),
      cmocka_unit_test(test_ring_gap_closed_form),
      cmocka_unit_test(test_other_gaps_closed_form),
      cmocka_unit_test(test_torus_shape),
      cmocka_unit_test(test_mixing_rules),
      cmocka_unit_test(test_davis_graph),
      cmocka_unit_test(test_one_peer_exp_averages_exactly),
      cmocka_unit_test(test_hashes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
