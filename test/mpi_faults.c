/* mpi_faults.c - the faults of the second adversarial pass, end to end:
 * a checkpoint that fails on one rank (an obstacle, a file-size limit),
 * files and manifests tampered with, a checkpoint directory reused by
 * another run, a control client that hangs up, signals that come before
 * the loop or twice, a model too large for memory, a watchdog that fires
 * in a short run. Each must end in a clear line and the right exit
 * status, never a hang, a crash or lost checkpoints. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "helpers.h"
#include "qgm.h"

static char tmpdir[256];
static char out[65536];
static char reference[512]; /* a complete run's checkpoints */

/* 2000 samples / 4 nodes / batch 16 = 31 steps per epoch, 93 in all. The
 * watchdog's timeout bounds what used to hang. */
#define FLAGS                                                                 \
  "--train-limit=2000 --test-limit=200 --batch-size=16 --epochs=3 "          \
  "--seed=7 --hidden=128 --control=none --comm-timeout=60"
#define RUN TEST_MPIRUN " -np 4 daemon/qgmd " FLAGS
#define FINAL_STEP 93
/* Emulated slow devices (the workers sleep), so that a run lasts long
 * enough to be signalled, at no CPU cost. */
#define SLOW "--straggle=0,1,2,3:30"

static void step_path(char *buf, size_t size, const char *dir, long step,
                      int rank) {
  if (qgm_checkpoint_path(dir, (uint64_t)step, rank, buf, size) != 0)
    fail_msg("path too long");
}

static int exists(const char *path) { return access(path, F_OK) == 0; }

static int run(const char *cmd) { return test_run(cmd, out, sizeof out); }

static void run_ok(const char *cmd) {
  int rc = run(cmd);
  if (rc != 0)
    fail_msg("exit %d: %s\n%s", rc, cmd, out);
}

/* The output holds `text`, or the test fails showing it. */
static void says(const char *text) {
  if (!strstr(out, text))
    fail_msg("expected '%s' in:\n%s", text, out);
}

static void never_says(const char *text) {
  if (strstr(out, text))
    fail_msg("did not expect '%s' in:\n%s", text, out);
}

/* Exactly one line of the daemon's (mpirun adds its own banner). */
static void one_daemon_line(void) {
  size_t lines = 0;
  for (const char *p = out; (p = strstr(p, "qgmd[")); p++)
    lines++;
  if (lines != 1)
    fail_msg("%zu lines from qgmd, expected one:\n%s", lines, out);
}

/* A fresh copy of the reference checkpoints at tmpdir/name. */
static void copy_reference(const char *name, char *dir, size_t size) {
  char cmd[4096];
  snprintf(dir, size, "%s/%s", tmpdir, name);
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", dir, reference,
           dir);
  run_ok(cmd);
}

static size_t complete_steps(const char *dir, uint64_t *steps, size_t max) {
  size_t n = 0;
  assert_int_equal(qgm_checkpoint_list(dir, steps, max, &n), 0);
  return n;
}

static int setup(void **state) {
  (void)state;
  test_make_tmpdir(tmpdir, sizeof tmpdir);
  /* mpirun's session directory too: no race with other users' jobs. */
  setenv("TMPDIR", tmpdir, 1);
  snprintf(reference, sizeof reference, "%s/reference", tmpdir);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, RUN " --checkpoint-dir=%s --checkpoint-every=20",
           reference);
  return run(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  test_end_jobs_and_remove(tmpdir); /* a failed test may leave its job */
  return 0;
}

/* ----------------------------------------------------------- checkpoints */

/* The write fails on rank 3 only (a directory where its file goes): every
 * rank learns it from the vote and stops at once, exit 1; none trains on
 * and waits for the others until the watchdog aborts. */
static void test_checkpoint_failing_on_one_rank_stops_all(void **state) {
  (void)state;
  char dir[512], obstacle[1024], cmd[2048];
  snprintf(dir, sizeof dir, "%s/partial", tmpdir);
  step_path(obstacle, sizeof obstacle, dir, 20, 3);
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", obstacle);
  run_ok(cmd);
  snprintf(cmd, sizeof cmd, RUN " --checkpoint-dir=%s --checkpoint-every=20",
           dir);
  assert_int_equal(run(cmd), 1);
  says("rank-00003.qgmc: write error: Is a directory");
  says("the checkpoint of step 20 failed; the previous complete one is kept");
  never_says("aborting the job");
  uint64_t steps[4];
  assert_int_equal(complete_steps(dir, steps, 4), 0);
}

