/* rank.h - the services every rank holds, whatever its mode: who it is in
 * the job, its loop, control socket, trace and metrics file, its data and
 * model, the schedule it counts steps by, how its run ends, its time
 * totals and its latest evaluation. The synchronous gossip node (node.h)
 * embeds them; the asynchronous server and workers (async.h) use them
 * alone. Files that need only these include this header, not node.h. */
#ifndef QGMD_RANK_H
#define QGMD_RANK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "collapse.h"
#include "config.h"
#include "loop.h"
#include "placement.h"
#include "stop.h"
#include "test_set.h"
#include "qgm.h"

struct qgmd_control;
struct qgmd_exchange;
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
  /* ||m_i|| of the nodes' momentum buffers: mean, least and largest
   * (has_momentum 0: the algorithm keeps none). How far local momenta
   * drift apart is what QG-DSGDm-N is about (docs/ALGORITHMS.md). */
  int has_momentum;
  double momentum_norm_mean, momentum_norm_min, momentum_norm_max;
  /* The gossip messages lost so far (--drop-rate; dropping 0: none), and
   * push-sum's weights (has_push_sum): least, largest and their sum, n
   * while no share is lost on the way. */
  int dropping, has_push_sum;
  double messages_lost;
  double push_sum_min, push_sum_max, push_sum_sum;
  double compute_s, comm_s; /* so far, mean over nodes */
  /* Per step so far, mean over nodes: bytes sent, and of them to ranks
   * on other hosts. */
  double bytes_per_step, between_hosts_per_step, in_place_per_step;
} qgmd_evaluation_t;

typedef struct qgmd_rank {
  const qgmd_config_t *cfg;
  int id, nodes; /* this rank, of `nodes` in the job */
  int ranks_here; /* of the job on this host */
  int async; /* parameter-server mode: rank 0 serves (async.h) */
  qgmd_placement_t placement; /* which ranks share a host */
  /* Where the rank's state and data come from. A run resumed on fewer
   * ranks (--resume-ranks) continues the checkpoint's rank from_rank of
   * from_nodes, and trains on part `part` of the partition into `parts`
   * (the shard that rank trained on; the left-out ranks' parts are
   * dropped). Otherwise they are id, nodes, id, nodes. */
  int from_rank, from_nodes;
  int part, parts;

  qgm_dataset_t *train; /* this rank's shard only */
  qgm_dataset_t *test;  /* the full test set, shared on the host */
  qgmd_test_set_t test_set;
  qgm_model_t *model;
  qgm_lr_schedule_t schedule;
  /* A step is one minibatch gradient on the rank's shard; the server's is
   * one update of its model, an epoch of them every worker's pass over
   * its shard (async_server.c). */
  uint64_t steps_per_epoch, total_steps;
  uint64_t step; /* steps done */
  double lr;     /* of the step in progress */

  qgmd_loop_t loop;
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

  qgmd_evaluation_t last, best;
  qgmd_chance_t chance; /* its streak at chance (qgmd_stop_if_collapsed) */
  uint64_t collectives; /* collectives joined (the watchdog) */
  int status; /* exit status */

  /* The synchronous node's exchange, whose bytes the reports count
   * (qgmd_rank_traffic); NULL on the asynchronous ranks. */
  const struct qgmd_exchange *exchange;
  FILE *metrics; /* rank 0 only; NULL when not requested */
  struct qgmd_control *control;
  struct qgmd_trace *trace;
} qgmd_rank_t;

/* Loads this rank's shard and the test set from the files the host's
 * ranks share (host_files.h: the dataset qgmd_host_files_prefetch was
 * given, released here): in the asynchronous mode the workers share the
 * training set and the server holds worker 1's shard, for the model's
 * shape only. Returns an exit status (0, or 2 for bad input) with a
 * one-line reason in err. */
struct qgmd_host_files;
int qgmd_rank_load_data(qgmd_rank_t *rank, struct qgmd_host_files *files,
                        char *err, size_t errlen);

/* Builds the model (its weights are the mode's to initialise), the step
 * counts and the schedule, and checks --straggle against the job's
 * ranks. Returns an exit status. */
int qgmd_rank_setup(qgmd_rank_t *rank, char *err, size_t errlen);
/* Frees the data, the model and the placement and closes the metrics
 * file. */
void qgmd_rank_free(qgmd_rank_t *rank);

/* What a rank has sent over the run, as its exchange counts it (exchange.h);
 * an asynchronous rank counts nothing. */
typedef struct qgmd_traffic {
  double bytes_sent, between_hosts; /* of them, to ranks on other hosts */
  int peers; /* the most peers of a round, at least 1 */
} qgmd_traffic_t;
qgmd_traffic_t qgmd_rank_traffic(const qgmd_rank_t *rank);

#endif /* QGMD_RANK_H */
