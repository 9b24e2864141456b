/* data.c - a node's view of a dataset by name: its non-IID shard of the
 * training set and the whole test set.
 *
 * Every format goes through the same three steps, so that a node never
 * holds the whole training set: read all training labels, partition them
 * (identically on every node, from the shared seed), then load only the
 * node's samples. A format provides the two reads; this file does the
 * rest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/dataset.h"
#include "core/internal.h"
#include "qgm.h"

typedef enum { FORMAT_IDX, FORMAT_CIFAR10, FORMAT_CIFAR100, FORMAT_SYNTH } format_t;

typedef struct dataset_info {
  const char *name;
  format_t format;
  int classes;
  float mean[3], std[3]; /* per channel, of the training pixels in [0,1] */
} dataset_info_t;

static const dataset_info_t datasets[] = {
    {"fashion-mnist", FORMAT_IDX, 10, {0.2860f}, {0.3530f}},
    {"mnist-idx", FORMAT_IDX, 10, {0.1307f}, {0.3081f}},
    {"cifar10", FORMAT_CIFAR10, 10, {0.4914f, 0.4822f, 0.4465f},
     {0.2470f, 0.2435f, 0.2616f}},
    {"cifar100", FORMAT_CIFAR100, 100, {0.5071f, 0.4865f, 0.4409f},
     {0.2673f, 0.2564f, 0.2762f}},
    {"synthetic", FORMAT_SYNTH, 10, {0.0f}, {1.0f}},
};

#define NUM_DATASETS (sizeof datasets / sizeof datasets[0])

static const char *dataset_name(size_t i) { return datasets[i].name; }

const char *qgm_dataset_names(void) {
  static char names[128];
  return names[0] ? names
                  : qgm__join_names(names, sizeof names, NUM_DATASETS,
                                   dataset_name);
}

static const dataset_info_t *dataset_named(const char *name) {
  for (size_t i = 0; name && i < NUM_DATASETS; i++)
    if (strcmp(name, datasets[i].name) == 0)
      return &datasets[i];
  return NULL;
}

/* The files of one split. */
typedef struct split {
  char paths[5][4096];
  size_t npaths;
  char labels[4096]; /* IDX only: the label file */
} split_t;

/* IDX files ship gzipped or plain; take whichever exists. */
static void idx_path(const char *dir, const char *stem, char *out,
                     size_t size) {
  snprintf(out, size, "%s/%s.gz", dir, stem);
  if (access(out, R_OK) != 0)
    snprintf(out, size, "%s/%s", dir, stem);
}

static void split_files(const qgm_data_spec_t *spec, const dataset_info_t *d,
                        int test, split_t *s) {
  memset(s, 0, sizeof *s);
  const char *dir = spec->dir;
  switch (d->format) {
  case FORMAT_IDX:
    s->npaths = 1;
    idx_path(dir, test ? "t10k-images-idx3-ubyte" : "train-images-idx3-ubyte",
             s->paths[0], sizeof s->paths[0]);
    idx_path(dir, test ? "t10k-labels-idx1-ubyte" : "train-labels-idx1-ubyte",
             s->labels, sizeof s->labels);
    break;
  case FORMAT_CIFAR10:
    s->npaths = test ? 1 : 5;
    for (size_t i = 0; i < s->npaths; i++) {
      if (test)
        snprintf(s->paths[i], sizeof s->paths[i], "%s/test_batch.bin", dir);
      else
        snprintf(s->paths[i], sizeof s->paths[i], "%s/data_batch_%zu.bin",
                 dir, i + 1);
    }
    break;
  case FORMAT_CIFAR100:
    s->npaths = 1;
    snprintf(s->paths[0], sizeof s->paths[0], "%s/%s", dir,
             test ? "test.bin" : "train.bin");
    break;
  case FORMAT_SYNTH:
    break;
  }
}

static int blame(const char *path, char *bad_path, size_t size, int rc) {
  if (bad_path && size)
    snprintf(bad_path, size, "%s", path ? path : "");
  return rc;
}

static const char *const *path_list(const split_t *s, const char **list) {
  for (size_t i = 0; i < s->npaths; i++)
    list[i] = s->paths[i];
  return list;
}

