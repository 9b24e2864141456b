/* unit_idx.c - the IDX reader and the dataset container.
 *
 * Every test writes its own small IDX files (plain and gzipped) into a
 * fresh temp dir, so the expected values can be worked out by hand; only
 * the last two read the installed Fashion-MNIST files. Leaks on error paths
 * are caught by running this under ASan/LSan or valgrind. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zlib.h>

#include "helpers.h"
#include "qgm.h"

#define MAGIC_LABELS 0x00000801u
#define MAGIC_IMAGES 0x00000803u

#define FASHION_DIR "/usr/share/datasets/fashion-mnist/"
#define FASHION_LABELS FASHION_DIR "t10k-labels-idx1-ubyte.gz"
#define FASHION_IMAGES FASHION_DIR "t10k-images-idx3-ubyte.gz"

/* The fixture: 5 images of 2 x 3 pixels (not square, so the dimensions must
 * come from the header), pixel j of image i = PIX[(i + j) % 6]. With
 * mean = std = 0.5 the pixels normalise to (p/255 - 0.5) / 0.5 = 2p/255 - 1,
 * i.e. NORM below. */
enum { N = 5, ROWS = 2, COLS = 3, DIM = ROWS * COLS, CLASSES = 10 };
static const uint8_t PIX[6] = {0, 51, 102, 153, 204, 255};
static const float NORM[6] = {-1.0f, -0.6f, -0.2f, 0.2f, 0.6f, 1.0f};
static const uint8_t LABELS[N] = {3, 0, 9, 1, 7};

typedef enum { PLAIN, GZ } format_t;

static char sentinel_byte;

static const char *path_of(const char *name) {
  /* Two live at once (images + labels), so alternate buffers. */
  static char buf[2][512];
  static int which;
  which ^= 1;
  snprintf(buf[which], sizeof buf[which], "%s/%s", test_tmpdir, name);
  return buf[which];
}

static void put32(unsigned char *b, uint32_t v) {
  b[0] = (unsigned char)(v >> 24);
  b[1] = (unsigned char)(v >> 16);
  b[2] = (unsigned char)(v >> 8);
  b[3] = (unsigned char)v;
}

/* An IDX1 file: magic, count, then n label bytes (n may differ from count
 * to make broken files). Returns its size. */
static size_t make_labels(unsigned char *buf, uint32_t magic, uint32_t count,
                          const uint8_t *labels, size_t n) {
  put32(buf, magic);
  put32(buf + 4, count);
  if (n)
    memcpy(buf + 8, labels, n);
  return 8 + n;
}

/* An IDX3 file: magic, count, rows, cols, then n pixel bytes. */
static size_t make_images(unsigned char *buf, uint32_t magic, uint32_t count,
                          uint32_t rows, uint32_t cols, const uint8_t *pixels,
                          size_t n) {
  put32(buf, magic);
  put32(buf + 4, count);
  put32(buf + 8, rows);
  put32(buf + 12, cols);
  if (n)
    memcpy(buf + 16, pixels, n);
  return 16 + n;
}

static void fixture_pixels(uint8_t *px) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < DIM; j++)
      px[i * DIM + j] = PIX[(i + j) % 6];
}

/* gzip-compresses in memory (deflate with a gzip wrapper), so tests can
 * damage the compressed bytes. */
static size_t gzip_bytes(const void *in, size_t n, unsigned char *out,
                         size_t cap) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 8,
                                Z_DEFAULT_STRATEGY),
                   Z_OK);
  zs.next_in = (Bytef *)(uintptr_t)in;
  zs.avail_in = (uInt)n;
  zs.next_out = out;
  zs.avail_out = (uInt)cap;
  assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
  size_t len = zs.total_out;
  deflateEnd(&zs);
  return len;
}

static void put_file(const char *name, format_t fmt, const void *data,
                     size_t n) {
  if (fmt == PLAIN) {
    assert_int_equal(test_write_file(path_of(name), data, n), 0);
    return;
  }
  /* The library's own writer, so the reader meets ordinary gzip output. */
  gzFile gz = gzopen(path_of(name), "wb");
  assert_non_null(gz);
  if (n)
    assert_int_equal(gzwrite(gz, data, (unsigned)n), (int)n);
  assert_int_equal(gzclose(gz), Z_OK);
}

/* The well-formed fixture as "img" and "lab" files. */
static void put_fixture(format_t fmt, const char *img, const char *lab) {
  unsigned char buf[16 + N * DIM];
  uint8_t px[N * DIM];
  fixture_pixels(px);
  put_file(img, fmt, buf,
           make_images(buf, MAGIC_IMAGES, N, ROWS, COLS, px, sizeof px));
  put_file(lab, fmt, buf, make_labels(buf, MAGIC_LABELS, N, LABELS, N));
}

