/* async_worker.c - a worker of the asynchronous mode: one chain of events
 * on the rank's loop,
 *
 *   model_arrived   the server's model (or its stop) is in
 *   gradient_work   (worker thread) minibatch gradient at that model
 *                   (gradient.h: the synchronous mode's, slow-down too)
 *   gradient_done   send the gradient, post the receive of the next model
 *
 * so a worker has at most one gradient in flight and never waits for the
 * other workers, only for the server's reply, and that for at most
 * --comm-timeout: then the job ends with a line naming the server. (A
 * worker GSGM holds back waits for the others too; the server, whose own
 * deadline runs from earlier, names the silent one first.) */
#include <math.h>
#include <stdlib.h>

#include "async.h"
#include "control.h"
#include "gradient.h"
#include "log.h"
#include "mpi_util.h"
#include "trace.h"
#include "watchdog.h"

enum { REPORT_EVERY = 8 }; /* gradients between status reports */

typedef struct worker {
  qgmd_rank_t *rank;
  qgmd_minibatch_t minibatch;
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

/* The shuffle in model_arrived is done before this is queued: the worker
 * thread has the minibatch's rng to itself for the augmentation. */
static void gradient_work(void *arg) {
  worker_t *w = arg;
  qgmd_gradient(w->rank, &w->minibatch, w->model + 1,
                w->message + QGMD_TRAILER_LEN);
}

static void gradient_done(void *arg) {
  worker_t *w = arg;
  qgmd_rank_t *rank = w->rank;
  if (!isfinite(w->minibatch.loss)) {
    LOG(LOG_ERROR, "loss is %g after %llu gradients: training diverged "
        "(try a smaller --lr)", (double)w->minibatch.loss,
        (unsigned long long)rank->step);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  rank->step++;
  float *trailer = w->message;
  trailer[QGMD_TRAILER_RANK] = (float)rank->id;
  trailer[QGMD_TRAILER_LOSS] = w->minibatch.loss;
  trailer[QGMD_TRAILER_STOP] = (float)rank->stop.asked;
  trailer[QGMD_TRAILER_COMPUTE_S] = (float)rank->compute_s;
  trailer[QGMD_TRAILER_WAIT_S] = (float)rank->wait_s;
  if (rank->step % REPORT_EVERY == 0)
    qgmd_control_report(rank->control, rank);
  post_exchange(w, 1);
}

static void all_reported(void *arg) {
  worker_t *w = arg;
  qgmd_loop_stop(&w->rank->loop);
}

static void model_arrived(void *arg) {
  worker_t *w = arg;
  qgmd_rank_t *rank = w->rank;
  double now = qgmd_now();
  rank->wait_s += now - w->waiting_since;
  qgmd_trace_span(rank->trace, "wait", QGMD_TRACE_LOOP, w->waiting_since,
                  now);
  if (w->model[0] == 0.0f) {
    qgmd_control_finish(rank->control, all_reported, w);
    return;
  }
  qgmd_minibatch_next(&w->minibatch, rank);
  qgmd_loop_work(&rank->loop, gradient_work, gradient_done, w);
}

/* The loop's qgmd_timeout_fn: its set is not const. */
// cppcheck-suppress constParameter
static void on_timeout(qgmd_wait_t *wait, double waited, void *arg) {
  worker_t *w = arg;
  if (wait != &w->wait || qgmd_watchdog_aborting())
    return; /* the status traffic's sets are not this worker's deadline */
  LOG(LOG_ERROR, "no model from the server, rank 0, for %.1f s "
      "(--comm-timeout=%g) after %llu gradients: it died or hangs, or holds "
      "this worker back for a worker that does; aborting the job", waited,
      w->rank->cfg->comm_timeout, (unsigned long long)w->rank->step);
  qgmd_watchdog_abort_soon(&w->rank->loop);
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
  qgmd_loop_wait(&w->rank->loop, &w->wait, w->requests, with_gradient ? 2 : 1,
                 model_arrived, w);
}

int qgmd_async_work(qgmd_rank_t *rank) {
  worker_t w = {.rank = rank, .dim = qgm_model_num_params(rank->model)};
  w.model = malloc((w.dim + 1) * sizeof *w.model);
  w.message = malloc((w.dim + QGMD_TRAILER_LEN) * sizeof *w.message);
  if (!w.model || !w.message ||
      qgmd_minibatch_init(&w.minibatch, rank) != 0) {
    LOG(LOG_ERROR, "out of memory");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  rank->start_s = qgmd_now();
  if (rank->cfg->comm_timeout > 0) {
    rank->loop.timeout_s = rank->cfg->comm_timeout;
    rank->loop.on_timeout = on_timeout;
    rank->loop.timeout_arg = &w;
  }
  post_exchange(&w, 0);
  qgmd_loop_run(&rank->loop);
  rank->loop.on_timeout = NULL; /* w is gone */
  qgmd_minibatch_free(&w.minibatch);
  free(w.model);
  free(w.message);
  return rank->status;
}
