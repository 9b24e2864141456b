/* node.h - everything one rank holds while it trains. */
#ifndef QGMD_NODE_H
#define QGMD_NODE_H

#include <stdint.h>
#include <stdio.h>

#include "job/config.h"
#include "gossip.h"
#include "loop.h"
#include "placement.h"
#include "stop.h"
#include "qgm.h"

struct qgmd_checkpoint;
struct qgmd_control;
struct qgmd_trace;

typedef struct qgmd_evaluation {
  double epoch; /* epochs done: whole at an epoch's end */
  uint64_t step; /* 0: no evaluation yet */
  double lr;
  double train_loss;     /* mean over nodes of the mean batch loss since
                            the previous evaluation */
  double acc_local_mean; /* mean over nodes of each local model's accuracy */
  double acc_local_min, acc_local_max; /* the worst and best local model */
  double acc_avg_model;  /* accuracy of the averaged model */
  double loss_local_mean; /* test loss: mean over the local models */
  double loss_avg_model;  /* test loss of the averaged model */
  double consensus;      /* mean over nodes of ||x_i - x_bar||^2 */
  double compute_s, comm_s; /* so far, mean over nodes */
  /* Per step so far, mean over nodes: bytes sent, and of them to ranks
   * on other hosts. */
  double bytes_per_step, between_hosts_per_step;
} qgmd_evaluation_t;

/* The sums every evaluation reduces over the ranks (eval.c). */
enum qgmd_eval_sum {
  QGMD_SUM_CORRECT_LOCAL,
  QGMD_SUM_CONSENSUS,
  QGMD_SUM_CORRECT_AVG,
  QGMD_SUM_TRAIN_LOSS,
  QGMD_SUM_COMPUTE_S,
  QGMD_SUM_COMM_S,
  QGMD_SUM_LOSS_LOCAL,
  QGMD_SUM_LOSS_AVG,
  QGMD_SUM_BYTES,                /* per step, since the process started */
  QGMD_SUM_BYTES_BETWEEN_HOSTS,  /* of them, to ranks on other hosts */
  QGMD_EVAL_SUMS
};

/* What a rank tells rank 0 about itself for the status report. */
typedef struct qgmd_rank_status {
  double step;
  double compute_s; /* gradients, on the worker */
  double comm_s;    /* exchanges in flight */
  double steps_s;   /* wall time inside steps (evaluations excluded) */
  double wait_s;    /* steps blocked on an exchange after computing */
  double bytes_sent;
  double collectives; /* collectives joined so far (qgmd_control_joining) */
  double bytes_per_step;         /* since this process started */
  double between_hosts_per_step; /* of them, to ranks on other hosts */
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
  qgmd_placement_t placement; /* which ranks share a host */
  qgmd_gossip_t gossip;
  qgm_relay_t *relay; /* RelaySGD's relayed sums; NULL for other algorithms */
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
  double device_s; /* a gradient's emulated device time (gradient.h) */

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

  qgmd_stop_t stop; /* how the run ends (stop.h) */

  /* Time, summed over the run. */
  double start_s; /* the run's start on the qgmd_now() clock: earlier than
                     this process's by the stopped run's wall time when
                     resumed (progress.h) */
  double resumed_wall_s;
  double process_start_s; /* this process's first step, for the pace */
  uint64_t first_step;    /* its step then (> 0 when resumed) */
  double compute_s, comm_s, wait_s, steps_s;
  double wait_cpu_s; /* CPU the loop thread used while a step waited */
  double step_began;
  double gradient_ended; /* when the worker finished, for the hand-off */

  qgmd_evaluation_t last, best;
  double eval_scratch[QGMD_EVAL_SUMS], eval_sum[QGMD_EVAL_SUMS];
  /* The best local accuracy and minus the worst, reduced with MPI_MAX. */
  double eval_extremes[2], eval_extremes_all[2];
  MPI_Request eval_requests[2];
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
/* Whether the step just done ends an evaluation interval: an epoch's end,
 * or every --eval-every steps. */
int qgmd_eval_due(const qgmd_node_t *node);
/* Rank 0: writes the eval record and the progress line of node->last. */
void qgmd_report_eval(qgmd_node_t *node);
/* Rank 0: writes the summary record and line. */
void qgmd_report_summary(qgmd_node_t *node);

#endif /* QGMD_NODE_H */
