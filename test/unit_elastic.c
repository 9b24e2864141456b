/* unit_elastic.c - the job layer's rules for a run that goes on with
 * fewer ranks (job/elastic.c): --resume-ranks lists, and the lost-peer
 * deadline as a function of the median step time, against hand-computed
 * values. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "config.h"

static void test_resume_ranks_lists(void **state) {
  (void)state;
  static qgmd_config_t cfg;
  int ranks[8];
  snprintf(cfg.resume_ranks, sizeof cfg.resume_ranks, "0,1,2,3,6,7");
  assert_int_equal(qgmd_config_resume_ranks(&cfg, ranks, 8), 6);
  const int want[] = {0, 1, 2, 3, 6, 7};
  assert_memory_equal(ranks, want, sizeof want);
  /* More than max are counted, not stored. */
  assert_int_equal(qgmd_config_resume_ranks(&cfg, ranks, 2), 6);
  cfg.resume_ranks[0] = '\0';
  assert_int_equal(qgmd_config_resume_ranks(&cfg, ranks, 8), 0);
  static const char *const bad[] = {"0,0", "1,,2", "-1", "2,x", "3,", ",3",
                                    "1 2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(cfg.resume_ranks, sizeof cfg.resume_ranks, "%s", bad[i]);
    assert_int_equal(qgmd_config_resume_ranks(&cfg, ranks, 8), -1);
  }
}

static void test_lost_deadline(void **state) {
  (void)state;
  static qgmd_config_t cfg;
  cfg.comm_timeout = 600;
  cfg.lost_after = 20;
  /* 20 x 10 ms = 0.2 s: the floor. */
  assert_true(qgmd_config_lost_deadline(&cfg, 0.010) == QGMD_LOST_FLOOR_S);
  /* 20 x 0.5 s = 10 s. */
  assert_true(qgmd_config_lost_deadline(&cfg, 0.5) == 10.0);
  /* At most --comm-timeout. */
  cfg.comm_timeout = 5;
  assert_true(qgmd_config_lost_deadline(&cfg, 0.5) == 5.0);
  /* No step time yet, or --lost-after=0: --comm-timeout alone. */
  assert_true(qgmd_config_lost_deadline(&cfg, 0.0) == 5.0);
  cfg.lost_after = 0;
  assert_true(qgmd_config_lost_deadline(&cfg, 0.5) == 5.0);
  /* --comm-timeout=0 (wait forever) caps nothing. */
  cfg.comm_timeout = 0;
  cfg.lost_after = 20;
  assert_true(qgmd_config_lost_deadline(&cfg, 1.0) == 20.0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resume_ranks_lists),
      cmocka_unit_test(test_lost_deadline),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