/* Runs the loader, checks that a failure leaves *out alone, and frees a
 * success. Returns the loader's code. */
static int try_load(const char *img, const char *lab, const size_t *subset,
                    size_t len) {
  qgm_dataset_t *sentinel = (qgm_dataset_t *)(void *)&sentinel_byte;
  qgm_dataset_t *ds = sentinel;
  char ipath[512];
  snprintf(ipath, sizeof ipath, "%s", path_of(img));
  int rc = qgm_dataset_load_idx(ipath, path_of(lab), CLASSES, subset, len,
                                0.5f, 0.5f, &ds);
  if (rc == 0) {
    assert_ptr_not_equal(ds, sentinel);
    qgm_dataset_free(ds);
  } else {
    assert_ptr_equal(ds, sentinel);
  }
  return rc;
}

static int try_labels(const char *lab, int classes) {
  uint8_t *sentinel = (uint8_t *)&sentinel_byte, *labels = sentinel;
  size_t count = 12345;
  int rc = qgm_idx_read_labels(path_of(lab), classes, &labels, &count);
  if (rc == 0) {
    free(labels);
  } else {
    assert_ptr_equal(labels, sentinel);
    assert_int_equal(count, 12345);
  }
  return rc;
}

/* Row r of ds must be fixture image i, with fixture label i. */
static void assert_sample(const qgm_dataset_t *ds, size_t r, int i) {
  const float *row = qgm_dataset_images(ds) + r * DIM;
  for (int j = 0; j < DIM; j++)
    assert_float_equal(row[j], NORM[(i + j) % 6], 1e-6);
  assert_int_equal(qgm_dataset_labels(ds)[r], LABELS[i]);
}

/* ------------------------------------------------------------ good files */

static void test_labels_valid(void **state) {
  (void)state;
  for (int fmt = PLAIN; fmt <= GZ; fmt++) {
    unsigned char buf[64];
    put_file("lab", fmt, buf, make_labels(buf, MAGIC_LABELS, N, LABELS, N));
    uint8_t *labels = NULL;
    size_t count = 0;
    assert_int_equal(qgm_idx_read_labels(path_of("lab"), CLASSES, &labels,
                                         &count),
                     0);
    assert_int_equal(count, N);
    assert_memory_equal(labels, LABELS, N);
    free(labels);
  }
}

static void test_load_valid(void **state) {
  (void)state;
  for (int fmt = PLAIN; fmt <= GZ; fmt++) {
    put_fixture(fmt, "img", "lab");
    qgm_dataset_t *ds = NULL;
    assert_int_equal(qgm_dataset_load_idx(path_of("img"), path_of("lab"),
                                          CLASSES, NULL, 0, 0.5f, 0.5f, &ds),
                     0);
    assert_int_equal(qgm_dataset_count(ds), N);
    assert_int_equal(qgm_dataset_dim(ds), DIM);
    assert_int_equal(qgm_dataset_classes(ds), CLASSES);
    for (int i = 0; i < N; i++)
      assert_sample(ds, (size_t)i, i);
    qgm_dataset_free(ds);
  }
}

/* Fashion-MNIST's own statistics, worked out by hand:
 * (0 - 0.2860) / 0.3530 = -0.810198..., (1 - 0.2860) / 0.3530 = 2.022663...,
 * (51/255 - 0.2860) / 0.3530 = -0.243626... */
static void test_load_mean_std(void **state) {
  (void)state;
  put_fixture(PLAIN, "img", "lab");
  qgm_dataset_t *ds = NULL;
  assert_int_equal(qgm_dataset_load_idx(path_of("img"), path_of("lab"),
                                        CLASSES, NULL, 0, 0.2860f, 0.3530f,
                                        &ds),
                   0);
  const float *x = qgm_dataset_images(ds);
  assert_float_equal(x[0], -0.8101983f, 1e-5); /* image 0, pixel 0 = 0 */
  assert_float_equal(x[1], -0.2436261f, 1e-5); /* image 0, pixel 1 = 51 */
  assert_float_equal(x[5], 2.0226629f, 1e-5);  /* image 0, pixel 5 = 255 */
  qgm_dataset_free(ds);
}

static void test_load_subset_order(void **state) {
  (void)state;
  for (int fmt = PLAIN; fmt <= GZ; fmt++) {
    put_fixture(fmt, "img", "lab");
    const size_t subset[] = {4, 0, 2};
    qgm_dataset_t *ds = NULL;
    assert_int_equal(qgm_dataset_load_idx(path_of("img"), path_of("lab"),
                                          CLASSES, subset, 3, 0.5f, 0.5f,
                                          &ds),
                     0);
    assert_int_equal(qgm_dataset_count(ds), 3);
    assert_int_equal(qgm_dataset_dim(ds), DIM);
    for (size_t r = 0; r < 3; r++)
      assert_sample(ds, r, (int)subset[r]);
    qgm_dataset_free(ds);
  }
}

