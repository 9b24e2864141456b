/* unit_data.c - the CIFAR readers, the synthetic dataset and the CIFAR
 * augmentation, through qgm_data_load and qgm_dataset_gather_train.
 *
 * The tests write small CIFAR-format files whose pixel values encode the
 * sample index, so that which samples a node kept, in what order, and how
 * they were normalised can be checked value by value; broken files must
 * fail with the right error and name the file. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/dataset.h"
#include "helpers.h"
#include "qgm.h"

#define PIXELS 3072
#define PER_FILE 40 /* CIFAR-10 training files hold 40 samples here */

static char dir[256];

static int setup(void **state) {
  (void)state;
  test_make_tmpdir(dir, sizeof dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  test_remove_tree(dir);
  return 0;
}

/* Sample i (over all files of a split) has label i % classes and pixel k
 * = (i + k) % 256; CIFAR-100's coarse label is fine / 5. */
static void write_cifar(const char *name, size_t first, size_t n, int fine,
                        size_t truncate_by, int bad_label_at) {
  size_t lb = fine ? 2 : 1, rec = lb + PIXELS;
  unsigned char *buf = malloc(n * rec);
  assert_non_null(buf);
  int classes = fine ? 100 : 10;
  for (size_t r = 0; r < n; r++) {
    size_t i = first + r;
    unsigned char *p = buf + r * rec;
    p[lb - 1] = (unsigned char)(i % (size_t)classes);
    if (fine)
      p[0] = (unsigned char)(p[1] / 5);
    if ((int)r == bad_label_at)
      p[lb - 1] = (unsigned char)classes;
    for (size_t k = 0; k < PIXELS; k++)
      p[lb + k] = (unsigned char)((i + k) % 256);
  }
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  assert_int_equal(test_write_file(path, buf, n * rec - truncate_by), 0);
  free(buf);
}

static void write_cifar10(void) {
  for (int f = 1; f <= 5; f++) {
    char name[64];
    snprintf(name, sizeof name, "data_batch_%d.bin", f);
    write_cifar(name, (size_t)(f - 1) * PER_FILE, PER_FILE, 0, 0, -1);
  }
  write_cifar("test_batch.bin", 0, 30, 0, 0, -1);
}

static int load(const char *dataset, int node, int nodes, qgm_dataset_t **tr,
                qgm_dataset_t **te, char *bad, size_t size) {
  qgm_data_spec_t spec = {.dataset = dataset, .dir = dir, .alpha = 1.0,
                          .seed = 4};
  return qgm_data_load(&spec, node, nodes, tr, te, bad, size);
}

/* The pixel value sample i has at position k, as the loader normalises
 * it with CIFAR-10's statistics. */
static float expected(size_t i, size_t k, const float mean[3],
                      const float std[3]) {
  float p = (float)((i + k) % 256);
  return (p / 255.0f - mean[k / 1024]) / std[k / 1024];
}

static const float C10_MEAN[3] = {0.4914f, 0.4822f, 0.4465f};
static const float C10_STD[3] = {0.2470f, 0.2435f, 0.2616f};

/* Which file sample a row came from: pixel 0 is i % 256 and the label
 * i % 10; with 200 samples, pixel 0 alone identifies it. */
static size_t sample_of(const qgm_dataset_t *ds, size_t row) {
  const float *x = qgm_dataset_images(ds) + row * PIXELS;
  for (size_t i = 0; i < 5 * PER_FILE; i++)
    if (x[0] == expected(i, 0, C10_MEAN, C10_STD))
      return i;
  fail_msg("row %zu matches no sample", row);
  return 0;
}

static void test_cifar10_shards(void **state) {
  (void)state;
  write_cifar10();
  enum { NODES = 4 };
  int seen[5 * PER_FILE] = {0};
  size_t total = 0;
  for (int node = 0; node < NODES; node++) {
    qgm_dataset_t *tr = NULL, *te = NULL;
    assert_int_equal(load("cifar10", node, NODES, &tr, &te, NULL, 0), 0);
    size_t c, h, w;
    qgm_dataset_shape(tr, &c, &h, &w);
    assert_int_equal(c * 100 + h * 10 + w, 3 * 100 + 32 * 10 + 32);
    assert_int_equal(qgm_dataset_classes(tr), 10);
    /* Equal shards; together at most the whole set, never overlapping. */
    assert_int_equal(qgm_dataset_count(tr), 5 * PER_FILE / NODES);
    for (size_t r = 0; r < qgm_dataset_count(tr); r++) {
      size_t i = sample_of(tr, r);
      assert_int_equal(seen[i]++, 0);
      assert_int_equal(qgm_dataset_labels(tr)[r], i % 10);
      /* Every pixel, every channel's statistics. */
      const float *x = qgm_dataset_images(tr) + r * PIXELS;
      for (size_t k = 0; k < PIXELS; k += 97)
        assert_float_equal(x[k], expected(i, k, C10_MEAN, C10_STD), 1e-6);
    }
    total += qgm_dataset_count(tr);
    /* The whole test set, in file order. */
    assert_int_equal(qgm_dataset_count(te), 30);
    for (size_t r = 0; r < 30; r++) {
      assert_int_equal(qgm_dataset_labels(te)[r], r % 10);
      assert_float_equal(qgm_dataset_images(te)[r * PIXELS + 2048],
                         expected(r, 2048, C10_MEAN, C10_STD), 1e-6);
    }
    qgm_dataset_free(tr);
    qgm_dataset_free(te);
  }
  assert_int_equal(total, 5 * PER_FILE);
}

static void test_cifar100_fine_labels(void **state) {
  (void)state;
  write_cifar("train.bin", 0, 300, 1, 0, -1);
  write_cifar("test.bin", 0, 20, 1, 0, -1);
  qgm_dataset_t *tr = NULL, *te = NULL;
  assert_int_equal(load("cifar100", 1, 3, &tr, &te, NULL, 0), 0);
  assert_int_equal(qgm_dataset_classes(tr), 100);
  assert_int_equal(qgm_dataset_count(tr), 100);
  assert_int_equal(qgm_dataset_count(te), 20);
  for (size_t r = 0; r < 20; r++)
    assert_int_equal(qgm_dataset_labels(te)[r], r % 100);
  qgm_dataset_free(tr);
  qgm_dataset_free(te);
}

/* A broken file is named, with the error that describes it. */
static void expect_bad(const char *dataset, const char *file, int err) {
  qgm_dataset_t *tr = NULL, *te = NULL;
  char bad[1024], want[1024];
  assert_int_equal(load(dataset, 0, 2, &tr, &te, bad, sizeof bad), err);
  assert_null(tr);
  assert_null(te);
  snprintf(want, sizeof want, "%s/%s", dir, file);
  assert_string_equal(bad, want);
}

static void test_cifar_bad_files(void **state) {
  (void)state;
  write_cifar10();
  write_cifar("data_batch_3.bin", 80, PER_FILE, 0, 100, -1);
  expect_bad("cifar10", "data_batch_3.bin", QGM_ETRUNC);
  write_cifar10();
  write_cifar("data_batch_5.bin", 160, PER_FILE, 0, 0, 7);
  expect_bad("cifar10", "data_batch_5.bin", QGM_ELABEL);
  write_cifar10();
  write_cifar("test_batch.bin", 0, 30, 0, 0, 29);
  expect_bad("cifar10", "test_batch.bin", QGM_ELABEL);
  write_cifar10();
  write_cifar("test_batch.bin", 0, 0, 0, 0, -1); /* empty */
  expect_bad("cifar10", "test_batch.bin", QGM_ETRUNC);
  write_cifar10();
  char path[512];
  snprintf(path, sizeof path, "%s/data_batch_2.bin", dir);
  remove(path);
  expect_bad("cifar10", "data_batch_2.bin", QGM_EOPEN);
  /* A CIFAR-10 file read as CIFAR-100: records of the wrong size. */
  write_cifar("train.bin", 0, 300, 0, 0, -1);
  expect_bad("cifar100", "train.bin", QGM_ETRUNC);
  /* CIFAR-100 coarse label out of range. */
  write_cifar("train.bin", 0, 300, 1, 0, -1);
  write_cifar("test.bin", 0, 20, 1, 0, -1);
  snprintf(path, sizeof path, "%s/test.bin", dir);
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  fputc(20, f); /* record 0's coarse label */
  fclose(f);
  expect_bad("cifar100", "test.bin", QGM_ELABEL);
}

/* Anything but a regular file is refused by name, without reading: a
 * directory, and a FIFO that nobody writes to (opening one for reading
 * would wait for a writer for ever). */
static void test_cifar_not_regular_files(void **state) {
  (void)state;
  char path[512];
  write_cifar10();
  snprintf(path, sizeof path, "%s/data_batch_2.bin", dir);
  remove(path);
  assert_int_equal(mkdir(path, 0700), 0);
  expect_bad("cifar10", "data_batch_2.bin", QGM_ENOTFILE);
  rmdir(path);
  write_cifar10();
  snprintf(path, sizeof path, "%s/test_batch.bin", dir);
  remove(path);
  assert_int_equal(mkfifo(path, 0600), 0);
  expect_bad("cifar10", "test_batch.bin", QGM_ENOTFILE);
  remove(path);
  /* And CIFAR-100's fine label, 100. */
  write_cifar("train.bin", 0, 300, 1, 0, 299);
  write_cifar("test.bin", 0, 20, 1, 0, -1);
  expect_bad("cifar100", "train.bin", QGM_ELABEL);
}

/* An IDX file of n images of rows x cols (labels 0..9 cycling) and its
 * label file, in dir/sub. */
static void write_idx(const char *sub, const char *split, uint32_t n,
                      uint32_t rows, uint32_t cols) {
  unsigned char head[16] = {0, 0, 8, 3}, lhead[8] = {0, 0, 8, 1};
  const uint32_t dims[3] = {n, rows, cols};
  for (int d = 0; d < 3; d++)
    for (int b = 0; b < 4; b++)
      head[4 + 4 * d + b] = (unsigned char)(dims[d] >> (24 - 8 * b));
  memcpy(lhead + 4, head + 4, 4);
  size_t bytes = (size_t)n * rows * cols;
  unsigned char *buf = calloc(16 + bytes, 1), labels[8 + 64];
  assert_non_null(buf);
  assert_true(n <= 64);
  memcpy(buf, head, 16);
  memcpy(labels, lhead, 8);
  for (uint32_t i = 0; i < n; i++)
    labels[8 + i] = (unsigned char)(i % 10);
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, sub);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/%s/%s-images-idx3-ubyte", dir, sub, split);
  assert_int_equal(test_write_file(path, buf, 16 + bytes), 0);
  snprintf(path, sizeof path, "%s/%s/%s-labels-idx1-ubyte", dir, sub, split);
  assert_int_equal(test_write_file(path, labels, 8 + n), 0);
  free(buf);
}

