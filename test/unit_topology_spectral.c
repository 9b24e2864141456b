/* unit_topology_spectral.c - lambda_min(W) against closed forms, lazy
 * mixing (I + W)/2 entry by entry and in its spectrum, and the chain and
 * the trees: their edges, degrees and heap-order parents. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qgm.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#define EIG_TOL 1e-9

static qgm_topology_t *build(const char *name, int n, qgm_mixing_t mixing,
                             int arity) {
  qgm_topology_spec_t spec = {.name = name, .nodes = n, .mixing = mixing,
                              .tree_arity = arity};
  qgm_topology_t *t = NULL;
  qgm_topology_error_t why;
  assert_int_equal(qgm_topology_create_ex(&spec, &t, &why), 0);
  return t;
}

static double lambda_min(const qgm_topology_t *t) {
  double l = 0.0;
  assert_int_equal(qgm_topology_lambda_min(t, &l), 0);
  return l;
}

/* The uniform ring's eigenvalues are 1/3 + 2/3 cos(2 pi k / n); the
 * complete graph's J/n has 1 and 0. */
static void test_closed_forms(void **state) {
  (void)state;
  for (int n = 3; n <= 12; n++) {
    qgm_topology_t *ring = build("ring", n, QGM_MIXING_DEFAULT, 0);
    double least = 1.0;
    for (int k = 0; k < n; k++) {
      double e = 1.0 / 3.0 + 2.0 / 3.0 * cos(2.0 * M_PI * k / n);
      least = e < least ? e : least;
    }
    assert_float_equal(lambda_min(ring), least, EIG_TOL);
    qgm_topology_free(ring);
  }
  qgm_topology_t *complete = build("complete", 7, QGM_MIXING_DEFAULT, 0);
  assert_float_equal(lambda_min(complete), 0.0, EIG_TOL);
  qgm_topology_free(complete);
  /* The two-node chain: [[1/2, 1/2], [1/2, 1/2]], eigenvalues 1 and 0. */
  qgm_topology_t *pair = build("chain", 2, QGM_MIXING_DEFAULT, 0);
  assert_float_equal(lambda_min(pair), 0.0, EIG_TOL);
  qgm_topology_free(pair);
}

static void test_time_varying_has_none(void **state) {
  (void)state;
  qgm_topology_t *t = build("one-peer-exp", 8, QGM_MIXING_DEFAULT, 0);
  double l;
  assert_int_equal(qgm_topology_lambda_min(t, &l), QGM_EINVAL);
  qgm_topology_free(t);
}

/* Lazy W = (I + W)/2 entry by entry, so lambda_min moves to
 * (1 + lambda_min)/2: the social graph's Metropolis W goes from below -1/3
 * to above 0. */
static void test_lazy(void **state) {
  (void)state;
  const char *names[] = {"social", "ring", "star", "tree", "torus"};
  const int nodes[] = {32, 16, 9, 15, 16};
  for (int c = 0; c < 5; c++) {
    qgm_topology_t *own = build(names[c], nodes[c], QGM_MIXING_DEFAULT, 0);
    qgm_topology_t *lazy = build(names[c], nodes[c], QGM_MIXING_LAZY, 0);
    const int n = nodes[c];
    assert_int_equal(qgm_topology_mixing(lazy), QGM_MIXING_LAZY);
    double *w = malloc(sizeof(double) * (size_t)(n * n));
    double *l = malloc(sizeof(double) * (size_t)(n * n));
    assert_non_null(w);
    assert_non_null(l);
    qgm_topology_weights(own, 0, w);
    qgm_topology_weights(lazy, 0, l);
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        assert_float_equal(l[i * n + j], 0.5 * (i == j) + 0.5 * w[i * n + j],
                           1e-15);
    assert_float_equal(lambda_min(lazy), 0.5 * (1.0 + lambda_min(own)),
                       EIG_TOL);
    assert_true(lambda_min(lazy) >= -EIG_TOL);
    free(w);
    free(l);
    qgm_topology_free(own);
    qgm_topology_free(lazy);
  }
  qgm_topology_t *social = build("social", 32, QGM_MIXING_DEFAULT, 0);
  assert_true(lambda_min(social) < -1.0 / 3.0);
  qgm_topology_free(social);
}

static void test_lazy_needs_a_static_graph(void **state) {
  (void)state;
  qgm_topology_spec_t spec = {.name = "one-peer-exp", .nodes = 8,
                              .mixing = QGM_MIXING_LAZY};
  qgm_topology_t *t = NULL;
  qgm_topology_error_t why;
  assert_int_equal(qgm_topology_create_ex(&spec, &t, &why), QGM_EINVAL);
  assert_null(t);
  assert_true(why.text[0] != '\0');
  qgm_mixing_t m;
  assert_int_equal(qgm_mixing_parse("lazy", &m), 0);
  assert_int_equal(m, QGM_MIXING_LAZY);
  assert_string_equal(qgm_mixing_name(QGM_MIXING_LAZY), "lazy");
}

/* Heap order: node i > 0 has parent (i - 1) / arity and is its only
 * smaller peer; n - 1 edges. */
static void test_trees(void **state) {
  (void)state;
  const struct {
    const char *name;
    int n, arity, max_degree;
  } cases[] = {{"chain", 7, 0, 2},  {"chain", 1, 0, 0}, {"tree", 15, 0, 3},
               {"tree", 16, 2, 3},  {"tree", 13, 3, 4}, {"tree", 6, 5, 5},
               {"tree", 4, 1, 2}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const int n = cases[c].n;
    const int arity = cases[c].arity ? cases[c].arity
                      : strcmp(cases[c].name, "tree") == 0 ? 2
                                                           : 1;
    qgm_topology_t *t = build(cases[c].name, n, QGM_MIXING_DEFAULT,
                              cases[c].arity);
    assert_int_equal(qgm_topology_edges(t), (size_t)(n - 1));
    assert_int_equal(qgm_topology_max_degree(t), cases[c].max_degree);
    assert_int_equal(qgm_topology_is_tree(t), 1);
    for (int i = 1; i < n; i++) {
      int peers[8];
      double w[8], self;
      int k = qgm_topology_neighbors(t, i, 0, peers, w, &self);
      assert_true(k >= 1);
      assert_int_equal(peers[0], (i - 1) / arity); /* ascending order */
      assert_true(k < 2 || peers[1] > i);
    }
    qgm_topology_free(t);
  }
  qgm_topology_spec_t bad = {.name = "tree", .nodes = 4, .tree_arity = -1};
  qgm_topology_t *t = NULL;
  assert_int_equal(qgm_topology_create_ex(&bad, &t, NULL), QGM_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_closed_forms),
      cmocka_unit_test(test_time_varying_has_none),
      cmocka_unit_test(test_lazy),
      cmocka_unit_test(test_lazy_needs_a_static_graph),
      cmocka_unit_test(test_trees),
  };
  return cmocka_run_group_tests(tests, 0, NULL);
}
