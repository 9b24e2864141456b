/* node.h - everything one rank holds while it trains. */
#ifndef QGMD_NODE_H
#define QGMD_NODE_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "gossip.h"
#include "qgm.h"

typedef struct qgmd_node {
  const qgmd_config_t *cfg;
  int rank, nodes;

  qgm_dataset_t *train; /* this node's shard only */
  qgm_dataset_t *test;  /* the full test set */
  qgm_model_t *model;
  qgm_optim_t *optim;
  qgm_topology_t *topology;
  qgmd_gossip_t gossip;
  qgm_rng_t rng; /* this node's minibatch sampler */
  qgm_lr_schedule_t schedule;

  size_t *order; /* the epoch's sample order over the shard */
  float *batch_x;
  uint8_t *batch_y;
  float *avg_params; /* scratch for the averaged model */

  uint64_t steps_per_epoch;
  uint64_t step; /* steps done */
  double compute_s, comm_s;
  double start_s;
  FILE *metrics; /* rank 0 only; NULL when not requested */
} qgmd_node_t;

/* Loads this rank's shard and the test set. Returns an exit status (0, or
 * 2 for bad input) with a one-line reason in err. */
int qgmd_node_load_data(qgmd_node_t *node, char *err, size_t errlen);

/* Builds model, optimizer, gossip and buffers (the topology is built
 * before the data is loaded, by qgmd_make_topology); identical initial weights
 * on every rank come from the shared seed. Returns an exit status. */
int qgmd_node_setup(qgmd_node_t *node, char *err, size_t errlen);
void qgmd_node_free(qgmd_node_t *node);

/* Trains cfg->epochs epochs, evaluating after each. Returns an exit status. */
int qgmd_train(qgmd_node_t *node);

#endif /* QGMD_NODE_H */
