/* eval.c - the evaluation after each epoch (and every --eval-every
 * steps), and the records it produces.
 *
 * Every node scores its own model on the whole test set; the averaged model
 * is scored once, each rank taking a slice of the test set. The heavy parts
 * run on the worker thread and the reductions are non-blocking, so the
 * loop keeps serving signals and the control socket meanwhile. */
#include <stdarg.h>

#include "control.h"
#include "log.h"
#include "mpi_util.h"
#include "node.h"
#include "trace.h"

/* The phases of one evaluation, in their order. Each ends either on the
 * worker thread (scoring) or in a non-blocking reduction, and its end
 * starts the next (advance). */
typedef enum eval_phase {
  EVAL_SCORE_LOCAL,   /* worker: this node's model on the whole test set */
  EVAL_SUM_MODELS,    /* MPI: every node's model summed, for the average */
  EVAL_SCORE_AVERAGE, /* worker: the averaged model on this rank's slice */
  EVAL_SUM_SCORES,    /* MPI: the counts, losses, times and bytes summed */
  EVAL_DONE,          /* node->last holds the evaluation */
} eval_phase_t;

typedef struct eval_job {
  qgmd_node_t *node;
  qgmd_done_fn done;
  double started;
  eval_phase_t phase;
} eval_job_t;

static eval_job_t job; /* one evaluation at a time per rank */

static void score_local(void *arg) {
  qgmd_node_t *node = ((eval_job_t *)arg)->node;
  size_t correct = 0;
  double loss_sum = 0.0;
  qgm_model_evaluate(node->model, qgm_optim_params(node->optim),
                     qgm_dataset_images(node->test),
                     qgm_dataset_labels(node->test),
                     qgm_dataset_count(node->test), &correct, &loss_sum);
  const double acc = (double)correct / (double)qgm_dataset_count(node->test);
  node->eval_scratch[QGMD_SUM_CORRECT_LOCAL] = (double)correct;
  node->eval_scratch[QGMD_SUM_LOSS_LOCAL] = loss_sum;
  node->eval_extremes[0] = acc;
  node->eval_extremes[1] = -acc;
}

static void score_average(void *arg) {
  qgmd_node_t *node = ((eval_job_t *)arg)->node;
  const size_t dim = qgm_optim_dim(node->optim);
  qgm_vec_scale_copy(node->avg_params, (float)(1.0 / node->nodes),
                     node->avg_params, dim);
  node->eval_scratch[QGMD_SUM_CONSENSUS] =
      qgm_vec_dist2(qgm_optim_params(node->optim), node->avg_params, dim);
  const size_t tests = qgm_dataset_count(node->test);
  const size_t lo = tests * (size_t)node->rank / (size_t)node->nodes;
  const size_t hi = tests * ((size_t)node->rank + 1) / (size_t)node->nodes;
  size_t correct = 0;
  double loss_sum = 0.0;
  if (hi > lo)
    qgm_model_evaluate(node->model, node->avg_params,
                       qgm_dataset_images(node->test) +
                           lo * qgm_dataset_dim(node->test),
                       qgm_dataset_labels(node->test) + lo, hi - lo, &correct,
                       &loss_sum);
  node->eval_scratch[QGMD_SUM_CORRECT_AVG] = (double)correct;
  node->eval_scratch[QGMD_SUM_LOSS_AVG] = loss_sum;
}

/* The last step at or before `step` that ended an evaluation interval. */
static uint64_t interval_start(const qgmd_node_t *node, uint64_t step) {
  uint64_t start = step - step % node->steps_per_epoch;
  const uint64_t every = (uint64_t)node->cfg->eval_every;
  if (every > 0 && step - step % every > start)
    start = step - step % every;
  return start;
}

int qgmd_eval_due(const qgmd_node_t *node) {
  return interval_start(node, node->step) == node->step;
}

/* What this rank adds to the scores' sums besides them: its training loss
 * and times since the last evaluation, and its bytes per step. */
