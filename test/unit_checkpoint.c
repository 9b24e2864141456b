/* unit_checkpoint.c - the checkpoint file format, the manifest, the
 * directory of steps, and the optimizer's state list. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "qgm.h"

static char tmpdir[256];

static int setup(void **state) {
  (void)state;
  test_make_tmpdir(tmpdir, sizeof tmpdir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  test_remove_tree(tmpdir);
  return 0;
}

static const float floats[5] = {1.5f, -0.0f, 3.25e-20f, -7e30f, 0.1f};
static const uint64_t words[3] = {0, UINT64_MAX, 0x0123456789abcdefULL};
static const double doubles[2] = {-2.5, 1e300};

static qgm_checkpoint_t *sample(void) {
  qgm_checkpoint_t *c;
  assert_int_equal(qgm_checkpoint_create(0xfeedULL, &c), 0);
  assert_int_equal(qgm_checkpoint_put(c, "x", QGM_CHECKPOINT_F32, floats, 5),
                   0);
  assert_int_equal(qgm_checkpoint_put(c, "rng", QGM_CHECKPOINT_U64, words, 3),
                   0);
  assert_int_equal(qgm_checkpoint_put(c, "loss", QGM_CHECKPOINT_F64, doubles,
                                      2), 0);
  assert_int_equal(qgm_checkpoint_put(c, "note", QGM_CHECKPOINT_BYTES, "hi",
                                      2), 0);
  assert_int_equal(qgm_checkpoint_put(c, "empty", QGM_CHECKPOINT_F32, NULL,
                                      0), 0);
  return c;
}

/* The bytes of a written sample, malloc'd. */
static unsigned char *sample_file(size_t *len) {
  char path[512];
  snprintf(path, sizeof path, "%s/sample.qgmc", tmpdir);
  qgm_checkpoint_t *c = sample();
  assert_int_equal(qgm_checkpoint_write(c, path), 0);
  qgm_checkpoint_free(c);
  char *text = test_read_file(path);
  assert_non_null(text);
  FILE *f = fopen(path, "rb");
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  fclose(f);
  return (unsigned char *)text;
}

static void test_round_trip(void **state) {
  (void)state;
  char path[512];
  snprintf(path, sizeof path, "%s/rt.qgmc", tmpdir);
  qgm_checkpoint_t *c = sample();
  assert_int_equal(qgm_checkpoint_write(c, path), 0);
  qgm_checkpoint_free(c);
  /* The temporary file is gone after the rename. */
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  assert_int_not_equal(access(tmp, F_OK), 0);

  assert_int_equal(qgm_checkpoint_read(path, &c), 0);
  assert_int_equal(qgm_checkpoint_config_hash(c), 0xfeedULL);
  assert_int_equal(qgm_checkpoint_num_sections(c), 5);
  float f[5];
  uint64_t w[3];
  double d[2];
  char note[2];
  assert_int_equal(qgm_checkpoint_get(c, "x", QGM_CHECKPOINT_F32, f, 5), 0);
  assert_memory_equal(f, floats, sizeof f); /* bit for bit, -0 included */
  assert_int_equal(qgm_checkpoint_get(c, "rng", QGM_CHECKPOINT_U64, w, 3), 0);
  assert_memory_equal(w, words, sizeof w);
  assert_int_equal(qgm_checkpoint_get(c, "loss", QGM_CHECKPOINT_F64, d, 2),
                   0);
  assert_memory_equal(d, doubles, sizeof d);
  assert_int_equal(qgm_checkpoint_get(c, "note", QGM_CHECKPOINT_BYTES, note,
                                      2), 0);
  assert_memory_equal(note, "hi", 2);
  const char *name;
  qgm_checkpoint_type_t type;
  size_t count;
  assert_int_equal(qgm_checkpoint_section(c, 1, &name, &type, &count), 0);
  assert_string_equal(name, "rng");
  assert_int_equal(type, QGM_CHECKPOINT_U64);
  assert_int_equal(count, 3);
  assert_int_equal(qgm_checkpoint_section(c, 5, &name, &type, &count),
                   QGM_EINVAL);
  /* A caller gets exactly what it asks for or an error. */
  assert_int_equal(qgm_checkpoint_get(c, "x", QGM_CHECKPOINT_F32, f, 4),
                   QGM_ESECTION);
  assert_int_equal(qgm_checkpoint_get(c, "x", QGM_CHECKPOINT_U64, w, 5),
                   QGM_ESECTION);
  assert_int_equal(qgm_checkpoint_get(c, "m", QGM_CHECKPOINT_F32, f, 5),
                   QGM_ESECTION);
  qgm_checkpoint_free(c);
  qgm_checkpoint_free(NULL);
}

