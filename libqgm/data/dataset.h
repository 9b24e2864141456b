/* dataset.h - the layout of qgm_dataset_t and the readers behind
 * qgm_data_load, shared by the files that build datasets (dataset.c,
 * idx.c, cifar.c, synthetic.c, data.c); not installed. */
#ifndef QGM_DATASET_H
#define QGM_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "qgm.h"

/* Labels are stored as uint8_t, so no dataset can have more classes. */
#define QGM__DATASET_MAX_CLASSES 256

struct qgm_dataset {
  size_t count;    /* samples */
  size_t dim;      /* floats per sample = channels x height x width */
  size_t channels, height, width;
  int classes;     /* every label is < classes */
  int augment;     /* qgm_dataset_gather_train crops and flips */
  float *images;   /* count x dim, row-major, from qgm_alloc_floats */
  uint8_t *labels; /* count */
  int borrowed;    /* qgm_dataset_view: images and labels are the caller's */
};

/* A dataset of n samples of dim floats with uninitialised contents, for the
 * loaders to fill in place. n may be 0; dim must not be. Returns QGM_EINVAL
 * for dim == 0 or classes outside [1, QGM__DATASET_MAX_CLASSES], QGM_ENOMEM
 * when n x dim floats cannot be allocated. */
int qgm__dataset_alloc(size_t n, size_t dim, int classes, qgm_dataset_t **out);

/* qgm_idx_read_labels and qgm_dataset_load_idx (idx.c), reading the
 * files found among files[0..nfiles) from their images in memory. */
int qgm__idx_read_labels(const char *path, const qgm_file_image_t *files,
                         size_t nfiles, int classes, uint8_t **labels,
                         size_t *count);
int qgm__dataset_load_idx(const char *images_path, const char *labels_path,
                          const qgm_file_image_t *files, size_t nfiles,
                          int classes, const size_t *subset,
                          size_t subset_len, float mean, float std,
                          qgm_dataset_t **out);

/* CIFAR binary files (cifar.c), read as one sequence of samples: the
 * fine labels of CIFAR-100 when fine, else CIFAR-10's. *bad gets the index
 * of the file at fault. */
int qgm__cifar_read_labels(const char *const *paths, size_t npaths, int fine,
                          uint8_t **labels, size_t *count, size_t *bad);
/* Keeps the samples listed in subset (in that order; NULL: all), pixels
 * normalised per channel. */
int qgm__cifar_load(const char *const *paths, size_t npaths, int fine,
                   const size_t *subset, size_t len, const float mean[3],
                   const float std[3], qgm_dataset_t **out, size_t *bad);

/* The synthetic dataset (synthetic.c): sample counts of the training
 * (test = 0) and test sets, their labels, and the samples of subset (NULL:
 * the first count). */
size_t qgm__synthetic_count(int test);
int qgm__synthetic_labels(uint64_t seed, int test, size_t count,
                         uint8_t **labels);
int qgm__synthetic_load(uint64_t seed, int test, size_t count,
                       const size_t *subset, size_t len, qgm_dataset_t **out);

/* The bytes of one CIFAR record: the label byte(s) (CIFAR-100: coarse and
 * fine) and the 32 x 32 x 3 pixels (cifar.c). */
size_t qgm__cifar_record_bytes(int fine);

#endif /* QGM_DATASET_H */
