/* job.c - see job.h. */
#include "job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data_cache.h"
#include "feature.h"

/* --algorithm: a synchronous algorithm or an asynchronous rule. Both
 * fields are set from the text alone (0 where it names the other kind). */
static int parse_algorithm(const char *text, qgmd_config_t *cfg) {
  qgmd_parsed_t *p = &cfg->parsed;
  p->algorithm = (qgm_algorithm_t)0;
  p->async_rule = (qgm_async_rule_t)0;
  p->asynchronous = qgm_algorithm_parse(text, &p->algorithm) != 0;
  return !p->asynchronous || qgm_async_rule_parse(text, &p->async_rule) == 0
             ? 0
             : -1;
}

/* The names --algorithm takes: the synchronous algorithms, and in the
 * daemon the asynchronous rules. */
static const char *algorithm_names(unsigned program) {
  static char names[512];
  if (program != QGMD_PROGRAM_DAEMON)
    return qgm_algorithm_names();
  if (!names[0])
    snprintf(names, sizeof names, "%s, %s", qgm_algorithm_names(),
             qgm_async_rule_names());
  return names;
}

const flag_parse_t qgmd_parse_algorithm = {
    parse_algorithm, QGMD_UNPARSED_ALGORITHM, NULL, algorithm_names};

int qgmd_check_algorithm(const qgmd_config_t *cfg, char *err,
                         size_t errlen) {
  if (!(cfg->parsed.unknown & QGMD_UNPARSED_ALGORITHM)) {
    if (cfg->gut_scaling == 0.0 || qgmd_tracking_updates(cfg))
      return 0;
    snprintf(err, errlen, "--gut-scaling=%g: only with --algorithm=gut or "
             "qg-gutm (this run: %s)", cfg->gut_scaling, cfg->algorithm);
    return -1;
  }
  snprintf(err, errlen, "--algorithm: unknown algorithm '%s' (known: %s; "
           "asynchronous: %s)", cfg->algorithm, qgm_algorithm_names(),
           qgm_async_rule_names());
  return -1;
}

int qgmd_check_model(const qgmd_config_t *cfg, char *err, size_t errlen) {
  if (qgmd_in_list(cfg->model, qgm_model_names()))
    return 0;
  snprintf(err, errlen, "--model: unknown model '%s' (known: %s)", cfg->model,
           qgm_model_names());
  return -1;
}

int qgmd_check_dataset(const qgmd_config_t *cfg, char *err, size_t errlen) {
  if (qgmd_in_list(cfg->dataset, qgm_dataset_names()))
    return 0;
  snprintf(err, errlen, "--dataset: unknown dataset '%s' (known: %s)",
           cfg->dataset, qgm_dataset_names());
  return -1;
}

int qgmd_config_widths(const qgmd_config_t *cfg, size_t *widths, size_t max,
                       size_t *count) {
  return qgm_model_parse_widths(cfg->hidden, widths, max, count) ? -1 : 0;
}

int qgmd_check_hidden(const qgmd_config_t *cfg, char *err, size_t errlen) {
  size_t widths[8], n;
  if (qgmd_config_widths(cfg, widths, 8, &n) == 0)
    return 0;
  snprintf(err, errlen, "--hidden: '%s' is not a list of 1 to 8 widths in "
           "[1, 65536]", cfg->hidden);
  return -1;
}

/* qgm-sim's --problem: a synthetic problem, or the dataset. */
int qgmd_check_problem(const qgmd_config_t *cfg, char *err, size_t errlen) {
  if (strcmp(cfg->problem, "dataset") == 0 ||
      qgmd_in_list(cfg->problem, qgm_problem_names()))
    return 0;
  snprintf(err, errlen, "--problem: unknown problem '%s' (known: dataset, "
           "%s)", cfg->problem, qgm_problem_names());
  return -1;
}

qgm_data_spec_t qgmd_job_data(const qgmd_config_t *cfg) {
  return (qgm_data_spec_t){.dataset = cfg->dataset,
                           .dir = cfg->data_dir,
                           .alpha = cfg->alpha,
                           .seed = (uint64_t)cfg->seed,
                           .train_limit = (size_t)cfg->train_limit,
                           .test_limit = (size_t)cfg->test_limit,
                           .augment = cfg->augment != 0};
}

/* File i from the cache (mapped) or, with `inflate`, from the file
 * itself (malloc'd, then stored in the cache): 0, or -1 when neither. */