static void test_load_subset_single_and_empty(void **state) {
  (void)state;
  put_fixture(GZ, "img", "lab");
  const size_t last[] = {N - 1};
  qgm_dataset_t *ds = NULL;
  assert_int_equal(qgm_dataset_load_idx(path_of("img"), path_of("lab"),
                                        CLASSES, last, 1, 0.5f, 0.5f, &ds),
                   0);
  assert_int_equal(qgm_dataset_count(ds), 1);
  assert_sample(ds, 0, N - 1);
  qgm_dataset_free(ds);

  /* A node with an empty shard still gets a (validated) empty dataset. */
  ds = NULL;
  assert_int_equal(qgm_dataset_load_idx(path_of("img"), path_of("lab"),
                                        CLASSES, last, 0, 0.5f, 0.5f, &ds),
                   0);
  assert_int_equal(qgm_dataset_count(ds), 0);
  qgm_dataset_free(ds);
}

/* ------------------------------------------------------------ bad files */

static void test_truncated_header(void **state) {
  (void)state;
  unsigned char buf[64];
  for (int fmt = PLAIN; fmt <= GZ; fmt++) {
    put_fixture(fmt, "img", "lab");
    make_labels(buf, MAGIC_LABELS, N, LABELS, N);
    put_file("lab-short", fmt, buf, 6); /* magic + half the count */
    assert_int_equal(try_labels("lab-short", CLASSES), QGM_ETRUNC);
    assert_int_equal(try_load("img", "lab-short", NULL, 0), QGM_ETRUNC);
    put_file("lab-empty", fmt, buf, 0);
    assert_int_equal(try_labels("lab-empty", CLASSES), QGM_ETRUNC);
    put_file("lab-magic", fmt, buf, 2); /* not even the magic */
    assert_int_equal(try_labels("lab-magic", CLASSES), QGM_ETRUNC);

    make_images(buf, MAGIC_IMAGES, N, ROWS, COLS, NULL, 0);
    put_file("img-short", fmt, buf, 12); /* the cols field is missing */
    assert_int_equal(try_load("img-short", "lab", NULL, 0), QGM_ETRUNC);
  }
}

static void test_truncated_data(void **state) {
  (void)state;
  unsigned char buf[16 + N * DIM];
  uint8_t px[N * DIM];
  fixture_pixels(px);
  for (int fmt = PLAIN; fmt <= GZ; fmt++) {
    put_fixture(fmt, "img", "lab");
    put_file("lab-short", fmt, buf,
             make_labels(buf, MAGIC_LABELS, N, LABELS, N - 1));
    assert_int_equal(try_labels("lab-short", CLASSES), QGM_ETRUNC);
    assert_int_equal(try_load("img", "lab-short", NULL, 0), QGM_ETRUNC);

    put_file("img-short", fmt, buf,
             make_images(buf, MAGIC_IMAGES, N, ROWS, COLS, px,
                         sizeof px - 1));
    assert_int_equal(try_load("img-short", "lab", NULL, 0), QGM_ETRUNC);
    /* The missing byte belongs to a sample that is not kept: the file is
     * still read to its end. */
    const size_t first[] = {0};
    assert_int_equal(try_load("img-short", "lab", first, 1), QGM_ETRUNC);
  }

  /* A gzip stream cut short (the compressed file itself is truncated). */
  unsigned char gz[512];
  size_t len = gzip_bytes(buf, make_images(buf, MAGIC_IMAGES, N, ROWS, COLS,
                                           px, sizeof px),
                          gz, sizeof gz);
  assert_int_equal(test_write_file(path_of("img-cut"), gz, len - 6), 0);
  assert_int_equal(try_load("img-cut", "lab", NULL, 0), QGM_ETRUNC);
}

static void test_wrong_magic(void **state) {
  (void)state;
  for (int fmt = PLAIN; fmt <= GZ; fmt++) {
    put_fixture(fmt, "img", "lab");
    /* The two files swapped. */
    assert_int_equal(try_load("lab", "img", NULL, 0), QGM_EMAGIC);
    assert_int_equal(try_load("lab", "lab", NULL, 0), QGM_EMAGIC);
    assert_int_equal(try_load("img", "img", NULL, 0), QGM_EMAGIC);
    assert_int_equal(try_labels("img", CLASSES), QGM_EMAGIC);
    /* Right kind, wrong element type (0x0D is float). */
    unsigned char buf[64];
    put_file("lab-float", fmt, buf,
             make_labels(buf, 0x00000D01u, N, LABELS, N));
    assert_int_equal(try_labels("lab-float", CLASSES), QGM_EMAGIC);
  }
}

