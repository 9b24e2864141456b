/* hash.c - FNV-1a over bytes, for ranks to check they hold the same thing. */
#include "qgm.h"

uint64_t qgm_hash64(const void *data, size_t n, uint64_t h) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
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
  return qgm_hash64(qgm_dataset_images(ds),
                    n * qgm_dataset_dim(ds) * sizeof(float), h);
}
