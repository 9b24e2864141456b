/* fuzz_checkpoint.c - the checkpoint reader and the manifest parser on
 * arbitrary bytes: any input is accepted or rejected with an error code,
 * never a crash, a leak or an out-of-bounds access. */
#include <stdint.h>
#include <stdlib.h>

#include "qgm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  qgm_checkpoint_t *c;
  if (qgm_checkpoint_parse(data, size, &c) == 0) {
    /* Whatever was accepted must also read back section by section. */
    for (size_t i = 0; i < qgm_checkpoint_num_sections(c); i++) {
      const char *name;
      qgm_checkpoint_type_t type;
      size_t count;
      if (qgm_checkpoint_section(c, i, &name, &type, &count) != 0)
        abort();
      void *buf = malloc(count * 8 + 1);
      if (buf && qgm_checkpoint_get(c, name, type, buf, count) != 0)
        abort();
      free(buf);
    }
    qgm_checkpoint_free(c);
  }
  uint64_t step, hash;
  int nodes;
  qgm_manifest_parse((const char *)data, size, &step, &nodes, &hash);
  return 0;
}
