/* mpi_topology.c - topologies and flag files through the daemon: broken
 * flag files and edge files stop the run with status 2 and file:line,
 * ranks that disagree on flags, topology or data stop everywhere, and the
 * exchange follows time-varying and complete graphs. */
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

static const char *write_text(const char *name, const char *text) {
  static char path[4][512];
  static int next;
  char *p = path[next++ % 4];
  snprintf(p, 512, "%s/%s", test_tmpdir, name);
  assert_int_equal(test_write_file(p, text, strlen(text)), 0);
  return p;
}

/* Status 2 and exactly one line containing every needle (run without
 * mpirun: Open MPI adds lines of its own). */
static void expect_error(const char *flags, const char *needle1,
                         const char *needle2) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "daemon/qgmd %s", flags);
  int rc = test_run(cmd, out, sizeof out);
  if (rc != 2 || test_count_lines(out) != 1 || !strstr(out, needle1) ||
      (needle2 && !strstr(out, needle2)))
    fail_msg("%s: exit %d, wanted 2 with '%s' and '%s' in one line:\n%s",
             flags, rc, needle1, needle2 ? needle2 : "", out);
}

static void test_bad_flag_files(void **state) {
  (void)state;
  char flags[1024], where[600];
  const char *unknown =
      write_text("unknown.flags", "# my run\n--epochs=3\n--topolgy=ring\n");
  snprintf(flags, sizeof flags, "--flagfile=%s", unknown);
  snprintf(where, sizeof where, "%s:3:", unknown);
  expect_error(flags, where, "did you mean --topology?");

  const char *value = write_text("value.flags", "--alpha=0.5\n"
                                                "--batch-size=lots\n");
  snprintf(flags, sizeof flags, "--flagfile=%s", value);
  snprintf(where, sizeof where, "%s:2:", value);
  expect_error(flags, where, "'lots'");

  /* a.flags includes b.flags, which includes a.flags again. */
  write_text("a.flags", "--epochs=2\n--flagfile=b.flags\n");
  const char *b = write_text("b.flags", "\n--flagfile=a.flags # loop\n");
  snprintf(flags, sizeof flags, "--flagfile=%s/a.flags", test_tmpdir);
  snprintf(where, sizeof where, "%s:2:", b);
  expect_error(flags, where, "includes itself");

  const char *missing = write_text("missing.flags",
                                   "--epochs=2\n--flagfile=nowhere.flags\n");
  snprintf(flags, sizeof flags, "--flagfile=%s", missing);
  snprintf(where, sizeof where, "%s:2:", missing);
  expect_error(flags, where, "nowhere.flags");

  const char *mixing = write_text("mixing.flags", "--mixing=max-degree\n");
  snprintf(flags, sizeof flags, "--flagfile=%s", mixing);
  expect_error(flags, "--mixing", "max-degree");
  expect_error("--topology=torus --torus=4by4", "--torus", "4by4");
  expect_error("--topology=hypercube", "--topology", "hypercube");
}

/* Later settings override earlier ones; the command line overrides every
 * file wherever it stands; each ready flag file selects its graph. */
static void test_flag_precedence_and_ready_files(void **state) {
  (void)state;
  write_text("base.flags", "--epochs=7\n--lr=0.2\n--topology=star\n");
  const char *top = write_text("top.flags", "--flagfile=base.flags\n"
                                            "--lr=0.3   # overrides base\n");
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "daemon/qgmd --lr=0.4 --flagfile=%s "
           "--show-config", top);
  assert_int_equal(test_run(cmd, out, sizeof out), 0);
  assert_non_null(strstr(out, "--epochs=7\n"));
  assert_non_null(strstr(out, "--lr=0.4\n"));
  assert_non_null(strstr(out, "--topology=star\n"));

  static const char *const ready[][2] = {
      {"ring", "ring"},       {"torus", "torus"},
      {"social32", "social"}, {"exp", "exp"},
      {"complete", "complete"}, {"star", "star"},
      {"one-peer-exp", "one-peer-exp"}};
  for (size_t i = 0; i < sizeof ready / sizeof *ready; i++) {
    char want[128];
    snprintf(cmd, sizeof cmd, "daemon/qgmd --flagfile=topologies/%s.flags "
             "--show-config", ready[i][0]);
    assert_int_equal(test_run(cmd, out, sizeof out), 0);
    snprintf(want, sizeof want, "--topology=%s\n", ready[i][1]);
    if (!strstr(out, want))
      fail_msg("%s.flags: no '%s' in:\n%s", ready[i][0], want, out);
  }
}

/* Under mpirun: every rank stops with status 2 and one rank says why. */
static void expect_mpi_error(const char *cmd, const char *needle) {
  int rc = test_run(cmd, out, sizeof out);
  if (rc != 2 || !strstr(out, needle))
    fail_msg("%s: exit %d, wanted 2 and '%s':\n%s", cmd, rc, needle, out);
}

/* Edge-file faults reach the user through the daemon too. */
static void test_bad_edge_file(void **state) {
  (void)state;
  const char *g = write_text("g.edges", "nodes 2\n0 1\n1 0\n");
  char cmd[1024], where[600];
  snprintf(cmd, sizeof cmd, TEST_MPIRUN " -np 2 daemon/qgmd "
           "--topology=file:%s", g);
  snprintf(where, sizeof where, "%s:3: duplicate edge 0-1", g);
  expect_mpi_error(cmd, where);
}

