/* mpi_compress.c - compressed gossip in the daemon, end to end: the
 * identity compressor with gamma = 1 trains exactly as plain gossip (the
 * final models are equal bit for bit), a top-k run sends the bytes its
 * wire format promises, and the combinations CHOCO cannot run are refused
 * with one line. */
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
#include "qgm.h"

static char out[65536];

/* 2000 samples / 4 nodes / batch 16 = 31 steps per epoch; the MLP
 * 784-32-10 has 25450 parameters. */
#define FLAGS                                                                 \
  "--train-limit=2000 --test-limit=500 --batch-size=16 --lr=0.05 "           \
  "--alpha=0.5 --seed=5 --hidden=32 --control=none --log-level=error"
#define RUN TEST_MPIRUN " -np 4 daemon/qgmd " FLAGS
#define DIM 25450

static void run_ok(const char *cmd) {
  int rc = test_run(cmd, out, sizeof out);
  if (rc != 0)
    fail_msg("exit %d: %s\n%s", rc, cmd, out);
}

static double number(const char *line, const char *key) {
  double v;
  if (test_json_number(line, key, &v) != 0)
    fail_msg("no %s in %s", key, line);
  return v;
}

/* Rank r's final "optim.NAME" vector of a run written to dir. */
static float *final_vector(const char *dir, long step, int r,
                           const char *name, size_t len) {
  char path[1024];
  assert_int_equal(qgm_checkpoint_path(dir, (uint64_t)step, r, path,
                                       sizeof path), 0);
  qgm_checkpoint_t *ck = NULL;
  assert_int_equal(qgm_checkpoint_read(path, &ck), 0);
  float *v = malloc(len * sizeof *v);
  assert_non_null(v);
  assert_int_equal(qgm_checkpoint_get(ck, name, QGM_CHECKPOINT_F32, v, len),
                   0);
  qgm_checkpoint_free(ck);
  return v;
}

/* QG-DSGDm-N for 2 epochs (62 steps), with overlap off and on, on a ring
 * and on two hosts of two nodes (the hosts' slices compressed): the
 * models and momenta of topk:1 --consensus-lr=1 equal plain gossip's. */
static void test_identity_is_plain_gossip(void **state) {
  (void)state;
  const char *modes[2] = {"off", "on"};
  const char *graphs[2] = {"--topology=ring", "--topology=hier --hosts=2"};
  for (int gr = 0; gr < 2; gr++)
    for (int m = 0; m < 2; m++) {
      char plain[512], ident[512], cmd[2048];
      snprintf(plain, sizeof plain, "%s/plain-%d-%s", test_tmpdir, gr,
               modes[m]);
      snprintf(ident, sizeof ident, "%s/ident-%d-%s", test_tmpdir, gr,
               modes[m]);
      snprintf(cmd, sizeof cmd, RUN " --epochs=2 %s --overlap=%s "
               "--checkpoint-dir=%s", graphs[gr], modes[m], plain);
      run_ok(cmd);
      snprintf(cmd, sizeof cmd, RUN " --epochs=2 %s --overlap=%s "
               "--compress=topk:1 --consensus-lr=1 --checkpoint-dir=%s",
               graphs[gr], modes[m], ident);
      run_ok(cmd);
      for (int r = 0; r < 4; r++)
        for (int v = 0; v < 2; v++) {
          const char *name = v ? "optim.m" : "optim.x";
          float *a = final_vector(plain, 62, r, name, DIM);
          float *b = final_vector(ident, 62, r, name, DIM);
          if (memcmp(a, b, DIM * sizeof *a) != 0)
            fail_msg("%s, overlap %s, rank %d: %s differs", graphs[gr],
                     modes[m], r, name);
          free(a);
          free(b);
        }
    }
}

/* 3 epochs on a ring: every rank sends 2 messages per step. top-k 1% keeps
 * ceil(254.5) = 255 coordinates: 255 uint32 indices + 255 floats = 2040
 * bytes per message, against 4 x 25450 = 101800 uncompressed (49.9x). On
 * two hosts of two nodes, a rank sends its host's other node a slice of
 * 12725 floats twice (the mean's, then the mix's: 2 x 50900 bytes, not
 * compressed) and its slice's top-k 1%, ceil(127.25) = 128 coordinates
 * (1024 bytes), to the one other host. */
