/* mpi_loop.c - the daemon's event loop from the outside: a clean stop on a
 * signal or on qgmctl, the live status, the control socket's mode, and
 * training with the exchange overlapped. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers.h"

static char out[65536];

/* A run long enough to be stopped while it trains. */
#define LONG_RUN                                                              \
  TEST_MPIRUN " -np 4 daemon/qgmd --train-limit=4000 --test-limit=500 "       \
              "--batch-size=16 --epochs=1000 --seed=5"

static char *last_line_of_type(const char *path, const char *type) {
  static char line[8192];
  char *text = test_read_file(path);
  assert_non_null(text);
  int found = -1;
  for (int i = 0; test_jsonl_record(text, type, i, line, sizeof line) == 0;
       i++)
    found = i;
  if (found >= 0)
    test_jsonl_record(text, type, found, line, sizeof line);
  free(text);
  return found >= 0 ? line : NULL;
}

/* SIGTERM to one rank: every rank stops at the same step, the job exits 0
 * and the metrics end with a summary of the stopped run. */
static void test_sigterm_to_one_rank_stops_all(void **state) {
  (void)state;
  char metrics[512], log[512], cmd[2048];
  snprintf(metrics, sizeof metrics, "%s/sigterm.jsonl", test_tmpdir);
  snprintf(log, sizeof log, "%s/sigterm.log", test_tmpdir);
  snprintf(cmd, sizeof cmd, LONG_RUN " --control=none --metrics=%s", metrics);
  int pid = test_spawn(cmd, log);
  assert_int_equal(test_wait_for_text(metrics, "\"type\":\"eval\"", 60), 0);
  /* "qgm[d]" matches the ranks' command lines but not this shell's. */
  snprintf(cmd, sizeof cmd, "pkill -TERM -n -f '^daemon/qgm[d] .*--metrics=%s'",
           metrics);
  assert_int_equal(test_run(cmd, out, sizeof out), 0);
  int rc = test_wait(pid);
  char *log_text = test_read_file(log);
  if (rc != 0)
    fail_msg("exit %d:\n%s", rc, log_text ? log_text : "");
  assert_non_null(strstr(log_text, "stopping at step"));
  free(log_text);
  char *summary = last_line_of_type(metrics, "summary");
  assert_non_null(summary);
  assert_non_null(strstr(summary, "\"stopped_early\":true"));
  double steps;
  assert_int_equal(test_json_number(summary, "steps", &steps), 0);
  /* 4000 / 4 nodes / batch 16 = 62 steps per epoch, 1000 epochs. */
  assert_true(steps >= 62 && steps < 62000);
}

static void test_qgmctl_status_and_stop(void **state) {
  (void)state;
  char metrics[512], log[512], sock[512], cmd[2048];
  snprintf(metrics, sizeof metrics, "%s/ctl.jsonl", test_tmpdir);
  snprintf(log, sizeof log, "%s/ctl.log", test_tmpdir);
  snprintf(sock, sizeof sock, "%s/ctl.sock", test_tmpdir);
  snprintf(cmd, sizeof cmd, LONG_RUN " --control=%s --metrics=%s", sock,
           metrics);
  int pid = test_spawn(cmd, log);
  assert_int_equal(test_wait_for_text(metrics, "\"type\":\"eval\"", 60), 0);

  struct stat st;
  assert_int_equal(stat(sock, &st), 0);
  assert_true(S_ISSOCK(st.st_mode));
  assert_int_equal(st.st_mode & 0777, 0600);

  snprintf(cmd, sizeof cmd, "tools/qgmctl --control=%s status", sock);
  assert_int_equal(test_run(cmd, out, sizeof out), 0);
  double first, later = 0, ranks_step;
  assert_int_equal(test_json_number(out, "step", &first), 0);
  assert_non_null(strstr(out, "\"ranks\":[{\"rank\":0"));
  assert_non_null(strstr(out, "{\"rank\":3,"));
  assert_non_null(strstr(out, "\"overlap_ratio\":"));
  assert_non_null(strstr(out, "\"bytes_sent_per_neighbour\":"));
  assert_int_equal(test_json_number(strstr(out, "{\"rank\":3,"), "step",
                                    &ranks_step), 0);
  assert_true(ranks_step > 0);
  /* The run goes on: a later status shows a later step. */
  for (int tries = 0; tries < 500 && later <= first; tries++) {
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    assert_int_equal(test_json_number(out, "step", &later), 0);
  }
  assert_true(later > first);

  snprintf(cmd, sizeof cmd, "tools/qgmctl --control=%s stop", sock);
  assert_int_equal(test_run(cmd, out, sizeof out), 0);
  assert_non_null(strstr(out, "\"stopping\":true"));
  int rc = test_wait(pid);
  assert_int_equal(rc, 0);
  char *summary = last_line_of_type(metrics, "summary");
  assert_non_null(summary);
  assert_non_null(strstr(summary, "\"stopped_early\":true"));
  /* The socket goes with the run. */
  assert_int_not_equal(stat(sock, &st), 0);
}

