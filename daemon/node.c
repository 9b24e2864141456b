/* node.c - building and tearing down one rank's training state. */
#include <stdlib.h>
#include <string.h>

#include "async.h"
#include "gradient.h"
#include "host_files.h"
#include "job/job.h"
#include "log.h"
#include "memory.h"
#include "node.h"
#include "relay.h"

/* At --log-level=debug, how many samples of each class this node's shard
 * holds: the heterogeneity the Dirichlet partition produced, which at
 * alpha 0.01 leaves most nodes one or two classes. */
static void log_class_histogram(const qgmd_node_t *node) {
  if (qgmd_log_level < LOG_DEBUG)
    return;
  const uint8_t *labels = qgm_dataset_labels(node->train);
  const size_t n = qgm_dataset_count(node->train);
  const int classes = qgm_dataset_classes(node->train);
  size_t count[256] = {0};
  for (size_t i = 0; i < n; i++)
    count[labels[i]]++;
  char line[4096];
  size_t at = 0;
  for (int c = 0; c < classes && at < sizeof line; c++)
    at += (size_t)snprintf(line + at, sizeof line - at, " %zu", count[c]);
  LOG(LOG_DEBUG, "shard of node %d: %zu samples, per class:%s", node->rank,
      n, line);
}

int qgmd_node_load_data(qgmd_node_t *node, char *err, size_t errlen) {
  const qgmd_config_t *cfg = node->cfg;
  /* In the asynchronous mode the workers share the training set; the
   * server holds worker 1's shard only for the model's shape. */
  int shard = node->rank, shards = node->nodes;
  if (node->async) {
    if (node->nodes < 2) {
      snprintf(err, errlen, "--algorithm=%s: the asynchronous mode needs at "
               "least 2 ranks (a server and a worker)", cfg->algorithm);
      return 2;
    }
    shard = node->rank > 0 ? node->rank - 1 : 0;
    shards = node->nodes - 1;
  }
  qgm_data_spec_t spec = qgmd_job_data(cfg);
  qgmd_host_files_t files;
  qgmd_host_files_share(&files, &spec);
  int rc = qgmd_job_load_data(&spec, shard, shards, &node->train, &node->test,
                              err, errlen);
  qgmd_host_files_release(&files);
  if (rc == 0)
    log_class_histogram(node);
  return rc;
}

/* The optimizer's vectors, the exchange's receive buffers, the averaged
 * model of the evaluation and the round's snapshot: what is allocated
 * per parameter, in bytes, checked against memory before any of it. */
static int check_memory(const qgmd_node_t *node, qgm_algorithm_t algorithm,
                        char *err, size_t errlen) {
  const qgmd_config_t *cfg = node->cfg;
  size_t params = qgm_model_num_params(node->model), message = 0;
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
  return qgmd_memory_check(floats * sizeof(float), node->ranks_here, what, err,
                           errlen);
}

/* The synchronous node's optimizer, gossip and averaged model; the
 * asynchronous ranks have none of them (async_server.c holds the
 * server's rule and model). Returns an exit status. */
/* The exchange the node's messages need, built once: compressed (CHOCO's
 * packed bytes), RelaySum's message per peer, or the optimizer's floats.
 * node->topology was built and checked at start-up. Returns an exit
 * status. */
static int setup_exchange(qgmd_node_t *node, char *err, size_t errlen) {
  const int *host_of = node->placement.host_of;
  qgm_choco_config_t cc;
  int rc = qgmd_job_compress(node->cfg, qgm_optim_algorithm(node->optim),
                             node->topology, &cc, err, errlen);
  if (rc != 0)
    return rc;
  if (cc.compress.kind != QGM_COMPRESS_NONE)
    rc = qgmd_gossip_init_compressed(
        &node->gossip, node->topology, node->rank,
        qgm_optim_message_len(node->optim), cc, qgm_optim_params(node->optim),
        host_of);
  else if (node->relay)
    rc = qgmd_gossip_init_outboxes(&node->gossip, node->topology, node->rank,
                                   qgm_relay_message_len(node->relay),
                                   host_of);
  else
    rc = qgmd_gossip_init(&node->gossip, node->topology,
                          qgm_optim_combine(node->optim), node->rank,
                          qgm_optim_message_len(node->optim), host_of);
  if (rc != 0) {
    snprintf(err, errlen, "setting up the exchange: %s", qgm_strerror(rc));
    return 1;
  }
  return 0;
}

