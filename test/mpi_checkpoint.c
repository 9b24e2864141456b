/* mpi_checkpoint.c - checkpoints and faults, end to end under mpirun:
 * a run stopped by SIGTERM or killed with SIGKILL and resumed ends
 * bit for bit where an uninterrupted run ends; damaged checkpoints are
 * skipped; a checkpoint of other flags or another node count is refused;
 * a hung rank is named by the watchdog; a diverging run stops and keeps
 * only finite checkpoints. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "qgm.h"

static char tmpdir[256];
static char out[65536];
static char reference[512]; /* the uninterrupted run's checkpoints */

/* 2000 samples / 4 nodes / batch 16 = 31 steps per epoch, 93 in all. */
#define FLAGS                                                                 \
  "--train-limit=2000 --test-limit=200 --batch-size=16 --epochs=3 "          \
  "--seed=7 --hidden=128 --control=none"
#define RUN TEST_MPIRUN " -np 4 daemon/qgmd " FLAGS
#define FINAL_STEP 93
/* Emulated slow devices (the workers sleep): the run lasts seconds, so a
 * signal reliably lands mid-run, at no CPU cost. */
#define SLOW "--straggle=0,1,2,3:30"

static void run_ok(const char *cmd) {
  int rc = test_run(cmd, out, sizeof out);
  if (rc != 0)
    fail_msg("exit %d: %s\n%s", rc, cmd, out);
}

static void step_path(char *buf, size_t size, const char *dir, long step,
                      int rank) {
  if (qgm_checkpoint_path(dir, (uint64_t)step, rank, buf, size) != 0)
    fail_msg("path too long");
}

static int exists(const char *path) { return access(path, F_OK) == 0; }

/* Every rank's final checkpoint equals the reference run's, byte for
 * byte: parameters, optimizer buffers, RNG, sample order, step. */
static void assert_same_as_reference(const char *dir) {
  for (int r = 0; r < 4; r++) {
    char a[1024], b[1024], cmd[2200];
    step_path(a, sizeof a, reference, FINAL_STEP, r);
    step_path(b, sizeof b, dir, FINAL_STEP, r);
    snprintf(cmd, sizeof cmd, "cmp '%s' '%s'", a, b);
    if (test_run(cmd, out, sizeof out) != 0)
      fail_msg("rank %d differs from the uninterrupted run: %s", r, out);
  }
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* An interrupted run: a slow 4-rank job writing checkpoints to
 * tmpdir/name every 20 steps gets `signal` on `rank` once step `at` is
 * complete. Returns the job's exit status; its output is in
 * tmpdir/name.log, the seconds from the signal to the job's end in
 * *took. */
static int interrupted_run(const char *name, const char *extra, long at,
                           int rank, const char *signal, double *took) {
  char dir[512], log[512], manifest[1024], cmd[2048], text[32];
  snprintf(dir, sizeof dir, "%s/%s", tmpdir, name);
  snprintf(log, sizeof log, "%s/%s.log", tmpdir, name);
  snprintf(cmd, sizeof cmd, RUN " " SLOW " %s --checkpoint-dir=%s "
           "--checkpoint-every=20", extra, dir);
  int pid = test_spawn(cmd, log);
  step_path(manifest, sizeof manifest, dir, at, -1);
  snprintf(text, sizeof text, "step %ld", at);
  assert_int_equal(test_wait_for_text(manifest, text, 120), 0);
  int victim = test_rank_pid(dir, rank);
  assert_true(victim > 0);
  snprintf(cmd, sizeof cmd, "kill -%s %d", signal, victim);
  double t0 = now();
  run_ok(cmd);
  int rc = test_wait(pid);
  *took = now() - t0;
  /* A rank stopped with SIGSTOP must not outlive the test, whatever
   * happened. */
  snprintf(cmd, sizeof cmd, "kill -KILL %d 2>/dev/null", victim);
  test_run(cmd, NULL, 0);
  return rc;
}

static char *run_log(const char *name) {
  char log[512];
  snprintf(log, sizeof log, "%s/%s.log", tmpdir, name);
  char *text = test_read_file(log);
  assert_non_null(text);
  return text;
}

static int setup(void **state) {
  (void)state;
  test_make_tmpdir(tmpdir, sizeof tmpdir);
  /* mpirun's session directory goes here too: concurrent jobs of other
   * users of the machine then never race on a shared one in /tmp. */
  setenv("TMPDIR", tmpdir, 1);
  snprintf(reference, sizeof reference, "%s/reference", tmpdir);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, RUN " --checkpoint-dir=%s --checkpoint-every=20",
           reference);
  return test_run(cmd, out, sizeof out) == 0 ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  test_end_jobs_and_remove(tmpdir); /* a failed test may leave its job */
  return 0;
}

