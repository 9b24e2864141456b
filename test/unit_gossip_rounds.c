/* unit_gossip_rounds.c - --gossip-rounds' exchange in process
 * (job/exchange_plan_rounds.c): R rounds on a ring of 4 move the messages
 * by W^R, against values computed by hand; one round is the neighbours'
 * exchange bit for bit; the mean of the messages is kept. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "exchange_plan.h"

enum { N = 4, LEN = 2 };

/* Node i's message is (i, 1 - i); each node of the ring of 4 averages
 * itself and its two neighbours with weight 1/3. Returns the mixes. */
static void mix(qgmd_exchange_kind_t kind, int rounds, float out[N][LEN]) {
  qgm_topology_t *t = NULL;
  assert_int_equal(qgm_topology_ring(N, &t), 0);
  const qgmd_exchange_plan_t plan = {.kind = kind,
                                     .topology = t,
                                     .combine = QGM_COMBINE_NEIGHBOURS,
                                     .len = LEN,
                                     .dim = LEN,
                                     .rounds = rounds};
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_two_rounds_are_w_squared),
      cmocka_unit_test(test_many_rounds_reach_the_mean),
      cmocka_unit_test(test_one_round_is_the_neighbours_exchange),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
