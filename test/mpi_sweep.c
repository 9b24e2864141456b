/* mpi_sweep.c - tools/sweep end to end on a tiny grid (2 ranks, 2 epochs,
 * a Fashion-MNIST subset): the CSV agrees with the runs' metrics files, the
 * summary has one row per algorithm, a failing grid point is reported while
 * the others finish, re-runs skip finished runs and redo interrupted ones,
 * --report re-aggregates, bad spec files are exit status 2 with file:line,
 * and a conditional line (`lr = ... if algorithm = ...`) gives a grid of
 * asynchronous runs one table whose columns agree with the runs' summaries.
 * The tests run in order and share one sweep directory. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

static char spec[512], sweep_dir[512];
static char out[65536];

#define GRID                                                                  \
  "# two algorithms that train, one that the daemon rejects\n"                \
  "np = 2\n"                                                                  \
  "epochs = 2\n"                                                              \
  "train-limit = 2000\n"                                                      \
  "test-limit = 500\n"                                                        \
  "algorithm = dsgd qg-dsgdm-n no-such-algorithm\n"

static int setup(void **state) {
  test_tmpdir_setup(state);
  snprintf(spec, sizeof spec, "%s/tiny.grid", test_tmpdir);
  snprintf(sweep_dir, sizeof sweep_dir, "%s/sweep", test_tmpdir);
  return test_write_file(spec, GRID, strlen(GRID));
}


static int sweep(const char *options) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "tools/sweep --stability-k=2 -o %s %s %s",
           sweep_dir, options, spec);
  return test_run(cmd, out, sizeof out);
}

static size_t count(const char *text, const char *needle) {
  size_t n = 0;
  for (const char *s = strstr(text, needle); s; s = strstr(s + 1, needle))
    n++;
  return n;
}

static void expect_in(const char *text, const char *needle) {
  if (!text || !strstr(text, needle))
    fail_msg("'%s' not in:\n%s", needle, text ? text : "(nothing)");
}

static void expect_count(const char *text, const char *needle, size_t n) {
  if (count(text, needle) != n)
    fail_msg("'%s' is not %zu times in:\n%s", needle, n, text);
}

/* Field `name` of a CSV row, by the header's column names (runs.csv has
 * no quoted fields in this grid). */
/* Length of the CSV field at s: up to the next unquoted ',' or newline
 * (values with commas, such as --lr-decay-at=0.5,0.75, are quoted). */
static size_t field_len(const char *s) {
  size_t n = 0;
  for (int quoted = 0; s[n] && (quoted || (s[n] != ',' && s[n] != '\n'));
       n++)
    quoted ^= s[n] == '"';
  return n;
}

static void csv_field(const char *header, const char *row, const char *name,
                      char *value, size_t size) {
  int column = -1;
  const char *s = header;
  for (int i = 0; s && column < 0; i++) {
    size_t len = field_len(s);
    if (len == strlen(name) && strncmp(s, name, len) == 0)
      column = i;
    s = s[len] == ',' ? s + len + 1 : NULL;
  }
  if (column < 0)
    fail_msg("no column '%s' in: %s", name, header);
  s = row;
  for (int i = 0; i < column && s; i++) {
    size_t len = field_len(s);
    s = s[len] == ',' ? s + len + 1 : NULL;
  }
  if (!s)
    fail_msg("row has no column '%s': %s", name, row);
  snprintf(value, size, "%.*s", (int)field_len(s), s);
}

static double csv_number(const char *header, const char *row,
                         const char *name) {
  char value[256];
  csv_field(header, row, name, value, sizeof value);
  char *end;
  double v = strtod(value, &end);
  if (end == value)
    fail_msg("column %s is not a number: '%s'", name, value);
  return v;
}

static char *run_metrics_path(const char *run, char *path, size_t size) {
  snprintf(path, size, "%s/runs/%s/metrics.jsonl", sweep_dir, run);
  return path;
}