/* Steps 20, 40, 60, 80 and the last are written; the default
 * --checkpoint-keep=3 leaves the newest three complete. */
static void test_checkpoints_are_kept_and_pruned(void **state) {
  (void)state;
  char path[1024];
  const long kept[] = {60, 80, FINAL_STEP}, gone[] = {20, 40};
  for (size_t i = 0; i < 3; i++) {
    step_path(path, sizeof path, reference, kept[i], -1);
    assert_true(exists(path));
    for (int r = 0; r < 4; r++) {
      step_path(path, sizeof path, reference, kept[i], r);
      assert_true(exists(path));
    }
  }
  for (size_t i = 0; i < 2; i++) {
    step_path(path, sizeof path, reference, gone[i], 0);
    assert_false(exists(path));
  }
  uint64_t steps[8];
  size_t n;
  assert_int_equal(qgm_checkpoint_list(reference, steps, 8, &n), 0);
  assert_int_equal(n, 3);
  assert_int_equal(steps[0], FINAL_STEP);
  assert_int_equal(steps[2], 60);
}

static void test_sigterm_then_resume_is_exact(void **state) {
  (void)state;
  char dir[512], manifest[1024], cmd[2048], metrics[512], extra[600];
  double took;
  snprintf(metrics, sizeof metrics, "%s/term.jsonl", tmpdir);
  snprintf(extra, sizeof extra, "--metrics=%s", metrics);
  int rc = interrupted_run("term", extra, 20, 1, "TERM", &took);
  char *text = run_log("term");
  if (rc != 0)
    fail_msg("exit %d:\n%s", rc, text);
  char *at = strstr(text, "stopping at step ");
  assert_non_null(at);
  long stopped = atol(at + strlen("stopping at step "));
  free(text);
  assert_true(stopped > 20 && stopped < FINAL_STEP);
  /* The stop wrote a complete checkpoint of the step it stopped at. */
  snprintf(dir, sizeof dir, "%s/term", tmpdir);
  step_path(manifest, sizeof manifest, dir, stopped, -1);
  assert_true(exists(manifest));

  snprintf(cmd, sizeof cmd, RUN " --checkpoint-dir=%s --resume %s", dir,
           extra);
  run_ok(cmd);
  char expect[64];
  snprintf(expect, sizeof expect, "resuming from step %ld ", stopped);
  assert_non_null(strstr(out, expect));
  assert_same_as_reference(dir);
  /* The resumed run appended to the metrics: both runs' records are
   * there, the stopped one's summary first. */
  char *jsonl = test_read_file(metrics), first[8192], second[8192];
  assert_non_null(jsonl);
  assert_int_equal(test_jsonl_record(jsonl, "config", 1, first, 16), 0);
  assert_int_equal(test_jsonl_record(jsonl, "summary", 0, first,
                                     sizeof first), 0);
  assert_int_equal(test_jsonl_record(jsonl, "summary", 1, second,
                                     sizeof second), 0);
  free(jsonl);
  assert_non_null(strstr(first, "\"stopped_early\":true"));
  assert_non_null(strstr(second, "\"stopped_early\":false"));
  assert_non_null(strstr(second, "\"steps\":93,"));
}

/* SIGKILL of one rank: the job ends within 30 s naming the rank, and
 * --resume continues from the last complete checkpoint. */
static void test_kill9_then_resume(void **state) {
  (void)state;
  char dir[512], cmd[2048];
  double took;
  int rc = interrupted_run("kill", "", 20, 2, "KILL", &took);
  print_message("job ended %.2f s after kill -9 of rank 2\n", took);
  assert_int_not_equal(rc, 0);
  assert_true(took < 30.0);
  char *text = run_log("kill");
  assert_non_null(strstr(text, "rank 2"));
  free(text);

  snprintf(dir, sizeof dir, "%s/kill", tmpdir);
  snprintf(cmd, sizeof cmd, RUN " --checkpoint-dir=%s --resume", dir);
  run_ok(cmd);
  char *at = strstr(out, "resuming from step ");
  assert_non_null(at);
  assert_true(atol(at + strlen("resuming from step ")) >= 20);
  assert_same_as_reference(dir);
}

