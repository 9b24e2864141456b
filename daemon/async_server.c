/* async_server.c - rank 0 of the asynchronous mode: it holds the model,
 * and its loop handles gradients as they arrive (one receive from any
 * worker, always posted while some worker computes), applies them by the
 * rule of --algorithm (libqgm's qgm_server_t) and sends each worker whose
 * gradient was applied the model as it is then. A worker the GSGM white
 * list holds back simply gets no reply until its gradient is admitted.
 *
 * The server's model is copied every --eval-every updates, and the copies
 * are evaluated in turn on the worker thread, so that arrivals keep being
 * served meanwhile and evaluations fall at the same versions however fast
 * the run goes.
 * The run ends after epochs x (updates per epoch) updates, where an epoch
 * is one pass over the whole training set by all workers together: the
 * same total work whatever the number of workers.
 *
 * Every wait has a deadline, --comm-timeout: a worker that holds a model
 * and sends no gradient for that long (stopped, hung, cut off) ends the
 * job with a line naming it, whether the other workers keep the server
 * busy (checked at each arrival) or not (the loop's timeout on the
 * receive), and so does a worker that does not take its model. */
#include <stdlib.h>
#include <string.h>

#include "async.h"
#include "async_report.h"
#include "control.h"
#include "log.h"
#include "mpi_util.h"
#include "report.h"
#include "trace.h"
#include "watchdog.h"

typedef struct peer {
  float *outgoing; /* [go, x] in flight to this worker */
  MPI_Request request;
  qgmd_wait_t wait;
  struct server *server;
  int sending;   /* outgoing is in flight */
  int deferred;  /* send again once it is not */
  int computing; /* it holds a model and will send a gradient */
  int stopped;   /* told to stop */
  uint64_t sent_version;
  double since; /* when it was sent the model it computes on */
  double compute_s, wait_s; /* its counters, from its last gradient */
} peer_t;

typedef struct server {
  qgmd_rank_t *rank;
  qgm_server_t *rules;
  int workers;
  size_t dim;
  float *incoming; /* [trailer, g] */
  MPI_Request recv_request;
  qgmd_wait_t recv_wait;
  int receiving;
  peer_t *peers;
  int stopping, stopped_workers, finishing;
  uint64_t eval_every, next_eval;
  int evaluating;
  qgmd_async_report_t report;
} server_t;

static void send_to(server_t *s, int w);
static void maybe_finish(server_t *s);

/* -------------------------------------------------------------- sending */

static void sent(void *arg) {
  peer_t *p = arg;
  p->sending = 0;
  if (p->deferred) {
    p->deferred = 0;
    send_to(p->server, (int)(p - p->server->peers));
  }
  maybe_finish(p->server);
}

/* Sends worker w the current model, or its stop once it is stopped. A send
 * still in flight to w (its completion not yet noticed) defers this one. */
static void send_to(server_t *s, int w) {
  peer_t *p = &s->peers[w];
  if (p->sending) {
    p->deferred = 1;
    return;
  }
  int count = 1;
  p->outgoing[0] = p->stopped ? 0.0f : 1.0f;
  if (!p->stopped) {
    qgm_vec_copy(p->outgoing + 1, qgm_server_params(s->rules), s->dim);
    qgm_server_sent(s->rules, w);
    p->sent_version = qgm_server_version(s->rules);
    count += (int)s->dim;
  }
  p->sending = 1;
  MPI_Isend(p->outgoing, count, MPI_FLOAT, w + 1, QGMD_ASYNC_MODEL_TAG,
            MPI_COMM_WORLD, &p->request);
  qgmd_loop_wait(&s->rank->loop, &p->wait, &p->request, 1, sent, p);
}

static void send_model(server_t *s, int w) {
  s->peers[w].computing = 1;
  s->peers[w].since = qgmd_now();
  send_to(s, w);
}

static void send_stop(server_t *s, int w) {
  s->peers[w].stopped = 1;
  s->stopped_workers++;
  send_to(s, w);
}

/* Every worker that is not computing is told at once; the others when
 * their gradient comes in. */
static void begin_stop(server_t *s) {
  qgmd_rank_t *rank = s->rank;
  s->stopping = 1;
  if (rank->step < rank->total_steps)
    rank->stop.reason = QGMD_STOP_ASKED;
  if (qgmd_stop_early(&rank->stop))
    LOG(LOG_INFO, "stopping after %llu updates as requested",
        (unsigned long long)rank->step);
  for (int w = 0; w < s->workers; w++)
    if (!s->peers[w].computing && !s->peers[w].stopped)
      send_stop(s, w);
}

/* ---------------------------------------------------------- evaluation */

static void evaluate_work(void *arg) {
  server_t *s = arg;
  qgmd_async_report_evaluate(&s->report);
}

static void evaluated(void *arg);

/* The worker thread takes the queued snapshots one at a time. */
static void evaluate_next(server_t *s) {
  if (s->evaluating || !s->report.head)
    return;
  s->evaluating = 1;
  qgmd_loop_work(&s->rank->loop, evaluate_work, evaluated, s);
}