/* Each CSV row against its own run's metrics file. */
static void check_row(const char *header, const char *row) {
  char run[256], path[1024], algorithm[64], rec[8192];
  csv_field(header, row, "run", run, sizeof run);
  csv_field(header, row, "algorithm", algorithm, sizeof algorithm);
  assert_true(strcmp(algorithm, "dsgd") == 0 ||
              strcmp(algorithm, "qg-dsgdm-n") == 0);
  assert_near(csv_number(header, row, "np"), 2, 0);
  assert_near(csv_number(header, row, "epochs"), 2, 0);
  assert_near(csv_number(header, row, "train-limit"), 2000, 0);
  assert_near(csv_number(header, row, "epochs_done"), 2, 0);
  char *text = test_read_file(run_metrics_path(run, path, sizeof path));
  assert_non_null(text);

  double acc[2], loc[2], consensus, v;
  for (int e = 0; e < 2; e++) {
    assert_int_equal(test_jsonl_record(text, "eval", e, rec, sizeof rec), 0);
    assert_int_equal(test_json_number(rec, "test_acc_avg_model", &acc[e]), 0);
    assert_int_equal(test_json_number(rec, "test_acc_local_mean", &loc[e]), 0);
  }
  assert_int_equal(test_json_number(rec, "consensus_dist", &consensus), 0);
  assert_int_equal(test_jsonl_record(text, "summary", 0, rec, sizeof rec), 0);
  free(text);
  assert_int_equal(test_json_number(rec, "final_test_acc_avg_model", &v), 0);
  assert_near(csv_number(header, row, "final_test_acc_avg_model"), v, 1e-9);
  assert_near(v, acc[1], 1e-9);
  assert_near(csv_number(header, row, "best_test_acc_avg_model"),
              fmax(acc[0], acc[1]), 1e-9);
  assert_near(csv_number(header, row, "final_test_acc_local_mean"), loc[1],
              1e-9);
  assert_near(csv_number(header, row, "best_test_acc_local_mean"),
              fmax(loc[0], loc[1]), 1e-9);
  assert_near(csv_number(header, row, "final_consensus_dist"), consensus,
              1e-6 * (1 + consensus));
  /* Stability over the last K = 2 evaluations: the population standard
   * deviation of two values is half their distance. */
  assert_near(csv_number(header, row, "stability"),
              fabs(acc[1] - acc[0]) / 2, 1e-6);
  assert_true(csv_number(header, row, "run_wall_s") > 0);
}

static void check_csv(void) {
  char path[1024];
  snprintf(path, sizeof path, "%s/runs.csv", sweep_dir);
  char *csv = test_read_file(path);
  assert_non_null(csv);
  assert_int_equal(test_count_lines(csv), 3);
  char *row1 = strchr(csv, '\n') + 1, *row2 = strchr(row1, '\n') + 1;
  char a1[64], a2[64];
  csv_field(csv, row1, "algorithm", a1, sizeof a1);
  csv_field(csv, row2, "algorithm", a2, sizeof a2);
  assert_string_not_equal(a1, a2);
  check_row(csv, row1);
  check_row(csv, row2);
  free(csv);
}

static void test_sweep_runs_grid_and_reports_failure(void **state) {
  (void)state;
  int rc = sweep("");
  if (rc != 1)
    fail_msg("exit %d (expected 1: one run fails):\n%s", rc, out);
  expect_in(out, "run 1/3: algorithm=dsgd");
  expect_in(out, "run 3/3: algorithm=no-such-algorithm FAILED (exit status 2)");
  /* The failing run's own error, from its log, not Open MPI's notices. */
  expect_in(out, "unknown algorithm 'no-such-algorithm'");
  expect_count(out, " done in ", 2);
  check_csv();

  char path[1024];
  snprintf(path, sizeof path, "%s/summary.md", sweep_dir);
  char *md = test_read_file(path);
  assert_non_null(md);
  expect_in(md, "| algorithm | alpha = 1 |");
  expect_in(md, "| dsgd |");
  expect_in(md, "| qg-dsgdm-n |");
  expect_in(md, "**"); /* the best per column */
  expect_in(md, "over last 2 evals");
  expect_in(md, "algorithm-no-such-algorithm");
  expect_in(md, "failed, exit status 2");
  free(md);

  static const char *const plots[] = {"accuracy-vs-epoch_alpha-1.png",
                                      "consensus-vs-epoch_alpha-1.png",
                                      "final-accuracy-vs-alpha.png"};
  for (size_t i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/plots/%s", sweep_dir, plots[i]);
    char *png = test_read_file(path);
    if (!png || memcmp(png, "\x89PNG", 4) != 0)
      fail_msg("%s is missing or not a PNG", path);
    free(png);
  }
}

