/* fault_signals.c - signals at every moment of a rank's life (make
 * check-faults): SIGTERM during start-up, as the loop begins and after
 * the summary, and a storm of SIGUSR1 from start-up to exit. A stop must
 * be clean (exit 0, a checkpoint of the step it stopped at), a status
 * request harmless; no signal may kill a rank. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "qgm.h"

#define FLAGS                                                                 \
  "--train-limit=2000 --test-limit=200 --batch-size=16 --epochs=3 "          \
  "--seed=7 --hidden=128 --control=none --comm-timeout=60"
#define FINAL_STEP 93
enum { TRIES = 3 };

static char tmpdir[256];

static int setup(void **state) {
  (void)state;
  test_make_tmpdir(tmpdir, sizeof tmpdir);
  setenv("TMPDIR", tmpdir, 1);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  test_end_jobs_and_remove(tmpdir); /* a failed test may leave its job */
  return 0;
}

/* A job whose command line carries tmpdir/name (its checkpoint
 * directory); its output goes to tmpdir/name.log. Returns its pid. */
static int start(const char *name, char *dir, char *log, size_t size) {
  char cmd[2048];
  snprintf(dir, size, "%s/%s", tmpdir, name);
  snprintf(log, size, "%s/%s.log", tmpdir, name);
  snprintf(cmd, sizeof cmd, TEST_MPIRUN " -np 4 daemon/qgmd " FLAGS
           " --checkpoint-dir=%s", dir);
  return test_spawn(cmd, log);
}

/* Rank 1 gets SIGTERM once the log shows `moment`. The job must exit 0;
 * a stop before the end must have written a checkpoint of its step. */
static void sigterm_at(const char *name, const char *moment) {
  char dir[512], log[512];
  int pid = start(name, dir, log, sizeof dir);
  assert_int_equal(test_wait_for_text(log, moment, 120), 0);
  int victim = test_rank_pid(dir, 1);
  if (victim > 0) { /* after the summary it may have exited already */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "kill -TERM %d 2>/dev/null; true", victim);
    test_run(cmd, NULL, 0);
  }
  int rc = test_wait(pid);
  char *text = test_read_file(log);
  assert_non_null(text);
  if (rc != 0)
    fail_msg("SIGTERM after '%s': exit %d:\n%s", moment, rc, text);
  const char *at = strstr(text, "stopping at step ");
  long stopped = at ? atol(at + strlen("stopping at step ")) : FINAL_STEP;
  char manifest[1024];
  assert_int_equal(qgm_checkpoint_path(dir, (uint64_t)stopped, -1, manifest,
                                       sizeof manifest), 0);
  if (access(manifest, F_OK) != 0)
    fail_msg("no checkpoint of step %ld:\n%s", stopped, text);
  free(text);
}

static void test_sigterm_during_start_up(void **state) {
  (void)state;
  for (int i = 0; i < TRIES; i++) {
    char name[32];
    snprintf(name, sizeof name, "startup-%d", i);
    sigterm_at(name, "qgmd: flags: ");
  }
}

static void test_sigterm_as_the_loop_begins(void **state) {
  (void)state;
  for (int i = 0; i < TRIES; i++) {
    char name[32];
    snprintf(name, sizeof name, "begin-%d", i);
    sigterm_at(name, "steps per epoch");
  }
}

static void test_sigterm_after_the_summary(void **state) {
  (void)state;
  for (int i = 0; i < TRIES; i++) {
    char name[32];
    snprintf(name, sizeof name, "done-%d", i);
    sigterm_at(name, "qgmd: done: ");
  }
}

/* SIGUSR1 to every rank every few milliseconds, from the first line
 * after MPI_Init until the job has exited. */
static void test_sigusr1_storm(void **state) {
  (void)state;
  for (int i = 0; i < TRIES; i++) {
    char name[32], dir[512], log[512], cmd[1024];
    snprintf(name, sizeof name, "storm-%d", i);
    int pid = start(name, dir, log, sizeof dir);
    assert_int_equal(test_wait_for_text(log, "qgmd: flags: ", 120), 0);
    snprintf(cmd, sizeof cmd, "pkill -USR1 -f '^daemon/qgm[d] .*%s'; true",
             dir);
    const struct timespec pace = {0, 5 * 1000 * 1000};
    int status, storms = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
      test_run(cmd, NULL, 0);
      storms++;
      nanosleep(&pace, NULL);
    }
    char *text = test_read_file(log);
    assert_non_null(text);
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    if (rc != 0 || !strstr(text, "qgmd: done: "))
      fail_msg("exit %d after %d rounds of SIGUSR1:\n%s", rc, storms, text);
    free(text);
    print_message("%d rounds of SIGUSR1 to every rank\n", storms);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sigterm_during_start_up),
      cmocka_unit_test(test_sigterm_as_the_loop_begins),
      cmocka_unit_test(test_sigterm_after_the_summary),
      cmocka_unit_test(test_sigusr1_storm),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