static void test_bad_dims(void **state) {
  (void)state;
  unsigned char buf[64];
  put_fixture(PLAIN, "img", "lab");
  /* Header-only files: the sizes must be refused before any allocation or
   * data read, or these would come out as QGM_ETRUNC / QGM_ENOMEM. */
  put_file("i", PLAIN, buf, make_images(buf, MAGIC_IMAGES, N, 0, COLS, 0, 0));
  assert_int_equal(try_load("i", "lab", NULL, 0), QGM_EDIMS);
  put_file("i", PLAIN, buf, make_images(buf, MAGIC_IMAGES, N, ROWS, 0, 0, 0));
  assert_int_equal(try_load("i", "lab", NULL, 0), QGM_EDIMS);
  put_file("i", PLAIN, buf,
           make_images(buf, MAGIC_IMAGES, N, 0x10000u, 0x10000u, 0, 0));
  assert_int_equal(try_load("i", "lab", NULL, 0), QGM_EDIMS);
  put_file("i", PLAIN, buf,
           make_images(buf, MAGIC_IMAGES, N, 0xFFFFFFFFu, 0xFFFFFFFFu, 0, 0));
  assert_int_equal(try_load("i", "lab", NULL, 0), QGM_EDIMS);
  put_file("i", PLAIN, buf,
           make_images(buf, MAGIC_IMAGES, 0, ROWS, COLS, 0, 0));
  assert_int_equal(try_load("i", "lab", NULL, 0), QGM_EDIMS);

  put_file("l", PLAIN, buf, make_labels(buf, MAGIC_LABELS, 0, NULL, 0));
  assert_int_equal(try_labels("l", CLASSES), QGM_EDIMS);
  put_file("l", PLAIN, buf,
           make_labels(buf, MAGIC_LABELS, 0xFFFFFFFFu, NULL, 0));
  assert_int_equal(try_labels("l", CLASSES), QGM_EDIMS);
  assert_int_equal(try_load("img", "l", NULL, 0), QGM_EDIMS);
}

static void test_count_mismatch(void **state) {
  (void)state;
  unsigned char buf[64];
  for (int fmt = PLAIN; fmt <= GZ; fmt++) {
    put_fixture(fmt, "img", "lab");
    put_file("lab4", fmt, buf,
             make_labels(buf, MAGIC_LABELS, N - 1, LABELS, N - 1));
    assert_int_equal(try_labels("lab4", CLASSES), 0);
    assert_int_equal(try_load("img", "lab4", NULL, 0), QGM_ECOUNT);
  }
}

static void test_label_out_of_range(void **state) {
  (void)state;
  unsigned char buf[64];
  for (int fmt = PLAIN; fmt <= GZ; fmt++) {
    put_fixture(fmt, "img", "lab");
    /* 9 is the largest label of the fixture. */
    assert_int_equal(try_labels("lab", 9), QGM_ELABEL);
    assert_int_equal(try_labels("lab", 10), 0);
    const uint8_t bad[N] = {3, 0, CLASSES, 1, 7};
    put_file("lab-bad", fmt, buf, make_labels(buf, MAGIC_LABELS, N, bad, N));
    assert_int_equal(try_labels("lab-bad", CLASSES), QGM_ELABEL);
    assert_int_equal(try_load("img", "lab-bad", NULL, 0), QGM_ELABEL);
    /* Every label is checked, not only the kept ones. */
    const size_t keep[] = {0, 1};
    assert_int_equal(try_load("img", "lab-bad", keep, 2), QGM_ELABEL);
  }
}

static void test_trailing_garbage(void **state) {
  (void)state;
  unsigned char buf[32 + N * DIM];
  uint8_t px[N * DIM];
  fixture_pixels(px);
  for (int fmt = PLAIN; fmt <= GZ; fmt++) {
    put_fixture(fmt, "img", "lab");
    size_t n = make_labels(buf, MAGIC_LABELS, N, LABELS, N);
    buf[n] = 0;
    put_file("lab-long", fmt, buf, n + 1);
    assert_int_equal(try_labels("lab-long", CLASSES), QGM_ETRAILING);
    assert_int_equal(try_load("img", "lab-long", NULL, 0), QGM_ETRAILING);

    n = make_images(buf, MAGIC_IMAGES, N, ROWS, COLS, px, sizeof px);
    memset(buf + n, 0xAB, 7);
    put_file("img-long", fmt, buf, n + 7);
    assert_int_equal(try_load("img-long", "lab", NULL, 0), QGM_ETRAILING);
  }
}