static void test_topk_sends_the_promised_bytes(void **state) {
  (void)state;
  const char *flags[3] = {"--compress=none", "--compress=topk:0.01",
                          "--compress=topk:0.01 --topology=hier --hosts=2"};
  const double per_step[3] = {2 * 4.0 * DIM, 2 * 8.0 * 255,
                              2 * 4.0 * 12725 + 8.0 * 128};
  for (int k = 0; k < 3; k++) {
    char metrics[512], cmd[2048], line[8192];
    snprintf(metrics, sizeof metrics, "%s/bytes-%d.jsonl", test_tmpdir, k);
    snprintf(cmd, sizeof cmd, RUN " --epochs=3 %s --consensus-lr=0.05 "
             "--metrics=%s", flags[k], metrics);
    run_ok(cmd);
    char *text = test_read_file(metrics);
    assert_non_null(text);
    assert_int_equal(test_jsonl_record(text, "summary", 0, line, sizeof line),
                     0);
    free(text);
    double steps = number(line, "steps");
    assert_near(steps, 93, 0);
    assert_near(number(line, "bytes_sent"), steps * per_step[k], 0);
  }
}

/* The floats of one all-reduce of len floats by the rank of slot 0 of the
 * 4 ranks on this one host (exchange_global.c, nothing read in place): its
 * slice of every other rank's part of the sum, then its summed slice to
 * the 3 others, len - s + 3 s. */
static double allreduce_floats(size_t len) {
  size_t at, s;
  qgm_host_slice(len, 4, 0, &at, &s);
  return (double)(len + 2 * s);
}

/* PowerSGD at R = 2 on the MLP 784-32-10 (its matrices 32 x 784 and
 * 10 x 32, 42 biases), 93 steps. The all-reduce sums 2 (32 + 10) + 42 =
 * 126 floats (P and the biases), then 2 (784 + 32) = 1632 (Q). PowerGossip
 * sends each of the ring's two neighbours 2 (32 + 10) + 42 = 126 floats in
 * the 47 even rounds and 2 (784 + 32) + 42 = 1674 in the 46 odd ones:
 * 100 times less than the 2 x 101800 bytes of plain gossip a step. */
static void test_powersgd_sends_the_promised_bytes(void **state) {
  (void)state;
  const char *flags[2] = {"--algorithm=allreduce --compress=powersgd:2",
                          "--compress=powersgd:2"};
  const double total[2] = {
      93 * 4.0 * (allreduce_floats(126) + allreduce_floats(1632)),
      2 * 4.0 * (47 * 126 + 46 * 1674)};
  for (int k = 0; k < 2; k++) {
    char metrics[512], cmd[2048], line[8192];
    snprintf(metrics, sizeof metrics, "%s/powersgd-%d.jsonl", test_tmpdir, k);
    snprintf(cmd, sizeof cmd, RUN " --epochs=3 %s --metrics=%s", flags[k],
             metrics);
    run_ok(cmd);
    char *text = test_read_file(metrics);
    assert_non_null(text);
    assert_int_equal(test_jsonl_record(text, "summary", 0, line, sizeof line),
                     0);
    free(text);
    assert_near(number(line, "steps"), 93, 0);
    assert_near(number(line, "bytes_sent"), total[k], 0);
  }
}

/* Exit status 2 and one line from the daemon (rank 0 speaks for all;
 * mpirun's framed notices about the exit status aside) naming the flag. */
static void expect_refusal(const char *flags, const char *needle) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, RUN " --epochs=1 %s", flags);
  int rc = test_run(cmd, out, sizeof out);
  if (rc != 2)
    fail_msg("exit %d, not 2: %s\n%s", rc, cmd, out);
  size_t lines = 0;
  const char *line = NULL;
  for (const char *p = out; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1
                                                    : p + strlen(p))
    if (strncmp(p, "qgmd", 4) == 0 && ++lines == 1)
      line = p;
  if (lines != 1 || !strstr(line, needle))
    fail_msg("expected one line with '%s', got %zu:\n%s", needle, lines,
             out);
}

static void test_refusals(void **state) {
  (void)state;
  expect_refusal("--compress=topk:0", "--compress: unknown or malformed");
  expect_refusal("--compress=qsgd:1", "--compress: unknown or malformed");
  expect_refusal("--compress=sign --algorithm=gt", "gradient tracking");
  expect_refusal("--compress=sign --algorithm=d2", "D^2");
  expect_refusal("--compress=sign --algorithm=allreduce", "unbiased");
  expect_refusal("--compress=qsgd:4 --algorithm=allreduce",
                 "needs --topology=hier");
  expect_refusal("--compress=sign --algorithm=gsgm", "asynchronous");
  expect_refusal("--compress=sign --topology=one-peer-exp",
                 "--topology=one-peer-exp");
  expect_refusal("--compress=sign --topology=hier --hosts=4 "
                 "--host-topology=one-peer-exp", "changes every round");
  expect_refusal("--compress=sign --consensus-lr=2", "--consensus-lr");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_topk_sends_the_promised_bytes),
      cmocka_unit_test(test_powersgd_sends_the_promised_bytes),
      cmocka_unit_test(test_identity_is_plain_gossip),
  };
  return cmocka_run_group_tests(tests, test_tmpdir_setup,
                                test_tmpdir_teardown);
}
