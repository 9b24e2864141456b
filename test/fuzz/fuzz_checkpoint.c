/* fuzz_checkpoint.c - the checkpoint reader and the manifest parser on
 * arbitrary bytes: any input is accepted or rejected with an error code,
 * never a crash, a leak or an out-of-bounds access.
 *
 * The first byte picks how the rest is used. Even: as a whole file (the
 * header checks; fuzz builds skip the CRCs). Odd: as the body of a file
 * whose header, compression and CRCs this harness makes right, with
 * byte >> 1 sections, so that mutations reach the section parser instead
 * of dying in the inflater's own checksum. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "qgm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void le(uint8_t *out, uint64_t v, int bytes) {
  for (int k = 0; k < bytes; k++)
    out[k] = (uint8_t)(v >> (8 * k));
}

/* A well-formed file around body; NULL if it cannot be made. */
static uint8_t *wrap(const uint8_t *body, size_t len, unsigned sections,
                     size_t *file_len) {
  uLongf zlen = compressBound(len);
  uint8_t *file = malloc(48 + zlen);
  if (!file || compress2(file + 48, &zlen, body, len, 1) != Z_OK) {
    free(file);
    return NULL;
  }
  memcpy(file, "QGMCKPT\x1a", 8);
  le(file + 8, 1, 4);
  le(file + 12, sections, 4);
  le(file + 16, 7, 8);
  le(file + 24, len, 8);
  le(file + 32, zlen, 8);
  uLong outer = crc32(crc32(0, file, 40), file + 48, (uInt)zlen);
  le(file + 40, outer, 4);
  le(file + 44, crc32(0, body, (uInt)len), 4);
  *file_len = 48 + zlen;
  return file;
}

static void read_back(const uint8_t *file, size_t len) {
  qgm_checkpoint_t *c;
  if (qgm_checkpoint_parse(file, len, &c) != 0)
    return;
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  if (data[0] & 1) {
    size_t len;
    uint8_t *file = wrap(data + 1, size - 1, data[0] >> 1, &len);
    if (file)
      read_back(file, len);
    free(file);
  } else {
    read_back(data + 1, size - 1);
  }
  uint64_t step, hash;
  int nodes;
  qgm_manifest_parse((const char *)data, size, &step, &nodes, &hash);
  return 0;
}