/* A disk that fills mid-checkpoint (a 2 MB file system for four files
 * of 0.8 MB): the ranks whose write fails say why (ENOSPC), and every
 * rank stops at once, exit 1. Needs root to mount it; skipped otherwise. */
static void test_disk_full_mid_checkpoint(void **state) {
  (void)state;
  char dir[512], cmd[2048];
  snprintf(dir, sizeof dir, "%s/small-disk", tmpdir);
  snprintf(cmd, sizeof cmd, "mkdir -p '%s' && mount -t tmpfs -o size=2m "
           "tmpfs '%s' 2>/dev/null", dir, dir);
  if (run(cmd) != 0) {
    print_message("cannot mount a small file system here: skipped\n");
    skip();
  }
  snprintf(cmd, sizeof cmd, RUN " --checkpoint-dir=%s/ck "
           "--checkpoint-every=20", dir);
  int rc = run(cmd);
  char umount[600];
  snprintf(umount, sizeof umount, "umount '%s'", dir);
  assert_int_equal(test_run(umount, NULL, 0), 0);
  if (rc != 1)
    fail_msg("exit %d, expected 1:\n%s", rc, out);
  says("write error: No space left on device");
  says("the checkpoint of step 20 failed; the previous complete one is kept");
  never_says("aborting the job");
}

/* A sound file of another step, copied into the newest step: refused by
 * the rank that reads it, and every rank goes back one step together. */
static void test_file_of_another_step_is_refused(void **state) {
  (void)state;
  char dir[512], from[1024], to[1024], cmd[2400];
  copy_reference("other-step", dir, sizeof dir);
  step_path(from, sizeof from, dir, 80, 1);
  step_path(to, sizeof to, dir, FINAL_STEP, 1);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
  run_ok(cmd);
  snprintf(cmd, sizeof cmd, RUN " --resume=%s", dir);
  run_ok(cmd);
  says("rank-00001.qgmc: holds step 80, not step 93 of its folder's "
       "manifest");
  says("resuming from step 80 ");
}

/* A second run pointed at the first one's directory is refused before it
 * writes anything, and the first run's checkpoints stay. */
static void test_used_directory_is_refused(void **state) {
  (void)state;
  char dir[512], cmd[2048];
  copy_reference("used", dir, sizeof dir);
  snprintf(cmd, sizeof cmd, TEST_MPIRUN " -np 4 daemon/qgmd "
           "--train-limit=2000 --test-limit=200 --batch-size=16 --epochs=1 "
           "--lr=0.05 --seed=7 --hidden=128 --control=none "
           "--checkpoint-dir=%s --checkpoint-every=10", dir);
  assert_int_equal(run(cmd), 2);
  one_daemon_line();
  says("holds the checkpoints of an earlier run (up to step 93); continue "
       "that run with --resume");
  uint64_t steps[8];
  assert_int_equal(complete_steps(dir, steps, 8), 3);
  assert_int_equal(steps[0], FINAL_STEP);
  assert_int_equal(steps[2], 60);
}

typedef struct damage {
  const char *name, *shell, *reason;
} damage_t;

/* The newest step's manifest, damaged: the step is skipped, saying why,
 * and the run resumes from the step before. */
static void test_damaged_manifests_are_reported(void **state) {
  (void)state;
  static const damage_t damages[] = {
      {"garbled",
       "printf 'qgm checkpoint manifest 1\\nstep 9x\\n' > MANIFEST",
       "malformed checkpoint manifest: step 93 is skipped"},
      {"empty", ": > MANIFEST",
       "malformed checkpoint manifest: step 93 is skipped"},
      {"huge", "head -c 1000000 /dev/zero | tr '\\0' x > MANIFEST",
       "malformed checkpoint manifest: step 93 is skipped"},
      {"unreadable", "rm MANIFEST && mkfifo MANIFEST",
       "not a regular file (a directory, a device or a pipe): step 93 is "
       "skipped"},
      /* The format is sound, the hash is not the files'. */
      {"hash", "sed -i 's/^config .*/config 0123456789abcdef/' MANIFEST",
       "its configuration hash is not its files' (a damaged manifest): step "
       "93 is skipped"},
  };
  for (size_t i = 0; i < sizeof damages / sizeof *damages; i++) {
    char dir[512], manifest[1024], cmd[2400];
    copy_reference(damages[i].name, dir, sizeof dir);
    step_path(manifest, sizeof manifest, dir, FINAL_STEP, -1);
    snprintf(cmd, sizeof cmd, "cd \"$(dirname '%s')\" && %s", manifest,
             damages[i].shell);
    run_ok(cmd);
    snprintf(cmd, sizeof cmd, RUN " --resume=%s", dir);
    run_ok(cmd);
    says(damages[i].reason);
    says("MANIFEST: ");
    says("resuming from step 80 ");
  }
}

