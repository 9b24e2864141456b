/* idx.c - the IDX reader (the MNIST file format) for label and image files,
 * gzip-compressed or plain.
 *
 * Every size in a header is bounded before it is used to allocate, and each
 * file is read once, front to back, through zlib's gz* interface (which
 * passes plain files through untouched). A node loads only its own shard:
 * images of other samples are read into a one-image scratch buffer and
 * dropped, so memory follows the shard, not the file. Nor does a header
 * claim more data than the file can hold: its size for a plain file, and
 * deflate's best ratio (1032:1) of it for a gzipped one, bound every
 * allocation before the first sample is read. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "data/dataset.h"
#include "core/internal.h"
#include "qgm.h"
#include "data/selection.h"

#define IDX_MAGIC_LABELS 0x00000801u /* unsigned bytes, 1 dimension */
#define IDX_MAGIC_IMAGES 0x00000803u /* unsigned bytes, 3 dimensions */

/* Far above any real data set, low enough that a hostile header cannot make
 * us allocate gigabytes before the data proves to be missing. */
#define IDX_MAX_COUNT ((size_t)1 << 28)
#define IDX_MAX_PIXELS ((uint64_t)1 << 20)

/* No deflate stream expands more than this (RFC 1951: a 258-byte match
 * in as little as 2 bits, every other bit a bit of a byte too). */
#define DEFLATE_MAX_RATIO 1032u

/* Labels are validated in chunks of this many bytes. */
#define IDX_LABEL_CHUNK 16384u
/* gzread takes an unsigned length but returns an int. */
#define IDX_MAX_READ ((size_t)1 << 30)

/* Turns the state of a stream that stopped short into an error code. */
static int gz_failure(gzFile gz) {
  int errnum = Z_OK;
  (void)gzerror(gz, &errnum);
  switch (errnum) {
  case Z_OK:
  case Z_BUF_ERROR: /* zlib's "unexpected end of file" inside a gzip member */
    return QGM_ETRUNC;
  case Z_ERRNO:
    return QGM_EIO;
  case Z_MEM_ERROR:
    return QGM_ENOMEM;
  default:
    return QGM_EGZIP;
  }
}

/* Reads exactly n bytes. */
static int gz_read_exact(gzFile gz, void *buf, size_t n) {
  unsigned char *p = buf;
  while (n > 0) {
    size_t want = n < IDX_MAX_READ ? n : IDX_MAX_READ;
    int got = gzread(gz, p, (unsigned)want);
    if (got <= 0)
      return gz_failure(gz);
    p += got;
    n -= (size_t)got;
  }
  return 0;
}

/* Succeeds at a clean end of stream. Reading past the data is also what
 * makes zlib check the gzip trailer (CRC and length), so a damaged trailer
 * shows up here. */
static int gz_expect_end(gzFile gz) {
  unsigned char extra;
  int got = gzread(gz, &extra, 1);
  if (got > 0)
    return QGM_ETRAILING;
  int errnum = Z_OK;
  (void)gzerror(gz, &errnum);
  return errnum == Z_OK ? 0 : gz_failure(gz);
}

static uint32_t be32(const unsigned char *b) {
  return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 |
         (uint32_t)b[3];
}

/* Opens path and reads its header: the magic, then ndims (<= 3) sizes.
 * *limit gets the most bytes the file can hold after decompression. */
static int idx_open(const char *path, uint32_t magic, uint32_t *dims,
                    int ndims, gzFile *out, uint64_t *limit) {
  int fd;
  uint64_t size;
  int rc = qgm__open_input(path, &fd, &size);
  if (rc != 0)
    return rc;
  gzFile gz = gzdopen(fd, "rb");
  if (!gz) {
    close(fd);
    return QGM_ENOMEM;
  }
  /* Fewer, larger reads of the underlying file than zlib's 8 KiB default. */
  (void)gzbuffer(gz, 128u * 1024u);

  unsigned char head[16];
  size_t len = 4 + 4 * (size_t)ndims;
  rc = gz_read_exact(gz, head, 4);
  if (rc == 0 && be32(head) != magic)
    rc = QGM_EMAGIC;
  if (rc == 0)
    rc = gz_read_exact(gz, head + 4, len - 4);
  if (rc < 0) {
    gzclose(gz);
    return rc;
  }
  for (int i = 0; i < ndims; i++)
    dims[i] = be32(head + 4 + 4 * i);
  if (gzdirect(gz))
    *limit = size;
  else
    *limit = size > UINT64_MAX / DEFLATE_MAX_RATIO
                 ? UINT64_MAX
                 : size * DEFLATE_MAX_RATIO;
  *out = gz;
  return 0;
}

/* Whether a header followed by `bytes` of data fits in limit. */
static int fits(size_t header, uint64_t bytes, uint64_t limit) {
  return bytes <= limit && header <= limit - bytes;
}

static int check_count(uint32_t count) {
  return (count == 0 || count > IDX_MAX_COUNT) ? QGM_EDIMS : 0;
}

static int valid_classes(int classes) {
  return classes >= 1 && classes <= QGM__DATASET_MAX_CLASSES;
}

/* ------------------------------------------------------------- label data */

/* Reads count labels, checks each against classes, and stores the kept
 * ones at labels[pos]. */
