/* unit_relay.c - RelaySum on trees against its closed form: with every node
 * sending the same value each round (no gradient), after round t node i
 * holds (sum of the values within distance t of i, plus x0_i for each node
 * not yet heard of) / n, so every node holds the exact mean after diameter
 * rounds and not before; and the optimizers' refusals of graphs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qgm.h"

#define MAX_N 32
#define DIM 5
/* Float sums of <= 32 values of magnitude <= 2: a few ulps of 64. */
#define TOL 1e-5

/* Hop distances from every node, breadth first over the neighbours. */
static void distances(const qgm_topology_t *t, int dist[MAX_N][MAX_N]) {
  const int n = qgm_topology_nodes(t);
  for (int s = 0; s < n; s++) {
    int queue[MAX_N], head = 0, tail = 0;
    for (int i = 0; i < n; i++)
      dist[s][i] = -1;
    dist[s][s] = 0;
    queue[tail++] = s;
    while (head < tail) {
      int i = queue[head++], peers[MAX_N];
      double w[MAX_N], self;
      int k = qgm_topology_neighbors(t, i, 0, peers, w, &self);
      for (int j = 0; j < k; j++)
        if (dist[s][peers[j]] < 0) {
          dist[s][peers[j]] = dist[s][i] + 1;
          queue[tail++] = peers[j];
        }
    }
  }
}

/* Runs diameter + 1 rounds of RelaySum with fixed values v_i and x0_i and
 * checks every node after every round against the closed form. */
static void check_tree(const char *name, int n, int arity, int diameter) {
  qgm_topology_spec_t spec = {.name = name, .nodes = n, .tree_arity = arity};
  qgm_topology_t *t = NULL;
  assert_int_equal(qgm_topology_create_ex(&spec, &t, NULL), 0);
  assert_true(qgm_topology_is_tree(t));
  static int dist[MAX_N][MAX_N];
  distances(t, dist);
  int far = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      far = dist[i][j] > far ? dist[i][j] : far;
  assert_int_equal(far, diameter);

  float v[MAX_N][DIM], x0[MAX_N][DIM], mix[MAX_N][DIM];
  const float *h[MAX_N];
  float *mixes[MAX_N];
  qgm_relay_t *relay[MAX_N];
  for (int i = 0; i < n; i++) {
    for (int d = 0; d < DIM; d++) {
      v[i][d] = (float)sin(1.0 + i * 0.7 + d * 1.3) + 1.0f;
      x0[i][d] = (float)cos(0.5 + i * 0.3 + d);
    }
    h[i] = v[i];
    mixes[i] = mix[i];
    assert_int_equal(qgm_relay_create(t, i, DIM, x0[i], &relay[i]), 0);
    assert_int_equal(qgm_relay_message_len(relay[i]), DIM + 1);
  }
  for (int round = 1; round <= diameter + 1; round++) {
    assert_int_equal(qgm_relay_exchange(t, relay, h, mixes), 0);
    double worst_to_mean = 0.0;
    for (int i = 0; i < n; i++)
      for (int d = 0; d < DIM; d++) {
        double heard = 0.0, sum = 0.0, mean = 0.0;
        for (int j = 0; j < n; j++) {
          mean += v[j][d] / n;
          if (dist[i][j] <= round) {
            sum += v[j][d];
            heard++;
          }
        }
        double expect = (sum + (n - heard) * x0[i][d]) / n;
        assert_float_equal(mix[i][d], expect, TOL);
        if (fabs(mix[i][d] - mean) > worst_to_mean)
          worst_to_mean = fabs(mix[i][d] - mean);
      }
    /* Exact from round `diameter` on; some node is still far off before. */
    if (round >= diameter)
      assert_true(worst_to_mean < TOL);
    else
      assert_true(worst_to_mean > 1e-3);
  }
  for (int i = 0; i < n; i++)
    qgm_relay_free(relay[i]);
  qgm_topology_free(t);
}

static void test_binary_tree_of_15(void **state) {
  (void)state;
  check_tree("tree", 15, 0, 6); /* 0 to 7..14 is 3 hops each way */
}

static void test_binary_tree_of_16(void **state) {
  (void)state;
  check_tree("tree", 16, 2, 7); /* node 15 hangs one level deeper */
}

static void test_chain(void **state) {
  (void)state;
  check_tree("chain", 9, 0, 8);
}

static void test_ternary_tree(void **state) {
  (void)state;
  check_tree("tree", 13, 3, 4);
}

static void test_two_nodes(void **state) {
  (void)state;
  check_tree("chain", 2, 0, 1);
}

static void test_relay_refuses_a_cycle(void **state) {
  (void)state;
  qgm_topology_t *ring = NULL, *tree = NULL;
  assert_int_equal(qgm_topology_create("ring", 8, &ring), 0);
  assert_int_equal(qgm_topology_create("tree", 8, &tree), 0);
  assert_false(qgm_topology_is_tree(ring));
  char why[512];
  assert_non_null(qgm_optim_refuses(QGM_ALG_RELAYSGD, ring, why, sizeof why));
  assert_null(qgm_optim_refuses(QGM_ALG_RELAYSGD, tree, why, sizeof why));
  assert_null(qgm_optim_refuses(QGM_ALG_DSGD, ring, why, sizeof why));
  qgm_relay_t *r = NULL;
  float x0[DIM] = {0};
  assert_int_equal(qgm_relay_create(ring, 0, DIM, x0, &r), QGM_EINVAL);
  assert_null(r);
  qgm_topology_free(ring);
  qgm_topology_free(tree);
}

/* D^2 needs lambda_min(W) > -1/3: the even ring's uniform W has exactly
 * -1/3 (1/3 + 2/3 cos(pi)), social's Metropolis W less; lazy mixing lifts
 * both to (1 + lambda_min)/2 >= 0. An odd ring's is 1/3 + 2/3 cos(4 pi/5)
 * for n = 5, above the line. */
static void test_d2_refuses_small_lambda_min(void **state) {
  (void)state;
  const struct {
    const char *name;
    int n;
    qgm_mixing_t mixing;
    int refused;
  } cases[] = {{"ring", 16, QGM_MIXING_DEFAULT, 1},
               {"ring", 5, QGM_MIXING_DEFAULT, 0},
               {"social", 32, QGM_MIXING_DEFAULT, 1},
               {"social", 32, QGM_MIXING_LAZY, 0},
               {"ring", 16, QGM_MIXING_LAZY, 0},
               {"complete", 8, QGM_MIXING_DEFAULT, 0}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    qgm_topology_spec_t spec = {.name = cases[c].name, .nodes = cases[c].n,
                                .mixing = cases[c].mixing};
    qgm_topology_t *t = NULL;
    assert_int_equal(qgm_topology_create_ex(&spec, &t, NULL), 0);
    char why[512];
    const char *r = qgm_optim_refuses(QGM_ALG_D2, t, why, sizeof why);
    assert_int_equal(r != NULL, cases[c].refused);
    assert_null(qgm_optim_refuses(QGM_ALG_DSGDM_N, t, why, sizeof why));
    qgm_topology_free(t);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_binary_tree_of_15),
      cmocka_unit_test(test_binary_tree_of_16),
      cmocka_unit_test(test_chain),
      cmocka_unit_test(test_ternary_tree),
      cmocka_unit_test(test_two_nodes),
      cmocka_unit_test(test_relay_refuses_a_cycle),
      cmocka_unit_test(test_d2_refuses_small_lambda_min),
  };
  return cmocka_run_group_tests(tests, 0, NULL);
}
