/* hash.c - FNV-1a over bytes, for ranks to check they hold the same thing,
 * and a word-wise hash for the megabytes of a dataset. */
#include <string.h>

#include "qgm.h"

uint64_t qgm_hash64(const void *data, size_t n, uint64_t h) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

/* Four independent multiply-xorshift lanes over 8-byte words: FNV-1a's
 * one multiply per byte, in a single dependency chain, took some 40 ms
 * per rank over a test set's 31 MB of floats, and every rank hashes it at
 * start-up. The tail goes through FNV-1a. */
static uint64_t hash_words(const void *data, size_t n, uint64_t h) {
  const unsigned char *p = data;
  uint64_t lane[4] = {h, h ^ 0x9e3779b97f4a7c15ULL, h ^ 0xbf58476d1ce4e5b9ULL,
                      h ^ 0x94d049bb133111ebULL};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; k++) {
      uint64_t w;
      memcpy(&w, p + i + 8 * k, sizeof w);
      lane[k] = (lane[k] ^ w) * 0xff51afd7ed558ccdULL;
      lane[k] ^= lane[k] >> 29;
    }
  for (int k = 0; k < 4; k++)
    h = qgm_hash64(&lane[k], sizeof lane[k], h);
  return qgm_hash64(p + i, n - i, h);
}

uint64_t qgm_dataset_hash(const qgm_dataset_t *ds) {
  size_t c, hgt, w;
  qgm_dataset_shape(ds, &c, &hgt, &w);
  const uint64_t head[5] = {qgm_dataset_count(ds), qgm_dataset_dim(ds),
                            (uint64_t)qgm_dataset_classes(ds), c, hgt};
  uint64_t h = qgm_hash64(head, sizeof head, QGM_HASH_INIT);
  h = qgm_hash64(&w, sizeof w, h);
  const size_t n = qgm_dataset_count(ds);
  h = qgm_hash64(qgm_dataset_labels(ds), n, h);
  return hash_words(qgm_dataset_images(ds),
                    n * qgm_dataset_dim(ds) * sizeof(float), h);
}
