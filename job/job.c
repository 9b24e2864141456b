/* job.c - see job.h. */
#include "job.h"

#include "data_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  qgm_optim_config_t ocfg = {.momentum = (float)cfg->momentum,
                             .weight_decay = (float)cfg->weight_decay};
  qgm_algorithm_parse(cfg->algorithm, &ocfg.algorithm);
  return ocfg;
}

void qgmd_job_schedule(const qgmd_config_t *cfg, uint64_t steps_per_epoch,
                       qgm_lr_schedule_t *schedule) {
  qgm_lr_schedule_paper(
      schedule, cfg->lr,
      (uint64_t)(cfg->warmup_epochs * (double)steps_per_epoch),
      steps_per_epoch * (uint64_t)cfg->epochs);
  /* Validated by qgmd_config_check. */
  qgm_lr_schedule_set_decays(schedule, cfg->lr_schedule, cfg->lr_decay_at,
                             cfg->lr_decay_factor);
}

int qgmd_job_compress(const qgmd_config_t *cfg, qgm_algorithm_t algorithm,
                      const qgm_topology_t *topology, qgm_choco_config_t *cc,
                      char *err, size_t errlen) {
  *cc = (qgm_choco_config_t){.seed = (uint64_t)cfg->seed,
                             .gamma = cfg->consensus_lr};
  qgm_compress_parse(cfg->compress, &cc->compress); /* checked at start-up */
  if (cc->compress.kind == QGM_COMPRESS_NONE)
    return 0;
  const char *why = qgm_choco_refuses(algorithm, topology);
  if (!why)
    return 0;
  snprintf(err, errlen, "--compress=%s: not on --topology=%s (%s)",
           cfg->compress, cfg->topology, why);
  return 2;
}
