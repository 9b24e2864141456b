/* node.h - the synchronous gossip node: the rank's services (rank.h) and
 * what a decentralized step needs on top of them: the optimizer, the
 * topology and its exchange, the minibatches and the step in progress.
 * Its functions are node.c (set-up), train.c (the steps and the ending)
 * and eval.c (the evaluation). */
#ifndef QGMD_NODE_H
#define QGMD_NODE_H

#include <stdint.h>

#include "exchange.h"
#include "gradient.h"
#include "loop.h"
#include "rank.h"
#include "qgm.h"

struct qgmd_checkpoint;

typedef struct qgmd_node {
  qgmd_rank_t rank; /* the services every rank holds (rank.h) */

  qgm_optim_t *optim;
  qgm_topology_t *topology;
  qgmd_exchange_t exchange;
  qgmd_minibatch_t minibatch;

  float *avg_params; /* the averaged model, for evaluation */
  float *snapshot;   /* x at the start of an overlapped round */

  uint64_t local_steps;
  int overlap;

  /* The step in progress. */
  const float *half; /* the local step's half-step model */
  double epoch_loss; /* the batch losses since the last evaluation */
  int exchange_pending; /* an exchange is in flight */
  int step_waiting;     /* the step cannot finish before the exchange */
  double exchange_started, wait_started, wait_cpu_started;
  double step_began;

  /* The exchange, the stop vote and the evaluation's reductions (each
   * one at a time), apart so that the watchdog can name what is stuck. */
  qgmd_wait_t exchange_wait, control_wait, eval_wait;

  struct qgmd_checkpoint *checkpoint; /* NULL: no checkpoints */
} qgmd_node_t;

/* Builds the optimizer (with the shared initial model), the exchange and
 * the buffers, after qgmd_rank_setup; node->topology was built and checked
 * at start-up (qgmd_make_topology). Returns an exit status. */
int qgmd_node_setup(qgmd_node_t *node, char *err, size_t errlen);
/* With --shared-memory=auto, the exchange's messages between peers of
 * this host become read in place (qgmd_exchange_share_host). Collective
 * over the host: only once every rank's qgmd_node_setup succeeded.
 * Returns an exit status. */
int qgmd_node_share_host(qgmd_node_t *node, char *err, size_t errlen);
/* Frees what qgmd_node_setup built and the topology; the services are
 * qgmd_rank_free's. */
void qgmd_node_free(qgmd_node_t *node);

/* Trains cfg->epochs epochs on the node's loop, evaluating after each, or
 * until a stop is agreed. Returns an exit status. */
int qgmd_train(qgmd_node_t *node);

/* Evaluation (eval.c). Collective over all ranks, asynchronous: `done` runs
 * on the loop thread when node->rank.last holds the result. */
void qgmd_evaluate(qgmd_node_t *node, qgmd_done_fn done);
/* Whether the step just done ends an evaluation interval: an epoch's end,
 * or every --eval-every steps. */
int qgmd_eval_due(const qgmd_node_t *node);

#endif /* QGMD_NODE_H */