static void test_corrupt_gzip(void **state) {
  (void)state;
  unsigned char raw[16 + N * DIM], gz[512], bad[512];
  uint8_t px[N * DIM];
  fixture_pixels(px);
  put_fixture(GZ, "img", "lab");
  size_t len = gzip_bytes(raw, make_images(raw, MAGIC_IMAGES, N, ROWS, COLS,
                                           px, sizeof px),
                          gz, sizeof gz);
  assert_true(len > 18);
  assert_int_equal(test_write_file(path_of("img-ok"), gz, len), 0);
  assert_int_equal(try_load("img-ok", "lab", NULL, 0), 0);

  /* First deflate byte 0xFF: a final block of the reserved type 3. */
  memcpy(bad, gz, len);
  bad[10] = 0xFF;
  assert_int_equal(test_write_file(path_of("img-block"), bad, len), 0);
  assert_int_equal(try_load("img-block", "lab", NULL, 0), QGM_EGZIP);

  /* Unknown compression method in the gzip header. */
  memcpy(bad, gz, len);
  bad[2] = 7;
  assert_int_equal(test_write_file(path_of("img-method"), bad, len), 0);
  assert_int_equal(try_load("img-method", "lab", NULL, 0), QGM_EGZIP);

  /* Intact data, wrong CRC-32 in the trailer: only a reader that goes on
   * to the end of the stream notices. */
  memcpy(bad, gz, len);
  bad[len - 8] ^= 0x01;
  assert_int_equal(test_write_file(path_of("img-crc"), bad, len), 0);
  assert_int_equal(try_load("img-crc", "lab", NULL, 0), QGM_EGZIP);

  /* The same for a label file. */
  len = gzip_bytes(raw, make_labels(raw, MAGIC_LABELS, N, LABELS, N), gz,
                   sizeof gz);
  gz[len - 8] ^= 0x80;
  assert_int_equal(test_write_file(path_of("lab-crc"), gz, len), 0);
  assert_int_equal(try_labels("lab-crc", CLASSES), QGM_EGZIP);
}

static void test_missing_file(void **state) {
  (void)state;
  put_fixture(PLAIN, "img", "lab");
  assert_int_equal(try_labels("nope", CLASSES), QGM_EOPEN);
  assert_int_equal(try_load("nope", "lab", NULL, 0), QGM_EOPEN);
  assert_int_equal(try_load("img", "nope", NULL, 0), QGM_EOPEN);
}

/* A header cannot claim more data than its file can hold: the claim is
 * refused as a truncation before anything is allocated for it. */
static void test_header_claims_bounded(void **state) {
  (void)state;
  /* 65536 valid labels, and an image header for 65536 images of 1024 x
   * 1024 pixels (256 GiB of floats) with no pixels after it. */
  static unsigned char labels[8 + 65536];
  unsigned char head[16];
  put_file("lab-64k", PLAIN, labels,
           make_labels(labels, MAGIC_LABELS, 65536, NULL, 0) + 65536);
  for (int fmt = PLAIN; fmt <= GZ; fmt++) {
    put_file("img-claim", fmt, head,
             make_images(head, MAGIC_IMAGES, 65536, 1024, 1024, NULL, 0));
    assert_int_equal(try_load("img-claim", "lab-64k", NULL, 0), QGM_ETRUNC);
  }
#ifndef __SANITIZE_ADDRESS__ /* ASan needs its address space */
  /* A 16-byte label file claiming 2^27 labels, read with 64 MiB of heap
   * at most: allocating for the claim would fail with QGM_ENOMEM. */
  for (int fmt = PLAIN; fmt <= GZ; fmt++) {
    unsigned char buf[16] = {0};
    put_file("lab-claim", fmt, buf,
             make_labels(buf, MAGIC_LABELS, 1u << 27, NULL, 0) + 8);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      struct rlimit lim = {64u << 20, 64u << 20};
      if (setrlimit(RLIMIT_DATA, &lim) != 0)
        _exit(100);
      _exit(-try_labels("lab-claim", CLASSES));
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(-WEXITSTATUS(status), QGM_ETRUNC);
  }
#endif
}

/* Anything but a regular file is refused without reading it: a directory,
 * and a FIFO nobody writes to (opening it must not wait for a writer). */
static void test_not_regular_files(void **state) {
  (void)state;
  put_fixture(PLAIN, "img", "lab");
  assert_int_equal(mkfifo(path_of("fifo"), 0600), 0);
  assert_int_equal(try_labels("fifo", CLASSES), QGM_ENOTFILE);
  assert_int_equal(try_load("fifo", "lab", NULL, 0), QGM_ENOTFILE);
  assert_int_equal(try_load("img", "fifo", NULL, 0), QGM_ENOTFILE);
  remove(path_of("fifo"));
  assert_int_equal(try_labels(".", CLASSES), QGM_ENOTFILE);
}

/* ------------------------------------------------------------ bad calls */

static void test_subset_duplicate(void **state) {
  (void)state;
  put_fixture(GZ, "img", "lab");
  const size_t twice[] = {1, 3, 1};
  assert_int_equal(try_load("img", "lab", twice, 3), QGM_EINVAL);
  const size_t adjacent[] = {2, 2};
  assert_int_equal(try_load("img", "lab", adjacent, 2), QGM_EINVAL);
}