static void copy_reference(const char *dir) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", reference, dir);
  run_ok(cmd);
}

/* A flipped byte in one rank's newest file and a truncated file of
 * another: both are rejected, and every rank goes back to the previous
 * complete step, which still ends exactly like the reference. */
/* Resumes from dir, whose newest step holds damaged files: the run says
 * why of each (the reasons, NULL-terminated), goes back to step 80 and
 * ends exactly like the reference. */
static void assert_falls_back(const char *dir, const char *const *reasons) {
  char cmd[2400];
  snprintf(cmd, sizeof cmd, RUN " --checkpoint-dir=%s --resume", dir);
  run_ok(cmd);
  for (const char *const *r = reasons; *r; r++)
    if (!strstr(out, *r))
      fail_msg("expected '%s' in:\n%s", *r, out);
  assert_non_null(strstr(out, "resuming from step 80 "));
  assert_same_as_reference(dir);
}

static void test_damaged_newest_falls_back(void **state) {
  (void)state;
  char dir[512], path[1024], cmd[2400];
  snprintf(dir, sizeof dir, "%s/damaged", tmpdir);
  copy_reference(dir);
  step_path(path, sizeof path, dir, FINAL_STEP, 2);
  snprintf(cmd, sizeof cmd, "printf '\\377' | dd of='%s' bs=1 seek=5000 "
           "conv=notrunc status=none", path);
  run_ok(cmd);
  step_path(path, sizeof path, dir, FINAL_STEP, 1);
  snprintf(cmd, sizeof cmd, "truncate -s 3000 '%s'", path);
  run_ok(cmd);
  static const char *const reasons[] = {"rank-00002.qgmc: checksum mismatch",
                                        "rank-00001.qgmc: file is truncated",
                                        NULL};
  assert_falls_back(dir, reasons);
}

/* A file whose checksums hold but whose model is no longer finite (a
 * diverged run's, or one altered with its checksums redone) is refused as
 * damaged, and the step before is resumed: resuming it would only repeat
 * the failure. */
static void test_not_finite_newest_falls_back(void **state) {
  (void)state;
  char dir[512], path[1024];
  snprintf(dir, sizeof dir, "%s/not-finite", tmpdir);
  copy_reference(dir);
  step_path(path, sizeof path, dir, FINAL_STEP, 3);
  qgm_checkpoint_t *in = NULL, *altered = NULL;
  assert_int_equal(qgm_checkpoint_read(path, &in), 0);
  assert_int_equal(
      qgm_checkpoint_create(qgm_checkpoint_config_hash(in), &altered), 0);
  int planted = 0;
  for (size_t i = 0; i < qgm_checkpoint_num_sections(in); i++) {
    const char *name;
    qgm_checkpoint_type_t type;
    size_t count;
    assert_int_equal(qgm_checkpoint_section(in, i, &name, &type, &count), 0);
    const size_t width = type == QGM_CHECKPOINT_BYTES  ? 1
                         : type == QGM_CHECKPOINT_F32 ? 4
                                                      : 8;
    unsigned char *data = malloc(count * width + 1);
    assert_non_null(data);
    assert_int_equal(qgm_checkpoint_get(in, name, type, data, count), 0);
    if (!planted && strncmp(name, "optim.", 6) == 0 && count > 0) {
      const float nan = NAN;
      memcpy(data + (count / 2) * sizeof nan, &nan, sizeof nan);
      planted = 1;
    }
    assert_int_equal(qgm_checkpoint_put(altered, name, type, data, count), 0);
    free(data);
  }
  assert_true(planted);
  assert_int_equal(qgm_checkpoint_write(altered, path), 0);
  qgm_checkpoint_free(in);
  qgm_checkpoint_free(altered);
  static const char *const reasons[] = {"rank-00003.qgmc: optimizer vector",
                                        " is nan (damaged content)", NULL};
  assert_falls_back(dir, reasons);
}