static void evaluated(void *arg) {
  server_t *s = arg;
  s->evaluating = 0;
  qgmd_async_report_eval(&s->report, s->rank);
  /* At the snapshot's update, not the server's. One model: its
   * consensus distance is 0 and no momentum norm is measured, so only the
   * accuracy rule can stop it. */
  qgmd_stop_if_collapsed(s->rank);
  evaluate_next(s);
  maybe_finish(s);
}

/* The workers' time counters as of their latest gradients, averaged. */
static void worker_means(const server_t *s, double *compute_s,
                         double *wait_s) {
  *compute_s = *wait_s = 0.0;
  for (int w = 0; w < s->workers; w++) {
    *compute_s += s->peers[w].compute_s / s->workers;
    *wait_s += s->peers[w].wait_s / s->workers;
  }
}

static void snapshot_now(server_t *s) {
  double compute_s, wait_s;
  worker_means(s, &compute_s, &wait_s);
  s->next_eval = qgm_server_version(s->rules) + s->eval_every;
  if (qgmd_async_report_snapshot(&s->report, s->rank, s->rules, compute_s,
                                 wait_s) != 0) {
    LOG(LOG_ERROR, "out of memory for the evaluation's snapshot");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  evaluate_next(s);
}

/* ------------------------------------------------------------ deadlines */

static void silent(server_t *s, int w, const char *what, double waited) {
  LOG(LOG_ERROR, "%s worker rank %d for %.1f s (--comm-timeout=%g) after "
      "%llu updates: it died or hangs; aborting the job", what, w + 1, waited,
      s->rank->cfg->comm_timeout, (unsigned long long)s->rank->step);
  qgmd_watchdog_abort_soon(&s->rank->loop);
}

/* The worker that has computed on its model the longest, if that is
 * longer than --comm-timeout. */
static void check_workers(server_t *s, double now) {
  const double limit = s->rank->cfg->comm_timeout;
  int late = -1;
  for (int w = 0; w < s->workers; w++)
    if (s->peers[w].computing && now - s->peers[w].since > limit &&
        (late < 0 || s->peers[w].since < s->peers[late].since))
      late = w;
  if (late >= 0 && !qgmd_watchdog_aborting())
    silent(s, late, "no gradient from", now - s->peers[late].since);
}

/* The loop's qgmd_timeout_fn: its set is not const. */
// cppcheck-suppress constParameter
static void on_timeout(qgmd_wait_t *wait, double waited, void *arg) {
  server_t *s = arg;
  if (qgmd_watchdog_aborting())
    return;
  if (wait == &s->recv_wait) {
    check_workers(s, qgmd_now());
    return;
  }
  for (int w = 0; w < s->workers; w++)
    if (wait == &s->peers[w].wait)
      silent(s, w, "the model has not been taken by", waited);
  /* Other sets (the standing receive of status reports) are idle by
   * design, not stuck. */
}

/* ------------------------------------------------------------ arrivals */

/* Applies every gradient the schedule admits, replying to their workers. */
static void drain(server_t *s) {
  qgmd_rank_t *rank = s->rank;
  qgm_server_update_t u;
  while (!s->stopping) {
    rank->lr = qgm_lr_at(&rank->schedule, qgm_server_version(s->rules));
    if (!qgm_server_apply_next(s->rules, (float)rank->lr, &u))
      break;
    rank->step = u.version;
    qgmd_async_report_update(&s->report, &u);
    if (rank->step >= s->next_eval)
      snapshot_now(s);
    if (rank->step >= rank->total_steps)
      begin_stop(s); /* tells u.worker too */
    else
      send_model(s, u.worker);
  }
}

static void post_receive(server_t *s);

static void gradient_arrived(void *arg) {
  server_t *s = arg;
  qgmd_rank_t *rank = s->rank;
  const float *trailer = s->incoming;
  int w = (int)trailer[QGMD_TRAILER_RANK] - 1;
  if (w < 0 || w >= s->workers || !s->peers[w].computing) {
    LOG(LOG_ERROR, "a gradient from an unexpected sender (%g)",
        (double)trailer[QGMD_TRAILER_RANK]);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  peer_t *p = &s->peers[w];
  p->computing = 0;
  if (rank->cfg->comm_timeout > 0)
    check_workers(s, qgmd_now());
  p->compute_s = trailer[QGMD_TRAILER_COMPUTE_S];
  p->wait_s = trailer[QGMD_TRAILER_WAIT_S];
  qgmd_async_report_loss(&s->report, trailer[QGMD_TRAILER_LOSS]);
  if (trailer[QGMD_TRAILER_STOP] != 0.0f)
    qgmd_stop_ask(&rank->stop);
  if (rank->stop.asked && !s->stopping)
    begin_stop(s); /* stops w as well: it no longer computes */
  if (!s->stopping) {
    qgm_server_submit(s->rules, w, s->incoming + QGMD_TRAILER_LEN,
                      p->sent_version);
    drain(s);
  } else if (!p->stopped) {
    send_stop(s, w);
  }
  s->receiving = 0;
  for (int v = 0; v < s->workers && !s->receiving; v++)
    if (s->peers[v].computing)
      post_receive(s);
  maybe_finish(s);
}

static void post_receive(server_t *s) {
  s->receiving = 1;
  MPI_Irecv(s->incoming, (int)s->dim + QGMD_TRAILER_LEN, MPI_FLOAT,
            MPI_ANY_SOURCE, QGMD_ASYNC_GRAD_TAG, MPI_COMM_WORLD,
            &s->recv_request);
  qgmd_loop_wait(&s->rank->loop, &s->recv_wait, &s->recv_request, 1,
                 gradient_arrived, s);
}

/* ------------------------------------------------------------ the end */

static void all_reported(void *arg) {
  server_t *s = arg;
  qgmd_loop_stop(&s->rank->loop);
}

/* Once every worker is stopped and nothing is in flight: a last evaluation
 * of the final model if the latest snapshot is older, then the summary. */
static void maybe_finish(server_t *s) {
  if (!s->stopping || s->finishing || s->evaluating || s->report.head ||
      s->receiving ||
      s->stopped_workers < s->workers)
    return;
  for (int w = 0; w < s->workers; w++)
    if (s->peers[w].sending)
      return;
  if (s->report.snapshots == 0 ||
      s->report.last_version != qgm_server_version(s->rules)) {
    snapshot_now(s);
    return;
  }
  s->finishing = 1;
  worker_means(s, &s->rank->compute_s, &s->rank->wait_s);
  qgmd_async_report_summary(&s->report, s->rank, s->rules);
  qgmd_control_finish(s->rank->control, all_reported, s);
}

/* ------------------------------------------------------------- set-up */

static int server_init(server_t *s, qgmd_rank_t *rank) {
  const qgmd_config_t *cfg = rank->cfg;
  qgm_server_config_t scfg = {.workers = rank->nodes - 1,
                              .momentum = (float)cfg->momentum,
                              .weight_decay = (float)cfg->weight_decay,
                              .window = (int)cfg->gsgm_window,
                              .dc_lambda = (float)cfg->dc_lambda};
  /* The names were validated by qgmd_config_check. */
  qgm_async_rule_parse(cfg->algorithm, &scfg.rule);
  qgm_gsgm_base_parse(cfg->gsgm_base, &scfg.base);
  qgm_gsgm_rule_parse(cfg->gsgm_rule, &scfg.gsgm_rule);
  s->rank = rank;
  s->workers = scfg.workers;
  s->dim = qgm_model_num_params(rank->model);
  if (qgm_server_create(&scfg, s->dim, &s->rules) != 0 ||
      !(s->incoming = malloc((s->dim + QGMD_TRAILER_LEN) * sizeof(float))) ||
      !(s->peers = calloc((size_t)s->workers, sizeof *s->peers)) ||
      qgmd_async_report_init(&s->report, rank, s->dim) != 0)
    return -1;
  for (int w = 0; w < s->workers; w++) {
    s->peers[w].server = s;
    if (!(s->peers[w].outgoing = malloc((s->dim + 1) * sizeof(float))))
      return -1;
  }
  /* The same initial model as a decentralized run of the same seed. */
  qgm_rng_t init;
  qgm_rng_seed_model(&init, (uint64_t)cfg->seed);
  qgm_model_init_params(rank->model, qgm_server_params(s->rules), &init);

  /* The rank's steps are the server's updates (qgmd_rank_setup). */
  s->eval_every = cfg->eval_every > 0 ? (uint64_t)cfg->eval_every
                                      : (rank->steps_per_epoch + 9) / 10;
  s->next_eval = s->eval_every;
  return 0;
}

static void server_free(server_t *s) {
  for (int w = 0; s->peers && w < s->workers; w++)
    free(s->peers[w].outgoing);
  free(s->peers);
  free(s->incoming);
  qgmd_async_report_free(&s->report);
  qgm_server_free(s->rules);
}

int qgmd_async_serve(qgmd_rank_t *rank) {
  server_t s = {0};
  if (server_init(&s, rank) != 0) {
    LOG(LOG_ERROR, "setting up the server: out of memory");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  char workers[48], updates[48];
  qgm_count_text(workers, sizeof workers, s.workers, "worker");
  qgm_count_text(updates, sizeof updates, (long long)rank->steps_per_epoch,
                 "update");
  LOG(LOG_INFO, "%s: parameter server and %s, %s (alpha %g), "
      "%s per epoch, evaluation every %llu",
      rank->cfg->algorithm, workers, rank->cfg->dataset, rank->cfg->alpha,
      updates, (unsigned long long)s.eval_every);
  rank->start_s = qgmd_now();
  if (rank->cfg->comm_timeout > 0) {
    rank->loop.timeout_s = rank->cfg->comm_timeout;
    rank->loop.on_timeout = on_timeout;
    rank->loop.timeout_arg = &s;
  }
  for (int w = 0; w < s.workers; w++)
    send_model(&s, w);
  post_receive(&s);
  qgmd_loop_run(&rank->loop);
  rank->loop.on_timeout = NULL; /* s is gone */
  server_free(&s);
  return rank->status;
}