/* Test images of 14 x 56 have the 784 pixels of 28 x 28 training images,
 * but are another kind of image: refused, blaming the test file. */
static void test_idx_test_shape_must_match(void **state) {
  (void)state;
  write_idx("shape", "train", 20, 28, 28);
  write_idx("shape", "t10k", 10, 14, 56);
  char sub[300], bad[1024] = "", want[1024];
  snprintf(sub, sizeof sub, "%s/shape", dir);
  qgm_data_spec_t spec = {.dataset = "fashion-mnist", .dir = sub,
                          .alpha = 1.0, .seed = 4};
  qgm_dataset_t *tr = NULL, *te = NULL;
  assert_int_equal(qgm_data_load(&spec, 0, 2, &tr, &te, bad, sizeof bad),
                   QGM_EDIMS);
  assert_null(tr);
  assert_null(te);
  snprintf(want, sizeof want, "%s/t10k-images-idx3-ubyte", sub);
  assert_string_equal(bad, want);
  /* The same pixels as 28 x 28 load. */
  write_idx("shape", "t10k", 10, 28, 28);
  assert_int_equal(qgm_data_load(&spec, 0, 2, &tr, &te, bad, sizeof bad), 0);
  assert_int_equal(qgm_dataset_count(te), 10);
  qgm_dataset_free(tr);
  qgm_dataset_free(te);
}

