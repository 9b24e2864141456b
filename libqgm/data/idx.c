/* idx.c - the IDX reader (the MNIST file format) for label and image files,
 * gzip-compressed or plain.
 *
 * Every size in a header is bounded before it is used to allocate, and each
 * file is read once, front to back, through zlib's gz* interface (which
 * passes plain files through untouched), or from its decompressed image in
 * memory (data/source.h). A node loads only its own shard:
 * images of other samples are read into a one-image scratch buffer and
 * dropped, so memory follows the shard, not the file. Nor does a header
 * claim more data than the file can hold: its size for a plain file, and
 * deflate's best ratio (1032:1) of it for a gzipped one, bound every
 * allocation before the first sample is read. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"
#include "core/internal.h"
#include "qgm.h"
#include "data/selection.h"
#include "data/source.h"

#define IDX_MAGIC_LABELS 0x00000801u /* unsigned bytes, 1 dimension */
#define IDX_MAGIC_IMAGES 0x00000803u /* unsigned bytes, 3 dimensions */

/* Far above any real data set, low enough that a hostile header cannot make
 * us allocate gigabytes before the data proves to be missing. */
#define IDX_MAX_COUNT ((size_t)1 << 28)
#define IDX_MAX_PIXELS ((uint64_t)1 << 20)

/* Labels are validated in chunks of this many bytes. */
#define IDX_LABEL_CHUNK 16384u

static uint32_t be32(const unsigned char *b) {
  return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 |
         (uint32_t)b[3];
}

/* Opens path (or its image) and reads its header: the magic, then ndims
 * (<= 3) sizes. *limit gets the most bytes the file can hold after
 * decompression. */
static int idx_open(const char *path, const qgm_file_image_t *images,
                    size_t nimages, uint32_t magic, uint32_t *dims, int ndims,
                    qgm__source_t *out, uint64_t *limit) {
  int rc = qgm__source_open(out, path, images, nimages);
  if (rc != 0)
    return rc;
  unsigned char head[16];
  size_t len = 4 + 4 * (size_t)ndims;
  rc = qgm__source_read(out, head, 4);
  if (rc == 0 && be32(head) != magic)
    rc = QGM_EMAGIC;
  if (rc == 0)
    rc = qgm__source_read(out, head + 4, len - 4);
  if (rc < 0) {
    qgm__source_close(out);
    return rc;
  }
  for (int i = 0; i < ndims; i++)
    dims[i] = be32(head + 4 + 4 * i);
  *limit = qgm__source_limit(out);
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
static int read_label_data(qgm__source_t *src, size_t count, int classes,
                           qgm__selection_t *sel, uint8_t *labels) {
  unsigned char buf[IDX_LABEL_CHUNK];
  qgm__selection_rewind(sel);
  for (size_t base = 0; base < count; base += IDX_LABEL_CHUNK) {
    size_t n = count - base;
    if (n > IDX_LABEL_CHUNK)
      n = IDX_LABEL_CHUNK;
    int rc = qgm__source_read(src, buf, n);
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
  return qgm__source_end(src);
}

int qgm__idx_read_labels(const char *path, const qgm_file_image_t *images,
                         size_t nimages, int classes, uint8_t **labels,
                         size_t *count) {
  if (!path || !labels || !count || !valid_classes(classes))
    return QGM_EINVAL;
  qgm__source_t src;
  uint32_t n;
  uint64_t limit;
  int rc = idx_open(path, images, nimages, IDX_MAGIC_LABELS, &n, 1, &src,
                    &limit);
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
    rc = read_label_data(&src, n, classes, &all, out);
  }
  qgm__source_close(&src);
  if (rc < 0) {
    free(out);
    return rc;
  }
  *labels = out;
  *count = n;
  return 0;
}

int qgm_idx_read_labels(const char *path, int classes, uint8_t **labels,
                        size_t *count) {
  return qgm__idx_read_labels(path, NULL, 0, classes, labels, count);
}

/* ------------------------------------------------------------- image data */

/* Reads count images of dim bytes each, converting the kept ones to
 * normalised floats at row pos. */
static int read_image_data(qgm__source_t *src, size_t count, size_t dim,
                           const float lut[256], qgm__selection_t *sel,
                           float *images) {
  unsigned char *row = malloc(dim);
  if (!row)
    return QGM_ENOMEM;
  int rc = 0;
  qgm__selection_rewind(sel);
  for (size_t i = 0; i < count && rc == 0; i++) {
    size_t pos;
    const uint8_t *pixels;
    rc = qgm__source_next(src, dim, row, &pixels);
    if (rc == 0 && qgm__selection_take(sel, i, &pos)) {
      float *dst = images + pos * dim;
      for (size_t k = 0; k < dim; k++)
        dst[k] = lut[pixels[k]];
    }
  }
  free(row);
  return rc == 0 ? qgm__source_end(src) : rc;
}

/* Both headers, checked against each other, before any sample is read. */
static int open_pair(const char *images_path, const char *labels_path,
                     const qgm_file_image_t *files, size_t nfiles,
                     qgm__source_t *images, qgm__source_t *labels,
                     size_t *count, size_t *rows, size_t *cols) {
  uint32_t nlabels, idims[3];
  uint64_t llimit, ilimit;
  int rc = idx_open(labels_path, files, nfiles, IDX_MAGIC_LABELS, &nlabels, 1,
                    labels, &llimit);
  if (rc < 0)
    return rc;
  rc = idx_open(images_path, files, nfiles, IDX_MAGIC_IMAGES, idims, 3,
                images, &ilimit);
  if (rc < 0) {
    qgm__source_close(labels);
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
    qgm__source_close(images);
    qgm__source_close(labels);
    return rc;
  }
  *count = nlabels;
  *rows = idims[1];
  *cols = idims[2];
  return 0;
}

int qgm__dataset_load_idx(const char *images_path, const char *labels_path,
                          const qgm_file_image_t *files, size_t nfiles,
                          int classes, const size_t *subset,
                          size_t subset_len, float mean, float std,
                          qgm_dataset_t **out) {
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

  qgm__source_t si, sl;
  size_t count = 0, rows = 0, cols = 0;
  qgm_dataset_t *ds = NULL;
  rc = open_pair(images_path, labels_path, files, nfiles, &si, &sl, &count,
                 &rows, &cols);
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
  rc = read_label_data(&sl, count, classes, &sel, ds->labels);
  if (rc == 0)
    rc = read_image_data(&si, count, dim, lut, &sel, ds->images);
close:
  qgm__source_close(&si);
  qgm__source_close(&sl);
done:
  free(sel.picks);
  if (rc < 0) {
    qgm_dataset_free(ds);
    return rc;
  }
  *out = ds;
  return 0;
}

int qgm_dataset_load_idx(const char *images_path, const char *labels_path,
                         int classes, const size_t *subset, size_t subset_len,
                         float mean, float std, qgm_dataset_t **out) {
  return qgm__dataset_load_idx(images_path, labels_path, NULL, 0, classes,
                               subset, subset_len, mean, std, out);
}
