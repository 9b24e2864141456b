/* node.h - everything one rank holds while it trains. */
#ifndef QGMD_NODE_H
#define QGMD_NODE_H

#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "gossip.h"
#include "loop.h"
#include "qgm.h"

struct qgmd_checkpoint;
struct qgmd_control;
struct qgmd_trace;

typedef struct qgmd_evaluation {
  long epoch;
  uint64_t step;
  double lr;
  double train_loss;     /* mean over nodes of the epoch's mean batch loss */
  double acc_local_mean; /* mean over nodes of each local model's accuracy */
  double acc_avg_model;  /* accuracy of the averaged model */
  double consensus;      /* mean over nodes of ||x_i - x_bar||^2 */
  double compute_s, comm_s; /* so far, mean over nodes */
} qgmd_evaluation_t;

/* What a rank tells rank 0 about itself for the status report. */
typedef struct qgmd_rank_status {
  double step;
  double compute_s; /* gradients, on the worker */
  double comm_s;    /* exchanges in flight */
  double steps_s;   /* wall time inside steps (evaluations excluded) */
  double wait_s;    /* steps blocked on an exchange after computing */
  double bytes_sent;
  double collectives; /* collectives joined so far (qgmd_control_joining) */
  double updated_s;   /* rank 0's clock when it last heard */
} qgmd_rank_status_t;

typedef struct qgmd_node {
  const qgmd_config_t *cfg;
  int rank, nodes;
  int ranks_here; /* of the job on this host (qgmd_memory_ranks_here) */
  int async; /* parameter-server mode: rank 0 serves (async.h) */

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
  float *avg_params; /* the averaged model, for evaluation */
  float *snapshot;   /* x at the start of an overlapped round */

  uint64_t steps_per_epoch, total_steps;
  uint64_t step;     /* steps done */
  uint64_t local_steps;
  int overlap;
  double straggle; /* compute this many times slower (emulated) */

  /* The step in progress. */
  double lr;
  float loss;
  const float *half; /* the local step's half-step model */
  double epoch_loss;
  int exchange_pending; /* an exchange is in flight */
  int step_waiting;     /* the step cannot finish before the exchange */
  double exchange_started, wait_started, wait_cpu_started;

  qgmd_loop_t loop;
  qgmd_wait_t exchange_wait, control_wait, eval_wait;

  /* Stop agreement: every CONTROL_EVERY steps one MPI_Iallreduce. */
  int stop_requested; /* a signal or qgmctl asked this rank */
  int stop_vote, stop_result;
  int awaiting_control; /* a step waits for the last vote */
  MPI_Request control_request;
  int stopped; /* the run ended early, at an agreed step */

  /* Time, summed over the run. */
  double start_s;
  double compute_s, comm_s, wait_s, steps_s;
  double wait_cpu_s; /* CPU the loop thread used while a step waited */
  double step_began;
  double gradient_ended; /* when the worker finished, for the hand-off */

  qgmd_evaluation_t last, best;
  double eval_scratch[6], eval_sum[6];
  MPI_Request eval_request;
  uint64_t collectives; /* collectives joined (the watchdog) */
  int status; /* exit status */

  FILE *metrics; /* rank 0 only; NULL when not requested */
  struct qgmd_control *control;
  struct qgmd_trace *trace;
  struct qgmd_checkpoint *checkpoint; /* NULL: no checkpoints */
} qgmd_node_t;

/* Loads this rank's shard and the test set. Returns an exit status (0, or
 * 2 for bad input) with a one-line reason in err. */
int qgmd_node_load_data(qgmd_node_t *node, char *err, size_t errlen);

/* Builds model, optimizer, gossip and buffers (the topology is built
 * before the data is loaded, by qgmd_make_topology); identical initial weights
 * on every rank come from the shared seed. Returns an exit status. */
int qgmd_node_setup(qgmd_node_t *node, char *err, size_t errlen);
void qgmd_node_free(qgmd_node_t *node);

/* Trains cfg->epochs epochs on the node's loop, evaluating after each, or
 * until a stop is agreed. Returns an exit status. */
int qgmd_train(qgmd_node_t *node);

/* Evaluation (eval.c). Collective over all ranks, asynchronous: `done` runs
 * on the loop thread when node->last holds the result. */
void qgmd_evaluate(qgmd_node_t *node, qgmd_done_fn done);
/* Appends one JSON Lines record to the metrics file (nothing when metrics
 * is NULL) and flushes it, so that a crash loses at most the record being
 * written; a write error is reported once. */
void qgmd_write_record(FILE *metrics, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Rank 0: writes the eval record and the progress line of node->last. */
void qgmd_report_eval(qgmd_node_t *node);
/* Rank 0: writes the summary record and line. */
void qgmd_report_summary(qgmd_node_t *node);

#endif /* QGMD_NODE_H */
