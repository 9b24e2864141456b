/* data.c - a rank's view of the dataset: its non-IID shard of the training
 * set and the whole test set. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "node.h"

typedef struct dataset_info {
  const char *name;
  float mean, std; /* of the training pixels in [0,1] */
} dataset_info_t;

static const dataset_info_t datasets[] = {
    {"fashion-mnist", 0.2860f, 0.3530f},
    {"mnist-idx", 0.1307f, 0.3081f},
};

/* IDX files ship gzipped or plain; take whichever exists. */
static void idx_path(const char *dir, const char *stem, char *out,
                     size_t size) {
  snprintf(out, size, "%s/%s.gz", dir, stem);
  if (access(out, R_OK) != 0)
    snprintf(out, size, "%s/%s", dir, stem);
}

static int bad_file(char *err, size_t errlen, const char *path, int rc) {
  snprintf(err, errlen, "%s: %s", path, qgm_strerror(rc));
  return 2;
}

int qgmd_data_load(qgmd_node_t *node, char *err, size_t errlen) {
  const qgmd_config_t *cfg = node->cfg;
  const dataset_info_t *info = &datasets[0]; /* the name was checked */
  for (size_t i = 0; i < sizeof datasets / sizeof datasets[0]; i++)
    if (strcmp(cfg->dataset, datasets[i].name) == 0)
      info = &datasets[i];
  char images[4096], labels[4096];
  idx_path(cfg->data_dir, "train-labels-idx1-ubyte", labels, sizeof labels);
  idx_path(cfg->data_dir, "train-images-idx3-ubyte", images, sizeof images);

  uint8_t *all_labels = NULL;
  size_t count = 0;
  int rc = qgm_idx_read_labels(labels, 10, &all_labels, &count);
  if (rc != 0)
    return bad_file(err, errlen, labels, rc);
  if (cfg->train_limit > 0 && (size_t)cfg->train_limit < count)
    count = (size_t)cfg->train_limit;

  size_t *shards = NULL, shard_len = 0;
  rc = qgm_partition_dirichlet(all_labels, count, 10, node->nodes, cfg->alpha,
                               (uint64_t)cfg->seed, &shards, &shard_len);
  free(all_labels);
  if (rc == QGM_ETOOSMALL) {
    snprintf(err, errlen, "%s: %zu training samples cannot be shared by %d "
             "nodes", labels, count, node->nodes);
    return 2;
  }
  if (rc != 0)
    return bad_file(err, errlen, labels, rc);
  rc = qgm_dataset_load_idx(images, labels, 10,
                            shards + (size_t)node->rank * shard_len, shard_len,
                            info->mean, info->std, &node->train);
  free(shards);
  if (rc != 0)
    return bad_file(err, errlen, images, rc);

  idx_path(cfg->data_dir, "t10k-labels-idx1-ubyte", labels, sizeof labels);
  idx_path(cfg->data_dir, "t10k-images-idx3-ubyte", images, sizeof images);
  /* Reading the labels alone first lets an error name the right file. */
  rc = qgm_idx_read_labels(labels, 10, &all_labels, &count);
  if (rc != 0)
    return bad_file(err, errlen, labels, rc);
  free(all_labels);
  size_t *first = NULL, test_count = 0;
  if (cfg->test_limit > 0) {
    test_count = (size_t)cfg->test_limit;
    first = malloc(test_count * sizeof *first);
    if (!first) {
      snprintf(err, errlen, "out of memory");
      return 1;
    }
    for (size_t i = 0; i < test_count; i++)
      first[i] = i;
  }
  rc = qgm_dataset_load_idx(images, labels, 10, first, test_count, info->mean,
                            info->std, &node->test);
  free(first);
  if (rc == QGM_EINVAL) {
    snprintf(err, errlen, "--test-limit=%ld: more than the test set holds",
             cfg->test_limit);
    return 2;
  }
  if (rc != 0)
    return bad_file(err, errlen, images, rc);
  if (qgm_dataset_dim(node->test) != qgm_dataset_dim(node->train)) {
    snprintf(err, errlen, "%s: images of %zu pixels, but training images "
             "have %zu", images, qgm_dataset_dim(node->test),
             qgm_dataset_dim(node->train));
    return 2;
  }
  return 0;
}