/* Every label of a split; on error *bad names the file at fault. */
static int read_labels(const qgm_data_spec_t *spec, const dataset_info_t *d,
                       int test, const split_t *s, uint8_t **labels,
                       size_t *count, const char **bad) {
  const char *list[5];
  size_t which = 0;
  int rc;
  *bad = NULL;
  switch (d->format) {
  case FORMAT_IDX:
    rc = qgm__idx_read_labels(s->labels, spec->images, spec->nimages,
                              d->classes, labels, count);
    *bad = s->labels;
    return rc;
  case FORMAT_CIFAR10:
  case FORMAT_CIFAR100:
    rc = qgm__cifar_read_labels(path_list(s, list), s->npaths,
                               d->format == FORMAT_CIFAR100, labels, count,
                               &which);
    *bad = s->paths[which];
    return rc;
  case FORMAT_SYNTH:
    *count = qgm__synthetic_count(test);
    return qgm__synthetic_labels(spec->seed, test, *count, labels);
  }
  return QGM_EINVAL;
}

/* The samples of subset (in that order) of a split. */
static int load_samples(const qgm_data_spec_t *spec, const dataset_info_t *d,
                        int test, const split_t *s, const size_t *subset,
                        size_t len, size_t count, qgm_dataset_t **out,
                        const char **bad) {
  const char *list[5];
  size_t which = 0;
  int rc;
  *bad = NULL;
  switch (d->format) {
  case FORMAT_IDX:
    *bad = s->paths[0];
    return qgm__dataset_load_idx(s->paths[0], s->labels, spec->images,
                                 spec->nimages, d->classes, subset, len,
                                 d->mean[0], d->std[0], out);
  case FORMAT_CIFAR10:
  case FORMAT_CIFAR100:
    rc = qgm__cifar_load(path_list(s, list), s->npaths,
                        d->format == FORMAT_CIFAR100, subset, len, d->mean,
                        d->std, out, &which);
    *bad = s->paths[which];
    return rc;
  case FORMAT_SYNTH:
    return qgm__synthetic_load(spec->seed, test, count, subset, len, out);
  }
  return QGM_EINVAL;
}

static int load_train(const qgm_data_spec_t *spec, const dataset_info_t *d,
                      int node, int nodes, qgm_dataset_t **train,
                      char *bad_path, size_t size) {
  const char *bad = NULL;
  split_t s;
  split_files(spec, d, 0, &s);
  uint8_t *all = NULL;
  size_t count = 0;
  int rc = read_labels(spec, d, 0, &s, &all, &count, &bad);
  if (rc != 0)
    return blame(bad, bad_path, size, rc);
  if (spec->train_limit > 0 && spec->train_limit < count)
    count = spec->train_limit;
  size_t *shards = NULL, shard_len = 0;
  rc = qgm_partition_dirichlet(all, count, d->classes, nodes, spec->alpha,
                               spec->seed, &shards, &shard_len);
  free(all);
  if (rc != 0) /* too few samples for the nodes: no file is at fault */
    return blame(rc == QGM_ETOOSMALL ? NULL : bad, bad_path, size, rc);
  rc = load_samples(spec, d, 0, &s, shards + (size_t)node * shard_len,
                    shard_len, count, train, &bad);
  free(shards);
  if (rc != 0)
    return blame(bad, bad_path, size, rc);
  (*train)->augment = spec->augment && (d->format == FORMAT_CIFAR10 ||
                                        d->format == FORMAT_CIFAR100);
  return 0;
}

/* Whether two datasets hold samples of one shape: the same pixel count
 * in other rows and columns is another kind of image. */
static int same_shape(const qgm_dataset_t *a, const qgm_dataset_t *b) {
  size_t ca, ha, wa, cb, hb, wb;
  qgm_dataset_shape(a, &ca, &ha, &wa);
  qgm_dataset_shape(b, &cb, &hb, &wb);
  return ca == cb && ha == hb && wa == wb;
}

