/* train.c - the training loop of one node as a chain of events on its
 * loop: a step computes its gradient on the worker thread while the loop
 * thread progresses the exchange; the step finishes when both
 * are done. Read top to bottom, one step is:
 *
 *   begin_step     agree on stopping (every QGMD_VOTE_EVERY steps); with
 *                  --overlap=on at a round start, post the exchange of x_t
 *   gradient_work  (worker; a short one on the loop thread) minibatch
 *                  gradient at x_t
 *   gradient_done  local step -> half-step model h
 *   finish_step    mix: identity inside a round; at a round end the
 *                  exchange's kind ends the step (qgmd_exchange_finish):
 *                  the gossip of h (overlap off) or h + W x_s - x_s (on),
 *                  CHOCO's h + gamma W (xhat - xhat_i), the global mean,
 *                  RelaySum's average
 *
 * and after every epoch (and every --eval-every steps) an evaluation
 * (eval.c); between evaluations, every --log-every steps, a progress line
 * (progress.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "control.h"
#include "gradient.h"
#include "log.h"
#include "mpi_util.h"
#include "node.h"
#include "progress.h"
#include "report.h"
#include "trace.h"
#include "train_async.h"
#include "watchdog.h"


/* A gradient shorter than this runs on the loop thread (gradient_inline). */
#define QGMD_INLINE_GRADIENT_S 1e-3

static void begin_step(void *arg);
static void finish_step(qgmd_node_t *node);
static void exchange_drained(void *arg);

static int round_start(const qgmd_node_t *node) {
  return node->rank.step % node->local_steps == 0;
}

static int round_end(const qgmd_node_t *node) {
  return (node->rank.step + 1) % node->local_steps == 0 ||
         node->rank.step + 1 == node->rank.total_steps;
}

static uint64_t round_of(const qgmd_node_t *node) {
  return node->rank.step / node->local_steps;
}

/* ------------------------------------------------------------ exchange */

/* Walks the phases of the round's exchange (as many as its kind has:
 * exchange.h), then calls then(node). */
static int exchange_next_phase(qgmd_node_t *node, qgmd_done_fn then) {
  int n = qgmd_exchange_advance(&node->exchange);
  if (n > 0)
    qgmd_loop_wait(&node->rank.loop, &node->exchange_wait,
                   node->exchange.requests, n, then, node);
  return n;
}

static void exchange_done(void *arg) {
  qgmd_node_t *node = arg;
  if (exchange_next_phase(node, exchange_done) > 0)
    return;
  double now = qgmd_now();
  node->rank.comm_s += now - node->exchange_started;
  qgmd_trace_span(node->rank.trace, "exchange", QGMD_TRACE_COMM,
                  node->exchange_started, now);
  node->exchange_pending = 0;
  if (node->step_waiting) {
    node->rank.wait_s += now - node->wait_started;
    node->rank.wait_cpu_s += qgmd_thread_cpu() - node->wait_cpu_started;
    qgmd_trace_span(node->rank.trace, "wait", QGMD_TRACE_LOOP,
                    node->wait_started, now);
    node->step_waiting = 0;
    finish_step(node);
  }
}

static void start_exchange(qgmd_node_t *node, const float *send) {
  int n = qgmd_exchange_start(&node->exchange, round_of(node), send);
  node->exchange_pending = 1;
  node->exchange_started = qgmd_now();
  qgmd_loop_wait(&node->rank.loop, &node->exchange_wait,
                 node->exchange.requests, n, exchange_done, node);
}

/* --------------------------------------------------------------- steps */

static void gradient_work(void *arg) {
  qgmd_node_t *node = arg;
  /* The minibatch's rng is the loop thread's only between steps (the
   * shuffle), so the worker may draw the augmentation from it. */
  qgmd_gradient(&node->rank, &node->minibatch, qgm_optim_params(node->optim),
                qgm_optim_grad(node->optim));
}