static void test_subset_out_of_range(void **state) {
  (void)state;
  put_fixture(GZ, "img", "lab");
  const size_t past[] = {0, N};
  assert_int_equal(try_load("img", "lab", past, 2), QGM_EINVAL);
  const size_t huge[] = {(size_t)-1};
  assert_int_equal(try_load("img", "lab", huge, 1), QGM_EINVAL);
  const size_t ok[] = {N - 1};
  assert_int_equal(try_load("img", "lab", ok, 1), 0);
}

static void test_invalid_args(void **state) {
  (void)state;
  put_fixture(PLAIN, "img", "lab");
  char img[512], lab[512];
  snprintf(img, sizeof img, "%s", path_of("img"));
  snprintf(lab, sizeof lab, "%s", path_of("lab"));
  qgm_dataset_t *ds = NULL;
  uint8_t *labels = NULL;
  size_t count = 0;

  assert_int_equal(qgm_idx_read_labels(NULL, CLASSES, &labels, &count),
                   QGM_EINVAL);
  assert_int_equal(qgm_idx_read_labels(lab, 0, &labels, &count), QGM_EINVAL);
  assert_int_equal(qgm_idx_read_labels(lab, 257, &labels, &count),
                   QGM_EINVAL);
  assert_int_equal(qgm_idx_read_labels(lab, CLASSES, NULL, &count),
                   QGM_EINVAL);
  assert_int_equal(qgm_idx_read_labels(lab, CLASSES, &labels, NULL),
                   QGM_EINVAL);

  assert_int_equal(
      qgm_dataset_load_idx(NULL, lab, CLASSES, NULL, 0, 0.5f, 0.5f, &ds),
      QGM_EINVAL);
  assert_int_equal(
      qgm_dataset_load_idx(img, NULL, CLASSES, NULL, 0, 0.5f, 0.5f, &ds),
      QGM_EINVAL);
  assert_int_equal(
      qgm_dataset_load_idx(img, lab, CLASSES, NULL, 0, 0.5f, 0.5f, NULL),
      QGM_EINVAL);
  assert_int_equal(qgm_dataset_load_idx(img, lab, -1, NULL, 0, 0.5f, 0.5f,
                                        &ds),
                   QGM_EINVAL);
  assert_int_equal(
      qgm_dataset_load_idx(img, lab, CLASSES, NULL, 0, 0.5f, 0.0f, &ds),
      QGM_EINVAL);
  assert_int_equal(
      qgm_dataset_load_idx(img, lab, CLASSES, NULL, 0, 0.5f, -1.0f, &ds),
      QGM_EINVAL);
  assert_null(ds);
  assert_null(labels);
  /* 256 classes is the most a byte label allows. */
  assert_int_equal(qgm_idx_read_labels(lab, 256, &labels, &count), 0);
  free(labels);
}

/* ---------------------------------------------------------- from arrays */

static void test_from_arrays_gather(void **state) {
  (void)state;
  const float x[3 * 2] = {1, 2, 3, 4, 5, 6};
  const uint8_t y[3] = {2, 0, 1};
  qgm_dataset_t *ds = NULL;
  assert_int_equal(qgm_dataset_from_arrays(x, y, 3, 2, 3, &ds), 0);
  assert_int_equal(qgm_dataset_count(ds), 3);
  assert_int_equal(qgm_dataset_dim(ds), 2);
  assert_int_equal(qgm_dataset_classes(ds), 3);
  /* Copied, not borrowed. */
  assert_ptr_not_equal(qgm_dataset_images(ds), x);
  assert_memory_equal(qgm_dataset_images(ds), x, sizeof x);
  assert_memory_equal(qgm_dataset_labels(ds), y, sizeof y);

  const size_t idx[4] = {2, 0, 2, 1};
  float gx[4 * 2];
  uint8_t gy[4];
  qgm_dataset_gather(ds, idx, 4, gx, gy);
  const float ex[4 * 2] = {5, 6, 1, 2, 5, 6, 3, 4};
  const uint8_t ey[4] = {1, 2, 1, 0};
  assert_memory_equal(gx, ex, sizeof ex);
  assert_memory_equal(gy, ey, sizeof ey);
  qgm_dataset_free(ds);

  qgm_dataset_t *sentinel = (qgm_dataset_t *)(void *)&sentinel_byte;
  ds = sentinel;
  assert_int_equal(qgm_dataset_from_arrays(x, y, 3, 2, 2, &ds), QGM_ELABEL);
  assert_int_equal(qgm_dataset_from_arrays(x, y, 3, 0, 3, &ds), QGM_EINVAL);
  assert_int_equal(qgm_dataset_from_arrays(NULL, y, 3, 2, 3, &ds),
                   QGM_EINVAL);
  assert_int_equal(qgm_dataset_from_arrays(x, y, 3, 2, 0, &ds), QGM_EINVAL);
  assert_int_equal(
      qgm_dataset_from_arrays(x, y, (size_t)-1 / 2, 4, 3, &ds) < 0, 1);
  assert_ptr_equal(ds, sentinel);
  qgm_dataset_free(NULL);
}

