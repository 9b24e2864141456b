/* node.c - building and tearing down the synchronous node's own state;
 * the services under it are rank.c's. */
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "memory.h"
#include "node.h"

/* The optimizer's vectors, the exchange's receive buffers, the averaged
 * model of the evaluation and the round's snapshot: what is allocated
 * per parameter, in bytes, checked against memory before any of it. */
static int check_memory(const qgmd_node_t *node, qgm_algorithm_t algorithm,
                        char *err, size_t errlen) {
  const qgmd_config_t *cfg = node->rank.cfg;
  size_t params = qgm_model_num_params(node->rank.model), message = 0;
  double floats = (double)qgm_optim_footprint(algorithm, params, &message);
  int peers = qgm_topology_max_degree(node->topology);
  floats += (double)message * (peers > 0 ? peers : 1) + (double)params;
  if (strcmp(cfg->overlap, "on") == 0 && cfg->local_steps > 1)
    floats += (double)params;
  char what[600];
  if (strcmp(cfg->model, "mlp") == 0)
    snprintf(what, sizeof what, "--hidden=%s (%zu parameters, --algorithm=%s)",
             cfg->hidden, params, cfg->algorithm);
  else
    snprintf(what, sizeof what, "--model=%s (%zu parameters, --algorithm=%s)",
             cfg->model, params, cfg->algorithm);
  return qgmd_memory_check(floats * sizeof(float), node->rank.ranks_here, what,
                           err, errlen);
}

/* The exchange the node's messages need, chosen once (qgmd_job_exchange)
 * and built with its state from the shared initial model.
 * node->topology was built and checked at start-up. Returns an exit
 * status. */
static int setup_exchange(qgmd_node_t *node, char *err, size_t errlen) {
  const qgm_optim_t *o = node->optim;
  qgmd_exchange_plan_t plan;
  size_t nmatrices;
  const qgm_matrix_block_t *matrices =
      qgm_model_matrices(node->rank.model, &nmatrices);
  int rc = qgmd_job_exchange(node->rank.cfg, qgm_optim_algorithm(o),
                             qgm_optim_combine(o), qgm_optim_message_len(o),
                             qgm_optim_dim(o), matrices, nmatrices,
                             node->topology, &plan, err, errlen);
  if (rc != 0)
    return rc;
  rc = qgmd_exchange_init(&node->exchange, &plan, node->rank.id,
                          qgm_optim_params(node->optim),
                          node->rank.placement.host_of);
  if (rc != 0) {
    snprintf(err, errlen, "setting up the exchange: %s", qgm_strerror(rc));
    return 1;
  }
  return 0;
}

int qgmd_node_setup(qgmd_node_t *node, char *err, size_t errlen) {
  const qgmd_config_t *cfg = node->rank.cfg;
  const qgm_model_t *model = node->rank.model;
  qgm_optim_config_t ocfg = qgmd_job_optim(cfg);
  if (check_memory(node, ocfg.algorithm, err, errlen) != 0)
    return 2;
  int rc = qgm_optim_create(&ocfg, qgm_model_num_params(model), &node->optim);
  if (rc != 0) {
    snprintf(err, errlen, "setting up the model: %s", qgm_strerror(rc));
    return 1;
  }
  size_t nparams = qgm_model_num_params(model);
  /* One more float: the push-sum weights, summed with the models. */
  node->avg_params = malloc((nparams + 1) * sizeof *node->avg_params);
  if (!node->avg_params) {
    snprintf(err, errlen, "out of memory");
    return 1;
  }
  /* The model's stream is shared: every node starts from one model. */
  qgm_rng_t init;
  qgm_rng_seed_model(&init, (uint64_t)cfg->seed);
  qgm_model_init_params(model, qgm_optim_params(node->optim), &init);
  rc = setup_exchange(node, err, errlen);
  if (rc != 0)
    return rc;
  node->rank.exchange = &node->exchange;
  node->overlap = strcmp(cfg->overlap, "on") == 0;
  node->local_steps = (uint64_t)cfg->local_steps;
  if ((node->overlap || node->local_steps > 1) &&
      (qgm_optim_combine(node->optim) != QGM_COMBINE_NEIGHBOURS ||
       qgm_optim_message_len(node->optim) != qgm_optim_dim(node->optim))) {
    /* Both modes exchange models; allreduce averages gradients and gt
     * sends [x, y]. */
    snprintf(err, errlen, "--overlap=on and --local-steps > 1 need an "
             "algorithm that gossips its model, not %s", cfg->algorithm);
    return 2;
  }
  if ((node->overlap && node->local_steps > 1 &&
       !(node->snapshot = malloc(nparams * sizeof *node->snapshot))) ||
      qgmd_minibatch_init(&node->minibatch, &node->rank) != 0) {
    snprintf(err, errlen, "out of memory");
    return 1;
  }
  return 0;
}

int qgmd_node_share_host(qgmd_node_t *node, char *err, size_t errlen) {
  if (strcmp(node->rank.cfg->shared_memory, "auto") != 0)
    return 0;
  if (qgmd_exchange_share_host(&node->exchange, node->rank.placement.host) == 0)
    return 0;
  snprintf(err, errlen, "out of memory sharing the models on the host");
  return 1;
}

void qgmd_node_free(qgmd_node_t *node) {
  qgmd_exchange_free(&node->exchange);
  qgm_topology_free(node->topology);
  qgm_optim_free(node->optim);
  qgmd_minibatch_free(&node->minibatch);
  free(node->avg_params);
  free(node->snapshot);
}