/* The metrics files of the finished runs, concatenated in CSV order. */
static char *finished_metrics(void) {
  char path[1024];
  snprintf(path, sizeof path, "%s/runs.csv", sweep_dir);
  char *csv = test_read_file(path);
  assert_non_null(csv);
  size_t cap = 1 << 20;
  char *all = calloc(1, cap);
  assert_non_null(all);
  for (char *row = strchr(csv, '\n') + 1; *row; row = strchr(row, '\n') + 1) {
    char run[256];
    csv_field(csv, row, "run", run, sizeof run);
    char *text = test_read_file(run_metrics_path(run, path, sizeof path));
    assert_non_null(text);
    assert_true(strlen(all) + strlen(text) < cap);
    strcat(all, text);
    free(text);
  }
  free(csv);
  return all;
}

static void test_rerun_skips_finished_runs(void **state) {
  (void)state;
  char *before = finished_metrics();
  assert_int_equal(sweep(""), 1);
  expect_count(out, "skipped (finished earlier)", 2);
  expect_in(out, "run 3/3: algorithm=no-such-algorithm FAILED");
  char *after = finished_metrics();
  /* wall_s differs between any two real runs: equal files were not rerun. */
  assert_string_equal(before, after);
  free(before);
  free(after);
}

/* A run killed mid-way has metrics but no completion marker. */
static void test_interrupted_run_is_redone(void **state) {
  (void)state;
  char cmd[4096], dir[600];
  snprintf(cmd, sizeof cmd, "ls -d %s/runs/*algorithm-dsgd_*", sweep_dir);
  assert_int_equal(test_run(cmd, dir, sizeof dir), 0);
  dir[strcspn(dir, "\n")] = '\0';
  snprintf(cmd, sizeof cmd, "rm %s/done && head -n 2 %s/metrics.jsonl > %s/m"
           " && mv %s/m %s/metrics.jsonl", dir, dir, dir, dir, dir);
  assert_int_equal(test_run(cmd, NULL, 0), 0);

  assert_int_equal(sweep("--no-plots"), 1);
  expect_in(out, "run 1/3: algorithm=dsgd done in ");
  expect_in(out, "run 2/3: algorithm=qg-dsgdm-n skipped");
  check_csv(); /* the redone run has its summary and both evaluations */
}

static void test_report_reaggregates(void **state) {
  (void)state;
  char path[1024], cmd[2048];
  snprintf(path, sizeof path, "%s/runs.csv", sweep_dir);
  char *before = test_read_file(path);
  assert_non_null(before);
  snprintf(cmd, sizeof cmd, "rm %s/runs.csv %s/summary.md && tools/sweep "
           "--report %s --stability-k=2 --no-plots", sweep_dir, sweep_dir,
           sweep_dir);
  int rc = test_run(cmd, out, sizeof out);
  if (rc != 0)
    fail_msg("exit %d:\n%s", rc, out);
  char *after = test_read_file(path);
  assert_non_null(after);
  assert_string_equal(before, after);
  free(before);
  free(after);
  snprintf(path, sizeof path, "%s/summary.md", sweep_dir);
  char *md = test_read_file(path);
  assert_non_null(md);
  free(md);
}