static void gradient_done(void *arg) {
  qgmd_node_t *node = arg;
  if (!isfinite(node->minibatch.loss)) {
    LOG(LOG_ERROR, "loss is %g at epoch %llu step %llu: training diverged "
        "(try a smaller --lr); the last complete checkpoint, if any, is "
        "kept", (double)node->minibatch.loss,
        (unsigned long long)(node->rank.step / node->rank.steps_per_epoch + 1),
        (unsigned long long)node->rank.step);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  double t0 = qgmd_now();
  /* The worker's completion reaches the loop through libuv: its latency
   * is part of every step. */
  qgmd_trace_span(node->rank.trace, "hand-off", QGMD_TRACE_LOOP,
                  node->minibatch.ended, t0);
  node->epoch_loss += node->minibatch.loss;
  if (!node->overlap) /* with overlap on, the round's message is x_s */
    qgm_optim_set_message_buffer(
        node->optim, qgmd_exchange_outbox(&node->exchange, round_of(node)));
  node->half = qgm_optim_local_step(node->optim, (float)node->rank.lr);
  qgmd_trace_span(node->rank.trace, "local-step", QGMD_TRACE_LOOP, t0,
                  qgmd_now());
  if (round_end(node) && !node->overlap)
    start_exchange(node, node->half);
  if (round_end(node) && node->exchange_pending) {
    node->step_waiting = 1;
    node->wait_started = qgmd_now();
    node->wait_cpu_started = qgmd_thread_cpu();
    return; /* exchange_done finishes the step */
  }
  finish_step(node);
}

/* Whether the step's gradient runs on the loop thread: when nothing would
 * overlap it (overlap off, a round's last step, so that the exchange
 * follows) and the last one was short. Handing a gradient to the worker
 * and back costs two thread switches, a good part of a short gradient's
 * time on a busy machine; on the loop thread, a libuv event (a signal, a
 * client) waits for it instead, at most that long. The result is the same
 * either way. */
static int gradient_inline(const qgmd_node_t *node) {
  return !node->overlap && round_end(node) &&
         node->minibatch.took_s > 0.0 &&
         node->minibatch.took_s < QGMD_INLINE_GRADIENT_S;
}

static void after_eval(void *arg) {
  qgmd_node_t *node = arg;
  qgmd_report_eval(&node->rank);
  node->epoch_loss = 0.0;
  /* Every rank holds the same sums, so every rank finds the same; rank 0
   * says so and ends the job (the others' next exchange waits on it). */
  qgmd_stop_if_collapsed(&node->rank);
  /* Every rank holds the same accuracy (a sum of whole counts), so they
   * all stop here together. */
  if (node->rank.cfg->target_accuracy > 0 &&
      node->rank.last.acc_avg_model >= node->rank.cfg->target_accuracy) {
    if (node->rank.step < node->rank.total_steps) {
      if (node->rank.id == 0)
        LOG(LOG_INFO, "averaged-model accuracy %.4f reached "
            "--target-accuracy=%g", node->rank.last.acc_avg_model,
            node->rank.cfg->target_accuracy);
      node->rank.stop.reason = QGMD_STOP_TARGET;
    }
  }
  begin_step(node);
}

static void finish_step(qgmd_node_t *node) {
  double t0 = qgmd_now();
  const float lr = (float)node->rank.lr;
  if (!round_end(node)) {
    qgm_vec_copy(qgm_optim_mix_buffer(node->optim), node->half,
                 qgm_optim_message_len(node->optim));
    qgm_optim_after_gossip(node->optim, lr);
  } else {
    qgmd_exchange_finish(&node->exchange, node->optim, lr,
                         node->overlap ? node->half : NULL);
  }
  double t1 = qgmd_now();
  qgmd_trace_span(node->rank.trace, "mix", QGMD_TRACE_LOOP, t0, t1);
  node->rank.steps_s += t1 - node->step_began;
  qgmd_watchdog_step(node, t1 - node->step_began);
  node->rank.step++;
  if (node->rank.step == node->rank.first_step + 1)
    qgmd_checkpoint_first_step(node);
  if (qgmd_eval_due(node)) {
    qgmd_evaluate(node, after_eval);
    return;
  }
  qgmd_progress_report(&node->rank, node->epoch_loss);
  begin_step(node);
}

/* ---------------------------------------------------------- stopping */

static void all_reported(void *arg) {
  qgmd_node_t *node = arg;
  qgmd_loop_stop(&node->rank.loop);
}

/* Walks the ending (stop.h) from its current phase: each phase that has
 * to wait on the loop names end_run as what comes next. */
static void end_run(void *arg) {
  qgmd_node_t *node = arg;
  qgmd_stop_t *s = &node->rank.stop;
  switch (s->phase) {
  case QGMD_END_NOT_YET:
  case QGMD_END_VOTE:
    s->phase = QGMD_END_DRAIN;
    if (qgmd_loop_waiting(&node->rank.loop, &node->control_wait)) {
      s->step_waits = 1; /* control_done comes back */
      return;
    }
    /* fall through */
  case QGMD_END_DRAIN:
    s->phase = QGMD_END_CHECKPOINT;
    if (node->rank.id == 0 && s->reason == QGMD_STOP_ASKED)
      LOG(LOG_INFO, QGMD_STOPPING_AT, (uint64_t)node->rank.step);
    if (node->exchange_pending) {
      node->step_waiting = 0;
      node->exchange_pending = 0;
      qgmd_loop_wait(&node->rank.loop, &node->exchange_wait,
                     node->exchange.requests, node->exchange.nrequests,
                     exchange_drained, node);
      return;
    }
    /* fall through */
  case QGMD_END_CHECKPOINT:
    s->phase = QGMD_END_EVALUATE;
    if (qgmd_checkpoint_due(node)) {
      qgmd_checkpoint_save(node, end_run);
      return;
    }
    /* fall through */
  case QGMD_END_EVALUATE:
    s->phase = QGMD_END_REPORT;
    if (qgmd_stop_early(s) && !qgmd_eval_due(node)) {
      qgmd_evaluate(node, end_run);
      return;
    }
    /* fall through */
  case QGMD_END_REPORT:
    s->phase = QGMD_END_DONE;
    qgmd_report_summary(&node->rank);
    qgmd_control_finish(node->rank.control, all_reported, node);
    return;
  case QGMD_END_DONE:
    return;
  }
}

/* An exchange in flight at a stop: its remaining phases, then the rest of
 * the ending. */
static void exchange_drained(void *arg) {
  qgmd_node_t *node = arg;
  if (exchange_next_phase(node, exchange_drained) == 0)
    end_run(node);
}

/* Every QGMD_VOTE_EVERY steps the ranks vote on stopping with one
 * non-blocking allreduce, completed QGMD_VOTE_EVERY steps later: all ranks
 * learn the result at the same step, so they stop at the same boundary. */
static int agree_on_stop(qgmd_node_t *node) {
  qgmd_stop_t *s = &node->rank.stop;
  if (node->rank.step % QGMD_VOTE_EVERY != 0)
    return 0;
  if (node->rank.step > 0 && s->result)
    return 1;
  s->vote = s->asked;
  MPI_Iallreduce(&s->vote, &s->result, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD,
                 &s->request);
  qgmd_control_report(node->rank.control, &node->rank);
  return 0;
}

static void control_done(void *arg) {
  qgmd_node_t *node = arg;
  /* The ranks will stop: a stop asked on another rank (qgmctl's, on rank
   * 0) ends this one's emulated device time too. */
  if (node->rank.stop.result)
    qgmd_stop_wake();
  if (node->rank.stop.step_waits) {
    node->rank.stop.step_waits = 0;
    if (node->rank.stop.phase == QGMD_END_NOT_YET)
      begin_step(node);
    else
      end_run(node);
  }
}

static void begin_step(void *arg) {
  qgmd_node_t *node = arg;
  qgmd_stop_t *s = &node->rank.stop;
  if (qgmd_checkpoint_due(node)) {
    qgmd_checkpoint_save(node, begin_step);
    return;
  }
  if (node->rank.step % QGMD_VOTE_EVERY == 0 && node->rank.step > 0 &&
      qgmd_loop_waiting(&node->rank.loop, &node->control_wait)) {
    s->step_waits = 1; /* control_done calls again */
    return;
  }
  const int last = node->rank.step == node->rank.total_steps;
  if (!last && !qgmd_stop_early(s) && agree_on_stop(node))
    s->reason = QGMD_STOP_ASKED;
  if (last || qgmd_stop_early(s)) {
    if (last)
      s->reason = QGMD_STOP_NONE;
    /* An agreed stop inside a round (--local-steps) first finishes the
     * round, every rank alike: only between rounds is there a checkpoint
     * of the step it stops at. */
    if (last || round_start(node)) {
      end_run(node);
      return;
    }
  }
  if (node->rank.step % QGMD_VOTE_EVERY == 0 && !qgmd_stop_early(s))
    qgmd_loop_wait(&node->rank.loop, &node->control_wait, &s->request, 1,
                   control_done, node);
  qgmd_minibatch_next(&node->minibatch, &node->rank);
  node->rank.lr = qgm_lr_at(&node->rank.schedule, node->rank.step);
  node->step_began = qgmd_now();
  if (gradient_inline(node)) {
    gradient_work(node);
    gradient_done(node); /* which posts the exchange and returns */
    return;
  }
  /* The worker first: waking its thread takes tens of microseconds, which
     posting the exchange then overlaps. It only reads x. */
  qgmd_loop_work(&node->rank.loop, gradient_work, gradient_done, node);
  if (node->overlap && round_start(node)) {
    const float *x = qgm_optim_params(node->optim);
    if (node->local_steps > 1) {
      /* x moves during the round; the exchange needs x_s as it was. */
      qgm_vec_copy(node->snapshot, x, qgm_optim_dim(node->optim));
      x = node->snapshot;
    }
    start_exchange(node, x);
  }
}

int qgmd_train(qgmd_node_t *node) {
  /* --max-staleness=0 waits for every neighbour every round: this
   * loop's exchange, bit for bit. */
  if (node->rank.cfg->parsed.gossip_async && node->rank.cfg->max_staleness > 0)
    return qgmd_train_async(node);
  qgmd_progress_start(&node->rank);
  begin_step(node);
  qgmd_loop_run(&node->rank.loop);
  return node->rank.status;
}
