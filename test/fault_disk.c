/* fault_disk.c - a disk that fills during a checkpoint, at several sizes
 * so that it fills on other ranks, in other files and at other steps
 * (make check-faults). Every run must stop on every rank with exit 1 and
 * a reason, keeping the complete checkpoints it had; none may hang. Needs
 * root to mount the small file systems; skipped otherwise. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "qgm.h"

/* Files of about 0.8 MB per rank and step; the sizes below hold from a
 * part of one step to a few steps. */
#define RUN                                                                   \
  TEST_MPIRUN " -np 4 daemon/qgmd --train-limit=2000 --test-limit=200 "      \
  "--batch-size=16 --epochs=3 --seed=7 --hidden=128 --control=none "         \
  "--comm-timeout=60 --checkpoint-every=10 --checkpoint-keep=2"

static char out[65536];

static void test_disk_fills_mid_checkpoint(void **state) {
  (void)state;
  static const char *const sizes[] = {"1m", "1500k", "2m", "2500k", "3m",
                                      "4m", "6m", "7m"};
  char dir[256], cmd[2048];
  test_make_tmpdir(dir, sizeof dir);
  setenv("TMPDIR", dir, 1);
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    char disk[512];
    snprintf(disk, sizeof disk, "%s/disk-%zu", dir, i);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && mount -t tmpfs -o size=%s "
             "tmpfs '%s' 2>/dev/null", disk, sizes[i], disk);
    if (test_run(cmd, NULL, 0) != 0) {
      test_remove_tree(dir);
      print_message("cannot mount a small file system here: skipped\n");
      skip();
    }
    snprintf(cmd, sizeof cmd, RUN " --checkpoint-dir=%s/ck", disk);
    int rc = test_run(cmd, out, sizeof out);
    uint64_t steps[4];
    size_t n = 0;
    char ck[600];
    snprintf(ck, sizeof ck, "%s/ck", disk);
    int listed = qgm_checkpoint_list(ck, steps, 4, &n);
    snprintf(cmd, sizeof cmd, "umount '%s'", disk);
    assert_int_equal(test_run(cmd, NULL, 0), 0);
    if (rc != 1 || !strstr(out, "No space left on device") ||
        strstr(out, "aborting the job"))
      fail_msg("a %s disk: exit %d:\n%s", sizes[i], rc, out);
    /* The steps before the full one are complete on disk. */
    assert_int_equal(listed, 0);
    const char *failed = strstr(out, "the checkpoint of step ");
    long at = failed ? atol(failed + strlen("the checkpoint of step ")) : -1;
    if (at > 10 && (n == 0 || steps[0] != (uint64_t)at - 10))
      fail_msg("a %s disk: failed at step %ld, newest complete %llu", sizes[i],
               at, n ? (unsigned long long)steps[0] : 0ULL);
    print_message("a %s disk: failed at step %ld, %zu complete kept\n",
                  sizes[i], at, n);
  }
  test_remove_tree(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_disk_fills_mid_checkpoint),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