static void test_synthetic(void **state) {
  (void)state;
  qgm_data_spec_t spec = {.dataset = "synthetic", .dir = "/nonexistent",
                          .alpha = 10.0, .seed = 11, .train_limit = 600,
                          .test_limit = 50};
  qgm_dataset_t *a = NULL, *b = NULL, *t1 = NULL, *t2 = NULL;
  assert_int_equal(qgm_data_load(&spec, 0, 3, &a, &t1, NULL, 0), 0);
  assert_int_equal(qgm_data_load(&spec, 0, 3, &b, &t2, NULL, 0), 0);
  assert_int_equal(qgm_dataset_count(a), 200);
  assert_int_equal(qgm_dataset_count(t1), 50);
  assert_int_equal(qgm_dataset_dim(a), PIXELS);
  /* Seeded: equal loads are equal. */
  assert_memory_equal(qgm_dataset_images(a), qgm_dataset_images(b),
                      200 * PIXELS * sizeof(float));
  /* Samples of one class share a prototype: same-class images correlate
   * (E = |proto|^2 / dim = 1/2), different classes do not (about 0). */
  const float *x = qgm_dataset_images(t1);
  const uint8_t *y = qgm_dataset_labels(t1);
  double same = 0, diff = 0;
  size_t ns = 0, nd = 0;
  for (size_t i = 0; i < 50; i++)
    for (size_t j = i + 1; j < 50; j++) {
      double dot = 0;
      for (size_t k = 0; k < PIXELS; k++)
        dot += (double)x[i * PIXELS + k] * x[j * PIXELS + k];
      dot /= PIXELS;
      if (y[i] == y[j])
        same += dot, ns++;
      else
        diff += dot, nd++;
    }
  assert_true(ns > 10 && nd > 10);
  assert_near(same / (double)ns, 0.5, 0.1);
  assert_true(diff / (double)nd < 0.2);
  qgm_dataset_free(a);
  qgm_dataset_free(b);
  qgm_dataset_free(t1);
  qgm_dataset_free(t2);
}