static int load_test(const qgm_data_spec_t *spec, const dataset_info_t *d,
                     const qgm_dataset_t *train, qgm_dataset_t **test,
                     char *bad_path, size_t size) {
  const char *bad = NULL;
  split_t s;
  split_files(spec, d, 1, &s);
  /* Reading the labels alone first lets an error name the right file. */
  uint8_t *all = NULL;
  size_t count = 0;
  int rc = read_labels(spec, d, 1, &s, &all, &count, &bad);
  free(all);
  if (rc != 0)
    return blame(bad, bad_path, size, rc);
  size_t n = spec->test_limit > 0 && spec->test_limit < count
                 ? spec->test_limit
                 : count;
  size_t *first = malloc((n ? n : 1) * sizeof *first);
  if (!first)
    return QGM_ENOMEM;
  for (size_t i = 0; i < n; i++)
    first[i] = i;
  rc = load_samples(spec, d, 1, &s, first, n, count, test, &bad);
  free(first);
  if (rc == 0 && !same_shape(*test, train)) {
    qgm_dataset_free(*test);
    *test = NULL;
    rc = QGM_EDIMS;
  }
  return rc ? blame(bad, bad_path, size, rc) : 0;
}

/* Whether path is one of the test split's image files. */
static int is_test_images(const qgm_data_spec_t *spec,
                          const dataset_info_t *d, const char *path) {
  split_t s;
  split_files(spec, d, 1, &s);
  for (size_t i = 0; i < s.npaths; i++)
    if (strcmp(s.paths[i], path) == 0)
      return 1;
  return 0;
}

int qgm_data_files(const qgm_data_spec_t *spec, char *paths, size_t size,
                   int max) {
  const dataset_info_t *d = spec ? dataset_named(spec->dataset) : NULL;
  if (!d || d->format != FORMAT_IDX || !spec->dir)
    return 0;
  int n = 0;
  for (int test = 0; test < 2; test++) {
    split_t s;
    split_files(spec, d, test, &s);
    const char *both[2] = {s.labels, s.paths[0]};
    for (int k = 0; k < 2 && n < max; k++, n++)
      snprintf(paths + (size_t)n * size, size, "%s", both[k]);
  }
  return n;
}

const char *qgm_data_explain(const qgm_data_spec_t *spec, int nodes,
                             int err, const char *bad_path, char *buf,
                             size_t size) {
  const dataset_info_t *d = spec ? dataset_named(spec->dataset) : NULL;
  const char *dir = d && spec->dir ? spec->dir : "";
  const char *path = bad_path && *bad_path ? bad_path : dir;
  const int cifar = d && (d->format == FORMAT_CIFAR10 ||
                          d->format == FORMAT_CIFAR100);
  const int fine = d && d->format == FORMAT_CIFAR100;
  if (err == QGM_ETOOSMALL)
  {
    char n[48];
    snprintf(buf, size, "%s: too few training samples for %s", dir,
             qgm_count_text(n, sizeof n, nodes, "node"));
  }
  else if (err == QGM_EDIMS && d && is_test_images(spec, d, path))
    snprintf(buf, size, "%s: test images differ in shape from the training "
             "images", path);
  else if (cifar && err == QGM_ETRUNC) /* CIFAR files have no header */
    snprintf(buf, size, "%s: empty, or not a whole number of %zu-byte %s "
             "records (truncated, or not of this dataset)", path,
             qgm__cifar_record_bytes(fine), d->name);
  else if (cifar && err == QGM_ELABEL)
    snprintf(buf, size, "%s: %s (%s)", path, qgm_strerror(err),
             fine ? "CIFAR-100's coarse labels are 0..19, its fine ones 0..99"
                  : "CIFAR-10's are 0..9");
  else
    snprintf(buf, size, "%s: %s", path, qgm_strerror(err));
  return buf;
}

int qgm_data_load(const qgm_data_spec_t *spec, int node, int nodes,
                  qgm_dataset_t **train, qgm_dataset_t **test,
                  char *bad_path, size_t bad_path_size) {
  blame(NULL, bad_path, bad_path_size, 0);
  if (!spec || !spec->dataset || !spec->dir || !train || nodes < 1 ||
      node < 0 || node >= nodes)
    return QGM_EINVAL;
  const dataset_info_t *info = dataset_named(spec->dataset);
  if (!info)
    return QGM_EINVAL;
  qgm_dataset_t *tr = NULL, *te = NULL;
  int rc = load_train(spec, info, node, nodes, &tr, bad_path, bad_path_size);
  if (rc == 0 && test)
    rc = load_test(spec, info, tr, &te, bad_path, bad_path_size);
  if (rc != 0) {
    qgm_dataset_free(tr);
    qgm_dataset_free(te);
    return rc;
  }
  *train = tr;
  if (test)
    *test = te;
  return 0;
}
