/* unit_gossip_rounds.c - --gossip-rounds' exchange in process
 * (job/exchange_plan_rounds.c): R rounds on a ring of 4 move the messages
 * by W^R, against values computed by hand; one round is the neighbours'
 * exchange bit for bit; the mean of the messages is kept. Chebyshev
 * rounds (libqgm/graph/chebyshev.c): their coefficients against the
 * closed form of the Chebyshev polynomials, and three of them on the ring
 * of 4 against the polynomial worked out by hand. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "exchange_plan.h"

enum { N = 4, LEN = 2 };

/* Node i's message is (i, 1 - i); each node of the ring of 4 averages
 * itself and its two neighbours with weight 1/3. Returns the mixes. */
static void mix_as(qgmd_exchange_kind_t kind, int rounds, int chebyshev,
                   float out[N][LEN]) {
  qgm_topology_t *t = NULL;
  assert_int_equal(qgm_topology_ring(N, &t), 0);
  qgmd_exchange_plan_t plan = {.kind = kind,
                               .topology = t,
                               .combine = QGM_COMBINE_NEIGHBOURS,
                               .len = LEN,
                               .dim = LEN,
                               .rounds = rounds,
                               .chebyshev = chebyshev};
  if (chebyshev) {
    double lo, hi;
    assert_int_equal(qgm_topology_eigen_range(t, &lo, &hi), 0);
    assert_int_equal(qgm_chebyshev_rounds(lo, hi, rounds, plan.chebyshev_b,
                                          plan.chebyshev_e, &plan.chebyshev_w,
                                          NULL),
                     0);
  }
  const qgmd_exchange_def_t *def = qgmd_exchange_def(kind);
  float msg[N][LEN];
  const float *msgs[N];
  float *mixes[N];
  void *states[N] = {0};
  for (int i = 0; i < N; i++) {
    msg[i][0] = (float)i;
    msg[i][1] = 1.0f - (float)i;
    msgs[i] = msg[i];
    mixes[i] = out[i];
    if (def->create)
      assert_int_equal(def->create(&plan, i, msg[i], &states[i]), 0);
  }
  assert_int_equal(def->simulate(&plan, 0, states, msgs, mixes), 0);
  for (int i = 0; i < N; i++)
    if (def->free)
      def->free(states[i]);
  qgm_topology_free(t);
}

static void mix(qgmd_exchange_kind_t kind, int rounds, float out[N][LEN]) {
  mix_as(kind, rounds, 0, out);
}

/* Round 1: (4/3, 1, 2, 5/3); round 2 averages those again: (4/3, 13/9,
 * 14/9, 5/3). The second component is 1 minus the first throughout. */
static void test_two_rounds_are_w_squared(void **state) {
  (void)state;
  static const double want[N] = {4.0 / 3, 13.0 / 9, 14.0 / 9, 5.0 / 3};
  float got[N][LEN];
  mix(QGMD_EXCHANGE_ROUNDS, 2, got);
  double sum = 0.0;
  for (int i = 0; i < N; i++) {
    assert_float_equal(got[i][0], want[i], 1e-6);
    assert_float_equal(got[i][1], 1.0 - want[i], 1e-6);
    sum += got[i][0];
  }
  assert_float_equal(sum, 0.0 + 1 + 2 + 3, 1e-5);
}

/* Many rounds reach the mean, 1.5, on every node. */
static void test_many_rounds_reach_the_mean(void **state) {
  (void)state;
  float got[N][LEN];
  mix(QGMD_EXCHANGE_ROUNDS, 40, got);
  for (int i = 0; i < N; i++) {
    assert_float_equal(got[i][0], 1.5, 1e-5);
    assert_float_equal(got[i][1], -0.5, 1e-5);
  }
}

static void test_one_round_is_the_neighbours_exchange(void **state) {
  (void)state;
  float rounds[N][LEN], plain[N][LEN];
  mix(QGMD_EXCHANGE_ROUNDS, 1, rounds);
  mix(QGMD_EXCHANGE_NEIGHBOURS, 1, plain);
  assert_memory_equal(rounds, plain, sizeof rounds);
}