/* Copies every section of `from` into a new checkpoint, with the sample
 * order's first two entries equal: valid CRCs, content that is not. */
static void write_with_broken_order(const char *path) {
  qgm_checkpoint_t *from = NULL, *to = NULL;
  assert_int_equal(qgm_checkpoint_read(path, &from), 0);
  assert_int_equal(
      qgm_checkpoint_create(qgm_checkpoint_config_hash(from), &to), 0);
  for (size_t i = 0; i < qgm_checkpoint_num_sections(from); i++) {
    const char *name;
    qgm_checkpoint_type_t type;
    size_t count;
    assert_int_equal(qgm_checkpoint_section(from, i, &name, &type, &count),
                     0);
    uint64_t *data = calloc(count ? count : 1, sizeof *data);
    assert_non_null(data);
    assert_int_equal(qgm_checkpoint_get(from, name, type, data, count), 0);
    if (strcmp(name, "order") == 0)
      data[1] = data[0];
    assert_int_equal(qgm_checkpoint_put(to, name, type, data, count), 0);
    free(data);
  }
  assert_int_equal(qgm_checkpoint_write(to, path), 0);
  qgm_checkpoint_free(from);
  qgm_checkpoint_free(to);
}

static void test_corrupt_content_is_named(void **state) {
  (void)state;
  char dir[512], path[1024], cmd[2048];
  copy_reference("content", dir, sizeof dir);
  step_path(path, sizeof path, dir, FINAL_STEP, 2);
  write_with_broken_order(path);
  snprintf(cmd, sizeof cmd, RUN " --resume=%s", dir);
  run_ok(cmd);
  says("rank-00002.qgmc: its sample order is not a permutation of the shard "
       "(damaged content); trying an older checkpoint");
  says("resuming from step 80 ");
}

/* 93 steps in rounds of 4: the last round is short, and still ends in a
 * checkpoint. */
static void test_final_checkpoint_with_local_steps(void **state) {
  (void)state;
  char dir[512], manifest[1024], cmd[2048];
  snprintf(dir, sizeof dir, "%s/rounds", tmpdir);
  snprintf(cmd, sizeof cmd, RUN " --local-steps=4 --checkpoint-dir=%s "
           "--checkpoint-every=20", dir);
  run_ok(cmd);
  step_path(manifest, sizeof manifest, dir, FINAL_STEP, -1);
  assert_true(exists(manifest));
}

/* --------------------------------------------------------------- control */

static void socket_address(const char *path, struct sockaddr_un *addr) {
  *addr = (struct sockaddr_un){.sun_family = AF_UNIX};
  assert_true(strlen(path) < sizeof addr->sun_path);
  memcpy(addr->sun_path, path, strlen(path) + 1);
}

/* Clients that send a request and close at once: the reply's write fails
 * (EPIPE) and the job carries on, then stops cleanly when asked. */
