/* mpi_ring.c - the daemon end to end under mpirun: 4 ranks on a ring,
 * Fashion-MNIST subset, and the ways a user can get the command wrong. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

static char out[65536];

/* 4000 training samples (1000 per node), 2000 test samples. */
#define SMALL_RUN                                                             \
  TEST_MPIRUN " -np 4 daemon/qgmd --train-limit=4000 --test-limit=2000 "      \
              "--batch-size=16 --lr=0.05 --alpha=1 --seed=3"

static void run_and_check(const char *algorithm) {
  char cmd[1024], metrics[512];
  snprintf(metrics, sizeof metrics, "%s/%s.jsonl", test_tmpdir, algorithm);
  snprintf(cmd, sizeof cmd, SMALL_RUN " --epochs=4 --algorithm=%s "
           "--metrics=%s", algorithm, metrics);
  int rc = test_run(cmd, out, sizeof out);
  if (rc != 0)
    fail_msg("exit %d:\n%s", rc, out);
  char *text = test_read_file(metrics);
  assert_non_null(text);
  char first[8192], last[8192], summary[8192];
  assert_int_equal(test_jsonl_record(text, "eval", 0, first, sizeof first), 0);
  assert_int_equal(test_jsonl_record(text, "eval", 3, last, sizeof last), 0);
  assert_int_equal(test_jsonl_record(text, "eval", 4, summary, 1), -1);
  assert_int_equal(test_jsonl_record(text, "config", 0, summary, 1), 0);
  assert_int_equal(test_jsonl_record(text, "summary", 0, summary,
                                     sizeof summary), 0);
  free(text);

  double c_first, c_last, acc, local, steps;
  assert_int_equal(test_json_number(first, "consensus_dist", &c_first), 0);
  assert_int_equal(test_json_number(last, "consensus_dist", &c_last), 0);
  assert_int_equal(test_json_number(last, "test_acc_avg_model", &acc), 0);
  assert_int_equal(test_json_number(last, "test_acc_local_mean", &local), 0);
  assert_int_equal(test_json_number(last, "step", &steps), 0);
  /* 1000 samples per node / batch 16 = 62 steps per epoch. */
  assert_true(steps == 4 * 62);
  /* The models start equal, drift apart while the learning rate is high,
   * and are pulled together once it decays (x0.1 at epochs 2 and 3): the
   * distance must fall well below the first epoch's. */
  assert_true(c_first > 0.0);
  if (!(c_last < 0.5 * c_first))
    fail_msg("consensus did not shrink: %g -> %g", c_first, c_last);
  /* Chance is 0.10; a linear model on 4000 Fashion-MNIST images already
   * reaches about 0.75, so an MLP that learns at all clears 0.65. */
  if (!(acc > 0.65 && local > 0.65))
    fail_msg("accuracy too low: averaged %g, local mean %g", acc, local);
}

static void test_qg_dsgdm_n_converges(void **state) {
  (void)state;
  run_and_check("qg-dsgdm-n");
}

static void test_dsgd_converges(void **state) {
  (void)state;
  run_and_check("dsgd");
}

/* A usage error is exit status 2 and exactly one line naming the flag or
 * the file (run without mpirun: Open MPI adds its own lines). */
static void expect_usage_error(const char *flags, const char *needle) {
  char direct[1024];
  snprintf(direct, sizeof direct, "daemon/qgmd %s", flags);
  int rc = test_run(direct, out, sizeof out);
  assert_int_equal(rc, 2);
  assert_int_equal(test_count_lines(out), 1);
  if (!strstr(out, needle))
    fail_msg("'%s' not in: %s", needle, out);
}

/* --target-accuracy ends the run at the first evaluation that reaches
 * it: one epoch's record, then the summary of an early stop after 62 of
 * the 4 x 62 steps. 0.5 is reached after one epoch (the run above gets
 * past 0.65); a run that never reaches 0.999 trains all 4 epochs. */
static void test_target_accuracy_stops_the_run(void **state) {
  (void)state;
  const struct {
    const char *target;
    int evals;
    double steps;
  } cases[] = {{"0.5", 1, 62}, {"0.999", 4, 4 * 62}};
  for (int i = 0; i < 2; i++) {
    char cmd[1024], metrics[512], summary[8192], x[8];
    snprintf(metrics, sizeof metrics, "%s/target-%d.jsonl", test_tmpdir, i);
    snprintf(cmd, sizeof cmd, SMALL_RUN " --epochs=4 --target-accuracy=%s "
             "--metrics=%s", cases[i].target, metrics);
    int rc = test_run(cmd, out, sizeof out);
    if (rc != 0)
      fail_msg("exit %d:\n%s", rc, out);
    char *text = test_read_file(metrics);
    assert_non_null(text);
    assert_int_equal(
        test_jsonl_record(text, "eval", cases[i].evals - 1, x, sizeof x), 0);
    assert_int_equal(
        test_jsonl_record(text, "eval", cases[i].evals, x, sizeof x), -1);
    assert_int_equal(
        test_jsonl_record(text, "summary", 0, summary, sizeof summary), 0);
    double steps;
    assert_int_equal(test_json_number(summary, "steps", &steps), 0);
    assert_near(steps, cases[i].steps, 0);
    assert_non_null(strstr(summary, i == 0 ? "\"stopped_early\":true"
                                           : "\"stopped_early\":false"));
    free(text);
  }
}

static void test_bad_flags(void **state) {
  (void)state;
  expect_usage_error("--epohcs=3", "did you mean --epochs?");
  expect_usage_error("--epochs=zero", "--epochs");
  expect_usage_error("--alpha=-1", "--alpha");
  expect_usage_error("--momentum=1.5", "--momentum");
  expect_usage_error("--algorithm=adamw", "--algorithm");
  expect_usage_error("--data-dir=/nonexistent", "/nonexistent");
  expect_usage_error("--flagfile=/nonexistent.flags", "/nonexistent.flags");
}

/* Under mpirun the job still ends with status 2 and every rank stops. */
static void test_bad_data_under_mpirun(void **state) {
  (void)state;
  int rc = test_run(TEST_MPIRUN " -np 3 daemon/qgmd --data-dir=/nonexistent",
                    out, sizeof out);
  assert_int_equal(rc, 2);
  assert_non_null(strstr(out, "/nonexistent/train-labels-idx1-ubyte"));
}

static void test_help(void **state) {
  (void)state;
  assert_int_equal(test_run("daemon/qgmd --help", out, sizeof out), 0);
  assert_non_null(strstr(out, "--algorithm"));
  assert_non_null(strstr(out, "--metrics"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_help),
      cmocka_unit_test(test_bad_flags),
      cmocka_unit_test(test_bad_data_under_mpirun),
      cmocka_unit_test(test_qg_dsgdm_n_converges),
      cmocka_unit_test(test_dsgd_converges),
      cmocka_unit_test(test_target_accuracy_stops_the_run),
  };
  return cmocka_run_group_tests(tests, test_tmpdir_setup,
                                test_tmpdir_teardown);
}