/* ------------------------------------------------------ real Fashion-MNIST */

static void test_fashion_labels(void **state) {
  (void)state;
  uint8_t *labels = NULL;
  size_t count = 0;
  assert_int_equal(qgm_idx_read_labels(FASHION_LABELS, 10, &labels, &count),
                   0);
  assert_int_equal(count, 10000);
  size_t per_class[10] = {0};
  for (size_t i = 0; i < count; i++)
    per_class[labels[i]]++;
  for (int c = 0; c < 10; c++)
    assert_int_equal(per_class[c], 1000);
  free(labels);
}

static void test_fashion_images(void **state) {
  (void)state;
  FILE *f = fopen(FASHION_IMAGES, "rb");
  if (!f)
    skip();
  fclose(f);
  const float mean = 0.2860f, std = 0.3530f;
  qgm_dataset_t *all = NULL;
  assert_int_equal(qgm_dataset_load_idx(FASHION_IMAGES, FASHION_LABELS, 10,
                                        NULL, 0, mean, std, &all),
                   0);
  assert_int_equal(qgm_dataset_count(all), 10000);
  assert_int_equal(qgm_dataset_dim(all), 784);
  const float *x = qgm_dataset_images(all);
  const float lo = (0.0f - mean) / std, hi = (1.0f - mean) / std;
  double sum = 0.0;
  for (size_t i = 0; i < 10000 * 784; i++) {
    assert_true(x[i] >= lo - 1e-6f && x[i] <= hi + 1e-6f);
    sum += x[i];
  }
  /* The statistics are the training set's, so the test set's normalised
   * mean is near, not at, zero. */
  assert_true(sum / (10000.0 * 784.0) > -0.1 && sum / (10000.0 * 784.0) < 0.1);

  /* A shard equals the same rows of the full set. */
  const size_t subset[] = {9999, 0, 4321, 1};
  qgm_dataset_t *part = NULL;
  assert_int_equal(qgm_dataset_load_idx(FASHION_IMAGES, FASHION_LABELS, 10,
                                        subset, 4, mean, std, &part),
                   0);
  assert_int_equal(qgm_dataset_count(part), 4);
  for (size_t r = 0; r < 4; r++) {
    assert_memory_equal(qgm_dataset_images(part) + r * 784,
                        x + subset[r] * 784, 784 * sizeof(float));
    assert_int_equal(qgm_dataset_labels(part)[r],
                     qgm_dataset_labels(all)[subset[r]]);
  }
  qgm_dataset_free(part);
  qgm_dataset_free(all);
}

/* ------------------------------------------------- images in memory */

/* qgm_file_inflate gives a file's content, gunzipped or as it is. */
static void test_file_inflate(void **state) {
  (void)state;
  unsigned char want[16 + N * DIM];
  uint8_t px[N * DIM];
  fixture_pixels(px);
  const size_t n = make_images(want, MAGIC_IMAGES, N, ROWS, COLS, px,
                               sizeof px);
  for (int fmt = PLAIN; fmt <= GZ; fmt++) {
    put_file("whole", fmt, want, n);
    uint8_t *bytes = NULL;
    size_t len = 0;
    assert_int_equal(qgm_file_inflate(path_of("whole"), &bytes, &len), 0);
    assert_int_equal(len, n);
    assert_memory_equal(bytes, want, n);
    free(bytes);
  }
  unsigned char gz[512];
  size_t len = gzip_bytes(want, n, gz, sizeof gz);
  assert_int_equal(test_write_file(path_of("whole-cut"), gz, len - 6), 0);
  uint8_t *bytes = NULL;
  size_t got = 0;
  assert_int_equal(qgm_file_inflate(path_of("whole-cut"), &bytes, &got),
                   QGM_ETRUNC);
  assert_int_equal(qgm_file_inflate(path_of("missing"), &bytes, &got),
                   QGM_EOPEN);
}

/* The four files of an IDX dataset in test_tmpdir (plain): the fixture as
 * both the training and the test set. */
static void put_dataset(void) {
  put_fixture(PLAIN, "train-images-idx3-ubyte", "train-labels-idx1-ubyte");
  put_fixture(PLAIN, "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte");
}