static void assert_refused(const char *cmd, const char *expect) {
  int rc = test_run(cmd, out, sizeof out);
  if (rc != 2 || !strstr(out, expect))
    fail_msg("exit %d, expected 2 and '%s':\n%s", rc, expect, out);
  /* One line from qgmd says why (mpirun adds its own banner). */
  size_t lines = 0;
  for (const char *p = out; (p = strstr(p, "qgmd[")); p++)
    lines++;
  assert_int_equal(lines, 1);
}

static void test_other_flags_or_node_count_refused(void **state) {
  (void)state;
  char dir[512], cmd[2048];
  snprintf(dir, sizeof dir, "%s/mismatch", tmpdir);
  copy_reference(dir);
  snprintf(cmd, sizeof cmd, RUN " --lr=0.05 --resume=%s", dir);
  assert_refused(cmd, "MANIFEST: written by a run with other settings "
                      "(--lr was 0.1, is now 0.05)");
  snprintf(cmd, sizeof cmd, TEST_MPIRUN " -np 2 daemon/qgmd " FLAGS
           " --resume=%s", dir);
  assert_refused(cmd, "written by a 4-node run; this run has 2 nodes");
  snprintf(cmd, sizeof cmd, RUN " --resume=%s/nothing-here", tmpdir);
  assert_refused(cmd, "nothing-here: cannot read the directory");
  snprintf(cmd, sizeof cmd, RUN " --checkpoint-dir=/proc/qgm-no-such-dir");
  assert_refused(cmd, "--checkpoint-dir=/proc/qgm-no-such-dir: cannot create");
  /* Output and fault-handling flags may change, and so may the consensus
   * step size of a run without compression, which it does not use. */
  snprintf(cmd, sizeof cmd, RUN " --comm-timeout=100 --log-level=warning "
           "--consensus-lr=0.5 --resume=%s", dir);
  run_ok(cmd);
  snprintf(cmd, sizeof cmd, RUN " --compress=sign --resume=%s", dir);
  assert_refused(cmd, "(--compress was the default, is now \"sign\")");
}

/* Whether a checkpoint file holds a section called name. */
static int has_section(const char *path, const char *name) {
  qgm_checkpoint_t *ck = NULL;
  assert_int_equal(qgm_checkpoint_read(path, &ck), 0);
  int found = 0;
  for (size_t i = 0; i < qgm_checkpoint_num_sections(ck); i++) {
    const char *n;
    size_t count;
    assert_int_equal(qgm_checkpoint_section(ck, i, &n, NULL, &count), 0);
    if (strcmp(n, name) == 0)
      found = (int)count;
  }
  qgm_checkpoint_free(ck);
  return found;
}

/* A run resumed from step 60 writes final files byte-identical to the
 * uninterrupted run's, and they hold `count` floats of the state in
 * `section` (the exchange's own state: compressed gossip's public copies,
 * RelaySum's relayed sums). */
static void expect_resume_exact(const char *name, const char *extra,
                                const char *section, int count) {
  char whole[512], resumed[512], path[1024], cmd[4096];
  snprintf(whole, sizeof whole, "%s/%s", tmpdir, name);
  snprintf(resumed, sizeof resumed, "%s/%s-resumed", tmpdir, name);
  snprintf(cmd, sizeof cmd, RUN " %s --checkpoint-every=30 "
           "--checkpoint-dir=%s", extra, whole);
  run_ok(cmd);
  snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", whole, resumed);
  run_ok(cmd);
  for (long step = 90; step <= FINAL_STEP; step += FINAL_STEP - 90) {
    step_path(path, sizeof path, resumed, step, -1);
    snprintf(cmd, sizeof cmd, "rm -r \"$(dirname '%s')\"", path);
    run_ok(cmd);
  }
  snprintf(cmd, sizeof cmd, RUN " %s --checkpoint-every=30 "
           "--checkpoint-dir=%s --resume", extra, resumed);
  run_ok(cmd);
  assert_non_null(strstr(out, "resuming from step 60 "));
  for (int r = 0; r < 4; r++) {
    char a[1024], b[1024];
    step_path(a, sizeof a, whole, FINAL_STEP, r);
    step_path(b, sizeof b, resumed, FINAL_STEP, r);
    snprintf(cmd, sizeof cmd, "cmp '%s' '%s'", a, b);
    if (test_run(cmd, out, sizeof out) != 0)
      fail_msg("%s: rank %d differs from the uninterrupted run: %s", name,
               r, out);
    assert_int_equal(has_section(a, section), count);
  }
}