static void test_dry_run_lists_without_running(void **state) {
  (void)state;
  char cmd[2048], other[512];
  snprintf(other, sizeof other, "%s/dry", test_tmpdir);
  snprintf(cmd, sizeof cmd, "tools/sweep --dry-run -o %s --set 'seed=1 2' %s",
           other, spec);
  assert_int_equal(test_run(cmd, out, sizeof out), 0);
  expect_count(out, "[pending]", 6);
  expect_in(out, "run 6/6: algorithm=no-such-algorithm seed=2");
  expect_in(out, "mpirun --oversubscribe --bind-to none -np 2 ");
  expect_in(out, "--seed=2");
  snprintf(cmd, sizeof cmd, "test -e %s", other);
  assert_int_not_equal(test_run(cmd, NULL, 0), 0);

  /* A conditional line from the command line: only qg-dsgdm-n's runs get
   * the flag. */
  snprintf(cmd, sizeof cmd, "tools/sweep --dry-run -o %s --set 'seed=1 2' "
           "--set 'lr=0.01 if algorithm=qg-dsgdm-n' %s", other, spec);
  assert_int_equal(test_run(cmd, out, sizeof out), 0);
  expect_count(out, "[pending]", 6);
  expect_count(out, "--lr=", 2);
  expect_count(out, "--lr=0.01 ", 2);
  expect_in(out, "run 4/6: algorithm=qg-dsgdm-n lr=0.01 seed=2 [pending]");
  expect_in(out, "run 2/6: algorithm=dsgd seed=2 [pending]");
}

/* Exit status 2 and one line that names the file and line. */
static void expect_spec_error(const char *text, const char *where,
                              const char *needle) {
  char path[512], cmd[1024], place[600];
  snprintf(path, sizeof path, "%s/bad.grid", test_tmpdir);
  assert_int_equal(test_write_file(path, text, strlen(text)), 0);
  snprintf(cmd, sizeof cmd, "tools/sweep --dry-run %s", path);
  int rc = test_run(cmd, out, sizeof out);
  if (rc != 2 || test_count_lines(out) != 1)
    fail_msg("exit %d, expected 2 and one line:\n%s", rc, out);
  snprintf(place, sizeof place, "%s%s", path, where);
  expect_in(out, place);
  expect_in(out, needle);
}

static void test_bad_specs(void **state) {
  (void)state;
  expect_spec_error("np = 2\nalpha 1\n", ":2:", "expected 'key = value");
  expect_spec_error("np = 2\n\n# c\nepohcs = 1\n", ":4:", "unknown key 'epohcs'");
  expect_spec_error("np = 2\nalpha = 1, 0.1\n", ":2:", "separated by spaces");
  expect_spec_error("np = 2\nnp = 4\n", ":2:", "already set on line 1");
  expect_spec_error("np = two\n", ":1:", "np must be");
  expect_spec_error("np = 2\nalpha =\n", ":2:", "no value for 'alpha'");
  expect_spec_error("np = 2\nflagfile = nope.flags\n", ":2:", "nope.flags");
  expect_spec_error("np = 2\nmetrics = x\n", ":2:", "set by the sweep");
  expect_spec_error("alpha = 1\n", ": no 'np' line", "number of ranks");
  expect_spec_error("np = 2\nlr = 0.1 if algorithm = dsgd\n", ":2:",
                    "'algorithm' has no line of its own");
  expect_spec_error("np = 2\nalgorithm = dsgd\nlr = 1 if algorithm = dsdg\n",
                    ":3:", "'dsdg' is not one of the values of 'algorithm'");
  expect_spec_error("np = 2\nalgorithm = dsgd\nlr = 1 if algorithm\n", ":3:",
                    "expected 'if KEY = VALUE'");
  expect_spec_error("np = 2\nalgorithm = dsgd\nlr = 1 if algorithm = dsgd\n"
                    "lr = 2 if algorithm = dsgd\n", ":4:",
                    "'lr if algorithm=dsgd' is already set on line 3");

  assert_int_equal(test_run("tools/sweep /nonexistent.grid", out, sizeof out), 2);
  expect_in(out, "/nonexistent.grid");
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "tools/sweep --dry-run --set epohcs=1 %s", spec);
  assert_int_equal(test_run(cmd, out, sizeof out), 2);
  expect_in(out, "--set epohcs=1: unknown key");
  assert_int_equal(test_run("tools/sweep --stability-k=0 x", out, sizeof out), 2);
  expect_in(out, "--stability-k");
  assert_int_equal(test_run("tools/sweep --report /nonexistent", out, sizeof out), 2);
  expect_in(out, "/nonexistent");
}