static void test_ranks_must_agree(void **state) {
  (void)state;
  char cmd[4096];
  const char *ring = write_text("ring.flags", "--topology=ring\n");
  const char *exp = write_text("exp.flags", "--topology=exp\n");
  snprintf(cmd, sizeof cmd, TEST_MPIRUN " -np 1 daemon/qgmd --flagfile=%s : "
           "-np 1 daemon/qgmd --flagfile=%s", ring, exp);
  expect_mpi_error(cmd, "different flags");

  /* Rank 1's file is broken: it must not leave rank 0 waiting. */
  const char *typo = write_text("typo.flags", "--topology=ring\n--seeed=2\n");
  snprintf(cmd, sizeof cmd, TEST_MPIRUN " -np 1 daemon/qgmd --flagfile=%s : "
           "-np 1 daemon/qgmd --flagfile=%s", ring, typo);
  expect_mpi_error(cmd, "typo.flags:2: unknown flag '--seeed'");

  expect_mpi_error(TEST_MPIRUN " -np 3 daemon/qgmd --topology=social",
                   "needs 32 nodes, not 3");

  /* The same relative edge-file path names different files in the two
   * ranks' working directories: the flags agree, the graphs do not. */
  char d1[300], d2[300];
  snprintf(d1, sizeof d1, "%s/one", test_tmpdir);
  snprintf(d2, sizeof d2, "%s/two", test_tmpdir);
  assert_int_equal(mkdir(d1, 0755), 0);
  assert_int_equal(mkdir(d2, 0755), 0);
  write_text("one/g.edges", "0 1\n1 2\n");
  write_text("two/g.edges", "0 1\n1 2\n0 2\n");
  char here[300];
  snprintf(here, sizeof here, "%s", getenv("PWD") ? getenv("PWD") : ".");
  snprintf(cmd, sizeof cmd, TEST_MPIRUN " -np 1 -wdir %s %s/daemon/qgmd "
           "--topology=file:g.edges --train-limit=600 --test-limit=100 : "
           "-np 2 -wdir %s %s/daemon/qgmd --topology=file:g.edges "
           "--train-limit=600 --test-limit=100", d1, here, d2, here);
  expect_mpi_error(cmd, "disagree on the topology");
}

/* One-peer exponential graph: peers change every round and are directed
 * (receive from i - 2^k, send to i + 2^k); training must still converge. */
static void test_time_varying_graph_trains(void **state) {
  (void)state;
  char cmd[1024], metrics[512], last[8192];
  snprintf(metrics, sizeof metrics, "%s/one-peer.jsonl", test_tmpdir);
  snprintf(cmd, sizeof cmd, TEST_MPIRUN " -np 4 daemon/qgmd "
           "--flagfile=topologies/one-peer-exp.flags --train-limit=4000 "
           "--test-limit=2000 --batch-size=16 --lr=0.05 --epochs=3 --seed=3 "
           "--metrics=%s", metrics);
  int rc = test_run(cmd, out, sizeof out);
  if (rc != 0)
    fail_msg("exit %d:\n%s", rc, out);
  assert_non_null(strstr(out, "topology one-peer-exp: 4 nodes"));
  char *text = test_read_file(metrics);
  assert_non_null(text);
  char first[8192];
  assert_int_equal(test_jsonl_record(text, "eval", 0, first, sizeof first), 0);
  assert_int_equal(test_jsonl_record(text, "eval", 2, last, sizeof last), 0);
  free(text);
  double c_first, c_last, acc;
  assert_int_equal(test_json_number(first, "consensus_dist", &c_first), 0);
  assert_int_equal(test_json_number(last, "consensus_dist", &c_last), 0);
  assert_int_equal(test_json_number(last, "test_acc_avg_model", &acc), 0);
  if (!(c_last < 0.5 * c_first && acc > 0.65))
    fail_msg("consensus %g -> %g, accuracy %g", c_first, c_last, acc);
}

/* Complete graph on 32 ranks: W = J/n, so after every gossip round all
 * models are the average; they differ only by float rounding. */
static void test_complete_graph_32(void **state) {
  (void)state;
  char cmd[1024], metrics[512], last[8192];
  snprintf(metrics, sizeof metrics, "%s/complete.jsonl", test_tmpdir);
  snprintf(cmd, sizeof cmd, TEST_MPIRUN " -np 32 daemon/qgmd "
           "--flagfile=topologies/complete.flags --train-limit=3200 "
           "--test-limit=500 --batch-size=20 --hidden=16 --epochs=1 "
           "--metrics=%s", metrics);
  int rc = test_run(cmd, out, sizeof out);
  if (rc != 0)
    fail_msg("exit %d:\n%s", rc, out);
  assert_non_null(strstr(out, "up to 31 peers"));
  char *text = test_read_file(metrics);
  assert_non_null(text);
  assert_int_equal(test_jsonl_record(text, "eval", 0, last, sizeof last), 0);
  free(text);
  double consensus, steps;
  assert_int_equal(test_json_number(last, "consensus_dist", &consensus), 0);
  assert_int_equal(test_json_number(last, "step", &steps), 0);
  assert_true(steps == 5); /* 100 samples per node / batch 20 */
  if (!(consensus < 1e-9))
    fail_msg("complete graph did not average: consensus %g", consensus);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_flag_files),
      cmocka_unit_test(test_flag_precedence_and_ready_files),
      cmocka_unit_test(test_bad_edge_file),
      cmocka_unit_test(test_ranks_must_agree),
      cmocka_unit_test(test_time_varying_graph_trains),
      cmocka_unit_test(test_complete_graph_32),
  };
  return cmocka_run_group_tests(tests, test_tmpdir_setup,
                                test_tmpdir_teardown);
}