/* Rand-k, overlapped, 3 local steps on the ring: the own copy and two
 * neighbours', 101770 floats each. On two hosts of two nodes (qsgd:8):
 * the copies of a slot's half of the host's mean, its own and the other
 * host's, 50885 floats each. A plain run's files hold no copies, so
 * their format is as before. */
static void test_compressed_resume_is_exact(void **state) {
  (void)state;
  char path[1024];
  expect_resume_exact("choco",
                      "--compress=randk:0.1 --consensus-lr=0.05 --overlap=on "
                      "--local-steps=3",
                      "choco.copies", 3 * 101770);
  expect_resume_exact("choco-hier",
                      "--topology=hier --hosts=2 --compress=qsgd:8 "
                      "--consensus-lr=1",
                      "choco.copies", 2 * 50885);
  step_path(path, sizeof path, reference, FINAL_STEP, 0);
  assert_int_equal(has_section(path, "choco.copies"), 0);
  /* Without --compress the training flags leave it out: the refusal
   * still names it, not the graph. */
  char cmd[2048];
  snprintf(cmd, sizeof cmd, RUN " --consensus-lr=0.05 --overlap=on "
           "--local-steps=3 --resume=%s/choco", tmpdir);
  assert_refused(cmd, "(--compress was \"randk:0.1\", is now the default)");
}

/* PowerSGD's all-reduce keeps each rank's error feedback (the model's
 * 101770 floats, the MLP 784-128-10) and the warm start Q, 2 (784 + 128)
 * = 1824 floats; PowerGossip keeps each edge's warm start, U and V,
 * 2 (128 + 10) + 1824 = 2100 floats, one section per neighbour. */
static void test_powersgd_resume_is_exact(void **state) {
  (void)state;
  char dir[512], path[1024];
  expect_resume_exact("powersgd",
                      "--algorithm=allreduce --compress=powersgd:2",
                      "powersgd.error", 101770);
  snprintf(dir, sizeof dir, "%s/powersgd", tmpdir);
  step_path(path, sizeof path, dir, FINAL_STEP, 0);
  assert_int_equal(has_section(path, "powersgd.warm"), 1824);
  expect_resume_exact("powergossip", "--compress=powersgd:2",
                      "powergossip.warm.1", 2100);
}

/* A rank that stops answering (SIGSTOP: alive, silent) is named by its
 * neighbours' watchdog and the job ends. */
static void test_comm_timeout_names_the_silent_rank(void **state) {
  (void)state;
  double took;
  int rc = interrupted_run("hang", "--comm-timeout=5", 20, 2, "STOP", &took);
  print_message("job ended %.2f s after rank 2 hung (--comm-timeout=5)\n",
                took);
  assert_int_not_equal(rc, 0);
  assert_true(took < 30.0);
  char *text = run_log("hang");
  /* Named by its neighbours' exchange, or by rank 0 if it hung inside a
   * checkpoint's agreement. */
  if (!strstr(text, "no message from neighbour rank 2 for") &&
      !strstr(text, "no word from rank 2 for"))
    fail_msg("the silent rank was not named:\n%s", text);
  /* Its neighbours' and theirs' reports reach rank 0, which names the one
   * rank that did not report, and its host: not rank 2's neighbours, who
   * only wait on it. */
  if (strstr(text, "no message from neighbour rank") &&
      !strstr(text, "qgmd[0]: error: silent: rank [2] on host [\""))
    fail_msg("rank 0 did not name rank 2 alone:\n%s", text);
  free(text);
}

/* A learning rate that blows up: the run stops with a message saying
 * where and when, and every complete checkpoint left is finite. */