/* The ring of 4's W has the eigenvalues 1, 1/3 (twice) and -1/3, so
 * [lo, hi] = [-1/3, 1/3], z(x) = 3x and gamma = 3. Three Chebyshev rounds
 * are P_3(x) = (1 + T_3(3x)) / (1 + T_3(3)), T_3(u) = 4u^3 - 3u: 2/100 on
 * 1/3 and 0 on -1/3 (W^3: 1/27 and -1/27). Node i's message i is 1.5 plus
 * (-1, -1, 1, 1) in the eigenspace of 1/3 plus (-1, 1, -1, 1) / 2 in that
 * of -1/3, so its mix is 1.5 + 0.02 (-1, -1, 1, 1). */
static void test_three_chebyshev_rounds_are_the_polynomial(void **state) {
  (void)state;
  static const double want[N] = {1.48, 1.48, 1.52, 1.52};
  float got[N][LEN];
  mix_as(QGMD_EXCHANGE_ROUNDS, 3, 1, got);
  for (int i = 0; i < N; i++) {
    assert_float_equal(got[i][0], want[i], 1e-6);
    assert_float_equal(got[i][1], 1.0 - want[i], 1e-6);
  }
  double contraction;
  float b[3], e[3], w;
  assert_int_equal(
      qgm_chebyshev_rounds(-1.0 / 3, 1.0 / 3, 3, b, e, &w, &contraction), 0);
  assert_float_equal(contraction, 0.02, 1e-12);
}

/* T_R(u): cos(R acos u) inside [-1, 1], cosh(R acosh u) above. */
static double chebyshev_t(int r, double u) {
  return fabs(u) <= 1.0 ? cos(r * acos(u)) : cosh(r * acosh(u));
}

/* On the ring of 16 (weights 1/3: eigenvalues (1 + 2 cos(2 pi k / 16)) /
 * 3), the rounds run on one eigenvalue x at a time give
 * (1 + T_R(z(x))) / (1 + T_R(gamma)): 1 at x = 1 (the mean is kept), in
 * [0, contraction] on [lo, hi]. Eight rounds shrink the slowest
 * disagreement more than 35 rounds of W do (the flag's help). */
static void test_chebyshev_coefficients_are_the_closed_form(void **state) {
  (void)state;
  qgm_topology_t *t = NULL;
  assert_int_equal(qgm_topology_ring(16, &t), 0);
  double lo, hi;
  assert_int_equal(qgm_topology_eigen_range(t, &lo, &hi), 0);
  qgm_topology_free(t);
  const double pi = acos(-1.0);
  assert_float_equal(lo, -1.0 / 3, 1e-12);
  assert_float_equal(hi, (1 + 2 * cos(2 * pi / 16)) / 3, 1e-12);
  const double gamma = (2 - hi - lo) / (hi - lo);
  for (int r = 1; r <= 12; r++) {
    float b[12], e[12], w;
    double contraction;
    assert_int_equal(qgm_chebyshev_rounds(lo, hi, r, b, e, &w, &contraction),
                     0);
    const double top = 1.0 + chebyshev_t(r, gamma);
    assert_float_equal(contraction, 2.0 / top, 1e-12 * contraction);
    for (int j = 0; j <= 20; j++) {
      const double x = j == 20 ? 1.0 : lo + (hi - lo) * j / 19.0;
      double before = 1.0, y = 1.0; /* the scalar messages */
      for (int k = 0; k < r; k++) {
        const double mixed = x * y;
        const double next = mixed + b[k] * (y - mixed) + e[k] * (before - mixed);
        before = y;
        y = next;
      }
      y += w * (1.0 - y);
      const double z = (2 * x - hi - lo) / (hi - lo);
      assert_float_equal(y, (1.0 + chebyshev_t(r, z)) / top, 1e-5);
      if (j < 20)
        assert_true(y >= -1e-5 && y <= contraction + 1e-5);
    }
  }
  float b[8], e[8], w;
  double eight;
  assert_int_equal(qgm_chebyshev_rounds(lo, hi, 8, b, e, &w, &eight), 0);
  assert_true(eight < pow(hi, 35));
}

