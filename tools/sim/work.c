/* work.c - what qgm-sim's nodes train on. A real dataset is loaded node by
 * node exactly as qgmd loads it (the same partition, the same initial
 * model, the same model code), which is what lets the simulator reproduce
 * the daemon's metrics; a synthetic problem brings its known optimum. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* The daemon's data loading and model set-up (daemon/node.c), per node. */
static int create_real(const sim_config_t *cfg, sim_work_t *w, char *err,
                       size_t errlen) {
  size_t widths[8], nwidths;
  if (qgm_model_parse_widths(cfg->hidden, widths, 8, &nwidths) != 0) {
    snprintf(err, errlen, "--hidden: '%s' is not a list of 1 to 8 widths in "
             "[1, 65536]", cfg->hidden);
    return 2;
  }
  qgm_data_spec_t spec = {.dataset = cfg->dataset, .dir = cfg->data_dir,
                          .alpha = cfg->alpha, .seed = (uint64_t)cfg->seed,
                          .train_limit = (size_t)cfg->train_limit,
                          .test_limit = (size_t)cfg->test_limit};
  w->train = calloc((size_t)w->nodes, sizeof *w->train);
  if (!w->train)
    return 1;
  for (int i = 0; i < w->nodes; i++) {
    char path[4096];
    qgm_dataset_t *test = NULL;
    int rc = qgm_data_load(&spec, i, w->nodes, &w->train[i], &test, path,
                           sizeof path);
    if (rc != 0) {
      snprintf(err, errlen, "%s: %s", *path ? path : cfg->data_dir,
               rc == QGM_ETOOSMALL ? "too few training samples for the nodes"
                                   : qgm_strerror(rc));
      return rc == QGM_ENOMEM ? 1 : 2;
    }
    if (i == 0)
      w->test = test; /* the same full test set for every node */
    else
      qgm_dataset_free(test);
  }
  w->shard = qgm_dataset_count(w->train[0]);
  size_t batch = (size_t)cfg->batch_size;
  qgm_model_spec_t mspec = {.name = cfg->model, .classes = 10,
                            .hidden = widths, .nhidden = nwidths,
                            .max_batch = batch < 256 ? 256 : batch};
  qgm_dataset_shape(w->train[0], &mspec.channels, &mspec.height,
                    &mspec.width);
  if (qgm_model_create(&mspec, &w->model) != 0) {
    snprintf(err, errlen, "--model=%s: unknown model (known: %s)", cfg->model,
             qgm_model_names());
    return 2;
  }
  w->dim = qgm_model_num_params(w->model);
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
    snprintf(err, errlen, "--batch-size=%ld: larger than a node's %zu "
             "samples", cfg->batch_size, w->shard);
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

/* Real models start as qgmd's do (stream 0 of the seed, shared by all
 * nodes); synthetic ones at 0, so the initial distance is ||x*||. */
void sim_work_init(sim_work_t *w, float *params) {
  if (w->problem) {
    memset(params, 0, w->dim * sizeof *params);
    return;
  }
  qgm_rng_t init;
  qgm_rng_seed(&init, w->seed, 0);
  qgm_model_init_params(w->model, params, &init);
}

double sim_work_grad(sim_work_t *w, int node, const float *x,
                     const size_t *rows, size_t n, float *grad) {
  if (w->problem) {
    double loss = 0.0;
    qgm_problem_loss_grad(w->problem, node, x, rows, n, grad, &loss);
    return loss;
  }
  float loss = 0.0f;
  qgm_dataset_gather(w->train[node], rows, n, w->batch_x, w->batch_y);
  qgm_model_loss_grad(w->model, x, w->batch_x, w->batch_y, n, grad, &loss);
  return loss;
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