static void test_divergence_keeps_finite_checkpoints(void **state) {
  (void)state;
  char dir[512], cmd[2048];
  snprintf(dir, sizeof dir, "%s/nan", tmpdir);
  snprintf(cmd, sizeof cmd, RUN " --lr=100 --warmup-epochs=3 "
           "--checkpoint-dir=%s --checkpoint-every=1 --checkpoint-keep=2",
           dir);
  int rc = test_run(cmd, out, sizeof out);
  assert_int_not_equal(rc, 0);
  assert_int_not_equal(rc, 2);
  assert_non_null(strstr(out, "training diverged"));
  assert_non_null(strstr(out, " step "));
  assert_non_null(strstr(out, "epoch "));
  assert_non_null(strstr(out, "qgmd["));
  uint64_t steps[4];
  size_t n;
  assert_int_equal(qgm_checkpoint_list(dir, steps, 4, &n), 0);
  assert_true(n >= 1);
  for (size_t i = 0; i < n; i++)
    for (int r = 0; r < 4; r++) {
      char path[1024];
      step_path(path, sizeof path, dir, (long)steps[i], r);
      qgm_checkpoint_t *ck;
      assert_int_equal(qgm_checkpoint_read(path, &ck), 0);
      const char *name = NULL;
      size_t count = 0;
      for (size_t s = 0; s < qgm_checkpoint_num_sections(ck); s++) {
        qgm_checkpoint_section(ck, s, &name, NULL, &count);
        if (strcmp(name, "optim.x") == 0)
          break;
      }
      assert_string_equal(name, "optim.x");
      float *x = malloc(count * sizeof *x);
      assert_int_equal(qgm_checkpoint_get(ck, "optim.x", QGM_CHECKPOINT_F32,
                                          x, count), 0);
      for (size_t k = 0; k < count; k++)
        if (!isfinite(x[k]))
          fail_msg("%s: x[%zu] = %g", path, k, (double)x[k]);
      free(x);
      qgm_checkpoint_free(ck);
    }
}

/* RelaySGD's relayed sums are state: on the tree 1-0-2, 3 under 1, every
 * node keeps what each neighbour sent last round (the sum and the count,
 * 101770 + 1 floats) and resumes from it exactly. */
static void test_relay_resume_is_exact(void **state) {
  (void)state;
  expect_resume_exact("relay", "--algorithm=relaysgd --topology=tree",
                      "relay.sums.0", 101771);
}

/* Several gossip rounds, plain or Chebyshev, keep nothing between steps:
 * no section, and the resumed run ends byte for byte where the
 * uninterrupted one does. The count and the acceleration are training
 * flags: another one is refused. */
static void test_gossip_rounds_resume_is_exact(void **state) {
  (void)state;
  expect_resume_exact("rounds", "--gossip-rounds=3", "rounds", 0);
  expect_resume_exact("chebyshev",
                      "--gossip-rounds=3 --gossip-acceleration=chebyshev",
                      "rounds", 0);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, RUN " --gossip-rounds=2 --resume=%s/rounds",
           tmpdir);
  assert_refused(cmd, "--gossip-rounds was");
  snprintf(cmd, sizeof cmd,
           RUN " --gossip-rounds=3 --gossip-acceleration=chebyshev "
               "--resume=%s/rounds",
           tmpdir);
  assert_refused(cmd, "--gossip-acceleration was");
}

/* QG-GUTm's correction e (besides its momentum) and Momentum Tracking's
 * tracker (the model buffer's second half, optim.y) are state: both resume
 * from step 60 exactly. */
static void test_tracking_resume_is_exact(void **state) {
  (void)state;
  expect_resume_exact("qg-gutm", "--algorithm=qg-gutm", "optim.e", 101770);
  expect_resume_exact("mt", "--algorithm=mt", "optim.y", 101770);
}

/* The push-sum weights of every rank's file of each complete checkpoint
 * in dir: they sum to 4 within `tolerance` (the float rounding of the mixes
 * so far; a share lost or counted twice would move the sum by a third of
 * a rank's weight). Returns whether any moved from 1. */
static int assert_weights_sum_to_n(const char *dir, double tolerance) {
  uint64_t steps[16];
  size_t count = 0;
  char path[1024];
  assert_int_equal(qgm_checkpoint_list(dir, steps, 16, &count), 0);
  int moved = 0;
  for (size_t k = 0; k < count; k++) {
    double sum = 0.0;
    for (int r = 0; r < 4; r++) {
      step_path(path, sizeof path, dir, (long)steps[k], r);
      qgm_checkpoint_t *ck = NULL;
      float w = 0.0f;
      assert_int_equal(qgm_checkpoint_read(path, &ck), 0);
      assert_int_equal(
          qgm_checkpoint_get(ck, "optim.w", QGM_CHECKPOINT_F32, &w, 1), 0);
      qgm_checkpoint_free(ck);
      assert_true(w > 0.0f);
      moved |= w != 1.0f;
      sum += w;
    }
    assert_near(sum, 4.0, tolerance);
  }
  return moved;
}