static int setup_gossip_node(qgmd_node_t *node, char *err, size_t errlen) {
  const qgmd_config_t *cfg = node->cfg;
  qgm_optim_config_t ocfg = qgmd_job_optim(cfg);
  if (check_memory(node, ocfg.algorithm, err, errlen) != 0)
    return 2;
  int rc = qgm_optim_create(&ocfg, qgm_model_num_params(node->model),
                            &node->optim);
  if (rc != 0) {
    snprintf(err, errlen, "setting up the model: %s", qgm_strerror(rc));
    return 1;
  }
  size_t nparams = qgm_model_num_params(node->model);
  node->avg_params = malloc(nparams * sizeof *node->avg_params);
  if (!node->avg_params) {
    snprintf(err, errlen, "out of memory");
    return 1;
  }
  /* Stream 0 is shared: every node starts from the same model. */
  qgm_rng_t init;
  qgm_rng_seed(&init, (uint64_t)cfg->seed, 0);
  qgm_model_init_params(node->model, qgm_optim_params(node->optim), &init);
  rc = qgmd_relay_init(node, err, errlen);
  if (rc == 0)
    rc = setup_exchange(node, err, errlen);
  if (rc != 0)
    return rc;
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
  if (node->overlap && node->local_steps > 1 &&
      !(node->snapshot = malloc(nparams * sizeof *node->snapshot))) {
    snprintf(err, errlen, "out of memory");
    return 1;
  }
  return 0;
}

/* The epoch's sample order, the batch buffers and the sampler's stream.
 * Returns 0, or -1 when out of memory. */
static int setup_sampler(qgmd_node_t *node, size_t shard, size_t batch) {
  size_t dim = qgm_dataset_dim(node->train);
  node->order = malloc(shard * sizeof *node->order);
  node->batch_x = malloc(batch * dim * sizeof *node->batch_x);
  node->batch_y = malloc(batch);
  if (!node->order || !node->batch_x || !node->batch_y)
    return -1;
  for (size_t i = 0; i < shard; i++)
    node->order[i] = i;
  qgm_rng_seed(&node->rng, (uint64_t)node->cfg->seed,
               1 + (uint64_t)node->rank);
  return 0;
}

int qgmd_node_setup(qgmd_node_t *node, char *err, size_t errlen) {
  const qgmd_config_t *cfg = node->cfg;
  int rc = qgmd_job_model(cfg, node->train, &node->model, err, errlen);
  if (rc == 0 && !node->async)
    rc = setup_gossip_node(node, err, errlen);
  if (rc != 0)
    return rc;
  /* Every rank but the parameter server samples minibatches; the server
   * holds a worker's shard only for its shape and size. */
  size_t shard = qgm_dataset_count(node->train);
  size_t batch = (size_t)cfg->batch_size;
  if (!(node->async && node->rank == 0) &&
      setup_sampler(node, shard, batch) != 0) {
    snprintf(err, errlen, "out of memory");
    return 1;
  }
  node->steps_per_epoch = shard / batch;
  node->total_steps = node->steps_per_epoch * (uint64_t)cfg->epochs;
  int max_rank;
  qgmd_config_straggle(cfg, node->rank, &node->straggle, &max_rank);
  if (max_rank >= node->nodes) {
    snprintf(err, errlen, "--straggle=%s: rank %d does not exist in a "
             "%d-rank job", cfg->straggle, max_rank, node->nodes);
    return 2;
  }
  node->device_s = qgmd_device_seconds(cfg, node->rank);
  qgmd_job_schedule(cfg, node->steps_per_epoch, &node->schedule);
  return 0;
}

void qgmd_node_free(qgmd_node_t *node) {
  qgm_relay_free(node->relay);
  qgmd_gossip_free(&node->gossip);
  qgmd_placement_free(&node->placement);
  qgm_topology_free(node->topology);
  qgm_optim_free(node->optim);
  qgm_model_free(node->model);
  qgm_dataset_free(node->train);
  qgm_dataset_free(node->test);
  free(node->order);
  free(node->batch_x);
  free(node->batch_y);
  free(node->avg_params);
  free(node->snapshot);
  if (node->metrics)
    fclose(node->metrics);
}
