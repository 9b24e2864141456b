/* unit_sync.c - asynchronous gossip's schedule clock: a node reads the
 * learning-rate schedule at the most rounds it or an in-neighbour has
 * taken (qgmd_schedule_clock, job/sync.c). */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "feature.h"

static void test_own_step_without_neighbours_ahead(void **state) {
  (void)state;
  assert_int_equal(qgmd_schedule_clock(10, -1.0, 100), 10); /* none yet */
  assert_int_equal(qgmd_schedule_clock(10, 7.0, 100), 10);  /* behind */
  assert_int_equal(qgmd_schedule_clock(10, 10.0, 100), 10);
}

/* A straggler at step 10 whose neighbour sent round 40 reads the
 * schedule at 40; a finished neighbour (infinite round) took all 100
 * steps: the last one, 99. */
static void test_neighbour_ahead_sets_the_clock(void **state) {
  (void)state;
  assert_int_equal(qgmd_schedule_clock(10, 40.0, 100), 40);
  assert_int_equal(qgmd_schedule_clock(10, INFINITY, 100), 99);
  assert_int_equal(qgmd_schedule_clock(10, 250.0, 100), 99);
  assert_int_equal(qgmd_schedule_clock(99, INFINITY, 100), 99);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_own_step_without_neighbours_ahead),
      cmocka_unit_test(test_neighbour_ahead_sets_the_clock),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