static void test_bad_puts(void **state) {
  (void)state;
  qgm_checkpoint_t *c;
  assert_int_equal(qgm_checkpoint_create(1, &c), 0);
  char long_name[80];
  memset(long_name, 'a', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  assert_int_equal(qgm_checkpoint_put(c, long_name, QGM_CHECKPOINT_BYTES, "",
                                      0), QGM_EINVAL);
  assert_int_equal(qgm_checkpoint_put(c, "", QGM_CHECKPOINT_BYTES, "", 0),
                   QGM_EINVAL);
  assert_int_equal(qgm_checkpoint_put(c, "t", (qgm_checkpoint_type_t)9, "",
                                      0), QGM_EINVAL);
  assert_int_equal(qgm_checkpoint_put(c, "a", QGM_CHECKPOINT_BYTES, "x", 1),
                   0);
  assert_int_equal(qgm_checkpoint_put(c, "a", QGM_CHECKPOINT_BYTES, "x", 1),
                   QGM_EINVAL);
  for (int i = 1; i < QGM_CHECKPOINT_MAX_SECTIONS; i++) {
    char name[16];
    snprintf(name, sizeof name, "s%d", i);
    assert_int_equal(qgm_checkpoint_put(c, name, QGM_CHECKPOINT_BYTES, "x",
                                        1), 0);
  }
  assert_int_equal(qgm_checkpoint_put(c, "one-more", QGM_CHECKPOINT_BYTES,
                                      "x", 1), QGM_EINVAL);
  qgm_checkpoint_free(c);
}

/* Every single flipped bit of a file is caught: the magic, the version,
 * a size, a CRC or the body; never accepted, never a crash. */
static void test_every_bit_flip_is_rejected(void **state) {
  (void)state;
  size_t len;
  unsigned char *file = sample_file(&len);
  qgm_checkpoint_t *c;
  assert_int_equal(qgm_checkpoint_parse(file, len, &c), 0);
  qgm_checkpoint_free(c);
  for (size_t i = 0; i < len; i++)
    for (int bit = 0; bit < 8; bit++) {
      file[i] ^= (unsigned char)(1u << bit);
      int rc = qgm_checkpoint_parse(file, len, &c);
      if (rc == 0)
        fail_msg("flipping bit %d of byte %zu was not detected", bit, i);
      if (i < 8)
        assert_int_equal(rc, QGM_ENOTCKPT);
      else if (i >= 48)
        assert_int_equal(rc, QGM_ECRC);
      file[i] ^= (unsigned char)(1u << bit);
    }
  free(file);
}

static void test_truncation_and_trailing_data(void **state) {
  (void)state;
  size_t len;
  unsigned char *file = sample_file(&len);
  qgm_checkpoint_t *c;
  for (size_t cut = 0; cut < len; cut++) {
    int rc = qgm_checkpoint_parse(file, cut, &c);
    assert_int_equal(rc, cut < 8 ? QGM_ENOTCKPT : QGM_ETRUNC);
  }
  unsigned char *longer = malloc(len + 1);
  memcpy(longer, file, len);
  longer[len] = 0;
  assert_int_equal(qgm_checkpoint_parse(longer, len + 1, &c), QGM_ETRAILING);
  free(longer);
  /* A future format version is named as such, not as corruption. */
  file[8] = 2;
  assert_int_equal(qgm_checkpoint_parse(file, len, &c), QGM_EVERSION);
  free(file);
  char path[512];
  snprintf(path, sizeof path, "%s/missing.qgmc", tmpdir);
  assert_int_equal(qgm_checkpoint_read(path, &c), QGM_EOPEN);
  assert_int_equal(qgm_checkpoint_read(tmpdir, &c), QGM_ENOTFILE);
}

static void test_atomic_replace(void **state) {
  (void)state;
  char path[512];
  snprintf(path, sizeof path, "%s/atomic.txt", tmpdir);
  assert_int_equal(qgm_write_file_atomic(path, "old", 3), 0);
  assert_int_equal(qgm_write_file_atomic(path, "new!", 4), 0);
  char *text = test_read_file(path);
  assert_string_equal(text, "new!");
  free(text);
  char bad[600];
  snprintf(bad, sizeof bad, "%s/no/such/dir/file", tmpdir);
  assert_int_equal(qgm_write_file_atomic(bad, "x", 1), QGM_EOPEN);
}

static void test_manifest_is_strict(void **state) {
  (void)state;
  uint64_t step, hash;
  int nodes;
  const char good[] = "qgm checkpoint manifest 1\nstep 120\nnodes 8\n"
                      "config 00000000deadbeef\n";
  assert_int_equal(qgm_manifest_parse(good, strlen(good), &step, &nodes,
                                      &hash), 0);
  assert_int_equal(step, 120);
  assert_int_equal(nodes, 8);
  assert_int_equal(hash, 0xdeadbeefULL);
  const char *bad[] = {
      "",
      "qgm checkpoint manifest 2\nstep 120\nnodes 8\nconfig 00000000deadbeef\n",
      "qgm checkpoint manifest 1\nstep 0120\nnodes 8\nconfig 00000000deadbeef\n",
      "qgm checkpoint manifest 1\nstep 120\nnodes 0\nconfig 00000000deadbeef\n",
      "qgm checkpoint manifest 1\nstep 120\nnodes -3\nconfig 00000000deadbeef\n",
      "qgm checkpoint manifest 1\nstep 120\nnodes 8\nconfig deadbeef\n",
      "qgm checkpoint manifest 1\nstep 120\nnodes 8\nconfig 00000000deadbeef\nx",
      "qgm checkpoint manifest 1\nstep 120\nnodes 8\n",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (qgm_manifest_parse(bad[i], strlen(bad[i]), &step, &nodes, &hash) !=
        QGM_EMANIFEST)
      fail_msg("accepted bad manifest %zu", i);
  assert_int_equal(qgm_manifest_parse("qgm\0x", 5, &step, &nodes, &hash),
                   QGM_EMANIFEST);
}

/* Steps 10..50: 10, 30, 40 and 50 complete, 20 not; 60 has a manifest
 * that names another step (a copied folder) and does not count. */
static void make_steps(const char *dir) {
  for (uint64_t s = 10; s <= 60; s += 10) {
    char path[1024];
    assert_int_equal(qgm_checkpoint_prepare(dir, s), 0);
    assert_int_equal(qgm_checkpoint_path(dir, s, 0, path, sizeof path), 0);
    assert_int_equal(test_write_file(path, "x", 1), 0);
    if (s != 20 && s != 60)
      assert_int_equal(qgm_manifest_write(dir, s, 2, 7), 0);
  }
  char path[1024];
  const char *stray = "qgm checkpoint manifest 1\nstep 50\nnodes 2\n"
                      "config 0000000000000007\n";
  assert_int_equal(qgm_checkpoint_path(dir, 60, -1, path, sizeof path), 0);
  assert_int_equal(test_write_file(path, stray, strlen(stray)), 0);
}

static void test_list_and_prune(void **state) {
  (void)state;
  char dir[512];
  snprintf(dir, sizeof dir, "%s/steps", tmpdir);
  make_steps(dir);
  uint64_t steps[8];
  size_t n;
  assert_int_equal(qgm_checkpoint_list(dir, steps, 8, &n), 0);
  assert_int_equal(n, 4);
  const uint64_t want[] = {50, 40, 30, 10};
  for (size_t i = 0; i < 4; i++)
    assert_int_equal(steps[i], want[i]);
  assert_int_equal(qgm_checkpoint_list(dir, steps, 2, &n), 0);
  assert_int_equal(n, 2);

  /* Up to step 30 only: 40 and 50 are neither counted nor removed. */
  assert_int_equal(qgm_checkpoint_prune(dir, 30, 1), 0);
  assert_int_equal(qgm_checkpoint_list(dir, steps, 8, &n), 0);
  assert_int_equal(n, 3);
  assert_int_equal(steps[2], 30);
  assert_int_equal(qgm_checkpoint_folders(dir, steps, 8, &n), 0);
  assert_int_equal(n, 4); /* 60, 50, 40, 30: 20 and 10 went */
  assert_int_equal(steps[0], 60);
  assert_int_equal(steps[3], 30);
  make_steps(dir);
  assert_int_equal(qgm_checkpoint_prune(dir, 60, 2), 0);
  assert_int_equal(qgm_checkpoint_list(dir, steps, 8, &n), 0);
  assert_int_equal(n, 2);
  assert_int_equal(steps[0], 50);
  assert_int_equal(steps[1], 40);
  char path[1024];
  /* Older folders went, complete or not; the newer incomplete one stays. */
  qgm_checkpoint_path(dir, 20, 0, path, sizeof path);
  assert_int_not_equal(access(path, F_OK), 0);
  qgm_checkpoint_path(dir, 10, 0, path, sizeof path);
  assert_int_not_equal(access(path, F_OK), 0);
  qgm_checkpoint_path(dir, 60, 0, path, sizeof path);
  assert_int_equal(access(path, F_OK), 0);
  assert_int_equal(qgm_checkpoint_prune(dir, 60, 0), QGM_EINVAL);
  snprintf(path, sizeof path, "%s/none", tmpdir);
  assert_int_equal(qgm_checkpoint_list(path, steps, 8, &n), QGM_EOPEN);
}

/* Outputs are regular files only, found without blocking: a FIFO with
 * or without a reader, a directory; a regular file is truncated or
 * appended to as asked, and a missing directory keeps its errno. */
static void test_open_output(void **state) {
  (void)state;
  char path[600];
  int fd;
  snprintf(path, sizeof path, "%s/out.fifo", tmpdir);
  assert_int_equal(mkfifo(path, 0600), 0);
  assert_int_equal(qgm_open_output(path, O_TRUNC, &fd), QGM_ENOTFILE);
  int reader = open(path, O_RDONLY | O_NONBLOCK);
  assert_true(reader >= 0);
  assert_int_equal(qgm_open_output(path, O_APPEND, &fd), QGM_ENOTFILE);
  close(reader);
  assert_int_equal(qgm_open_output(tmpdir, 0, &fd), QGM_ENOTFILE);
  assert_int_equal(qgm_open_output(path, O_RDWR, &fd), QGM_EINVAL);
  snprintf(path, sizeof path, "%s/none/out", tmpdir);
  assert_int_equal(qgm_open_output(path, O_TRUNC, &fd), QGM_EOPEN);
  assert_int_equal(errno, ENOENT);
  snprintf(path, sizeof path, "%s/out.txt", tmpdir);
  assert_int_equal(test_write_file(path, "abcdef", 6), 0);
  assert_int_equal(qgm_open_output(path, O_APPEND, &fd), 0);
  assert_int_equal(write(fd, "gh", 2), 2);
  close(fd);
  char *text = test_read_file(path);
  assert_string_equal(text, "abcdefgh");
  free(text);
  assert_int_equal(qgm_open_output(path, O_TRUNC, &fd), 0);
  assert_int_equal(write(fd, "x", 1), 1);
  close(fd);
  text = test_read_file(path);
  assert_string_equal(text, "x");
  free(text);
  /* The atomic writer's temporary file is an output too. */
  snprintf(path, sizeof path, "%s/atomic.tmp", tmpdir);
  assert_int_equal(mkfifo(path, 0600), 0);
  snprintf(path, sizeof path, "%s/atomic", tmpdir);
  assert_int_equal(qgm_write_file_atomic(path, "y", 1), QGM_ENOTFILE);
}

/* A stream of records may also go to a character device or to the pipe
 * this process writes its output to (/dev/stdout under mpirun); a FIFO
 * in the file system, even one with a reader, is still refused. */
static void test_open_stream(void **state) {
  (void)state;
  int fd;
  assert_int_equal(qgm_open_output("/dev/null", O_TRUNC, &fd), QGM_ENOTFILE);
  assert_int_equal(qgm_open_stream("/dev/null", O_TRUNC, &fd), 0);
  assert_int_equal(write(fd, "x", 1), 1);
  close(fd);
  int p[2];
  assert_int_equal(pipe(p), 0);
  const int saved = dup(STDOUT_FILENO);
  assert_true(saved >= 0);
  assert_true(dup2(p[1], STDOUT_FILENO) >= 0);
  const int rc = qgm_open_stream("/dev/stdout", O_TRUNC, &fd);
  assert_true(dup2(saved, STDOUT_FILENO) >= 0);
  close(saved);
  assert_int_equal(rc, 0);
  assert_int_equal(write(fd, "rec\n", 4), 4);
  close(fd);
  close(p[1]);
  char got[8] = "";
  assert_int_equal(read(p[0], got, sizeof got), 4);
  assert_memory_equal(got, "rec\n", 4);
  close(p[0]);
  char path[600];
  snprintf(path, sizeof path, "%s/stream.fifo", tmpdir);
  assert_int_equal(mkfifo(path, 0600), 0);
  int reader = open(path, O_RDONLY | O_NONBLOCK);
  assert_true(reader >= 0);
  assert_int_equal(qgm_open_stream(path, O_APPEND, &fd), QGM_ENOTFILE);
  close(reader);
  /* A regular file is truncated as before. */
  snprintf(path, sizeof path, "%s/stream.txt", tmpdir);
  assert_int_equal(test_write_file(path, "abc", 3), 0);
  assert_int_equal(qgm_open_stream(path, O_TRUNC, &fd), 0);
  close(fd);
  char *text = test_read_file(path);
  assert_string_equal(text, "");
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_open_output),
      cmocka_unit_test(test_open_stream),
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_bad_puts),
      cmocka_unit_test(test_every_bit_flip_is_rejected),
      cmocka_unit_test(test_truncation_and_trailing_data),
      cmocka_unit_test(test_atomic_replace),
      cmocka_unit_test(test_manifest_is_strict),
      cmocka_unit_test(test_list_and_prune),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