/* Augmented images are the original shifted by at most 4 pixels (zeros
 * shifted in) and possibly mirrored: every output pixel is 0 or equals
 * the input at the position one (dy, dx, flip) explains, and all three
 * kinds of transform occur; without augmentation rng is untouched. */
static void test_augmentation(void **state) {
  (void)state;
  write_cifar10();
  qgm_data_spec_t spec = {.dataset = "cifar10", .dir = dir, .alpha = 1.0,
                          .seed = 4, .augment = 1};
  qgm_dataset_t *tr = NULL, *te = NULL;
  assert_int_equal(qgm_data_load(&spec, 0, 1, &tr, &te, NULL, 0), 0);
  enum { B = 64 };
  size_t idx[B];
  for (size_t i = 0; i < B; i++)
    idx[i] = i % 200;
  static float x[B * PIXELS], plain[B * PIXELS];
  uint8_t y[B];
  qgm_rng_t rng, before;
  qgm_rng_seed(&rng, 1, 0);
  qgm_dataset_gather(tr, idx, B, plain, NULL);
  qgm_dataset_gather_train(tr, idx, B, x, y, &rng);
  int flips = 0, shifts = 0, identity = 0;
  for (size_t s = 0; s < B; s++) {
    const float *in = plain + s * PIXELS, *out = x + s * PIXELS;
    int found = 0;
    for (int flip = 0; flip < 2 && !found; flip++)
      for (int dy = -4; dy <= 4 && !found; dy++)
        for (int dx = -4; dx <= 4 && !found; dx++) {
          int ok = 1;
          for (int c = 0; c < 3 && ok; c++)
            for (int r = 0; r < 32 && ok; r++)
              for (int q = 0; q < 32 && ok; q++) {
                int sy = r + dy, sx = (flip ? 31 - q : q) + dx;
                float want = sy >= 0 && sy < 32 && sx >= 0 && sx < 32
                                 ? in[c * 1024 + sy * 32 + sx]
                                 : 0.0f;
                ok = out[c * 1024 + r * 32 + q] == want;
              }
          if (ok) {
            found = 1;
            flips += flip;
            shifts += dy != 0 || dx != 0;
            identity += !flip && dy == 0 && dx == 0;
          }
        }
    assert_true(found);
    assert_int_equal(y[s], qgm_dataset_labels(tr)[idx[s]]);
  }
  /* 64 draws: each kind shows up (a miss has probability < 1e-15 for
   * flips and shifts). */
  assert_true(flips > 16 && flips < 48);
  assert_true(shifts > 48);
  assert_true(identity < 8);
  qgm_dataset_free(tr);
  qgm_dataset_free(te);

  /* No augmentation without the flag, and rng is not advanced. */
  spec.augment = 0;
  assert_int_equal(qgm_data_load(&spec, 0, 1, &tr, &te, NULL, 0), 0);
  before = rng;
  qgm_dataset_gather_train(tr, idx, B, x, y, &rng);
  assert_memory_equal(x, plain, sizeof x);
  assert_memory_equal(&rng, &before, sizeof rng);
  qgm_dataset_free(tr);
  qgm_dataset_free(te);
}

