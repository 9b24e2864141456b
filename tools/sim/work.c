/* work.c - what qgm-sim's nodes train on. A real dataset is loaded node by
 * node exactly as qgmd loads it (the same partition, the same initial
 * model, the same model code), which is what lets the simulator reproduce
 * the daemon's metrics; a synthetic problem brings its known optimum. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data_cache.h"
#include "job.h"
#include "sim.h"

struct sim_work {
  qgm_problem_t *problem; /* synthetic, or NULL */
  qgm_dataset_t **train;  /* real: one shard per node */
  qgm_dataset_t *test;
  qgm_model_t *model;
  int nodes;
  size_t dim, shard;
  uint64_t seed;
  float *batch_x;
  uint8_t *batch_y;
  float *scratch; /* an x-sized float vector for the optimum */
};

static int create_synthetic(const sim_config_t *cfg, sim_work_t *w, char *err,
                            size_t errlen) {
  qgm_problem_spec_t spec = {.name = cfg->problem,
                             .nodes = (int)cfg->nodes,
                             .dim = (size_t)cfg->dim,
                             .rows = (size_t)cfg->rows,
                             .heterogeneity = cfg->heterogeneity,
                             .noise = cfg->noise,
                             .l2 = cfg->l2,
                             .seed = (uint64_t)cfg->seed};
  int rc = qgm_problem_create(&spec, &w->problem);
  if (rc == QGM_ENOMEM) {
    snprintf(err, errlen, "out of memory for the synthetic problem");
    return 1;
  }
  if (rc != 0) {
    snprintf(err, errlen, "--problem=%s: cannot build it (logistic needs "
             "--l2 > 0)", cfg->problem);
    return 2;
  }
  w->dim = (size_t)cfg->dim;
  w->shard = (size_t)cfg->rows;
  return 0;
}

/* qgmd's data and model set-up (job/job.c), node by node. */
static int create_real(const sim_config_t *cfg, sim_work_t *w, char *err,
                       size_t errlen) {
  w->train = calloc((size_t)w->nodes, sizeof *w->train);
  if (!w->train)
    return 1;
  /* The files are inflated once for all the nodes. */
  qgm_data_spec_t spec = qgmd_job_data(cfg);
  qgmd_job_files_t files;
  char cache[4096];
  qgmd_data_cache_dir(cfg->data_cache, cache, sizeof cache);
  qgmd_job_read_files(&spec, cache, &files);
  spec.images = files.images;
  spec.nimages = (size_t)files.n;
  for (int i = 0; i < w->nodes; i++) {
    qgm_dataset_t *test = NULL;
    int rc = qgmd_job_load_data(&spec, i, w->nodes, &w->train[i], &test, err,
                                errlen);
    if (rc != 0) {
      qgmd_job_files_free(&files);
      return rc;
    }
    if (i == 0)
      w->test = test; /* the same full test set for every node */
    else
      qgm_dataset_free(test);
  }
  qgmd_job_files_free(&files);
  w->shard = qgm_dataset_count(w->train[0]);
  int rc = qgmd_job_model(cfg, w->train[0], &w->model, err, errlen);
  if (rc != 0)
    return rc;
  w->dim = qgm_model_num_params(w->model);
  size_t batch = (size_t)cfg->batch_size;
  size_t input = qgm_dataset_dim(w->train[0]);
  w->batch_x = malloc(batch * input * sizeof *w->batch_x);
  w->batch_y = malloc(batch);
  return w->batch_x && w->batch_y ? 0 : 1;
}