static int read_label_data(gzFile gz, size_t count, int classes,
                           qgm__selection_t *sel, uint8_t *labels) {
  unsigned char buf[IDX_LABEL_CHUNK];
  qgm__selection_rewind(sel);
  for (size_t base = 0; base < count; base += IDX_LABEL_CHUNK) {
    size_t n = count - base;
    if (n > IDX_LABEL_CHUNK)
      n = IDX_LABEL_CHUNK;
    int rc = gz_read_exact(gz, buf, n);
    if (rc < 0)
      return rc;
    for (size_t k = 0; k < n; k++) {
      size_t pos;
      if (buf[k] >= classes)
        return QGM_ELABEL;
      if (qgm__selection_take(sel, base + k, &pos))
        labels[pos] = buf[k];
    }
  }
  return gz_expect_end(gz);
}

int qgm_idx_read_labels(const char *path, int classes, uint8_t **labels,
                        size_t *count) {
  if (!path || !labels || !count || !valid_classes(classes))
    return QGM_EINVAL;
  gzFile gz;
  uint32_t n;
  uint64_t limit;
  int rc = idx_open(path, IDX_MAGIC_LABELS, &n, 1, &gz, &limit);
  if (rc < 0)
    return rc;
  uint8_t *out = NULL;
  rc = check_count(n);
  if (rc == 0 && !fits(8, n, limit))
    rc = QGM_ETRUNC;
  if (rc == 0) {
    out = malloc(n);
    if (!out)
      rc = QGM_ENOMEM;
  }
  if (rc == 0) {
    qgm__selection_t all = {NULL, 0, 0};
    rc = read_label_data(gz, n, classes, &all, out);
  }
  gzclose(gz);
  if (rc < 0) {
    free(out);
    return rc;
  }
  *labels = out;
  *count = n;
  return 0;
}

/* ------------------------------------------------------------- image data */

/* Reads count images of dim bytes each, converting the kept ones to
 * normalised floats at row pos. */
static int read_image_data(gzFile gz, size_t count, size_t dim,
                           const float lut[256], qgm__selection_t *sel,
                           float *images) {
  unsigned char *row = malloc(dim);
  if (!row)
    return QGM_ENOMEM;
  int rc = 0;
  qgm__selection_rewind(sel);
  for (size_t i = 0; i < count && rc == 0; i++) {
    size_t pos;
    rc = gz_read_exact(gz, row, dim);
    if (rc == 0 && qgm__selection_take(sel, i, &pos)) {
      float *dst = images + pos * dim;
      for (size_t k = 0; k < dim; k++)
        dst[k] = lut[row[k]];
    }
  }
  free(row);
  return rc == 0 ? gz_expect_end(gz) : rc;
}

/* Both headers, checked against each other, before any sample is read. */
static int open_pair(const char *images_path, const char *labels_path,
                     gzFile *images, gzFile *labels, size_t *count,
                     size_t *rows, size_t *cols) {
  uint32_t nlabels, idims[3];
  uint64_t llimit, ilimit;
  int rc = idx_open(labels_path, IDX_MAGIC_LABELS, &nlabels, 1, labels,
                    &llimit);
  if (rc < 0)
    return rc;
  rc = idx_open(images_path, IDX_MAGIC_IMAGES, idims, 3, images, &ilimit);
  if (rc < 0) {
    gzclose(*labels);
    return rc;
  }
  uint64_t pixels = (uint64_t)idims[1] * idims[2];
  if ((rc = check_count(nlabels)) == 0 && (rc = check_count(idims[0])) == 0) {
    if (pixels == 0 || pixels > IDX_MAX_PIXELS)
      rc = QGM_EDIMS;
    else if (idims[0] != nlabels)
      rc = QGM_ECOUNT;
    else if (!fits(8, nlabels, llimit) || !fits(16, idims[0] * pixels, ilimit))
      rc = QGM_ETRUNC;
  }
  if (rc < 0) {
    gzclose(*images);
    gzclose(*labels);
    return rc;
  }
  *count = nlabels;
  *rows = idims[1];
  *cols = idims[2];
  return 0;
}

int qgm_dataset_load_idx(const char *images_path, const char *labels_path,
                         int classes, const size_t *subset, size_t subset_len,
                         float mean, float std, qgm_dataset_t **out) {
  if (!images_path || !labels_path || !out || !valid_classes(classes) ||
      !isfinite(mean) || !isfinite(std) || !(std > 0.0f))
    return QGM_EINVAL;

  /* One table lookup per pixel instead of a division. */
  float lut[256];
  for (int p = 0; p < 256; p++)
    lut[p] = ((float)p / 255.0f - mean) / std;

  qgm__selection_t sel;
  int rc = qgm__selection_init(&sel, subset, subset_len, IDX_MAX_COUNT);
  if (rc < 0)
    return rc;

  gzFile gzi = NULL, gzl = NULL;
  size_t count = 0, rows = 0, cols = 0;
  qgm_dataset_t *ds = NULL;
  rc = open_pair(images_path, labels_path, &gzi, &gzl, &count, &rows, &cols);
  const size_t dim = rows * cols;
  if (rc < 0)
    goto done;
  if (!qgm__selection_fits(&sel, count)) {
    rc = QGM_EINVAL;
    goto close;
  }
  rc = qgm__dataset_alloc(sel.picks ? sel.len : count, dim, classes, &ds);
  if (rc < 0)
    goto close;
  ds->height = rows;
  ds->width = cols;
  /* Labels first: they are small, so a bad label fails before the bulk of
   * the image file is decompressed. */
  rc = read_label_data(gzl, count, classes, &sel, ds->labels);
  if (rc == 0)
    rc = read_image_data(gzi, count, dim, lut, &sel, ds->images);
close:
  gzclose(gzi);
  gzclose(gzl);
done:
  free(sel.picks);
  if (rc < 0) {
    qgm_dataset_free(ds);
    return rc;
  }
  *out = ds;
  return 0;
}