/* The start-up agreement's hash of a dataset: equal for equal data, and
 * changed by one float (the first, both sides of a lane boundary, the
 * middle, the last) or one label. */
static void test_dataset_hash_sees_every_float(void **state) {
  (void)state;
  write_cifar10();
  qgm_dataset_t *tr = NULL, *te = NULL, *tr2 = NULL, *te2 = NULL;
  char bad[1024];
  assert_int_equal(load("cifar10", 0, 1, &tr, &te, bad, sizeof bad), 0);
  assert_int_equal(load("cifar10", 0, 1, &tr2, &te2, bad, sizeof bad), 0);
  const uint64_t h = qgm_dataset_hash(te);
  assert_true(qgm_dataset_hash(te2) == h);
  const size_t floats = te->count * te->dim;
  const size_t at[] = {0, 7, 8, floats / 2, floats - 1};
  for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
    const float was = te2->images[at[i]];
    te2->images[at[i]] = nextafterf(was, 1e30f);
    assert_true(qgm_dataset_hash(te2) != h);
    te2->images[at[i]] = was;
  }
  assert_true(qgm_dataset_hash(te2) == h);
  te2->labels[3] ^= 1;
  assert_true(qgm_dataset_hash(te2) != h);
  qgm_dataset_free(tr);
  qgm_dataset_free(te);
  qgm_dataset_free(tr2);
  qgm_dataset_free(te2);
}

/* A view is the test set it wraps, without a copy: same samples, shape
 * and hash, reading the caller's memory (a later change shows through),
 * and freeing it leaves that memory alone (ASan and valgrind would see
 * a free of it). qgm_data_load without a test set loads the same shard.
 * Bad labels are refused. */
static void test_view_reads_the_callers_memory(void **state) {
  (void)state;
  write_cifar10();
  qgm_dataset_t *tr = NULL, *te = NULL, *tr_only = NULL, *view = NULL;
  char bad[1024];
  assert_int_equal(load("cifar10", 0, 2, &tr, &te, bad, sizeof bad), 0);
  assert_int_equal(load("cifar10", 0, 2, &tr_only, NULL, bad, sizeof bad), 0);
  assert_int_equal(qgm_dataset_count(tr_only), qgm_dataset_count(tr));
  assert_true(qgm_dataset_hash(tr_only) == qgm_dataset_hash(tr));
  size_t c, h, w;
  qgm_dataset_shape(te, &c, &h, &w);
  const size_t n = qgm_dataset_count(te);
  float *x = te->images;
  uint8_t *y = te->labels;
  assert_int_equal(qgm_dataset_view(x, y, n, c, h, w, 10, &view), 0);
  assert_ptr_equal(qgm_dataset_images(view), x);
  assert_ptr_equal(qgm_dataset_labels(view), y);
  assert_int_equal(qgm_dataset_dim(view), c * h * w);
  assert_true(qgm_dataset_hash(view) == qgm_dataset_hash(te));
  x[5] += 1.0f;
  assert_true(qgm_dataset_hash(view) == qgm_dataset_hash(te));
  qgm_dataset_free(view);
  uint8_t top = 0;
  for (size_t i = 0; i < n; i++)
    top = y[i] > top ? y[i] : top;
  assert_true(top >= 1);
  assert_int_equal(qgm_dataset_view(x, y, n, c, h, w, top, &view),
                   QGM_ELABEL);
  assert_int_equal(qgm_dataset_view(x, y, n, 0, h, w, 10, &view), QGM_EINVAL);
  qgm_dataset_free(tr);
  qgm_dataset_free(te); /* x and y were still its own */
  qgm_dataset_free(tr_only);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cifar10_shards),
      cmocka_unit_test(test_cifar100_fine_labels),
      cmocka_unit_test(test_cifar_bad_files),
      cmocka_unit_test(test_cifar_not_regular_files),
      cmocka_unit_test(test_idx_test_shape_must_match),
      cmocka_unit_test(test_synthetic),
      cmocka_unit_test(test_dataset_hash_sees_every_float),
      cmocka_unit_test(test_augmentation),
      cmocka_unit_test(test_view_reads_the_callers_memory),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