int sim_work_create(const sim_config_t *cfg, sim_work_t **out, char *err,
                    size_t errlen) {
  sim_work_t *w = calloc(1, sizeof *w);
  if (!w)
    return 1;
  w->nodes = (int)cfg->nodes;
  w->seed = (uint64_t)cfg->seed;
  int rc = strcmp(cfg->problem, "dataset") == 0
               ? create_real(cfg, w, err, errlen)
               : create_synthetic(cfg, w, err, errlen);
  if (rc == 0 && (size_t)cfg->batch_size > w->shard) {
    snprintf(err, errlen, "--batch-size=%ld: larger than a node's shard of "
             "%zu samples", cfg->batch_size, w->shard);
    rc = 2;
  }
  if (rc == 0 && !(w->scratch = malloc(w->dim * sizeof *w->scratch)))
    rc = 1;
  if (rc != 0) {
    if (rc == 1 && !*err)
      snprintf(err, errlen, "out of memory");
    sim_work_free(w);
    return rc;
  }
  *out = w;
  return 0;
}

void sim_work_free(sim_work_t *w) {
  if (!w)
    return;
  qgm_problem_free(w->problem);
  for (int i = 0; w->train && i < w->nodes; i++)
    qgm_dataset_free(w->train[i]);
  free(w->train);
  qgm_dataset_free(w->test);
  qgm_model_free(w->model);
  free(w->batch_x);
  free(w->batch_y);
  free(w->scratch);
  free(w);
}

size_t sim_work_dim(const sim_work_t *w) { return w->dim; }
size_t sim_work_shard(const sim_work_t *w) { return w->shard; }
int sim_work_classes(const sim_work_t *w) {
  return w->test ? qgm_dataset_classes(w->test) : 0;
}

const qgm_matrix_block_t *sim_work_matrices(const sim_work_t *w,
                                            size_t *count) {
  if (!w->model) {
    *count = 0;
    return NULL;
  }
  return qgm_model_matrices(w->model, count);
}

/* Real models start as qgmd's do (the model's stream of the seed, shared
 * by all nodes); synthetic ones at 0, so the initial distance is ||x*||. */
void sim_work_init(sim_work_t *w, float *params) {
  if (w->problem) {
    memset(params, 0, w->dim * sizeof *params);
    return;
  }
  qgm_rng_t init;
  qgm_rng_seed_model(&init, w->seed);
  qgm_model_init_params(w->model, params, &init);
}

int sim_work_grad(sim_work_t *w, int node, const float *x,
                  const size_t *rows, size_t n, qgm_rng_t *rng, float *grad,
                  double *loss) {
  if (w->problem)
    return qgm_problem_loss_grad(w->problem, node, x, rows, n, grad, loss);
  float batch_loss = 0.0f;
  qgm_dataset_gather_train(w->train[node], rows, n, w->batch_x, w->batch_y,
                           rng);
  int rc = qgm_model_loss_grad(w->model, x, w->batch_x, w->batch_y, n, grad,
                               &batch_loss);
  *loss = batch_loss;
  return rc;
}

static double accuracy(sim_work_t *w, const float *x) {
  if (w->problem)
    return qgm_problem_accuracy(w->problem, x);
  size_t correct = 0, n = qgm_dataset_count(w->test);
  double loss_sum = 0.0;
  qgm_model_evaluate(w->model, x, qgm_dataset_images(w->test),
                     qgm_dataset_labels(w->test), n, &correct, &loss_sum);
  return (double)correct / (double)n;
}

void sim_work_evaluate(sim_work_t *w, const float *const *models, int n,
                       const float *avg, sim_eval_t *e) {
  e->acc_avg_model = accuracy(w, avg);
  e->acc_local_mean = 0.0;
  if (e->acc_avg_model >= 0.0)
    for (int i = 0; i < n; i++)
      e->acc_local_mean += accuracy(w, models[i]) / n;
  else
    e->acc_local_mean = -1.0;
  e->loss_gap = e->dist_to_opt = -1.0;
  if (!w->problem)
    return;
  const double *opt = qgm_problem_optimum(w->problem);
  double num = 0.0, den = 0.0;
  for (size_t j = 0; j < w->dim; j++) {
    num += (avg[j] - opt[j]) * (avg[j] - opt[j]);
    den += opt[j] * opt[j];
  }
  e->dist_to_opt = den > 0.0 ? sqrt(num / den) : sqrt(num);
  e->loss_gap = qgm_problem_loss(w->problem, avg) -
                qgm_problem_optimal_loss(w->problem);
}