static void add_own_sums(qgmd_node_t *node) {
  /* epoch_loss sums the steps since the previous evaluation (a resumed
   * run restores it), so their count follows from the step alone. */
  const uint64_t steps = node->step - interval_start(node, node->step - 1);
  node->eval_scratch[QGMD_SUM_TRAIN_LOSS] = node->epoch_loss / (double)steps;
  node->eval_scratch[QGMD_SUM_COMPUTE_S] = node->compute_s;
  node->eval_scratch[QGMD_SUM_COMM_S] = node->comm_s;
  const double done = node->step > node->first_step
                          ? (double)(node->step - node->first_step)
                          : 1.0;
  node->eval_scratch[QGMD_SUM_BYTES] = node->gossip.bytes_sent / done;
  node->eval_scratch[QGMD_SUM_BYTES_BETWEEN_HOSTS] =
      node->gossip.bytes_between_hosts / done;
}

/* node->last from the sums, and the best evaluation so far. */
static void collect(qgmd_node_t *node) {
  const double n = node->nodes, tests = (double)qgm_dataset_count(node->test);
  qgmd_evaluation_t *e = &node->last;
  const double *sum = node->eval_sum;
  e->epoch = (double)node->step / (double)node->steps_per_epoch;
  e->step = node->step;
  e->lr = node->lr;
  e->acc_local_mean = sum[QGMD_SUM_CORRECT_LOCAL] / tests / n;
  e->acc_local_max = node->eval_extremes_all[0];
  e->acc_local_min = -node->eval_extremes_all[1];
  e->consensus = sum[QGMD_SUM_CONSENSUS] / n;
  e->acc_avg_model = sum[QGMD_SUM_CORRECT_AVG] / tests;
  e->loss_local_mean = sum[QGMD_SUM_LOSS_LOCAL] / tests / n;
  e->loss_avg_model = sum[QGMD_SUM_LOSS_AVG] / tests;
  e->train_loss = sum[QGMD_SUM_TRAIN_LOSS] / n;
  e->compute_s = sum[QGMD_SUM_COMPUTE_S] / n;
  e->comm_s = sum[QGMD_SUM_COMM_S] / n;
  e->bytes_per_step = sum[QGMD_SUM_BYTES] / n;
  e->between_hosts_per_step = sum[QGMD_SUM_BYTES_BETWEEN_HOSTS] / n;
  if (e->acc_avg_model > node->best.acc_avg_model)
    node->best = *e;
}

static void advance(void *arg);

/* Starts j's phase; its end calls advance. */
static void start_phase(eval_job_t *j) {
  qgmd_node_t *node = j->node;
  switch (j->phase) {
  case EVAL_SCORE_LOCAL:
    qgmd_loop_work(&node->loop, score_local, advance, j);
    return;
  case EVAL_SUM_MODELS:
    qgmd_control_joining(node);
    MPI_Iallreduce(qgm_optim_params(node->optim), node->avg_params,
                   (int)qgm_optim_dim(node->optim), MPI_FLOAT, MPI_SUM,
                   MPI_COMM_WORLD, &node->eval_requests[0]);
    qgmd_loop_wait(&node->loop, &node->eval_wait, node->eval_requests, 1,
                   advance, j);
    return;
  case EVAL_SCORE_AVERAGE:
    qgmd_loop_work(&node->loop, score_average, advance, j);
    return;
  case EVAL_SUM_SCORES:
    add_own_sums(node);
    qgmd_control_joining(node);
    /* Both reductions in flight at once, completed together. */
    MPI_Iallreduce(node->eval_scratch, node->eval_sum, QGMD_EVAL_SUMS,
                   MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                   &node->eval_requests[0]);
    MPI_Iallreduce(node->eval_extremes, node->eval_extremes_all, 2,
                   MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD,
                   &node->eval_requests[1]);
    qgmd_loop_wait(&node->loop, &node->eval_wait, node->eval_requests, 2,
                   advance, j);
    return;
  case EVAL_DONE:
    collect(node);
    qgmd_trace_span(node->trace, "evaluate", QGMD_TRACE_LOOP, j->started,
                    qgmd_now());
    j->done(node);
    return;
  }
}

static void advance(void *arg) {
  eval_job_t *j = arg;
  j->phase++;
  start_phase(j);
}

void qgmd_evaluate(qgmd_node_t *node, qgmd_done_fn done) {
  job = (eval_job_t){.node = node, .done = done, .started = qgmd_now(),
                     .phase = EVAL_SCORE_LOCAL};
  start_phase(&job);
}

