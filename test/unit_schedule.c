/* unit_schedule.c - the learning-rate schedule: warm-up, the paper's step
 * decays, configurable decays and their validation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "helpers.h"
#include "qgm.h"

static void test_paper_schedule(void **state) {
  (void)state;
  qgm_lr_schedule_t s;
  qgm_lr_schedule_paper(&s, 0.1, 10, 100);
  assert_near(qgm_lr_at(&s, 0), 0.01, 1e-15); /* warm-up: (t+1)/10 */
  assert_near(qgm_lr_at(&s, 4), 0.05, 1e-15);
  assert_near(qgm_lr_at(&s, 9), 0.1, 1e-15);
  assert_near(qgm_lr_at(&s, 49), 0.1, 1e-15);
  assert_near(qgm_lr_at(&s, 50), 0.01, 1e-15); /* 50%: x0.1 */
  assert_near(qgm_lr_at(&s, 74), 0.01, 1e-15);
  assert_near(qgm_lr_at(&s, 75), 0.001, 1e-15); /* 75%: x0.1 again */
  assert_near(qgm_lr_at(&s, 99), 0.001, 1e-15);
}

/* An odd total: 50% of 7 is 3.5, so step 4 is the first decayed one. */
static void test_milestones_on_odd_totals(void **state) {
  (void)state;
  qgm_lr_schedule_t s;
  qgm_lr_schedule_paper(&s, 1.0, 0, 7);
  assert_near(qgm_lr_at(&s, 3), 1.0, 0);
  assert_near(qgm_lr_at(&s, 4), 0.1, 1e-15);
  assert_near(qgm_lr_at(&s, 5), 0.1, 1e-15); /* 75% of 7 = 5.25 */
  assert_near(qgm_lr_at(&s, 6), 0.01, 1e-15);
}

static void test_custom_decays(void **state) {
  (void)state;
  qgm_lr_schedule_t s;
  qgm_lr_schedule_paper(&s, 1.0, 0, 10);
  assert_int_equal(qgm_lr_schedule_set_decays(&s, "step", "0.3,0.6,0.9", 0.5),
                   0);
  assert_near(qgm_lr_at(&s, 2), 1.0, 0);
  assert_near(qgm_lr_at(&s, 3), 0.5, 0);
  assert_near(qgm_lr_at(&s, 6), 0.25, 0);
  assert_near(qgm_lr_at(&s, 9), 0.125, 0);
  assert_int_equal(qgm_lr_schedule_set_decays(&s, "constant", NULL, 0), 0);
  assert_near(qgm_lr_at(&s, 9), 1.0, 0);
}

static void test_bad_decays_leave_schedule_unchanged(void **state) {
  (void)state;
  qgm_lr_schedule_t s;
  qgm_lr_schedule_paper(&s, 1.0, 0, 100);
  const char *bad[] = {"", "0.5,0.4", "1.5", "0", "0.5,", "abc", "0.5;0.7",
                       "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(qgm_lr_schedule_set_decays(&s, "step", bad[i], 0.1),
                     QGM_EINVAL);
  assert_int_equal(qgm_lr_schedule_set_decays(&s, "step", "0.5", 0.0),
                   QGM_EINVAL);
  assert_int_equal(qgm_lr_schedule_set_decays(&s, "step", "0.5", 1.5),
                   QGM_EINVAL);
  assert_int_equal(qgm_lr_schedule_set_decays(&s, "cosine", "0.5", 0.1),
                   QGM_EINVAL);
  assert_int_equal(s.num_decays, 2);
  assert_near(qgm_lr_at(&s, 75), 0.01, 1e-15);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_paper_schedule),
      cmocka_unit_test(test_milestones_on_odd_totals),
      cmocka_unit_test(test_custom_decays),
      cmocka_unit_test(test_bad_decays_leave_schedule_unchanged),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