static void test_qgmctl_without_daemon(void **state) {
  (void)state;
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "tools/qgmctl --control=%s/none.sock status",
           test_tmpdir);
  assert_int_equal(test_run(cmd, out, sizeof out), 1);
  assert_non_null(strstr(out, "cannot connect"));
  assert_int_equal(test_run("tools/qgmctl frobnicate", out, sizeof out), 2);
}

/* Every overlap mode trains: same floor as mpi_ring's runs. */
static void converges_with(const char *mode, const char *name) {
  char metrics[512], cmd[2048];
  snprintf(metrics, sizeof metrics, "%s/%s.jsonl", test_tmpdir, name);
  snprintf(cmd, sizeof cmd,
           TEST_MPIRUN " -np 4 daemon/qgmd --train-limit=4000 "
           "--test-limit=2000 --batch-size=16 --lr=0.05 --epochs=4 --seed=3 "
           "--control=none %s --metrics=%s", mode, metrics);
  int rc = test_run(cmd, out, sizeof out);
  if (rc != 0)
    fail_msg("exit %d:\n%s", rc, out);
  char *summary = last_line_of_type(metrics, "summary");
  assert_non_null(summary);
  double acc, consensus;
  assert_int_equal(test_json_number(summary, "final_test_acc_avg_model",
                                    &acc), 0);
  assert_int_equal(test_json_number(summary, "final_consensus_dist",
                                    &consensus), 0);
  if (!(acc > 0.65))
    fail_msg("%s: accuracy %g", mode, acc);
  assert_true(consensus < 1e-2);
}

static void test_overlap_on_converges(void **state) {
  (void)state;
  converges_with("--overlap=on", "overlap");
}

static void test_local_steps_overlapped_converge(void **state) {
  (void)state;
  converges_with("--overlap=on --local-steps=4", "local4");
}

static void test_trace_is_written_and_merged(void **state) {
  (void)state;
  char trace[512], merged[512], cmd[2048];
  snprintf(trace, sizeof trace, "%s/trace", test_tmpdir);
  snprintf(merged, sizeof merged, "%s/merged.json", test_tmpdir);
  snprintf(cmd, sizeof cmd,
           TEST_MPIRUN " -np 2 daemon/qgmd --train-limit=1000 "
           "--test-limit=200 --epochs=1 --control=none --trace=%s", trace);
  assert_int_equal(test_run(cmd, out, sizeof out), 0);
  snprintf(cmd, sizeof cmd, "tools/qgm-trace-merge %s %s.0 %s.1", merged,
           trace, trace);
  assert_int_equal(test_run(cmd, out, sizeof out), 0);
  /* A JSON parser reads the merged file: per rank and step (1000 samples
   * / 2 nodes / batch 32 = 15 steps) a compute and an exchange span and
   * the loop's hand-off, local step and mixing, from both ranks. */
  snprintf(cmd, sizeof cmd,
           "/usr/bin/python3 -c 'import json, sys\n"
           "events = json.load(open(sys.argv[1]))\n"
           "spans = lambda n, p: sum(1 for e in events if e[\"ph\"] == \"X\""
           " and e[\"name\"] == n and e[\"pid\"] == p)\n"
           "print(*[spans(n, p) for p in (0, 1) for n in sys.argv[2:]])' "
           "%s compute exchange hand-off local-step mix", merged);
  assert_int_equal(test_run(cmd, out, sizeof out), 0);
  assert_string_equal(out, "15 15 15 15 15 15 15 15 15 15\n");

  /* Without the output name the first rank's trace would be overwritten:
   * refused, and the trace is left as it was. */
  char rank0[600];
  snprintf(rank0, sizeof rank0, "%s.0", trace);
  char *before = test_read_file(rank0);
  assert_non_null(before);
  snprintf(cmd, sizeof cmd, "tools/qgm-trace-merge %s.0 %s.1", trace, trace);
  assert_int_equal(test_run(cmd, out, sizeof out), 2);
  assert_non_null(strstr(out, "would overwrite a rank's trace"));
  char *after = test_read_file(rank0);
  assert_non_null(after);
  assert_string_equal(before, after);
  free(before);
  free(after);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_qgmctl_without_daemon),
      cmocka_unit_test(test_sigterm_to_one_rank_stops_all),
      cmocka_unit_test(test_qgmctl_status_and_stop),
      cmocka_unit_test(test_overlap_on_converges),
      cmocka_unit_test(test_local_steps_overlapped_converge),
      cmocka_unit_test(test_trace_is_written_and_merged),
  };
  return cmocka_run_group_tests(tests, test_tmpdir_setup,
                                test_tmpdir_teardown);
}
