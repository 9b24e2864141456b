/* cifar.c - the CIFAR-10 and CIFAR-100 binary formats.
 *
 * A file is a sequence of records: the label byte(s) (CIFAR-10: the class;
 * CIFAR-100: the coarse then the fine class, of which the fine one is
 * used), then 3 x 32 x 32 pixel bytes, red plane first. There is no header,
 * so a file is valid when its size is a whole number of records and every
 * label is in range. The training set spans several files, read as one
 * sequence of samples; like idx.c, a node keeps only its shard and converts
 * only the images it keeps. */
#include <stdio.h>
#include <stdlib.h>

#include "dataset.h"
#include "qgm.h"
#include "selection.h"

#define CIFAR_PIXELS (3 * 32 * 32)
#define CIFAR_MAX_SAMPLES ((size_t)1 << 24)

static size_t label_bytes(int fine) { return fine ? 2 : 1; }

/* Records in path, after checking that its size is a whole number of
 * them. */
static int count_records(FILE *f, size_t record, size_t *count) {
  if (fseek(f, 0, SEEK_END) != 0)
    return QGM_EIO;
  long size = ftell(f);
  if (size < 0 || fseek(f, 0, SEEK_SET) != 0)
    return QGM_EIO;
  if (size == 0)
    return QGM_ETRUNC;
  if ((size_t)size % record != 0)
    return QGM_ETRUNC;
  *count = (size_t)size / record;
  return *count > CIFAR_MAX_SAMPLES ? QGM_EDIMS : 0;
}

/* One pass over the files: every label is checked and, for the kept
 * samples, stored in labels[pos] (when labels is not NULL) and the image
 * converted into images[pos] (when images is not NULL). *total gets the
 * number of samples seen; *bad the index of the file at fault. */
static int pass(const char *const *paths, size_t npaths, int fine,
                qgm_selection_t *sel, const float lut[3][256],
                uint8_t *labels, float *images, size_t *total, size_t *bad) {
  const size_t lb = label_bytes(fine), record = lb + CIFAR_PIXELS;
  const int classes = fine ? 100 : 10;
  unsigned char buf[2 + CIFAR_PIXELS];
  size_t seen = 0;
  qgm_selection_rewind(sel);
  for (size_t f = 0; f < npaths; f++) {
    *bad = f;
    FILE *fp = fopen(paths[f], "rb");
    if (!fp)
      return QGM_EOPEN;
    size_t count = 0;
    int rc = count_records(fp, record, &count);
    for (size_t i = 0; rc == 0 && i < count; i++, seen++) {
      if (fread(buf, 1, record, fp) != record) {
        rc = ferror(fp) ? QGM_EIO : QGM_ETRUNC;
        break;
      }
      /* CIFAR-100 has 20 coarse classes before the 100 fine ones. */
      if ((fine && buf[0] >= 20) || buf[lb - 1] >= classes) {
        rc = QGM_ELABEL;
        break;
      }
      size_t pos;
      if (!qgm_selection_take(sel, seen, &pos))
        continue;
      if (labels)
        labels[pos] = buf[lb - 1];
      if (images) {
        float *dst = images + pos * CIFAR_PIXELS;
        for (size_t k = 0; k < CIFAR_PIXELS; k++)
          dst[k] = lut[k / 1024][buf[lb + k]];
      }
    }
    fclose(fp);
    if (rc != 0)
      return rc;
  }
  *total = seen;
  return 0;
}

int qgm_cifar_read_labels(const char *const *paths, size_t npaths, int fine,
                          uint8_t **labels, size_t *count, size_t *bad) {
  qgm_selection_t all = {NULL, 0, 0};
  size_t total = 0;
  /* The first pass counts, the second keeps: files are small next to the
   * images a node converts, and this keeps one code path. */
  int rc = pass(paths, npaths, fine, &all, NULL, NULL, NULL, &total, bad);
  if (rc != 0)
    return rc;
  uint8_t *out = malloc(total ? total : 1);
  if (!out)
    return QGM_ENOMEM;
  rc = pass(paths, npaths, fine, &all, NULL, out, NULL, &total, bad);
  if (rc != 0) {
    free(out);
    return rc;
  }
  *labels = out;
  *count = total;
  return 0;
}

int qgm_cifar_load(const char *const *paths, size_t npaths, int fine,
                   const size_t *subset, size_t len, const float mean[3],
                   const float std[3], qgm_dataset_t **out, size_t *bad) {
  *bad = 0;
  float lut[3][256];
  for (int c = 0; c < 3; c++)
    for (int p = 0; p < 256; p++)
      lut[c][p] = ((float)p / 255.0f - mean[c]) / std[c];
  qgm_selection_t sel;
  int rc = qgm_selection_init(&sel, subset, len, CIFAR_MAX_SAMPLES);
  if (rc != 0)
    return rc;
  size_t total = 0;
  qgm_dataset_t *ds = NULL;
  if (!subset) /* keep all: count them first */
    rc = pass(paths, npaths, fine, &sel, NULL, NULL, NULL, &total, bad);
  if (rc == 0)
    rc = qgm_dataset_alloc(subset ? len : total, CIFAR_PIXELS,
                           fine ? 100 : 10, &ds);
  if (rc == 0) {
    ds->channels = 3;
    ds->height = ds->width = 32;
    rc = pass(paths, npaths, fine, &sel, lut, ds->labels, ds->images, &total,
              bad);
  }
  if (rc == 0 && !qgm_selection_fits(&sel, total))
    rc = QGM_EINVAL;
  free(sel.picks);
  if (rc != 0) {
    qgm_dataset_free(ds);
    return rc;
  }
  *out = ds;
  return 0;
}