/* Loads node 1 of 2 of spec; the error code, with both sets on success. */
static int load_node(const qgm_data_spec_t *spec, qgm_dataset_t **train,
                     qgm_dataset_t **test, char *bad, size_t size) {
  return qgm_data_load(spec, 1, 2, train, test, bad, size);
}

static void assert_same_dataset(const qgm_dataset_t *a,
                                const qgm_dataset_t *b) {
  assert_int_equal(qgm_dataset_count(a), qgm_dataset_count(b));
  assert_int_equal(qgm_dataset_dim(a), qgm_dataset_dim(b));
  const size_t n = qgm_dataset_count(a), dim = qgm_dataset_dim(a);
  assert_memory_equal(qgm_dataset_images(a), qgm_dataset_images(b),
                      n * dim * sizeof(float));
  assert_memory_equal(qgm_dataset_labels(a), qgm_dataset_labels(b), n);
}

/* Reading the files' images gives the node the same shard and test set
 * as reading the files, and a damaged image the error the damaged file
 * would give, naming the file. */
static void test_load_from_images(void **state) {
  (void)state;
  put_dataset();
  qgm_data_spec_t spec = {.dataset = "mnist-idx", .dir = test_tmpdir,
                          .alpha = 1.0, .seed = 3};
  char paths[4][512], bad[512];
  assert_int_equal(qgm_data_files(&spec, &paths[0][0], sizeof paths[0], 4),
                   4);
  qgm_file_image_t images[4];
  uint8_t *owned[4];
  for (int i = 0; i < 4; i++) {
    size_t len;
    assert_int_equal(qgm_file_inflate(paths[i], &owned[i], &len), 0);
    images[i] = (qgm_file_image_t){paths[i], owned[i], len};
  }
  qgm_dataset_t *train = NULL, *test = NULL, *train2 = NULL, *test2 = NULL;
  assert_int_equal(load_node(&spec, &train, &test, bad, sizeof bad), 0);
  spec.images = images;
  spec.nimages = 4;
  assert_int_equal(load_node(&spec, &train2, &test2, bad, sizeof bad), 0);
  assert_true(qgm_dataset_count(train) > 0);
  assert_same_dataset(train, train2);
  assert_same_dataset(test, test2);
  qgm_dataset_free(train2);
  qgm_dataset_free(test2);
  /* The training images (row 1: labels, images of the training set,
   * then the test set's), cut by 3 bytes, then with one byte more. */
  assert_string_equal(paths[1], path_of("train-images-idx3-ubyte"));
  const size_t len = images[1].len;
  images[1].len = len - 3;
  assert_int_equal(load_node(&spec, &train2, &test2, bad, sizeof bad),
                   QGM_ETRUNC);
  assert_string_equal(bad, paths[1]);
  uint8_t *longer = malloc(len + 1);
  assert_non_null(longer);
  memcpy(longer, owned[1], len);
  longer[len] = 0;
  images[1] = (qgm_file_image_t){paths[1], longer, len + 1};
  spec.images = images; /* (as before: the images, one of them longer) */
  assert_int_equal(load_node(&spec, &train2, &test2, bad, sizeof bad),
                   QGM_ETRAILING);
  assert_string_equal(bad, paths[1]);
  free(longer);
  for (int i = 0; i < 4; i++)
    free(owned[i]);
  qgm_dataset_free(train);
  qgm_dataset_free(test);
  /* Formats without IDX files have none to share. */
  spec.dataset = "cifar10";
  assert_int_equal(qgm_data_files(&spec, &paths[0][0], sizeof paths[0], 4),
                   0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_labels_valid),
      cmocka_unit_test(test_load_valid),
      cmocka_unit_test(test_load_mean_std),
      cmocka_unit_test(test_load_subset_order),
      cmocka_unit_test(test_load_subset_single_and_empty),
      cmocka_unit_test(test_truncated_header),
      cmocka_unit_test(test_truncated_data),
      cmocka_unit_test(test_wrong_magic),
      cmocka_unit_test(test_bad_dims),
      cmocka_unit_test(test_count_mismatch),
      cmocka_unit_test(test_label_out_of_range),
      cmocka_unit_test(test_trailing_garbage),
      cmocka_unit_test(test_corrupt_gzip),
      cmocka_unit_test(test_missing_file),
      cmocka_unit_test(test_header_claims_bounded),
      cmocka_unit_test(test_not_regular_files),
      cmocka_unit_test(test_subset_duplicate),
      cmocka_unit_test(test_subset_out_of_range),
      cmocka_unit_test(test_invalid_args),
      cmocka_unit_test(test_from_arrays_gather),
      cmocka_unit_test(test_fashion_labels),
      cmocka_unit_test(test_fashion_images),
      cmocka_unit_test(test_file_inflate),
      cmocka_unit_test(test_load_from_images),
  };
  return cmocka_run_group_tests(tests, test_tmpdir_setup,
                                test_tmpdir_teardown);
}
