/* async_worker.c - a worker of the asynchronous mode: one chain of events
 * on the rank's loop,
 *
 *   model_arrived   the server's model (or its stop) is in
 *   gradient_work   (worker thread) minibatch gradient at that model,
 *                   slowed down by --straggle
 *   gradient_done   send the gradient, post the receive of the next model
 *
 * so a worker has at most one gradient in flight and never waits for the
 * other workers, only for the server's reply. */
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "async.h"
#include "control.h"
#include "log.h"
#include "mpi_util.h"
#include "trace.h"

enum { REPORT_EVERY = 8 }; /* gradients between status reports */

typedef struct worker {
  qgmd_node_t *node;
  size_t dim;
  float *model;   /* [go, x] as received */
  float *message; /* [trailer, g] as sent */
  /* [0]: the model's receive, [1]: the gradient's send. */
  MPI_Request requests[2];
  qgmd_wait_t wait;
  double waiting_since;
} worker_t;

static void post_exchange(worker_t *w, int with_gradient);

int qgmd_async_mode(const qgmd_config_t *cfg) {
  qgm_async_rule_t rule;
  return qgm_async_rule_parse(cfg->algorithm, &rule) == 0;
}

static void slow_down(double factor, double worked_s) {
  double extra = (factor - 1.0) * worked_s;
  struct timespec ts = {(time_t)extra, (long)((extra - (time_t)extra) * 1e9)};
  nanosleep(&ts, NULL);
}

static void gradient_work(void *arg) {
  worker_t *w = arg;
  qgmd_node_t *node = w->node;
  const size_t batch = (size_t)node->cfg->batch_size;
  uint64_t in_epoch = node->step % node->steps_per_epoch;
  double t0 = qgmd_now();
  qgm_dataset_gather(node->train, node->order + in_epoch * batch, batch,
                     node->batch_x, node->batch_y);
  qgm_model_loss_grad(node->model, w->model + 1, node->batch_x,
                      node->batch_y, batch, w->message + QGMD_TRAILER_LEN,
                      &node->loss);
  if (node->straggle > 1.0)
    slow_down(node->straggle, qgmd_now() - t0);
  double t1 = qgmd_now();
  node->compute_s += t1 - t0;
  qgmd_trace_span(node->trace, "compute", QGMD_TRACE_WORKER, t0, t1);
}

static void gradient_done(void *arg) {
  worker_t *w = arg;
  qgmd_node_t *node = w->node;
  if (!isfinite(node->loss)) {
    LOG(LOG_ERROR, "loss is %g after %llu gradients: training diverged "
        "(try a smaller --lr)", (double)node->loss,
        (unsigned long long)node->step);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  node->step++;
  float *trailer = w->message;
  trailer[QGMD_TRAILER_RANK] = (float)node->rank;
  trailer[QGMD_TRAILER_LOSS] = node->loss;
  trailer[QGMD_TRAILER_STOP] = (float)node->stop.asked;
  trailer[QGMD_TRAILER_COMPUTE_S] = (float)node->compute_s;
  trailer[QGMD_TRAILER_WAIT_S] = (float)node->wait_s;
  if (node->step % REPORT_EVERY == 0)
    qgmd_control_report(node->control, node);
  post_exchange(w, 1);
}

static void all_reported(void *arg) {
  worker_t *w = arg;
  qgmd_loop_stop(&w->node->loop);
}

static void model_arrived(void *arg) {
  worker_t *w = arg;
  qgmd_node_t *node = w->node;
  double now = qgmd_now();
  node->wait_s += now - w->waiting_since;
  qgmd_trace_span(node->trace, "wait", QGMD_TRACE_LOOP, w->waiting_since,
                  now);
  if (w->model[0] == 0.0f) {
    qgmd_control_finish(node->control, all_reported, w);
    return;
  }
  if (node->step % node->steps_per_epoch == 0)
    qgm_rng_shuffle(&node->rng, node->order, qgm_dataset_count(node->train));
  qgmd_loop_work(&node->loop, gradient_work, gradient_done, w);
}

/* Posts the next model's receive, and the gradient's send after a step:
 * both must complete before the buffers are touched again. */
static void post_exchange(worker_t *w, int with_gradient) {
  MPI_Irecv(w->model, (int)w->dim + 1, MPI_FLOAT, 0, QGMD_ASYNC_MODEL_TAG,
            MPI_COMM_WORLD, &w->requests[0]);
  if (with_gradient)
    MPI_Isend(w->message, (int)w->dim + QGMD_TRAILER_LEN, MPI_FLOAT, 0,
              QGMD_ASYNC_GRAD_TAG, MPI_COMM_WORLD, &w->requests[1]);
  w->waiting_since = qgmd_now();
  qgmd_loop_wait(&w->node->loop, &w->wait, w->requests, with_gradient ? 2 : 1,
                 model_arrived, w);
}

int qgmd_async_work(qgmd_node_t *node) {
  worker_t w = {.node = node, .dim = qgm_model_num_params(node->model)};
  w.model = malloc((w.dim + 1) * sizeof *w.model);
  w.message = malloc((w.dim + QGMD_TRAILER_LEN) * sizeof *w.message);
  if (!w.model || !w.message) {
    LOG(LOG_ERROR, "out of memory");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  node->start_s = qgmd_now();
  post_exchange(&w, 0);
  qgmd_loop_run(&node->loop);
  free(w.model);
  free(w.message);
  return node->status;
}
