/* dataset.c - the in-memory dataset: samples as one row-major float block
 * so a batch gather is a run of memcpy's, labels as bytes. */
#include "data/dataset.h"

#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

int qgm__dataset_alloc(size_t n, size_t dim, int classes, qgm_dataset_t **out) {
  if (!out || dim == 0 || classes < 1 || classes > QGM__DATASET_MAX_CLASSES)
    return QGM_EINVAL;
  size_t floats = qgm__mul_size(n, dim);
  /* qgm__mul_size also returns 0 for n == 0, which is a legal (empty) set. */
  if (floats == 0 && n != 0)
    return QGM_ENOMEM;

  qgm_dataset_t *ds = calloc(1, sizeof *ds);
  if (!ds)
    return QGM_ENOMEM;
  ds->images = qgm_alloc_floats(floats);
  /* malloc(0) may return NULL, which would read as a failure. */
  ds->labels = malloc(n ? n : 1);
  if (!ds->images || !ds->labels) {
    qgm_dataset_free(ds);
    return QGM_ENOMEM;
  }
  ds->count = n;
  ds->dim = dim;
  /* A flat vector until a loader knows better. */
  ds->channels = 1;
  ds->height = 1;
  ds->width = dim;
  ds->classes = classes;
  *out = ds;
  return 0;
}

int qgm_dataset_from_arrays(const float *x, const uint8_t *y, size_t n,
                            size_t dim, int classes, qgm_dataset_t **out) {
  if (!out || (n != 0 && (!x || !y)))
    return QGM_EINVAL;
  qgm_dataset_t *ds;
  int rc = qgm__dataset_alloc(n, dim, classes, &ds);
  if (rc < 0)
    return rc;
  for (size_t i = 0; i < n; i++) {
    if (y[i] >= classes) {
      qgm_dataset_free(ds);
      return QGM_ELABEL;
    }
  }
  if (n != 0) {
    memcpy(ds->images, x, n * dim * sizeof(float));
    memcpy(ds->labels, y, n);
  }
  *out = ds;
  return 0;
}

int qgm_dataset_view(const float *x, const uint8_t *y, size_t n,
                     size_t channels, size_t height, size_t width,
                     int classes, qgm_dataset_t **out) {
  const size_t dim = channels * height * width;
  if (!out || dim == 0 || (n != 0 && (!x || !y)) || classes < 1 ||
      classes > QGM__DATASET_MAX_CLASSES)
    return QGM_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (y[i] >= classes)
      return QGM_ELABEL;
  qgm_dataset_t *ds = calloc(1, sizeof *ds);
  if (!ds)
    return QGM_ENOMEM;
  /* Never written through: the dataset calls only read images and
   * labels, and free skips them. */
  *ds = (qgm_dataset_t){.count = n, .dim = dim, .channels = channels,
                        .height = height, .width = width, .classes = classes,
                        .images = (float *)(uintptr_t)x,
                        .labels = (uint8_t *)(uintptr_t)y, .borrowed = 1};
  *out = ds;
  return 0;
}

void qgm_dataset_free(qgm_dataset_t *ds) {
  if (!ds)
    return;
  if (!ds->borrowed) {
    free(ds->images);
    free(ds->labels);
  }
  free(ds);
}

size_t qgm_dataset_count(const qgm_dataset_t *ds) { return ds ? ds->count : 0; }

size_t qgm_dataset_dim(const qgm_dataset_t *ds) { return ds ? ds->dim : 0; }

int qgm_dataset_classes(const qgm_dataset_t *ds) {
  return ds ? ds->classes : 0;
}

const float *qgm_dataset_images(const qgm_dataset_t *ds) {
  return ds ? ds->images : NULL;
}

const uint8_t *qgm_dataset_labels(const qgm_dataset_t *ds) {
  return ds ? ds->labels : NULL;
}

/* The indices are trusted (the caller draws them from [0, count)): this
 * runs once per batch in the training loop, and the API has no error path.
 * x or y may be NULL to gather only the other. */
void qgm_dataset_gather(const qgm_dataset_t *ds, const size_t *idx, size_t n,
                        float *x, uint8_t *y) {
  const size_t row = ds->dim;
  for (size_t i = 0; i < n; i++) {
    if (x)
      memcpy(x + i * row, ds->images + idx[i] * row, row * sizeof(float));
    if (y)
      y[i] = ds->labels[idx[i]];
  }
}

void qgm_dataset_shape(const qgm_dataset_t *ds, size_t *channels,
                       size_t *height, size_t *width) {
  *channels = ds->channels;
  *height = ds->height;
  *width = ds->width;
}

/* Standard CIFAR augmentation of one c x h x w image in place: the crop of
 * the zero-padded image at offset (dy, dx) in [-PAD, PAD] is the image
 * shifted by (-dy, -dx) with zeros shifted in, then an optional mirror. */
#define AUGMENT_PAD 4

static void augment_image(float *img, size_t c, size_t h, size_t w,
                          qgm_rng_t *rng, float *row) {
  long dy = (long)qgm_rng_below(rng, 2 * AUGMENT_PAD + 1) - AUGMENT_PAD;
  long dx = (long)qgm_rng_below(rng, 2 * AUGMENT_PAD + 1) - AUGMENT_PAD;
  int flip = (int)qgm_rng_below(rng, 2);
  /* Output row y reads input row y + dy; rows are visited in the order
   * that never overwrites a row still to be read. */
  for (size_t ch = 0; ch < c; ch++) {
    float *plane = img + ch * h * w;
    for (size_t k = 0; k < h; k++) {
      size_t y = dy > 0 ? k : h - 1 - k;
      long sy = (long)y + dy;
      for (size_t x = 0; x < w; x++) {
        long sx = (long)(flip ? w - 1 - x : x) + dx;
        row[x] = (sy >= 0 && sy < (long)h && sx >= 0 && sx < (long)w)
                     ? plane[(size_t)sy * w + (size_t)sx]
                     : 0.0f;
      }
      memcpy(plane + y * w, row, w * sizeof *row);
    }
  }
}

void qgm_dataset_gather_train(const qgm_dataset_t *ds, const size_t *idx,
                              size_t n, float *x, uint8_t *y,
                              qgm_rng_t *rng) {
  qgm_dataset_gather(ds, idx, n, x, y);
  if (!ds->augment)
    return;
  float row[1024];
  if (ds->width > sizeof row / sizeof row[0])
    return; /* CIFAR images are 32 wide; nothing else is augmented */
  for (size_t i = 0; i < n; i++)
    augment_image(x + i * ds->dim, ds->channels, ds->height, ds->width, rng,
                  row);
}
