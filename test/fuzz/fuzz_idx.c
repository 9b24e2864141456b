/* fuzz_idx.c - the IDX reader (gzip or plain) on arbitrary bytes. The
 * first byte picks what the rest is: a label file, an image file paired
 * with valid labels, or both halves of a pair. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_util.h"
#include "qgm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t three_labels[] = {0, 0, 8, 1, 0, 0, 0, 3, 0, 1, 2};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int mode = data[0] % 3;
  data++;
  size--;
  char images[256], labels[256];
  qgm_dataset_t *ds = NULL;
  if (mode == 0) {
    uint8_t *y;
    size_t n;
    fuzz_file("labels", data, size, labels, sizeof labels);
    if (qgm_idx_read_labels(labels, 10, &y, &n) == 0)
      free(y);
    return 0;
  }
  if (mode == 1) {
    fuzz_file("images", data, size, images, sizeof images);
    fuzz_file("labels", three_labels, sizeof three_labels, labels,
              sizeof labels);
  } else {
    fuzz_file("images", data + size / 2, size - size / 2, images,
              sizeof images);
    fuzz_file("labels", data, size / 2, labels, sizeof labels);
  }
  /* A subset exercises the shard path: samples 2 and 0, in that order. */
  static const size_t subset[] = {2, 0};
  if (qgm_dataset_load_idx(images, labels, 10, mode == 1 ? subset : NULL,
                           mode == 1 ? 2 : 0, 0.5f, 0.25f, &ds) == 0)
    qgm_dataset_free(ds);
  return 0;
}
