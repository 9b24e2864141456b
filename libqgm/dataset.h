/* dataset.h - the layout of qgm_dataset_t, shared by the files that build
 * datasets (dataset.c, idx.c); not installed. */
#ifndef QGM_DATASET_H
#define QGM_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "qgm.h"

/* Labels are stored as uint8_t, so no dataset can have more classes. */
#define QGM_DATASET_MAX_CLASSES 256

struct qgm_dataset {
  size_t count;    /* samples */
  size_t dim;      /* floats per sample = channels x height x width */
  size_t channels, height, width;
  int classes;     /* every label is < classes */
  float *images;   /* count x dim, row-major, from qgm_alloc_floats */
  uint8_t *labels; /* count */
};

/* A dataset of n samples of dim floats with uninitialised contents, for the
 * loaders to fill in place. n may be 0; dim must not be. Returns QGM_EINVAL
 * for dim == 0 or classes outside [1, QGM_DATASET_MAX_CLASSES], QGM_ENOMEM
 * when n x dim floats cannot be allocated. */
int qgm_dataset_alloc(size_t n, size_t dim, int classes, qgm_dataset_t **out);

#endif /* QGM_DATASET_H */