static void test_control_client_hanging_up(void **state) {
  (void)state;
  char sock[512], log[512], cmd[2048];
  snprintf(sock, sizeof sock, "%s/hangup.sock", tmpdir);
  snprintf(log, sizeof log, "%s/hangup.log", tmpdir);
  snprintf(cmd, sizeof cmd, TEST_MPIRUN " -np 4 daemon/qgmd "
           "--train-limit=2000 --test-limit=200 --batch-size=16 --epochs=3 "
           "--hidden=128 " SLOW " --control=%s", sock);
  int pid = test_spawn(cmd, log);
  snprintf(cmd, sizeof cmd, "tools/qgmctl --control=%s status >/dev/null "
           "2>&1", sock);
  assert_int_equal(test_wait_for_command(cmd, 120), 0);
  struct sockaddr_un addr;
  socket_address(sock, &addr);
  for (int i = 0; i < 5; i++) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    assert_int_equal(write(fd, "status\n", 7), 7);
    close(fd);
  }
  snprintf(cmd, sizeof cmd, "tools/qgmctl --control=%s stop", sock);
  run_ok(cmd);
  int rc = test_wait(pid);
  char *text = test_read_file(log);
  assert_non_null(text);
  if (rc != 0)
    fail_msg("exit %d:\n%s", rc, text);
  free(text);
  assert_false(exists(sock));
}

/* Paths a socket cannot be bound to are refused before binding, saying
 * why, and nothing is left at a truncated path. */
static void test_control_paths_are_checked(void **state) {
  (void)state;
  char path[300], cmd[1024];
  int n = snprintf(path, sizeof path, "%s/", tmpdir);
  memset(path + n, 'd', 115 - (size_t)n);
  path[115] = '\0';
  snprintf(cmd, sizeof cmd, "daemon/qgmd --train-limit=200 --test-limit=100 "
           "--epochs=1 --control=%s", path);
  assert_int_equal(run(cmd), 2);
  says("too long for a Unix socket (115 bytes, at most 107)");
  path[107] = '\0'; /* where a truncating bind would have put it */
  assert_false(exists(path));
  snprintf(cmd, sizeof cmd, "daemon/qgmd --train-limit=200 --test-limit=100 "
           "--epochs=1 --control=%s/no-such-dir/q.sock", tmpdir);
  assert_int_equal(run(cmd), 2);
  says("no-such-dir: No such file or directory");
}

/* A server that accepts and never answers: qgmctl gives up. */
static void test_qgmctl_times_out(void **state) {
  (void)state;
  char sock[512], cmd[1024];
  snprintf(sock, sizeof sock, "%s/mute.sock", tmpdir);
  struct sockaddr_un addr;
  socket_address(sock, &addr);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof addr), 0);
  assert_int_equal(listen(fd, 4), 0);
  snprintf(cmd, sizeof cmd, "timeout -s KILL 60 tools/qgmctl --control=%s "
           "--timeout=0.5 status", sock);
  assert_int_equal(run(cmd), 1);
  says("no answer within 0.5 s (--timeout)");
  close(fd);
  assert_int_equal(run("tools/qgmctl --timeout=soon status"), 2);
  says("--timeout=soon: not a number of seconds");
}

/* --------------------------------------------------------------- signals */

/* Starts qgmd with `signal` already pending, as if it had come during
 * start-up: blocked, sent, kept across exec. */
#define PENDING(signal)                                                       \
  TEST_MPIRUN " -np 4 /usr/bin/python3 -c 'import os, signal, sys; "         \
  "signal.pthread_sigmask(signal.SIG_BLOCK, {signal." signal "}); "          \
  "os.kill(os.getpid(), signal." signal "); os.execv(sys.argv[1], "          \
  "sys.argv[1:])' daemon/qgmd " FLAGS

/* A stop requested before the loop runs stops the run at its first agreed
 * step, with a checkpoint of it, exit 0; in rounds of 3 steps, at the end
 * of the round (the vote falls every 8 steps). */
static void test_sigterm_during_start_up_stops_cleanly(void **state) {
  (void)state;
  static const char *const rounds[] = {"", "--local-steps=3"};
  for (int i = 0; i < 2; i++) {
    char dir[512], manifest[1024], cmd[2048];
    snprintf(dir, sizeof dir, "%s/early-%d", tmpdir, i);
    snprintf(cmd, sizeof cmd, PENDING("SIGTERM") " %s --checkpoint-dir=%s",
             rounds[i], dir);
    run_ok(cmd);
    says("SIGTERM: stopping at the next agreed step (send it again to "
         "abort)");
    const char *at = strstr(out, "stopping at step ");
    assert_non_null(at);
    long stopped = atol(at + strlen("stopping at step "));
    assert_true(stopped > 0 && stopped < FINAL_STEP);
    assert_int_equal(stopped % (i ? 3 : 1), 0);
    step_path(manifest, sizeof manifest, dir, stopped, -1);
    if (!exists(manifest))
      fail_msg("no checkpoint of step %ld:\n%s", stopped, out);
  }
}