/* One eigenvalue besides 1 (the complete graph's 0, or c): one round of
 * (W - c) / (1 - c) averages exactly; bad ranges are refused. */
static void test_chebyshev_edge_cases(void **state) {
  (void)state;
  float b[3], e[3], w = 1.0f;
  double contraction = 1.0;
  assert_int_equal(
      qgm_chebyshev_rounds(0.5, 0.5, 3, b, e, &w, &contraction), 0);
  assert_float_equal(b[0], -1.0, 1e-7); /* 0.5 / (0.5 - 1) */
  assert_float_equal(e[2], 0.0, 0.0);
  assert_float_equal(w, 0.0, 0.0);
  assert_float_equal(contraction, 0.0, 0.0);
  assert_int_equal(qgm_chebyshev_rounds(-0.5, 1.0, 3, b, e, &w, NULL),
                   QGM_EINVAL); /* not connected */
  assert_int_equal(qgm_chebyshev_rounds(-1.5, 0.5, 3, b, e, &w, NULL),
                   QGM_EINVAL);
  assert_int_equal(qgm_chebyshev_rounds(0.5, 0.2, 3, b, e, &w, NULL),
                   QGM_EINVAL);
  assert_int_equal(qgm_chebyshev_rounds(-0.5, 0.5, 0, b, e, &w, NULL),
                   QGM_EINVAL);
}

/* out = t + b (y - t) + e (z - t), by hand, in place over z too. */
static void test_chebyshev_round_vector(void **state) {
  (void)state;
  const float t[2] = {1.0f, 2.0f}, y[2] = {3.0f, 2.0f};
  float z[2] = {0.0f, 2.0f};
  qgm_vec_chebyshev_round(z, t, 0.5f, y, -0.25f, z, 2);
  assert_float_equal(z[0], 1.0 + 0.5 * 2 - 0.25 * -1, 0.0); /* 2.25 */
  assert_float_equal(z[1], 2.0, 0.0); /* consensus stays exact */
}

/* The fused round (qgm_vec_gossip_mix_chebyshev, the daemon's) is the
 * mix and then the combination (qgm-sim's two passes) bit for bit, over
 * vectors of several of its blocks and a part block, in place over z. */
static void test_fused_chebyshev_round_is_the_two_passes(void **state) {
  (void)state;
  enum { LONG = 5000, K = 3 };
  static float own[LONG], peer[K][LONG], z[LONG], t[LONG], want[LONG];
  const double weights[K] = {0.2, 1.0 / 3.0, 0.1};
  const float *peers[K] = {peer[0], peer[1], peer[2]};
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 11, 0);
  for (size_t i = 0; i < LONG; i++) {
    own[i] = (float)qgm_rng_normal(&rng);
    z[i] = (float)qgm_rng_normal(&rng);
    for (int j = 0; j < K; j++)
      peer[j][i] = (float)qgm_rng_normal(&rng);
  }
  qgm_vec_gossip_mix(t, own, own, K, peers, weights, LONG);
  qgm_vec_chebyshev_round(want, t, 1.7f, own, -0.45f, z, LONG);
  qgm_vec_gossip_mix_chebyshev(z, own, K, peers, weights, 1.7f, -0.45f, z,
                               LONG);
  assert_memory_equal(z, want, sizeof want);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_two_rounds_are_w_squared),
      cmocka_unit_test(test_many_rounds_reach_the_mean),
      cmocka_unit_test(test_one_round_is_the_neighbours_exchange),
      cmocka_unit_test(test_three_chebyshev_rounds_are_the_polynomial),
      cmocka_unit_test(test_chebyshev_coefficients_are_the_closed_form),
      cmocka_unit_test(test_chebyshev_edge_cases),
      cmocka_unit_test(test_chebyshev_round_vector),
      cmocka_unit_test(test_fused_chebyshev_round_is_the_two_passes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