/* Two asynchronous runs (a server and 2 workers) whose learning rate goes
 * with the algorithm: one table, the algorithms labelled with their rate,
 * and the stability, staleness and update-count columns equal to what each
 * run's summary says (the sweep's K = 10 is the daemon's default). */
#define ASYNC_GRID                                                            \
  "np = 3\n"                                                                  \
  "epochs = 1\n"                                                              \
  "train-limit = 1000\n"                                                      \
  "test-limit = 500\n"                                                        \
  "algorithm = asgd gsgm\n"                                                   \
  "lr = 0.05\n"                                                               \
  "lr = 0.02 if algorithm = gsgm   # a conditional line\n"

static void test_async_grid_with_conditional_line(void **state) {
  (void)state;
  char grid[512], dir[512], cmd[2048], path[1024], rec[8192];
  snprintf(grid, sizeof grid, "%s/async.grid", test_tmpdir);
  snprintf(dir, sizeof dir, "%s/async", test_tmpdir);
  assert_int_equal(test_write_file(grid, ASYNC_GRID, strlen(ASYNC_GRID)), 0);
  snprintf(cmd, sizeof cmd, "tools/sweep --stability-k=10 --no-plots -o %s %s",
           dir, grid);
  int rc = test_run(cmd, out, sizeof out);
  if (rc != 0)
    fail_msg("exit %d:\n%s", rc, out);
  expect_in(out, "run 2/2: algorithm=gsgm lr=0.02 done in ");

  snprintf(path, sizeof path, "%s/runs.csv", dir);
  char *csv = test_read_file(path);
  assert_non_null(csv);
  assert_int_equal(test_count_lines(csv), 3);
  for (char *row = strchr(csv, '\n') + 1; *row; row = strchr(row, '\n') + 1) {
    char run[256], algorithm[64];
    csv_field(csv, row, "run", run, sizeof run);
    csv_field(csv, row, "algorithm", algorithm, sizeof algorithm);
    assert_near(csv_number(csv, row, "lr"),
                strcmp(algorithm, "gsgm") == 0 ? 0.02 : 0.05, 1e-12);
    assert_near(csv_number(csv, row, "epochs_done"), 1, 0);
    snprintf(path, sizeof path, "%s/runs/%s/metrics.jsonl", dir, run);
    char *text = test_read_file(path);
    assert_non_null(text);
    assert_int_equal(test_jsonl_record(text, "summary", 0, rec, sizeof rec), 0);
    free(text);
    double v, lo, hi;
    assert_int_equal(test_json_number(rec, "stability_std_last_k", &v), 0);
    assert_near(csv_number(csv, row, "stability"), v, 1e-6);
    assert_int_equal(test_json_number(rec, "staleness_mean", &v), 0);
    assert_near(csv_number(csv, row, "staleness_mean"), v, 1e-9);
    assert_int_equal(test_json_number(rec, "applied_min", &lo), 0);
    assert_int_equal(test_json_number(rec, "applied_max", &hi), 0);
    assert_near(csv_number(csv, row, "applied_spread"), hi - lo, 0);
  }
  free(csv);

  snprintf(path, sizeof path, "%s/summary.md", dir);
  char *md = test_read_file(path);
  assert_non_null(md);
  expect_count(md, "\n## ", 1); /* lr goes with the algorithm: one table */
  expect_in(md, "| asgd (lr=0.05) |");
  expect_in(md, "| gsgm (lr=0.02) |");
  expect_in(md, "over the last 10 evaluations (pp");
  expect_in(md, "staleness, mean");
  if (strstr(md, "local mean (%)"))
    fail_msg("an asynchronous table has local-model columns:\n%s", md);
  free(md);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_specs),
      cmocka_unit_test(test_dry_run_lists_without_running),
      cmocka_unit_test(test_sweep_runs_grid_and_reports_failure),
      cmocka_unit_test(test_rerun_skips_finished_runs),
      cmocka_unit_test(test_interrupted_run_is_redone),
      cmocka_unit_test(test_report_reaggregates),
      cmocka_unit_test(test_async_grid_with_conditional_line),
  };
  return cmocka_run_group_tests(tests, setup, test_tmpdir_teardown);
}
