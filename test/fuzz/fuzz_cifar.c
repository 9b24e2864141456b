/* fuzz_cifar.c - the CIFAR binary reader (libqgm/data/cifar.c) through
 * qgm_data_load, as the daemon loads a node's shard and the test set. The
 * first byte picks the run: bit 0 CIFAR-100 (else CIFAR-10), the rest
 * 1 + (byte >> 1) % 4 nodes, of which the last loads; the other bytes
 * become every file of the data directory. Whatever is accepted must have
 * every label below the class count. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_util.h"
#include "qgm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const qgm_dataset_t *ds) {
  const uint8_t *y = qgm_dataset_labels(ds);
  for (size_t i = 0; i < qgm_dataset_count(ds); i++)
    if (y[i] >= qgm_dataset_classes(ds))
      abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const cifar10[] = {
      "data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
      "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
  static const char *const cifar100[] = {"train.bin", "test.bin"};
  if (size < 1)
    return 0;
  int fine = data[0] & 1, nodes = 1 + (data[0] >> 1) % 4;
  const char *const *names = fine ? cifar100 : cifar10;
  size_t nnames = fine ? 2 : 6;
  char path[256];
  for (size_t i = 0; i < nnames; i++)
    fuzz_file(names[i], data + 1, size - 1, path, sizeof path);
  qgm_data_spec_t spec = {.dataset = fine ? "cifar100" : "cifar10",
                          .dir = fuzz_dir(), .alpha = 1.0, .seed = 1,
                          .augment = 1};
  qgm_dataset_t *train = NULL, *test = NULL;
  if (qgm_data_load(&spec, nodes - 1, nodes, &train, &test, path,
                    sizeof path) == 0) {
    check(train);
    check(test);
    qgm_dataset_free(train);
    qgm_dataset_free(test);
  } else if (train || test) {
    abort(); /* a failure leaves nothing behind */
  }
  return 0;
}
