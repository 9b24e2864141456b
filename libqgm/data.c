/* data.c - a node's view of a dataset by name: its non-IID shard of the
 * training set and the whole test set. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qgm.h"

typedef struct dataset_info {
  const char *name;
  float mean, std; /* of the training pixels in [0,1] */
} dataset_info_t;

static const dataset_info_t datasets[] = {
    {"fashion-mnist", 0.2860f, 0.3530f},
    {"mnist-idx", 0.1307f, 0.3081f},
};

const char *qgm_dataset_names(void) { return "fashion-mnist, mnist-idx"; }

/* IDX files ship gzipped or plain; take whichever exists. */
static void idx_path(const char *dir, const char *stem, char *out,
                     size_t size) {
  snprintf(out, size, "%s/%s.gz", dir, stem);
  if (access(out, R_OK) != 0)
    snprintf(out, size, "%s/%s", dir, stem);
}

static int blame(const char *path, char *bad_path, size_t size, int rc) {
  if (bad_path && size)
    snprintf(bad_path, size, "%s", path ? path : "");
  return rc;
}

/* The first n indices, for --test-limit style prefixes. */
static size_t *prefix(size_t n) {
  size_t *idx = malloc((n ? n : 1) * sizeof *idx);
  for (size_t i = 0; idx && i < n; i++)
    idx[i] = i;
  return idx;
}

static int load_train(const qgm_data_spec_t *spec, const dataset_info_t *info,
                      int node, int nodes, qgm_dataset_t **train,
                      char *bad_path, size_t size) {
  char images[4096], labels[4096];
  idx_path(spec->dir, "train-labels-idx1-ubyte", labels, sizeof labels);
  idx_path(spec->dir, "train-images-idx3-ubyte", images, sizeof images);
  uint8_t *all = NULL;
  size_t count = 0;
  int rc = qgm_idx_read_labels(labels, 10, &all, &count);
  if (rc != 0)
    return blame(labels, bad_path, size, rc);
  if (spec->train_limit > 0 && spec->train_limit < count)
    count = spec->train_limit;
  size_t *shards = NULL, shard_len = 0;
  rc = qgm_partition_dirichlet(all, count, 10, nodes, spec->alpha, spec->seed,
                               &shards, &shard_len);
  free(all);
  if (rc != 0)
    return blame(rc == QGM_ETOOSMALL ? NULL : labels, bad_path, size, rc);
  rc = qgm_dataset_load_idx(images, labels, 10,
                            shards + (size_t)node * shard_len, shard_len,
                            info->mean, info->std, train);
  free(shards);
  return rc ? blame(images, bad_path, size, rc) : 0;
}

static int load_test(const qgm_data_spec_t *spec, const dataset_info_t *info,
                     size_t train_dim, qgm_dataset_t **test, char *bad_path,
                     size_t size) {
  char images[4096], labels[4096];
  idx_path(spec->dir, "t10k-labels-idx1-ubyte", labels, sizeof labels);
  idx_path(spec->dir, "t10k-images-idx3-ubyte", images, sizeof images);
  /* Reading the labels alone first lets an error name the right file. */
  uint8_t *all = NULL;
  size_t count = 0;
  int rc = qgm_idx_read_labels(labels, 10, &all, &count);
  free(all);
  if (rc != 0)
    return blame(labels, bad_path, size, rc);
  size_t n = spec->test_limit > 0 && spec->test_limit < count
                 ? spec->test_limit
                 : count;
  size_t *first = prefix(n);
  if (!first)
    return QGM_ENOMEM;
  rc = qgm_dataset_load_idx(images, labels, 10, first, n, info->mean,
                            info->std, test);
  free(first);
  if (rc == 0 && qgm_dataset_dim(*test) != train_dim) {
    qgm_dataset_free(*test);
    *test = NULL;
    rc = QGM_EDIMS;
  }
  return rc ? blame(images, bad_path, size, rc) : 0;
}

int qgm_data_load(const qgm_data_spec_t *spec, int node, int nodes,
                  qgm_dataset_t **train, qgm_dataset_t **test,
                  char *bad_path, size_t bad_path_size) {
  blame(NULL, bad_path, bad_path_size, 0);
  if (!spec || !spec->dataset || !spec->dir || !train || !test ||
      nodes < 1 || node < 0 || node >= nodes)
    return QGM_EINVAL;
  const dataset_info_t *info = NULL;
  for (size_t i = 0; i < sizeof datasets / sizeof datasets[0]; i++)
    if (strcmp(spec->dataset, datasets[i].name) == 0)
      info = &datasets[i];
  if (!info)
    return QGM_EINVAL;
  qgm_dataset_t *tr = NULL, *te = NULL;
  int rc = load_train(spec, info, node, nodes, &tr, bad_path, bad_path_size);
  if (rc == 0)
    rc = load_test(spec, info, qgm_dataset_dim(tr), &te, bad_path,
                   bad_path_size);
  if (rc != 0) {
    qgm_dataset_free(tr);
    qgm_dataset_free(te);
    return rc;
  }
  *train = tr;
  *test = te;
  return 0;
}
