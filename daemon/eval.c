/* eval.c - the evaluation after each epoch, and the records it produces.
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

typedef struct eval_job {
  qgmd_node_t *node;
  qgmd_done_fn done;
  double started;
} eval_job_t;

static eval_job_t job; /* one evaluation at a time per rank */

static void local_work(void *arg) {
  qgmd_node_t *node = ((eval_job_t *)arg)->node;
  size_t correct = 0;
  double loss_sum = 0.0;
  qgm_model_evaluate(node->model, qgm_optim_params(node->optim),
                     qgm_dataset_images(node->test),
                     qgm_dataset_labels(node->test),
                     qgm_dataset_count(node->test), &correct, &loss_sum);
  node->eval_scratch[0] = (double)correct;
}

static void average_work(void *arg) {
  qgmd_node_t *node = ((eval_job_t *)arg)->node;
  const size_t dim = qgm_optim_dim(node->optim);
  qgm_vec_scale_copy(node->avg_params, (float)(1.0 / node->nodes),
                     node->avg_params, dim);
  node->eval_scratch[1] =
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
  node->eval_scratch[2] = (double)correct;
}

static void sums_done(void *arg) {
  eval_job_t *j = arg;
  qgmd_node_t *node = j->node;
  const double n = node->nodes, tests = (double)qgm_dataset_count(node->test);
  qgmd_evaluation_t *e = &node->last;
  e->step = node->step;
  e->lr = node->lr;
  e->acc_local_mean = node->eval_sum[0] / tests / n;
  e->consensus = node->eval_sum[1] / n;
  e->acc_avg_model = node->eval_sum[2] / tests;
  e->train_loss = node->eval_sum[3] / n;
  e->compute_s = node->eval_sum[4] / n;
  e->comm_s = node->eval_sum[5] / n;
  if (e->acc_avg_model > node->best.acc_avg_model)
    node->best = *e;
  qgmd_trace_span(node->trace, "evaluate", QGMD_TRACE_LOOP, j->started,
                  qgmd_now());
  j->done(node);
}

static void average_done(void *arg) {
  eval_job_t *j = arg;
  qgmd_node_t *node = j->node;
  uint64_t steps = node->step % node->steps_per_epoch;
  if (steps == 0)
    steps = node->steps_per_epoch;
  node->eval_scratch[3] = node->epoch_loss / (double)steps;
  node->eval_scratch[4] = node->compute_s;
  node->eval_scratch[5] = node->comm_s;
  qgmd_control_joining(node);
  MPI_Iallreduce(node->eval_scratch, node->eval_sum, 6, MPI_DOUBLE, MPI_SUM,
                 MPI_COMM_WORLD, &node->eval_request);
  qgmd_loop_wait(&node->loop, &node->eval_wait, &node->eval_request, 1,
                 sums_done, j);
}

static void params_summed(void *arg) {
  eval_job_t *j = arg;
  qgmd_loop_work(&j->node->loop, average_work, average_done, j);
}

static void local_done(void *arg) {
  eval_job_t *j = arg;
  qgmd_node_t *node = j->node;
  qgmd_control_joining(node);
  MPI_Iallreduce(qgm_optim_params(node->optim), node->avg_params,
                 (int)qgm_optim_dim(node->optim), MPI_FLOAT, MPI_SUM,
                 MPI_COMM_WORLD, &node->eval_request);
  qgmd_loop_wait(&node->loop, &node->eval_wait, &node->eval_request, 1,
                 params_summed, j);
}

void qgmd_evaluate(qgmd_node_t *node, qgmd_done_fn done) {
  job = (eval_job_t){.node = node, .done = done, .started = qgmd_now()};
  qgmd_loop_work(&node->loop, local_work, local_done, &job);
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
            "{\"type\":\"eval\",\"epoch\":%ld,\"step\":%llu,\"wall_s\":%.3f,"
            "\"lr\":%.6g,\"train_loss\":%.6f,\"test_acc_local_mean\":%.6f,"
            "\"test_acc_avg_model\":%.6f,\"consensus_dist\":%.6g,"
            "\"compute_s\":%.3f,\"comm_s\":%.3f}\n",
            e->epoch, (unsigned long long)e->step, wall, e->lr,
            e->train_loss, e->acc_local_mean, e->acc_avg_model, e->consensus,
            e->compute_s, e->comm_s);
  LOG(LOG_INFO,
      "epoch %ld/%ld  step %llu  lr %.4g  loss %.4f  acc(avg model) %.4f  "
      "acc(local mean) %.4f  consensus %.3g  %.1fs",
      e->epoch, node->cfg->epochs, (unsigned long long)e->step, e->lr,
      e->train_loss, e->acc_avg_model, e->acc_local_mean, e->consensus, wall);
}

void qgmd_report_summary(qgmd_node_t *node) {
  if (node->rank != 0)
    return;
  const qgmd_evaluation_t *e = &node->last;
  double wall = qgmd_now() - node->start_s;
  qgmd_write_record(node->metrics,
            "{\"type\":\"summary\",\"epochs\":%ld,\"steps\":%llu,"
            "\"stopped_early\":%s,\"wall_s\":%.3f,"
            "\"final_test_acc_avg_model\":%.6f,"
            "\"best_test_acc_avg_model\":%.6f,"
            "\"final_test_acc_local_mean\":%.6f,"
            "\"final_consensus_dist\":%.6g,\"final_train_loss\":%.6f,"
            "\"compute_s\":%.3f,\"comm_s\":%.3f,\"wait_s\":%.3f,"
            "\"steps_s\":%.3f,\"wait_cpu_s\":%.4f}\n",
            e->epoch, (unsigned long long)node->step,
            node->stopped ? "true" : "false", wall, e->acc_avg_model,
            node->best.acc_avg_model, e->acc_local_mean, e->consensus,
            e->train_loss, node->compute_s, node->comm_s, node->wait_s,
            node->steps_s, node->wait_cpu_s);
  LOG(LOG_INFO, "%s: %s on a %d-node %s, %llu steps in %.1f s: "
      "averaged-model test accuracy %.4f (best %.4f), local models %.4f, "
      "consensus distance %.3g",
      node->stopped ? "stopped" : "done", node->cfg->algorithm, node->nodes,
      node->cfg->topology, (unsigned long long)node->step, wall,
      e->acc_avg_model, node->best.acc_avg_model, e->acc_local_mean,
      e->consensus);
}
