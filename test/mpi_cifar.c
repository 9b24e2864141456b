/* mpi_cifar.c - the CIFAR path of the daemon end to end: 4 ranks train
 * LeNet-5 with augmentation on CIFAR-10-format files written here, and a
 * broken file stops every rank with status 2 and its name. */
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

#define PIXELS 3072
#define PER_FILE 400

static char tmpdir[256];
static char out[65536];

/* Class k images are bright in channel k % 3 within the k/3-th band of 8
 * rows and dark elsewhere, with +-12 of noise per pixel: learnable in a
 * few dozen steps (also when augmentation shifts the bands by up to 4
 * rows), and far from chance only if images and labels reach the model
 * together. */
static void write_file(const char *name, size_t n, qgm_rng_t *rng,
                       int bad_label) {
  unsigned char *buf = malloc(n * (1 + PIXELS));
  assert_non_null(buf);
  for (size_t r = 0; r < n; r++) {
    unsigned char *p = buf + r * (1 + PIXELS);
    unsigned label = (unsigned)qgm_rng_below(rng, 10);
    p[0] = (unsigned char)(bad_label && r == n - 1 ? 10 : label);
    for (size_t k = 0; k < PIXELS; k++) {
      int bright = k / 1024 == label % 3 && (k % 1024) / 256 == label / 3;
      p[1 + k] = (unsigned char)((bright ? 200 : 40) +
                                 (unsigned)qgm_rng_below(rng, 25) - 12);
    }
  }
  char path[512];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  assert_int_equal(test_write_file(path, buf, n * (1 + PIXELS)), 0);
  free(buf);
}

static int setup(void **state) {
  (void)state;
  test_make_tmpdir(tmpdir, sizeof tmpdir);
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 8, 0);
  for (int f = 1; f <= 5; f++) {
    char name[64];
    snprintf(name, sizeof name, "data_batch_%d.bin", f);
    write_file(name, PER_FILE, &rng, 0);
  }
  write_file("test_batch.bin", 200, &rng, 0);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  test_remove_tree(tmpdir);
  return 0;
}

static void test_lenet_trains_on_cifar_files(void **state) {
  (void)state;
  char cmd[2048], metrics[512];
  snprintf(metrics, sizeof metrics, "%s/run.jsonl", tmpdir);
  snprintf(cmd, sizeof cmd,
           TEST_MPIRUN " -np 4 daemon/qgmd --dataset=cifar10 --data-dir=%s "
           "--model=lenet --epochs=2 --batch-size=16 --lr=0.1 --alpha=1 "
           "--seed=2 --augment=1 --metrics=%s",
           tmpdir, metrics);
  int rc = test_run(cmd, out, sizeof out);
  if (rc != 0)
    fail_msg("exit %d:\n%s", rc, out);
  char *text = test_read_file(metrics);
  assert_non_null(text);
  char last[8192];
  assert_int_equal(test_jsonl_record(text, "eval", 1, last, sizeof last), 0);
  free(text);
  double acc, steps;
  assert_int_equal(test_json_number(last, "test_acc_avg_model", &acc), 0);
  assert_int_equal(test_json_number(last, "step", &steps), 0);
  /* 2000 samples / 4 nodes / batch 16 = 31 steps per epoch. */
  assert_true(steps == 2 * 31);
  /* Chance is 0.1. */
  if (!(acc > 0.8))
    fail_msg("averaged model reached only %g", acc);
}

static void test_bad_cifar_file(void **state) {
  (void)state;
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 9, 0);
  write_file("data_batch_4.bin", PER_FILE, &rng, 1);
  char cmd[1024], want[512];
  snprintf(cmd, sizeof cmd, "daemon/qgmd --dataset=cifar10 --data-dir=%s",
           tmpdir);
  assert_int_equal(test_run(cmd, out, sizeof out), 2);
  assert_int_equal(test_count_lines(out), 1);
  snprintf(want, sizeof want, "%s/data_batch_4.bin: label out of range",
           tmpdir);
  if (!strstr(out, want))
    fail_msg("'%s' not in: %s", want, out);
  snprintf(cmd, sizeof cmd,
           TEST_MPIRUN " -np 3 daemon/qgmd --dataset=cifar10 --data-dir=%s",
           tmpdir);
  assert_int_equal(test_run(cmd, out, sizeof out), 2);
  assert_non_null(strstr(out, want));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lenet_trains_on_cifar_files),
      cmocka_unit_test(test_bad_cifar_file),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
