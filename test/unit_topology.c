/* unit_topology.c - ring neighbours and mixing weights. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "helpers.h"
#include "qgm.h"

/* Builds the dense W of a topology at one round, row by row. */
static void dense(const qgm_topology_t *t, uint64_t round, double *w) {
  int n = qgm_topology_nodes(t);
  int peers[64];
  double weights[64];
  for (int i = 0; i < n * n; i++)
    w[i] = 0.0;
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
}

static void test_ring_is_symmetric_doubly_stochastic(void **state) {
  (void)state;
  for (int n = 1; n <= 9; n++) {
    qgm_topology_t *t = NULL;
    assert_int_equal(qgm_topology_ring(n, &t), 0);
    double w[81];
    dense(t, 0, w);
    for (int i = 0; i < n; i++) {
      double row = 0.0, col = 0.0;
      for (int j = 0; j < n; j++) {
        row += w[i * n + j];
        col += w[j * n + i];
        assert_near(w[i * n + j], w[j * n + i], 1e-15);
      }
      assert_near(row, 1.0, 1e-12);
      assert_near(col, 1.0, 1e-12);
    }
    qgm_topology_free(t);
  }
}

static void test_ring_neighbours(void **state) {
  (void)state;
  qgm_topology_t *t = NULL;
  assert_int_equal(qgm_topology_ring(5, &t), 0);
  int peers[2];
  double weights[2], self;
  assert_int_equal(qgm_topology_neighbors(t, 0, 7, peers, weights, &self), 2);
  assert_int_equal(peers[0], 4);
  assert_int_equal(peers[1], 1);
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

  assert_int_equal(qgm_topology_ring(0, &t), QGM_EINVAL);
  qgm_topology_free(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ring_is_symmetric_doubly_stochastic),
      cmocka_unit_test(test_ring_neighbours),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