static int read_file(qgmd_job_files_t *f, int i, const char *cache,
                     int verify, int inflate) {
  const uint8_t *bytes;
  size_t len;
  if (qgmd_data_cache_map(cache, f->paths[i], verify, &bytes, &len) == 0) {
    f->mapped[i] = len;
  } else if (inflate &&
             qgm_file_inflate(f->paths[i], &f->owned[i], &len) == 0) {
    bytes = f->owned[i];
    f->cached = 0;
    qgmd_data_cache_write(cache, f->paths[i], bytes, len);
  } else {
    return -1;
  }
  f->images[i] = (qgm_file_image_t){f->paths[i], bytes, len};
  f->n = i + 1;
  return 0;
}

/* Every file of spec by read_file, or none. */
static void read_all(const qgm_data_spec_t *spec, const char *cache,
                     int verify, int inflate, qgmd_job_files_t *f) {
  memset(f, 0, sizeof *f);
  f->cached = 1;
  const int n = qgm_data_files(spec, &f->paths[0][0], sizeof f->paths[0],
                               QGMD_JOB_FILES);
  for (int i = 0; i < n; i++)
    if (read_file(f, i, cache, verify, inflate) != 0) {
      qgmd_job_files_free(f);
      return;
    }
  f->cached = f->cached && n > 0;
}

void qgmd_job_read_files(const qgm_data_spec_t *spec, const char *cache,
                         qgmd_job_files_t *f) {
  read_all(spec, cache, 1, 1, f);
}

void qgmd_job_map_cached_files(const qgm_data_spec_t *spec,
                               const char *cache, qgmd_job_files_t *f) {
  read_all(spec, cache, 0, 0, f);
}

void qgmd_job_files_free(qgmd_job_files_t *f) {
  for (int i = 0; i < QGMD_JOB_FILES; i++) {
    free(f->owned[i]);
    if (f->mapped[i])
      qgmd_data_cache_unmap(f->images[i].bytes, f->mapped[i]);
  }
  memset(f, 0, sizeof *f);
}

int qgmd_job_load_data(const qgm_data_spec_t *spec, int shard, int shards,
                       qgm_dataset_t **train, qgm_dataset_t **test, char *err,
                       size_t errlen) {
  char path[4096];
  int rc = qgm_data_load(spec, shard, shards, train, test, path, sizeof path);
  if (rc == 0)
    return 0;
  if (rc == QGM_ENOMEM) {
    snprintf(err, errlen, "loading the data: %s", qgm_strerror(rc));
    return 1;
  }
  qgm_data_explain(spec, shards, rc, path, err, errlen);
  /* A file that is not there: most often a dataset never fetched. */
  const size_t used = strlen(err);
  if (rc == QGM_EOPEN && strcmp(spec->dataset, "synthetic") != 0 &&
      used < errlen)
    snprintf(err + used, errlen - used, " (qgm-data %s: where to get it)",
             spec->dataset);
  return 2;
}

int qgmd_job_model(const qgmd_config_t *cfg, const qgm_dataset_t *train,
                   qgm_model_t **model, char *err, size_t errlen) {
  size_t widths[8], nwidths;
  qgmd_config_widths(cfg, widths, 8, &nwidths); /* qgmd_config_check */
  size_t batch = (size_t)cfg->batch_size, shard = qgm_dataset_count(train);
  if (batch > shard) {
    snprintf(err, errlen, "--batch-size=%ld: larger than a node's shard of "
             "%zu samples", cfg->batch_size, shard);
    return 2;
  }
  qgm_model_spec_t spec = {.name = cfg->model,
                           .classes = (size_t)qgm_dataset_classes(train),
                           .hidden = widths,
                           .nhidden = nwidths,
                           .max_batch = qgm_model_chunk(cfg->model, batch)};
  qgm_dataset_shape(train, &spec.channels, &spec.height, &spec.width);
  qgmd_job_kernels(cfg);
  int rc = qgm_model_create(&spec, model);
  if (rc == QGM_EINVAL) {
    snprintf(err, errlen, "--model=%s: cannot take %s's %zu x %zu x %zu "
             "samples", cfg->model, cfg->dataset, spec.channels, spec.height,
             spec.width);
    return 2;
  }
  if (rc != 0) {
    snprintf(err, errlen, "setting up the model: %s", qgm_strerror(rc));
    return 1;
  }
  return 0;
}

qgm_optim_config_t qgmd_job_optim(const qgmd_config_t *cfg) {
  return (qgm_optim_config_t){.algorithm = cfg->parsed.algorithm,
                              .momentum = (float)cfg->momentum,
                              .weight_decay = (float)cfg->weight_decay,
                              .tracking_scale = (float)cfg->gut_scaling};
}

int qgmd_tracking_updates(const qgmd_config_t *cfg) {
  return !cfg->parsed.asynchronous &&
         (cfg->parsed.algorithm == QGM_ALG_GUT ||
          cfg->parsed.algorithm == QGM_ALG_QG_GUTM);
}
