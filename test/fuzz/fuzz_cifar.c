/* fuzz_cifar.c - ready for the CIFAR-10 binary reader: the input becomes
 * every batch file of a data directory, loaded through qgm_data_load as
 * the "cifar10" dataset. Until that reader lands, qgm_data_load rejects
 * the dataset name and this exercises only the lookup. */
#include <stdint.h>

#include "fuzz_util.h"
#include "qgm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const batches[] = {
      "data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
      "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
  char path[256];
  for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++)
    fuzz_file(batches[i], data, size, path, sizeof path);
  qgm_data_spec_t spec = {.dataset = "cifar10", .dir = fuzz_dir(),
                          .alpha = 1.0, .seed = 1};
  qgm_dataset_t *train = NULL, *test = NULL;
  if (qgm_data_load(&spec, 0, 1, &train, &test, path, sizeof path) == 0) {
    qgm_dataset_free(train);
    qgm_dataset_free(test);
  }
  return 0;
}
