/* cifar.c - the CIFAR-10 and CIFAR-100 binary formats.
 *
 * A file is a sequence of records: the label byte(s) (CIFAR-10: the class;
 * CIFAR-100: the coarse then the fine class, of which the fine one is
 * used), then 3 x 32 x 32 pixel bytes, red plane first. There is no header,
 * so a file is valid when its size is a whole number of records and every
 * label is in range. The training set spans several files, read as one
 * sequence of samples; like idx.c, a node keeps only its shard and converts
 * only the images it keeps.
 *
 * Every file is opened once and its size, taken then, fixes its record
 * count for the whole read: a file that grows or shrinks while it is read
 * is an error, never a write past what was allocated. */
#include <stdio.h>
#include <stdlib.h>

#include "data/dataset.h"
#include "core/internal.h"
#include "qgm.h"
#include "data/selection.h"

#define CIFAR_PIXELS (3 * 32 * 32)
#define CIFAR_MAX_SAMPLES ((size_t)1 << 24)

static size_t label_bytes(int fine) { return fine ? 2 : 1; }

size_t qgm__cifar_record_bytes(int fine) {
  return label_bytes(fine) + CIFAR_PIXELS;
}

/* The open files of one read and their record counts. */
typedef struct batch_files {
  FILE **f;
  size_t *count;
  size_t n;     /* files opened so far */
  size_t total; /* records in all of them */
} batch_files_t;

static void close_all(batch_files_t *b) {
  for (size_t i = 0; i < b->n; i++)
    fclose(b->f[i]);
  free(b->f);
  free(b->count);
}

/* Opens every file (only regular ones) and checks that its size is a
 * whole number of records; *bad gets the index of the file at fault. */
static int open_all(const char *const *paths, size_t npaths, int fine,
                    batch_files_t *b, size_t *bad) {
  const size_t record = label_bytes(fine) + CIFAR_PIXELS;
  b->f = calloc(npaths ? npaths : 1, sizeof *b->f);
  b->count = calloc(npaths ? npaths : 1, sizeof *b->count);
  b->n = b->total = 0;
  if (!b->f || !b->count)
    return QGM_ENOMEM;
  for (size_t i = 0; i < npaths; i++) {
    *bad = i;
    uint64_t size;
    int rc = qgm__fopen_input(paths[i], &b->f[i], &size);
    if (rc != 0)
      return rc;
    b->n++;
    if (size == 0 || size % record != 0)
      return QGM_ETRUNC;
    b->count[i] = (size_t)(size / record);
    b->total += b->count[i];
    if (b->total > CIFAR_MAX_SAMPLES)
      return QGM_EDIMS;
  }
  return 0;
}

/* One pass over the open files: every label is checked and, for the kept
 * samples, stored in labels[pos] (when labels is not NULL) and the image
 * converted into images[pos] (when images is not NULL). Without picks,
 * pos is the sample's index, below b->total. *bad gets the index of the
 * file at fault. */
static int read_all(const batch_files_t *b, int fine, qgm__selection_t *sel,
                    const float lut[3][256], uint8_t *labels, float *images,
                    size_t *bad) {
  const size_t lb = label_bytes(fine), record = lb + CIFAR_PIXELS;
  const int classes = fine ? 100 : 10;
  unsigned char buf[2 + CIFAR_PIXELS];
  size_t seen = 0;
  qgm__selection_rewind(sel);
  for (size_t f = 0; f < b->n; f++) {
    *bad = f;
    FILE *fp = b->f[f];
    for (size_t i = 0; i < b->count[f]; i++, seen++) {
      if (fread(buf, 1, record, fp) != record)
        return ferror(fp) ? QGM_EIO : QGM_ETRUNC;
      /* CIFAR-100 has 20 coarse classes before the 100 fine ones. */
      if ((fine && buf[0] >= 20) || buf[lb - 1] >= classes)
        return QGM_ELABEL;
      size_t pos;
      if (!qgm__selection_take(sel, seen, &pos))
        continue;
      if (labels)
        labels[pos] = buf[lb - 1];
      if (images) {
        float *dst = images + pos * CIFAR_PIXELS;
        for (size_t k = 0; k < CIFAR_PIXELS; k++)
          dst[k] = lut[k / 1024][buf[lb + k]];
      }
    }
    if (fgetc(fp) != EOF) /* it grew since it was opened */
      return QGM_ETRAILING;
    if (ferror(fp))
      return QGM_EIO;
  }
  return 0;
}

int qgm__cifar_read_labels(const char *const *paths, size_t npaths, int fine,
                          uint8_t **labels, size_t *count, size_t *bad) {
  *bad = 0;
  batch_files_t b;
  int rc = open_all(paths, npaths, fine, &b, bad);
  uint8_t *out = NULL;
  if (rc == 0 && !(out = malloc(b.total ? b.total : 1)))
    rc = QGM_ENOMEM;
  qgm__selection_t all = {NULL, 0, 0};
  if (rc == 0)
    rc = read_all(&b, fine, &all, NULL, out, NULL, bad);
  close_all(&b);
  if (rc != 0) {
    free(out);
    return rc;
  }
  *labels = out;
  *count = b.total;
  return 0;
}

int qgm__cifar_load(const char *const *paths, size_t npaths, int fine,
                   const size_t *subset, size_t len, const float mean[3],
                   const float std[3], qgm_dataset_t **out, size_t *bad) {
  *bad = 0;
  float lut[3][256];
  for (int c = 0; c < 3; c++)
    for (int p = 0; p < 256; p++)
      lut[c][p] = ((float)p / 255.0f - mean[c]) / std[c];
  qgm__selection_t sel;
  int rc = qgm__selection_init(&sel, subset, len, CIFAR_MAX_SAMPLES);
  if (rc != 0)
    return rc;
  batch_files_t b;
  qgm_dataset_t *ds = NULL;
  rc = open_all(paths, npaths, fine, &b, bad);
  if (rc == 0 && !qgm__selection_fits(&sel, b.total))
    rc = QGM_EINVAL;
  if (rc == 0)
    rc = qgm__dataset_alloc(subset ? len : b.total, CIFAR_PIXELS,
                           fine ? 100 : 10, &ds);
  if (rc == 0) {
    ds->channels = 3;
    ds->height = ds->width = 32;
    rc = read_all(&b, fine, &sel, lut, ds->labels, ds->images, bad);
  }
  close_all(&b);
  free(sel.picks);
  if (rc != 0) {
    qgm_dataset_free(ds);
    return rc;
  }
  *out = ds;
  return 0;
}