/* Push-sum's weights are state (optim.w, one float per rank): SGP with
 * 10% of the messages lost on the directed one-peer exponential graph
 * resumes from step 60 exactly, and at every checkpoint the 4 weights sum
 * to 4 (to float rounding) though the losses moved them apart. */
static void test_push_sum_resume_is_exact(void **state) {
  (void)state;
  expect_resume_exact("sgp", "--algorithm=sgp --drop-rate=0.1 "
                      "--topology=one-peer-exp", "optim.w", 1);
  char dir[512];
  snprintf(dir, sizeof dir, "%s/sgp", tmpdir);
  uint64_t steps[8];
  size_t count = 0;
  assert_int_equal(qgm_checkpoint_list(dir, steps, 8, &count), 0);
  assert_int_equal(count, 3); /* 60, 90 and the last, 93 */
  assert_true(assert_weights_sum_to_n(dir, 1e-5));
}

/* The last eval record of a metrics file, with its run's times left out:
 * the fields that depend only on the models evaluated. */
static void last_eval(const char *metrics, char *buf, size_t size) {
  char *text = test_read_file(metrics);
  assert_non_null(text);
  int n = 0;
  while (test_jsonl_record(text, "eval", n, buf, size) == 0)
    n++;
  assert_true(n > 0);
  assert_int_equal(test_jsonl_record(text, "eval", n - 1, buf, size), 0);
  free(text);
}

/* Asynchronous gossip (one rank 4 times slower, T = 2): the ranks pause
 * at each checkpoint step until nothing is in flight, so every
 * checkpoint is complete on all four ranks at one step, and push-sum's
 * weights in it sum to 4 though the straggler moved them apart. A run
 * resumed from its last step evaluates exactly the models the whole run
 * ended with (step, accuracies, losses and consensus distance: the
 * restore is exact), and one resumed from step 30 runs
 * to the end and checkpoints on. (Arrival order makes asynchronous runs
 * differ from run to run, so no two whole runs are compared.) */
static void test_async_checkpoints_resume(void **state) {
  (void)state;
  static const char *const algorithms[] = {"sgp", "qg-dsgdm-n"};
  for (int i = 0; i < 2; i++) {
    char dir[512], again[600], metrics[700], cmd[4096], path[1024],
        extra[512], whole_eval[8192], again_eval[8192];
    snprintf(dir, sizeof dir, "%s/async-%s", tmpdir, algorithms[i]);
    snprintf(again, sizeof again, "%s-again", dir);
    snprintf(extra, sizeof extra, "--algorithm=%s --sync=async "
             "--max-staleness=2 --device-time=2 --straggle=3:4 "
             "--checkpoint-every=30 --checkpoint-keep=10", algorithms[i]);
    snprintf(metrics, sizeof metrics, "%s.jsonl", dir);
    snprintf(cmd, sizeof cmd, RUN " %s --checkpoint-dir=%s --metrics=%s",
             extra, dir, metrics);
    run_ok(cmd);
    uint64_t steps[16];
    size_t count = 0;
    assert_int_equal(qgm_checkpoint_list(dir, steps, 16, &count), 0);
    assert_int_equal(count, 4); /* 30, 60, 90 and the last, 93 */
    assert_int_equal(steps[0], FINAL_STEP);
    assert_int_equal(steps[3], 30);
    if (i == 0)
      assert_true(assert_weights_sum_to_n(dir, 1e-4));
    last_eval(metrics, whole_eval, sizeof whole_eval);

    /* From the last step: no step left, the final evaluation of the
     * restored models. */
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", dir, again);
    run_ok(cmd);
    snprintf(metrics, sizeof metrics, "%s.jsonl", again);
    snprintf(cmd, sizeof cmd, RUN " %s --checkpoint-dir=%s --resume "
             "--metrics=%s", extra, again, metrics);
    run_ok(cmd);
    assert_non_null(strstr(out, "resuming from step 93 "));
    last_eval(metrics, again_eval, sizeof again_eval);
    const char *const same[] = {"\"step\"", "\"test_acc_avg_model\"",
                                "\"test_loss_avg_model\"",
                                "\"test_acc_local_mean\"",
                                "\"consensus_dist\""};
    for (size_t f = 0; f < sizeof same / sizeof *same; f++) {
      const char *a = strstr(whole_eval, same[f]),
                 *b = strstr(again_eval, same[f]);
      assert_non_null(a);
      assert_non_null(b);
      assert_memory_equal(a, b, strcspn(a, ",}"));
    }

    /* From step 30: to the end, checkpointing on. */
    snprintf(cmd, sizeof cmd, "rm -r '%s' && cp -r '%s' '%s'", again, dir,
             again);
    run_ok(cmd);
    for (long step = 60; step <= FINAL_STEP; step += step == 90 ? 3 : 30) {
      step_path(path, sizeof path, again, step, -1);
      snprintf(cmd, sizeof cmd, "rm -r \"$(dirname '%s')\"", path);
      run_ok(cmd);
    }
    snprintf(cmd, sizeof cmd, RUN " %s --checkpoint-dir=%s --resume", extra,
             again);
    run_ok(cmd);
    assert_non_null(strstr(out, "resuming from step 30 "));
    assert_int_equal(qgm_checkpoint_list(again, steps, 16, &count), 0);
    assert_int_equal(count, 4);
    assert_int_equal(steps[0], FINAL_STEP);
    if (i == 0)
      assert_weights_sum_to_n(again, 1e-4);
  }
}