/* SIGUSR1 before the loop: the status line, once the loop runs; the run
 * is not disturbed. */
static void test_sigusr1_during_start_up_reports(void **state) {
  (void)state;
  run_ok(PENDING("SIGUSR1"));
  says("qgmd[1]: step 0/93");
  says("done: ");
}

/* A second SIGTERM aborts, as the first one's warning says. A stopped
 * neighbour keeps the agreed stop from coming first. */
static void test_second_sigterm_aborts(void **state) {
  (void)state;
  char log[512], cmd[2048];
  snprintf(log, sizeof log, "%s/twice.log", tmpdir);
  snprintf(cmd, sizeof cmd, TEST_MPIRUN " -np 4 daemon/qgmd --train-limit="
           "2000 --test-limit=200 --epochs=3 --hidden=128 --control=none "
           SLOW " --metrics=%s/twice.jsonl", tmpdir);
  int pid = test_spawn(cmd, log);
  assert_int_equal(test_wait_for_text(log, "steps per epoch", 120), 0);
  int stopped = test_rank_pid("twice.jsonl", 2);
  int victim = test_rank_pid("twice.jsonl", 1);
  assert_true(stopped > 0 && victim > 0);
  snprintf(cmd, sizeof cmd, "kill -STOP %d && kill -TERM %d", stopped,
           victim);
  run_ok(cmd);
  assert_int_equal(test_wait_for_text(log, "send it again to abort", 60), 0);
  snprintf(cmd, sizeof cmd, "kill -TERM %d", victim);
  run_ok(cmd);
  int rc = test_wait(pid);
  snprintf(cmd, sizeof cmd, "kill -KILL %d 2>/dev/null", stopped);
  test_run(cmd, NULL, 0);
  char *text = test_read_file(log);
  assert_non_null(text);
  if (rc != 128 + 15 || !strstr(text, "SIGTERM again: aborting at once"))
    fail_msg("exit %d:\n%s", rc, text);
  free(text);
}

/* ------------------------------------------------------- other mistakes */

/* A model of 4.3 billion parameters under a 4 GB address-space limit:
 * refused before anything is allocated for it. */
static void test_model_too_large_for_memory(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__ /* its shadow memory needs the address space */
  skip();
#endif
  assert_int_equal(run("ulimit -v 4000000; " TEST_MPIRUN " -np 2 "
                       "daemon/qgmd --train-limit=200 --test-limit=100 "
                       "--epochs=1 --control=none --hidden=65536,65536"),
                   2);
  one_daemon_line();
  says("--hidden=65536,65536 (4347133962 parameters, --algorithm=");
  says("per rank, and the address-space limit (ulimit -v) leaves");
}

/* The watchdog says it aborts the job: it does, even when the run would
 * have ended within the grace first. */
static void test_watchdog_abort_is_kept(void **state) {
  (void)state;
  int rc = run(TEST_MPIRUN " -np 4 daemon/qgmd --train-limit=2000 "
               "--test-limit=200 --batch-size=16 --epochs=1 --hidden=64 "
               "--control=none --comm-timeout=1e-9");
  says("aborting the job");
  if (rc == 0)
    fail_msg("exit 0 after saying it aborts:\n%s", out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_checkpoint_failing_on_one_rank_stops_all),
      cmocka_unit_test(test_disk_full_mid_checkpoint),
      cmocka_unit_test(test_file_of_another_step_is_refused),
      cmocka_unit_test(test_used_directory_is_refused),
      cmocka_unit_test(test_damaged_manifests_are_reported),
      cmocka_unit_test(test_corrupt_content_is_named),
      cmocka_unit_test(test_final_checkpoint_with_local_steps),
      cmocka_unit_test(test_control_client_hanging_up),
      cmocka_unit_test(test_control_paths_are_checked),
      cmocka_unit_test(test_qgmctl_times_out),
      cmocka_unit_test(test_sigterm_during_start_up_stops_cleanly),
      cmocka_unit_test(test_sigusr1_during_start_up_reports),
      cmocka_unit_test(test_second_sigterm_aborts),
      cmocka_unit_test(test_model_too_large_for_memory),
      cmocka_unit_test(test_watchdog_abort_is_kept),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