void qgmd_write_record(FILE *metrics, const char *fmt, ...) {
  static int warned;
  if (!metrics)
    return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(metrics, fmt, ap);
  va_end(ap);
  if ((fflush(metrics) != 0 || ferror(metrics)) && !warned) {
    warned = 1;
    LOG(LOG_WARN, "--metrics: cannot write the metrics file; training goes "
        "on without it");
  }
}

void qgmd_report_eval(qgmd_node_t *node) {
  if (node->rank != 0)
    return;
  const qgmd_evaluation_t *e = &node->last;
  double wall = qgmd_now() - node->start_s;
  qgmd_write_record(node->metrics,
            "{\"type\":\"eval\",\"epoch\":%.6g,\"step\":%llu,\"wall_s\":%.3f,"
            "\"lr\":%.6g,\"train_loss\":%.6f,\"test_acc_local_mean\":%.6f,"
            "\"test_acc_avg_model\":%.6f,\"consensus_dist\":%.6g,"
            "\"compute_s\":%.3f,\"comm_s\":%.3f,"
            "\"test_loss_avg_model\":%.6f,\"test_loss_local_mean\":%.6f,"
            "\"test_acc_local_min\":%.6f,\"test_acc_local_max\":%.6f,"
            "\"bytes_sent\":%.0f,\"bytes_per_step\":%.0f,"
            "\"bytes_between_hosts_per_step\":%.0f}\n",
            e->epoch, (unsigned long long)e->step, wall, e->lr,
            e->train_loss, e->acc_local_mean, e->acc_avg_model, e->consensus,
            e->compute_s, e->comm_s, e->loss_avg_model, e->loss_local_mean,
            e->acc_local_min, e->acc_local_max,
            e->bytes_per_step * (double)(node->step - node->first_step),
            e->bytes_per_step, e->between_hosts_per_step);
  LOG(LOG_INFO,
      "epoch %.4g/%ld  step %llu  lr %.4g  loss %.4f  acc(avg model) %.4f  "
      "acc(local mean) %.4f  consensus %.3g  %.1fs",
      e->epoch, node->cfg->epochs, (unsigned long long)e->step, e->lr,
      e->train_loss, e->acc_avg_model, e->acc_local_mean, e->consensus, wall);
}

void qgmd_report_summary(qgmd_node_t *node) {
  if (node->rank != 0)
    return;
  const qgmd_evaluation_t *e = &node->last;
  double wall = qgmd_now() - node->start_s;
  const int early = qgmd_stop_early(&node->stop);
  qgmd_write_record(node->metrics,
            "{\"type\":\"summary\",\"epochs\":%.6g,\"steps\":%llu,"
            "\"stopped_early\":%s,\"wall_s\":%.3f,"
            "\"final_test_acc_avg_model\":%.6f,"
            "\"best_test_acc_avg_model\":%.6f,"
            "\"final_test_acc_local_mean\":%.6f,"
            "\"final_consensus_dist\":%.6g,\"final_train_loss\":%.6f,"
            "\"compute_s\":%.3f,\"comm_s\":%.3f,\"wait_s\":%.3f,"
            "\"steps_s\":%.3f,\"wait_cpu_s\":%.4f,\"bytes_sent\":%.0f}\n",
            (double)node->step / (double)node->steps_per_epoch,
            (unsigned long long)node->step,
            early ? "true" : "false", wall, e->acc_avg_model,
            node->best.acc_avg_model, e->acc_local_mean, e->consensus,
            e->train_loss, node->compute_s, node->comm_s, node->wait_s,
            node->steps_s, node->wait_cpu_s, node->gossip.bytes_sent);
  LOG(LOG_INFO, "%s: %s on %d nodes (%s), %llu steps in %.1f s: "
      "averaged-model test accuracy %.4f (best %.4f), local models %.4f, "
      "consensus distance %.3g",
      early ? "stopped" : "done", node->cfg->algorithm, node->nodes,
      node->cfg->topology, (unsigned long long)node->step, wall,
      e->acc_avg_model, node->best.acc_avg_model, e->acc_local_mean,
      e->consensus);
}
