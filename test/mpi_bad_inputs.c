/* mpi_bad_inputs.c - every file of test/bad-inputs/ (made by its
 * generate.py, each malformed in its own way) is fed to the program that
 * reads it: qgmd for flag files, qgm-inspect for IDX files, checkpoints
 * and manifests. Each must exit with status 2 and one line naming the
 * file: no crash, no core dump, no hang (10 s each at most). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

#define CORPUS "test/bad-inputs"

static char out[65536];
static int cases; /* run so far, over all kinds */

/* Runs `command` (with %s for the file) on every file in CORPUS/kind. */
static void run_kind(const char *kind, const char *command) {
  char dir[256];
  snprintf(dir, sizeof dir, CORPUS "/%s", kind);
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  int here = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char path[512], cmd[2048], line[1200];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    snprintf(line, sizeof line, command, path);
    /* ulimit -c 0: a crash must show up as a status, not leave a core. */
    snprintf(cmd, sizeof cmd, "ulimit -c 0; timeout -s KILL 10 %s", line);
    int rc = test_run(cmd, out, sizeof out);
    if (rc != 2)
      fail_msg("%s: exit %d (expected 2)%s:\n%s", path, rc,
               rc == 137 ? ", killed after 10 s: a hang" : "", out);
    if (test_count_lines(out) != 1 || !strstr(out, path))
      fail_msg("%s: expected one line naming the file, got:\n%s", path, out);
    here++;
  }
  closedir(d);
  assert_true(here > 0);
  cases += here;
}

static void test_flag_files(void **state) {
  (void)state;
  run_kind("flags", "daemon/qgmd --flagfile=%s");
}

static void test_idx_label_files(void **state) {
  (void)state;
  run_kind("labels", "tools/qgm-inspect labels %s");
}

static void test_idx_image_files(void **state) {
  (void)state;
  run_kind("images", "tools/qgm-inspect images %s " CORPUS "/ok-3.labels");
}

static void test_checkpoints(void **state) {
  (void)state;
  run_kind("checkpoint", "tools/qgm-inspect checkpoint %s");
}

static void test_manifests(void **state) {
  (void)state;
  run_kind("manifest", "tools/qgm-inspect manifest %s");
}

/* The pairing file itself is good: the image cases fail for their own
 * reasons. */
static void test_corpus_is_large_and_its_control_is_valid(void **state) {
  (void)state;
  assert_int_equal(test_run("tools/qgm-inspect labels " CORPUS
                            "/ok-3.labels", out, sizeof out), 0);
  assert_non_null(strstr(out, "3 labels"));
  assert_true(cases >= 30);
  print_message("%d bad inputs rejected cleanly\n", cases);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flag_files),
      cmocka_unit_test(test_idx_label_files),
      cmocka_unit_test(test_idx_image_files),
      cmocka_unit_test(test_checkpoints),
      cmocka_unit_test(test_manifests),
      cmocka_unit_test(test_corpus_is_large_and_its_control_is_valid),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