/* SIGTERM to one rank of an asynchronous push-sum run: the ranks agree
 * on one step to stop at, the furthest one's, and write a complete
 * checkpoint of it, whose weights sum to 4; --resume continues from it
 * to the end. */
static void test_async_sigterm_checkpoints_one_step(void **state) {
  (void)state;
  char dir[512], manifest[1024], cmd[2048], expect[64];
  const char *extra = "--algorithm=sgp --sync=async --max-staleness=2";
  double took;
  int rc = interrupted_run("async-term", extra, 20, 2, "TERM", &took);
  char *text = run_log("async-term");
  if (rc != 0)
    fail_msg("exit %d:\n%s", rc, text);
  char *at = strstr(text, "stopping at step ");
  assert_non_null(at);
  long stopped = atol(at + strlen("stopping at step "));
  free(text);
  assert_true(stopped > 20 && stopped < FINAL_STEP);
  snprintf(dir, sizeof dir, "%s/async-term", tmpdir);
  step_path(manifest, sizeof manifest, dir, stopped, -1);
  assert_true(exists(manifest));
  assert_weights_sum_to_n(dir, 1e-4);

  snprintf(cmd, sizeof cmd, RUN " %s --checkpoint-dir=%s --resume", extra,
           dir);
  run_ok(cmd);
  snprintf(expect, sizeof expect, "resuming from step %ld ", stopped);
  assert_non_null(strstr(out, expect));
  step_path(manifest, sizeof manifest, dir, FINAL_STEP, -1);
  assert_true(exists(manifest));
  assert_weights_sum_to_n(dir, 1e-4);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_checkpoints_are_kept_and_pruned),
      cmocka_unit_test(test_sigterm_then_resume_is_exact),
      cmocka_unit_test(test_kill9_then_resume),
      cmocka_unit_test(test_damaged_newest_falls_back),
      cmocka_unit_test(test_not_finite_newest_falls_back),
      cmocka_unit_test(test_other_flags_or_node_count_refused),
      cmocka_unit_test(test_compressed_resume_is_exact),
      cmocka_unit_test(test_powersgd_resume_is_exact),
      cmocka_unit_test(test_relay_resume_is_exact),
      cmocka_unit_test(test_gossip_rounds_resume_is_exact),
      cmocka_unit_test(test_push_sum_resume_is_exact),
      cmocka_unit_test(test_async_checkpoints_resume),
      cmocka_unit_test(test_async_sigterm_checkpoints_one_step),
      cmocka_unit_test(test_tracking_resume_is_exact),
      cmocka_unit_test(test_comm_timeout_names_the_silent_rank),
      cmocka_unit_test(test_divergence_keeps_finite_checkpoints),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
