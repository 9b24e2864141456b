/* train_async.c - asynchronous gossip (--sync=async, --max-staleness=T >
 * 0): each node steps at its own pace and mixes the newest messages its
 * neighbours have sent, waiting only for a neighbour more than T of its
 * own rounds behind. (T = 0 waits every round: train.c's synchronous
 * exchange runs it.)
 *
 * Transport, between processes of one host (with --shared-memory=auto,
 * model gossip): each node publishes its round's message once into its
 * newest-message slot in the host's shared window (job/newest_slot.h),
 * and a neighbour copies the newest one out when it mixes. No side waits
 * for the other, and what is mixed is as new as it can be.
 *
 * Transport otherwise: non-blocking point-to-point on the node's libuv
 * loop. One receive per in-neighbour is always posted (a slot per
 * neighbour);
 * when it completes the loop calls recv_done, which keeps the message
 * and posts the next receive. Model gossip keeps the newest message of
 * each neighbour (newest wins: two buffers swapped, no copy); push-sum
 * (sgp) adds every share it receives into one sum, since a share is mass
 * that must be counted exactly once. A node sends each round to every
 * out-neighbour whose previous message has been taken; where it has not,
 * it holds that neighbour's message back (push-sum adds the round's share
 * to the shares held back), so a slow receiver never holds a fast sender
 * back. What was held back goes out once the previous message is taken,
 * with the newest round: else a receiver could wait forever for a round
 * that its sender has passed, while that sender waits in turn on another
 * neighbour. (Holding a message back copies it, only while sends are
 * slower than steps.) The loop sleeps between MPI polls (loop.h); no core
 * spins.
 * Why not MPI one-sided windows: a passive-target put needs the
 * receiver's progress in Open MPI as well (no asynchronous progress
 * thread over TCP), and a window would need its own locking for the slot
 * it overwrites; point-to-point with a posted receive works the same on
 * one host and across hosts over TCP.
 *
 * Control, all point-to-point so that no collective can be entered in a
 * different order by ranks at different steps: rank 0 evaluates at its
 * own epoch ends (and every --eval-every of its steps) by sending every
 * rank EVAL; each rank joins the evaluation (eval.c, collective) at its
 * next step boundary. A rank that has done its steps (or was asked to
 * stop: then rank 0 sends every rank HALT) waits until its own sends were
 * taken and reports DONE to rank 0; once every rank is done, rank 0 sends
 * END: nothing is in flight any more, so the posted receives are
 * cancelled, push-sum folds the shares it received last into its model,
 * and a last evaluation and the summary follow. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "control.h"
#include "feature.h"
#include "log.h"
#include "mpi_tags.h"
#include "mpi_util.h"
#include "newest_slot.h"
#include "node.h"
#include "progress.h"
#include "report.h"
#include "train_async.h"
#include "watchdog.h"

enum command { CMD_EVAL = 1, CMD_HALT = 2, CMD_END = 3, CMD_CHECKPOINT = 4 };

/* In a receive buffer's round slot until a whole message overwrites it:
 * what remains after a finished neighbour's one-float marker. */
#define SENTINEL (-2.0f)
/* The one-float markers: the sender has finished its steps, or it is at
 * a checkpoint step and sends nothing more until the checkpoint is
 * written. */
static const float FINISHED_MARK = 0.0f, CHECKPOINT_MARK = 1.0f;
enum report { REPORT_DONE = 1, REPORT_STOP = 2, REPORT_READY = 3 };

/* Staleness histogram: rounds behind of the messages mixed, 0 ..
 * STALE_BUCKETS - 2, and the last bucket for more. */
enum { STALE_BUCKETS = 17 };

typedef struct peer {
  int rank;
  double weight; /* W_ij (model gossip) */
  float *recv, *newest; /* len + 1 floats: the message, then its round */
  int has;              /* a message arrived */
  double round;         /* of the newest message, -1 before any */
  MPI_Request request;
  qgmd_wait_t wait;
  int lost;         /* its newest message was lost: left out of the mix */
  const void *slot; /* its newest-message slot on this host, or NULL */
  uint64_t taken;   /* the slot's messages taken */
  int at_checkpoint; /* its checkpoint marker came */
} peer_t;

typedef struct out_peer {
  int rank;
  float *send; /* len + 1 floats */
  float *next; /* the message held back: model gossip's newest, push-sum's
                 shares summed */
  int busy;    /* its last send not yet taken */
  double pending; /* the round of a message held back while busy, or -1 */
  int marked;  /* the finished marker sent */
  int paused;  /* the checkpoint marker sent */
  int shared;  /* on this host: reads the node's slot */
  const peer_t *back; /* the same rank as an in-neighbour, or NULL */
  MPI_Request request;
  qgmd_wait_t wait;
} out_peer_t;

typedef enum state {
  STEPPING, /* a gradient in flight, or between steps */
  BLOCKED,  /* the mix waits for a neighbour too far behind */
  QUIESCING, /* at a checkpoint step: the sends are being taken and the
                neighbours' checkpoint markers awaited */
  DRAINING, /* the steps are done; the last sends are being taken */
  FINISHED, /* DONE reported; waits for END */
  ENDING,   /* END came: the receives are cancelled, the last
               evaluation and the summary follow */
} state_t;

typedef struct async_node {
  qgmd_node_t *node;
  int push_sum, n, id;
  uint64_t staleness; /* T */
  size_t len;         /* the optimizer's message */
  int k_in, k_out;
  peer_t *in;
  out_peer_t *out;
  double share; /* push-sum: what each receiver gets, 1/(out-degree + 1) */
  float *acc;   /* push-sum: the shares received since the last mix */
  const float **from;
  double *weights;
  const float *msg; /* the round's message, between local step and mix */
  state_t state;
  int eval_pending, in_eval, final_eval, halted, stop_reported, cancelling;
  /* The checkpoint: this rank's links are quiet (READY reported), rank 0
   * asked for it, it is being written; rank 0's count of READY. */
  int ready, checkpoint_asked, in_checkpoint, ready_count;
  /* A halt's stop step: every rank's step went into one MPI_MAX
   * (stop_joined), whose result stop_at is known (stop_agreed). */
  int stop_joined, stop_agreed;
  uint64_t stop_mine, stop_at;
  double steps_since_eval;
  /* Rank 0's count of DONE reports and its receive of them; every
   * other rank's receive of commands. */
  int report_in, report_out, command_in, done_count, remote_done;
  int commands[CMD_CHECKPOINT]; /* one buffer per command, for rank 0's
                                   sends */
  MPI_Request report_req, report_out_req, command_req, *command_reqs;
  qgmd_wait_t report_wait, report_out_wait, command_wait, command_send_wait;
  uint64_t stale[STALE_BUCKETS]; /* the messages mixed, by rounds behind */
  double blocked_s;
  double blocked_since;
  void *own_slot;  /* this node's newest-message slot, or NULL */
  MPI_Win slots;   /* the host's window of slots */
  int has_window, shared_in, shared_out;
  uv_timer_t recheck; /* blocked on a neighbour read in place */
  uv_timer_t deadline; /* blocked longer than --comm-timeout */
} async_node_t;

/* The process's one node: the loop's callbacks that carry a peer find
 * the rest here. */
static async_node_t an;

static void begin_step(async_node_t *a);
static void try_mix(async_node_t *a);
static void handle_command(async_node_t *a, int command);
static void all_sends_taken(async_node_t *a);
static void take_message(async_node_t *a, peer_t *p);
static void finish_end(async_node_t *a);
static void quiesce(async_node_t *a);
static void fold_shares(async_node_t *a);
static void save_checkpoint(async_node_t *a);
static void leave_quiescing(async_node_t *a);
static void join_stop(async_node_t *a);

/* ------------------------------------------------------------- control */

static void command_sent(void *arg) { (void)arg; }

/* Rank 0: the command to every rank, itself included. */
static void broadcast(async_node_t *a, int command) {
  if (qgmd_loop_waiting(&a->node->rank.loop, &a->command_send_wait))
    MPI_Waitall(a->n - 1, a->command_reqs, MPI_STATUSES_IGNORE); /* taken
                           before rank 0 could act again: immediate */
  int *buf = &a->commands[command - 1];
  *buf = command;
  for (int r = 1; r < a->n; r++)
    MPI_Isend(buf, 1, MPI_INT, r, QGMD_ASYNC_CMD_TAG, MPI_COMM_WORLD,
              &a->command_reqs[r - 1]);
  qgmd_loop_wait(&a->node->rank.loop, &a->command_send_wait, a->command_reqs,
                 a->n - 1, command_sent, a);
  handle_command(a, command);
}

static void report_arrived(void *arg);

static void post_report_recv(async_node_t *a) {
  MPI_Irecv(&a->report_in, 1, MPI_INT, MPI_ANY_SOURCE, QGMD_ASYNC_REPORT_TAG,
            MPI_COMM_WORLD, &a->report_req);
  qgmd_loop_wait(&a->node->rank.loop, &a->report_wait, &a->report_req, 1,
                 report_arrived, a);
}

/* Rank 0: a report of another rank's, or its own. */
static void take_report(async_node_t *a, int report) {
  if (report == REPORT_STOP && !a->halted) {
    broadcast(a, CMD_HALT);
    return;
  }
  if (report == REPORT_DONE && ++a->done_count == a->n)
    broadcast(a, CMD_END);
  /* Every rank's links are quiet: nothing is in flight anywhere. */
  if (report == REPORT_READY && ++a->ready_count == a->n) {
    a->ready_count = 0;
    if (!a->halted)
      broadcast(a, CMD_CHECKPOINT);
  }
}

static void report_arrived(void *arg) {
  async_node_t *a = arg;
  const int what = a->report_in;
  /* Every rank reports DONE once, the last thing it sends rank 0. */
  if (what != REPORT_DONE || ++a->remote_done < a->n - 1)
    post_report_recv(a);
  take_report(a, what);
}

static void report_sent(void *arg) { (void)arg; }

static void report(async_node_t *a, int what) {
  if (a->id == 0) {
    take_report(a, what);
    return;
  }
  if (qgmd_loop_waiting(&a->node->rank.loop, &a->report_out_wait))
    MPI_Wait(&a->report_out_req, MPI_STATUS_IGNORE); /* tiny: taken */
  a->report_out = what;
  MPI_Isend(&a->report_out, 1, MPI_INT, 0, QGMD_ASYNC_REPORT_TAG,
            MPI_COMM_WORLD, &a->report_out_req);
  qgmd_loop_wait(&a->node->rank.loop, &a->report_out_wait,
                 &a->report_out_req, 1, report_sent, a);
}

static void command_arrived(void *arg);

static void post_command_recv(async_node_t *a) {
  MPI_Irecv(&a->command_in, 1, MPI_INT, 0, QGMD_ASYNC_CMD_TAG, MPI_COMM_WORLD,
            &a->command_req);
  qgmd_loop_wait(&a->node->rank.loop, &a->command_wait, &a->command_req, 1,
                 command_arrived, a);
}

static void command_arrived(void *arg) {
  async_node_t *a = arg;
  const int command = a->command_in;
  if (command != CMD_END)
    post_command_recv(a);
  handle_command(a, command);
}

/* ---------------------------------------------------------- evaluation */

static void after_eval(void *arg);
static void end_run(async_node_t *a);
static void write_summary(async_node_t *a);
static void all_reported(void *arg);

/* eval.c takes the training loss as the loss sum over the steps since the
 * last interval boundary of the rank's own count; this rank's mean over
 * the steps since its last evaluation is scaled to that. */
static void scale_loss(async_node_t *a) {
  qgmd_node_t *node = a->node;
  const qgmd_rank_t *rank = &node->rank;
  const uint64_t every = (uint64_t)rank->cfg->eval_every;
  const uint64_t last = rank->step ? rank->step - 1 : 0;
  uint64_t from = last - last % rank->steps_per_epoch;
  if (every > 0 && last - last % every > from)
    from = last - last % every;
  const double steps = rank->step > from ? (double)(rank->step - from) : 1.0;
  /* No step since (a rank done before the last evaluation): its last
   * mean stands. */
  const double mean = a->steps_since_eval > 0
                          ? node->epoch_loss / a->steps_since_eval
                          : rank->last.train_loss;
  node->epoch_loss = mean * steps;
}

/* At a step boundary: the evaluation, collective (eval.c). */
static void start_eval(async_node_t *a) {
  a->eval_pending = 0;
  a->in_eval = 1;
  scale_loss(a);
  qgmd_evaluate(a->node, after_eval);
}

static void after_eval(void *arg) {
  qgmd_node_t *node = arg;
  async_node_t *a = &an;
  a->in_eval = 0;
  qgmd_report_eval(&node->rank);
  node->epoch_loss = 0.0;
  a->steps_since_eval = 0.0;
  /* The consensus distance and the momentum norms are sums and extremes
   * over every rank, the same on each; the streak at chance counts each
   * rank's own steps. Only rank 0's verdict acts (its steps are the
   * clock): it ends the job, wherever the others are. */
  qgmd_stop_if_collapsed(&node->rank);
  if (a->final_eval) {
    write_summary(a);
    qgmd_control_finish(node->rank.control, all_reported, node);
    return;
  }
  if (a->state == ENDING) {
    end_run(a);
    return;
  }
  const double target = node->rank.cfg->target_accuracy;
  if (a->id == 0 && target > 0 && node->rank.last.acc_avg_model >= target &&
      !a->halted) {
    LOG(LOG_INFO, "averaged-model accuracy %.4f reached --target-accuracy=%g",
        node->rank.last.acc_avg_model, target);
    node->rank.stop.reason = QGMD_STOP_TARGET;
    broadcast(a, CMD_HALT);
  }
  /* The next one may have been asked meanwhile (rank 0 was done with
   * this one first): at once, wherever the rank is. */
  if (a->eval_pending) {
    start_eval(a);
    return;
  }
  if (a->checkpoint_asked) {
    save_checkpoint(a);
    return;
  }
  /* Back where the evaluation found the rank. */
  if (a->state == BLOCKED || (a->state == STEPPING && a->msg))
    try_mix(a);
  else if (a->state == STEPPING)
    begin_step(a);
  else if (a->state == QUIESCING && a->halted)
    leave_quiescing(a);
  else if (a->state == QUIESCING)
    quiesce(a);
  else if ((a->state == DRAINING || a->state == FINISHED) && a->halted &&
           !a->stop_joined)
    join_stop(a);
  else if (a->state == DRAINING)
    all_sends_taken(a);
}

/* An evaluation asked: now if the rank is at a boundary, else at its
 * next one (begin_step, gradient_done). */
static void eval_if_idle(async_node_t *a) {
  /* The loop's worker is the checkpoint's while it is written: after it
   * (begin_step). */
  if (!a->eval_pending || a->in_eval || a->in_checkpoint)
    return;
  if (a->state == BLOCKED || a->state == QUIESCING || a->state == DRAINING ||
      a->state == FINISHED)
    start_eval(a);
}

static void handle_command(async_node_t *a, int command) {
  switch (command) {
  case CMD_EVAL:
    a->eval_pending = 1;
    eval_if_idle(a);
    return;
  case CMD_HALT:
    a->halted = 1;
    if (!qgmd_checkpoint_writes(a->node->checkpoint)) {
      /* No checkpoint to make of one step: each rank stops where it is. */
      a->stop_joined = a->stop_agreed = 1;
      a->stop_at = a->node->rank.step;
    }
    if (a->node->rank.stop.reason == QGMD_STOP_NONE)
      a->node->rank.stop.reason = QGMD_STOP_ASKED;
    if (a->in_eval)
      return; /* after_eval goes on from where the rank is */
    if (a->state == BLOCKED)
      try_mix(a); /* no neighbour will catch up now */
    /* Rank 0 asks for no checkpoint after a halt. */
    else if (a->state == QUIESCING && !a->checkpoint_asked &&
             !a->in_checkpoint)
      leave_quiescing(a);
    else if ((a->state == DRAINING || a->state == FINISHED) &&
             !a->stop_joined)
      join_stop(a);
    return;
  case CMD_CHECKPOINT:
    a->checkpoint_asked = 1;
    if (!a->in_eval)
      save_checkpoint(a);
    return;
  case CMD_END:
    a->state = ENDING;
    if (!a->in_eval)
      end_run(a);
    return;
  default:
    LOG(LOG_ERROR, "unknown command %d from rank 0", command);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

/* -------------------------------------------------------------- gossip */

static void recv_done(void *arg);

static void post_recv(async_node_t *a, peer_t *p) {
  p->recv[a->len] = SENTINEL;
  MPI_Irecv(p->recv, (int)a->len + 1, MPI_FLOAT, p->rank,
            QGMD_ASYNC_GOSSIP_TAG, MPI_COMM_WORLD, &p->request);
  qgmd_loop_wait(&a->node->rank.loop, &p->wait, &p->request, 1, recv_done,
                 p);
}

static void recv_done(void *arg) {
  peer_t *p = arg;
  async_node_t *a = &an;
  if (a->state == ENDING) {
    /* Cancelled at the end, or completed just before: the round slot
     * says which. */
    if (p->recv[a->len] != SENTINEL)
      take_message(a, p);
    if (--a->cancelling == 0)
      finish_end(a);
    return;
  }
  take_message(a, p);
  post_recv(a, p);
  if (a->state == BLOCKED && !a->in_eval)
    try_mix(a);
  else if (a->state == QUIESCING && !a->in_eval)
    quiesce(a);
}

static void send_done(void *arg);
static void issend(async_node_t *a, out_peer_t *o);

/* A one-float marker to o, after everything sent before it (MPI keeps
 * one sender's messages in order). Issend: taken means received. */
static void send_marker(async_node_t *a, out_peer_t *o, const float *mark) {
  o->busy = 1;
  MPI_Issend(mark, 1, MPI_FLOAT, o->rank, QGMD_ASYNC_GOSSIP_TAG,
             MPI_COMM_WORLD, &o->request);
  qgmd_loop_wait(&a->node->rank.loop, &o->wait, &o->request, 1, send_done,
                 o);
}

/* The marker to every out-neighbour not read in place whose sends were
 * all taken and that has not had it (finished: o->marked, checkpoint:
 * o->paused); returns whether a send is still being taken. */
static int send_markers(async_node_t *a, const float *mark) {
  int busy = 0;
  for (int k = 0; k < a->k_out; k++) {
    out_peer_t *o = &a->out[k];
    int *sent = mark == &CHECKPOINT_MARK ? &o->paused : &o->marked;
    if (!o->busy && !*sent && !o->shared) {
      *sent = 1;
      send_marker(a, o, mark);
    }
    busy |= o->busy;
  }
  return busy;
}

/* Whether in-neighbour p's checkpoint marker is awaited (a neighbour read
 * in place has nothing in flight). */
static int marker_missing(const peer_t *p) {
  return !p->slot && !p->at_checkpoint;
}

/* Draining: once its last message to a neighbour was taken, the
 * neighbour gets a one-float marker (the rank is finished and never too
 * far behind, whatever round its last message had); once every marker
 * was taken, DONE. Issend: taken means received, so at END nothing is in
 * flight. */
static void all_sends_taken(async_node_t *a) {
  if (a->state != DRAINING || (a->halted && !a->stop_agreed))
    return;
  if (a->own_slot)
    qgmd_newest_slot_finish(a->own_slot); /* after its last message */
  if (send_markers(a, &FINISHED_MARK))
    return;
  a->state = FINISHED;
  report(a, REPORT_DONE);
}

/* Sends o->send, whole, and counts its bytes. */
static void issend(async_node_t *a, out_peer_t *o) {
  o->busy = 1;
  MPI_Issend(o->send, (int)a->len + 1, MPI_FLOAT, o->rank,
             QGMD_ASYNC_GOSSIP_TAG, MPI_COMM_WORLD, &o->request);
  qgmd_loop_wait(&a->node->rank.loop, &o->wait, &o->request, 1, send_done,
                 o);
  a->node->exchange.bytes_sent += (double)(a->len + 1) * sizeof(float);
}

static int lost(const async_node_t *a, double round, int from, int to);

/* What was held back from o while it was busy, with the newest round:
 * the newest model, or push-sum's shares of those rounds summed (mass
 * is never held back: a slow receiver gets all of it, later). A lost one
 * is drawn for its round, as a message of that round; its mass comes
 * back to this node as if received. */
static void send_held_back(async_node_t *a, out_peer_t *o) {
  float *t = o->send;
  o->send = o->next;
  o->next = t;
  if (a->push_sum) {
    memset(o->next, 0, a->len * sizeof *o->next);
    if (lost(a, o->pending, a->id, o->rank))
      qgm_vec_axpy(a->acc, 1.0f, o->send, a->len);
  }
  o->send[a->len] = (float)o->pending;
  o->pending = -1.0;
  issend(a, o);
}

static void send_done(void *arg) {
  out_peer_t *o = arg;
  o->busy = 0;
  if (o->pending >= 0.0)
    send_held_back(&an, o);
  if (an.state == QUIESCING)
    quiesce(&an);
  else
    all_sends_taken(&an);
}

/* --drop-rate: whether the message of `round` from `from` to `to` is
 * lost, the same draw as the synchronous exchange's (qgm_drop_lost), which
 * sender and receiver make alike. As there, a lost message still arrives
 * (its round counts for the staleness rule: two nodes waiting for each
 * other's next message would otherwise wait for good), and the mix leaves
 * it out: model gossip mixes without that neighbour until its next
 * message, push-sum's receiver does not add the share and its sender
 * keeps it. */
static int lost(const async_node_t *a, double round, int from, int to) {
  const qgm_drop_t *d = &a->node->exchange.plan.drop;
  return d->rate > 0.0 && qgm_drop_lost(d, (uint64_t)round, from, to);
}

/* The round's message to every out-neighbour that took the last one;
 * returns the shares sent (push-sum). */
static double send_round(async_node_t *a, const float *msg, uint64_t round) {
  double sent = 0.0;
  if (a->own_slot) {
    qgmd_newest_slot_publish(a->own_slot, a->len, msg, (double)round);
    const double bytes = (double)(a->len + 1) * sizeof(float) * a->shared_out;
    a->node->exchange.bytes_sent += bytes;
    a->node->exchange.bytes_in_place += bytes;
  }
  for (int k = 0; k < a->k_out; k++) {
    out_peer_t *o = &a->out[k];
    if (o->shared)
      continue;
    /* A finished neighbour mixes no more: push-sum's share to it would
     * only drain this node's weight, a third kept each round (a
     * straggler whose neighbours had finished ended on a NaN loss). The
     * node keeps the share instead. */
    if (a->push_sum && o->back && isinf(o->back->round))
      continue;
    if (o->busy) { /* held back until the last is taken */
      if (a->push_sum) {
        qgm_vec_axpy(o->next, (float)a->share, msg, a->len);
        sent += a->share; /* on its way, with the next message */
      } else {
        qgm_vec_copy(o->next, msg, a->len); /* newest wins */
      }
      o->pending = (double)round;
      continue;
    }
    if (a->push_sum)
      qgm_vec_scale_copy(o->send, (float)a->share, msg, a->len);
    else
      qgm_vec_copy(o->send, msg, a->len);
    o->send[a->len] = (float)round;
    if (!lost(a, (double)round, a->id, o->rank))
      sent += a->share; /* a lost share stays here */
    issend(a, o);
  }
  return sent;
}

/* Whether in-neighbour j is more than T rounds behind round r. */
static int far_behind(const async_node_t *a, int j, uint64_t r) {
  return a->in[j].round + (double)a->staleness < (double)r;
}

/* Whether a neighbour is more than T rounds behind round r. */
static int too_stale(const async_node_t *a, uint64_t r) {
  if (a->halted)
    return 0;
  for (int j = 0; j < a->k_in; j++)
    if (far_behind(a, j, r))
      return 1;
  return 0;
}

static void count_staleness(async_node_t *a, uint64_t r) {
  for (int j = 0; j < a->k_in; j++) {
    if (!a->in[j].has)
      continue;
    double behind = (double)r - a->in[j].round;
    int b = behind < 0 ? 0 : behind >= STALE_BUCKETS - 1 ? STALE_BUCKETS - 1
                                                         : (int)behind;
    a->stale[b]++;
  }
}

/* The newest messages of the neighbours read in place. The flag is read
 * first: a neighbour that finished published its last message before. */
static void take_shared(async_node_t *a) {
  for (int j = 0; j < a->k_in; j++) {
    peer_t *p = &a->in[j];
    if (!p->slot)
      continue;
    const int finished = qgmd_newest_slot_finished(p->slot);
    if (qgmd_newest_slot_take(p->slot, a->len, &p->taken, p->recv) == 1)
      take_message(a, p);
    if (finished)
      p->round = INFINITY; /* never too far behind */
  }
}

/* Blocked on a neighbour read in place: nothing arrives to wake the
 * loop, so it looks again every millisecond. */
static void recheck(uv_timer_t *timer) {
  async_node_t *a = timer->data;
  if (a->state == BLOCKED && !a->in_eval)
    try_mix(a);
}

/* Blocked or paused for --comm-timeout: a neighbour more than T rounds
 * behind has sent nothing newer for that long, or has not reached the
 * checkpoint step. It died or hangs, or waits for one that did; a wait
 * without end would hide that. */
static void waited_too_long(uv_timer_t *timer) {
  async_node_t *a = timer->data;
  const uint64_t r = a->node->rank.step;
  char who[256] = "";
  size_t at = 0;
  int late = 0;
  for (int j = 0; j < a->k_in && at < sizeof who; j++)
    if (a->state == BLOCKED ? far_behind(a, j, r)
                            : marker_missing(&a->in[j])) {
      at += (size_t)snprintf(who + at, sizeof who - at, "%s%d",
                             at ? "," : "", a->in[j].rank);
      late++;
    }
  const double waited = qgmd_now() - a->blocked_since,
               limit = a->node->rank.cfg->comm_timeout;
  if (a->state == BLOCKED)
    LOG(LOG_ERROR, "neighbour rank%s %s %s more than %" PRIu64 " rounds "
        "behind and sent nothing newer for %.1f s (--comm-timeout=%g) at "
        "step %" PRIu64 ": died or hangs, or waits for one that did; "
        "aborting the job", late > 1 ? "s" : "", who[0] ? who : "?",
        late > 1 ? "are" : "is", a->staleness, waited, limit, r);
  else if (a->state == QUIESCING)
    LOG(LOG_ERROR, "the checkpoint of step %" PRIu64 " has waited %.1f s "
        "(--comm-timeout=%g) for %s%s: died or hangs, or waits for one "
        "that did; aborting the job", r, waited, limit,
        late ? (late > 1 ? "neighbour ranks " : "neighbour rank ")
             : "another rank", who);
  else
    return;
  qgmd_watchdog_abort_soon(&a->node->rank.loop);
}

static void try_mix(async_node_t *a) {
  qgmd_node_t *node = a->node;
  const uint64_t r = node->rank.step;
  if (a->eval_pending && !a->in_eval) {
    start_eval(a);
    return;
  }
  take_shared(a);
  if (too_stale(a, r)) {
    if (a->state != BLOCKED) {
      a->state = BLOCKED;
      a->blocked_since = qgmd_now();
      if (a->shared_in)
        uv_timer_start(&a->recheck, recheck, 1, 1);
      const double limit = node->rank.cfg->comm_timeout;
      if (limit > 0.0)
        uv_timer_start(&a->deadline, waited_too_long,
                       (uint64_t)(limit * 1000.0), 0);
    }
    return; /* recv_done or recheck comes back */
  }
  if (a->state == BLOCKED) {
    if (a->shared_in)
      uv_timer_stop(&a->recheck);
    uv_timer_stop(&a->deadline);
    a->blocked_s += qgmd_now() - a->blocked_since;
    node->rank.wait_s += qgmd_now() - a->blocked_since;
    a->state = STEPPING;
  }
  const float lr = (float)node->rank.lr;
  const float *msg = a->msg;
  double t0 = qgmd_now();
  count_staleness(a, r);
  const double sent = send_round(a, msg, r);
  if (a->push_sum) {
    /* [x', w'] = (1 - shares sent) msg + the shares received. */
    float *mix = qgm_optim_mix_buffer(node->optim);
    qgm_vec_scale_copy(mix, (float)(1.0 - sent), msg, a->len);
    qgm_vec_axpy(mix, 1.0f, a->acc, a->len);
    memset(a->acc, 0, a->len * sizeof *a->acc);
    qgm_optim_after_gossip(node->optim, lr);
  } else {
    int k = 0;
    for (int j = 0; j < a->k_in; j++)
      if (a->in[j].has && !a->in[j].lost) {
        a->from[k] = a->in[j].newest;
        a->weights[k++] = a->in[j].weight;
      }
    qgm_optim_gossip_step(node->optim, lr, msg, msg, k, a->from, a->weights);
  }
  a->msg = NULL;
  const double t1 = qgmd_now();
  node->rank.comm_s += t1 - t0;
  node->rank.steps_s += t1 - node->step_began;
  node->rank.step++;
  if (node->rank.step == node->rank.first_step + 1)
    qgmd_checkpoint_first_step(node);
  a->steps_since_eval++;
  /* Not at rank 0's last step: the run's end evaluates every rank's last
   * model (final_evaluation), which would record the same step again. */
  if (a->id == 0 && qgmd_eval_due(node) && !a->halted &&
      node->rank.step < node->rank.total_steps)
    broadcast(a, CMD_EVAL);
  qgmd_progress_report(&node->rank, node->epoch_loss);
  begin_step(a);
}

/* --------------------------------------------------------- checkpoints */

/* A checkpoint of an asynchronous run is of one step on every rank and of
 * no message in flight, so that it holds all of push-sum's mass (the
 * weights sum to n) and a resumed run starts from what was saved. Each
 * rank stops at the checkpoint step (QUIESCING): once its sends were
 * taken it sends each out-neighbour a checkpoint marker, after which it
 * sends nothing; once its markers were taken and every in-neighbour's
 * came (neighbours read in place have nothing in flight), it reports
 * READY to rank 0. Once every rank is ready, rank 0 sends CHECKPOINT
 * and the ranks write it together (checkpoint.c), push-sum's received
 * shares folded into the model first. The pause lasts until the slowest
 * rank reaches the step: the price of a consistent checkpoint, paid
 * every --checkpoint-every steps. A halt (rank 0 asks for no checkpoint
 * after it) ends the pause. */
static void enter_quiescing(async_node_t *a) {
  a->state = QUIESCING;
  a->blocked_since = qgmd_now();
  const double limit = a->node->rank.cfg->comm_timeout;
  if (limit > 0.0)
    uv_timer_start(&a->deadline, waited_too_long, (uint64_t)(limit * 1000.0),
                   0);
  quiesce(a);
}

static void quiesce(async_node_t *a) {
  /* Once asked, the markers that come are the next checkpoint's. */
  if (a->state != QUIESCING || a->ready || a->checkpoint_asked ||
      a->in_checkpoint)
    return;
  int busy = send_markers(a, &CHECKPOINT_MARK);
  for (int j = 0; j < a->k_in; j++)
    busy |= marker_missing(&a->in[j]);
  if (busy)
    return;
  a->ready = 1;
  report(a, REPORT_READY);
}

/* Back to stepping, after the checkpoint or a halt. */
static void leave_quiescing(async_node_t *a) {
  uv_timer_stop(&a->deadline);
  a->blocked_s += qgmd_now() - a->blocked_since;
  a->node->rank.wait_s += qgmd_now() - a->blocked_since;
  a->state = STEPPING;
  begin_step(a);
}

static void checkpoint_saved(void *arg) {
  qgmd_node_t *node = arg;
  async_node_t *a = &an;
  a->in_checkpoint = 0;
  /* A failed checkpoint stops the run (checkpoint.c): every rank learnt
   * it from the same vote. */
  if (node->rank.stop.reason == QGMD_STOP_FAILED)
    a->halted = 1;
  leave_quiescing(a);
}

static void save_checkpoint(async_node_t *a) {
  /* Every marker of this checkpoint came and was taken; the next ones
   * may come before this rank is done writing (a neighbour done first
   * steps on to the next checkpoint), so they are cleared now. */
  a->ready = 0;
  for (int j = 0; j < a->k_in; j++)
    a->in[j].at_checkpoint = 0;
  for (int k = 0; k < a->k_out; k++)
    a->out[k].paused = 0;
  a->checkpoint_asked = 0;
  a->in_checkpoint = 1;
  uv_timer_stop(&a->deadline); /* the watchdog judges the agreement */
  if (a->push_sum)
    fold_shares(a);
  qgmd_checkpoint_save(a->node, checkpoint_saved);
}

/* ------------------------------------------------------------ stopping */

/* A halt (a stop asked, the target accuracy reached, a failed
 * checkpoint) of a run that writes checkpoints ends every rank at one
 * step, the furthest rank's, so that the ending's checkpoint is of one
 * step on every rank, as the periodic ones are. Each rank joins one
 * MPI_MAX of its step at its next step boundary and waits there for the
 * result; the ranks behind step on to it without waiting for their
 * neighbours. (Without checkpoints each rank stops where it is.) The
 * ranks join in command order (rank 0 asks for nothing after HALT), so
 * this collective meets every evaluation and checkpoint in the same
 * order on every rank; the watchdog judges it as the stop vote. */
static void stop_agreed(void *arg) {
  async_node_t *a = arg;
  a->stop_agreed = 1;
  if (a->id == 0 && a->node->rank.stop.reason == QGMD_STOP_ASKED)
    LOG(LOG_INFO, QGMD_STOPPING_AT, a->stop_at);
  if (a->state == STEPPING)
    begin_step(a);
  else if (a->state == DRAINING)
    all_sends_taken(a);
}

static void join_stop(async_node_t *a) {
  qgmd_node_t *node = a->node;
  a->stop_joined = 1;
  a->stop_mine = node->rank.step;
  MPI_Iallreduce(&a->stop_mine, &a->stop_at, 1, MPI_UINT64_T, MPI_MAX,
                 MPI_COMM_WORLD, &node->rank.stop.request);
  qgmd_loop_wait(&node->rank.loop, &node->control_wait,
                 &node->rank.stop.request, 1, stop_agreed, a);
}

/* --------------------------------------------------------------- steps */

static void gradient_work(void *arg) {
  qgmd_node_t *node = arg;
  qgmd_gradient(&node->rank, &node->minibatch, qgm_optim_params(node->optim),
                qgm_optim_grad(node->optim));
}

static void gradient_done(void *arg) {
  qgmd_node_t *node = arg;
  async_node_t *a = &an;
  if (!isfinite(node->minibatch.loss)) {
    LOG(LOG_ERROR, "loss is %g at step %llu: training diverged (try a "
        "smaller --lr)", (double)node->minibatch.loss,
        (unsigned long long)node->rank.step);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  node->epoch_loss += node->minibatch.loss; /* compute_s: qgmd_gradient */
  a->msg = qgm_optim_local_step(node->optim, (float)node->rank.lr);
  try_mix(a);
}

/* The rank's steps are over: its last sends taken, DONE reported. */
static void finish_steps(async_node_t *a) {
  a->state = DRAINING;
  if (a->eval_pending && !a->in_eval) {
    start_eval(a);
    return;
  }
  all_sends_taken(a);
}

/* The rounds the schedule follows (qgmd_schedule_clock). */
static uint64_t schedule_step(const async_node_t *a) {
  double newest = -1.0;
  for (int j = 0; j < a->k_in; j++)
    if (a->in[j].has && a->in[j].round > newest)
      newest = a->in[j].round;
  return qgmd_schedule_clock(a->node->rank.step, newest,
                             a->node->rank.total_steps);
}

static void begin_step(async_node_t *a) {
  qgmd_node_t *node = a->node;
  qgmd_rank_t *rank = &node->rank;
  if (a->eval_pending && !a->in_eval) {
    start_eval(a);
    return;
  }
  if (rank->stop.asked && !a->stop_reported) {
    a->stop_reported = 1;
    report(a, REPORT_STOP);
  }
  if (a->halted && !a->stop_joined) {
    join_stop(a);
    return;
  }
  if (a->halted && !a->stop_agreed)
    return; /* stop_agreed comes back */
  if (rank->step >= (a->halted ? a->stop_at : rank->total_steps)) {
    finish_steps(a);
    return;
  }
  if (!a->halted && qgmd_checkpoint_due(node)) { /* the every rule */
    enter_quiescing(a);
    return;
  }
  qgmd_minibatch_next(&node->minibatch, rank);
  rank->lr = qgm_lr_at(&rank->schedule, schedule_step(a));
  node->step_began = qgmd_now();
  qgmd_loop_work(&rank->loop, gradient_work, gradient_done, node);
}

/* ------------------------------------------------------------- the end */

static void all_reported(void *arg) {
  qgmd_node_t *node = arg;
  qgmd_loop_stop(&node->rank.loop);
}

/* Push-sum's last received shares into the model: [w z + acc_x, w +
 * acc_w], de-biased. */
static void fold_shares(async_node_t *a) {
  qgm_optim_t *o = a->node->optim;
  qgm_optim_state_t w;
  qgm_optim_state_get(o, 1, &w);
  float *z = qgm_optim_params(o);
  const size_t dim = qgm_optim_dim(o);
  const float w0 = w.data[0], w1 = w0 + a->acc[dim];
  for (size_t i = 0; i < dim; i++)
    z[i] = (w0 * z[i] + a->acc[i]) / w1;
  w.data[0] = w1;
  memset(a->acc, 0, a->len * sizeof *a->acc);
}

static void json_array(char *buf, size_t size, const double *v, int n,
                       const char *fmt) {
  size_t used = (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < n && used < size; i++) {
    used += (size_t)snprintf(buf + used, size - used, "%s", i ? "," : "");
    used += (size_t)snprintf(buf + used, size - used, fmt, v[i]);
  }
  if (used < size)
    snprintf(buf + used, size - used, "]");
}

/* The summary: qgmd's rows, and what an asynchronous run adds: each
 * node's steps and share of the samples seen, the staleness of the
 * messages mixed (histogram of rounds behind; the last bucket counts
 * more), the push-sum weights and the time blocked. */
static void write_summary(async_node_t *a) {
  qgmd_rank_t *rank = &a->node->rank;
  const int n = a->n;
  double mine[3 + STALE_BUCKETS];
  mine[0] = (double)rank->step;
  mine[1] = qgm_optim_push_sum_weight(a->node->optim);
  mine[2] = a->blocked_s;
  for (int b = 0; b < STALE_BUCKETS; b++)
    mine[3 + b] = (double)a->stale[b];
  double *all = a->id == 0 ? calloc((size_t)n * (3 + STALE_BUCKETS),
                                    sizeof *all)
                           : NULL;
  MPI_Gather(mine, 3 + STALE_BUCKETS, MPI_DOUBLE, all, 3 + STALE_BUCKETS,
             MPI_DOUBLE, 0, MPI_COMM_WORLD);
  /* A job being aborted did not finish: no record or line says it did. */
  if (a->id != 0 || qgmd_watchdog_aborting()) {
    free(all);
    return;
  }
  double steps[n], share[n], weight[n], blocked[n], hist[STALE_BUCKETS];
  double total = 0.0, mixed = 0.0, behind = 0.0, most = 0.0;
  memset(hist, 0, sizeof hist);
  for (int i = 0; i < n; i++) {
    const double *row = all + (size_t)i * (3 + STALE_BUCKETS);
    steps[i] = row[0];
    weight[i] = row[1];
    blocked[i] = row[2];
    total += row[0];
    for (int b = 0; b < STALE_BUCKETS; b++) {
      hist[b] += row[3 + b];
      mixed += row[3 + b];
      behind += b * row[3 + b];
      if (row[3 + b] > 0 && b > most)
        most = b;
    }
  }
  for (int i = 0; i < n; i++)
    share[i] = total > 0 ? steps[i] / total : 0.0;
  free(all);
  static char s_steps[8192], s_share[8192], s_weight[8192], s_blocked[8192],
      s_hist[2048];
  json_array(s_steps, sizeof s_steps, steps, n, "%.0f");
  json_array(s_share, sizeof s_share, share, n, "%.6f");
  json_array(s_weight, sizeof s_weight, weight, n, "%.9g");
  json_array(s_blocked, sizeof s_blocked, blocked, n, "%.3f");
  json_array(s_hist, sizeof s_hist, hist, STALE_BUCKETS, "%.0f");
  const double wall = qgmd_now() - rank->start_s;
  qgmd_field_t outcome[QGMD_OUTCOME_ROWS];
  qgmd_report_outcome(rank, wall, qgmd_stop_early(&rank->stop), outcome);
  const qgmd_field_t fields[] = {
      QGMD_DOUBLE("epochs", "%.6g",
                  (double)rank->step / (double)rank->steps_per_epoch),
      QGMD_ROWS(outcome),
      QGMD_STRING("sync", "async"),
      QGMD_UINT("max_staleness", a->staleness),
      QGMD_JSON("node_steps", s_steps),
      QGMD_JSON("node_sample_share", s_share),
      QGMD_JSON("node_blocked_s", s_blocked),
      QGMD_IF(a->push_sum, QGMD_JSON("push_sum_weights", s_weight)),
      QGMD_JSON("staleness_histogram", s_hist),
      QGMD_DOUBLE("staleness_mean", "%.4f", mixed > 0 ? behind / mixed : 0.0),
      QGMD_DOUBLE("staleness_max", "%.0f", most),
      QGMD_DOUBLE("compute_s", "%.3f", rank->compute_s),
      QGMD_DOUBLE("comm_s", "%.3f", rank->comm_s),
      QGMD_DOUBLE("wait_s", "%.3f", rank->wait_s),
      QGMD_DOUBLE("bytes_sent", "%.0f", a->node->exchange.bytes_sent),
  };
  qgmd_report_write(rank->metrics, "summary", QGMD_FIELDS(fields));
  char nodes[48], steps_done[48];
  qgm_count_text(nodes, sizeof nodes, n, "node");
  qgm_count_text(steps_done, sizeof steps_done, (long long)rank->step, "step");
  LOG(LOG_INFO, "%s: %s on %s (%s, async T=%" PRIu64 "), rank 0 %s in "
      "%.1f s: averaged-model test accuracy %.4f (best %.4f)",
      qgmd_stop_early(&rank->stop) ? "stopped" : "done", rank->cfg->algorithm,
      nodes, rank->cfg->topology, a->staleness, steps_done, wall,
      rank->last.acc_avg_model, rank->best.acc_avg_model);
}

/* A message that arrived (a whole one, or a finished neighbour's
 * marker: one float, its receive buffer's sentinel left in place). */
static void take_message(async_node_t *a, peer_t *p) {
  if (p->recv[a->len] == SENTINEL) {
    if (p->recv[0] == CHECKPOINT_MARK)
      p->at_checkpoint = 1;
    else
      p->round = INFINITY; /* finished: never too far behind */
    return;
  }
  p->round = p->recv[a->len];
  p->lost = lost(a, p->round, p->rank, a->id);
  if (p->lost) {
    a->node->exchange.messages_lost++; /* counted by its receiver */
    return;
  }
  p->has = 1;
  if (a->push_sum) {
    qgm_vec_axpy(a->acc, 1.0f, p->recv, a->len);
  } else {
    float *t = p->newest;
    p->newest = p->recv;
    p->recv = t;
  }
}

static void final_evaluation(void *arg) {
  async_node_t *a = &an;
  a->final_eval = 1;
  scale_loss(a);
  a->in_eval = 1;
  qgmd_evaluate(arg, after_eval);
}

/* After the receives were cancelled: push-sum's last shares folded in;
 * the last step's checkpoint (every rank is at that step, its own last or
 * a halt's agreed one, and nothing is in flight); then a last
 * evaluation, of the model as it ends, and the summary. */
static void finish_end(async_node_t *a) {
  if (a->push_sum)
    fold_shares(a);
  if (qgmd_checkpoint_due(a->node)) {
    qgmd_checkpoint_save(a->node, final_evaluation);
    return;
  }
  final_evaluation(a->node);
}

/* END: nothing is in flight. The posted receives are cancelled; the loop
 * completes them (recv_done), and one that had completed is taken. */
static void end_run(async_node_t *a) {
  a->cancelling = a->k_in - a->shared_in;
  for (int j = 0; j < a->k_in; j++)
    if (!a->in[j].slot)
      MPI_Cancel(&a->in[j].request);
  if (a->cancelling == 0)
    finish_end(a);
}

/* ---------------------------------------------------------------- set-up */

static int setup(async_node_t *a, qgmd_node_t *node) {
  const qgmd_config_t *cfg = node->rank.cfg;
  const qgm_topology_t *t = node->topology;
  memset(a, 0, sizeof *a);
  a->node = node;
  uv_timer_init(&node->rank.loop.uv, &a->deadline);
  a->deadline.data = a;
  a->n = node->rank.nodes;
  a->id = node->rank.id;
  a->staleness = (uint64_t)cfg->max_staleness;
  a->push_sum = qgm_optim_combine(node->optim) == QGM_COMBINE_PUSH_SUM;
  a->len = qgm_optim_message_len(node->optim);
  const int m = qgm_topology_max_degree(t) > 0 ? qgm_topology_max_degree(t)
                                               : 1;
  int peers[m], sends[m];
  double weights[m], self;
  a->k_in = qgm_topology_neighbors(t, a->id, 0, peers, weights, &self);
  a->k_out = qgm_topology_send_peers(t, a->id, 0, sends);
  a->share = 1.0 / (double)(a->k_out + 1);
  a->in = calloc((size_t)m, sizeof *a->in);
  a->out = calloc((size_t)m, sizeof *a->out);
  a->from = calloc((size_t)m, sizeof *a->from);
  a->weights = calloc((size_t)m, sizeof *a->weights);
  a->acc = calloc(a->len, sizeof *a->acc);
  a->command_reqs = calloc((size_t)a->n, sizeof *a->command_reqs);
  if (!a->in || !a->out || !a->from || !a->weights || !a->acc ||
      !a->command_reqs)
    return QGM_ENOMEM;
  for (int j = 0; j < a->k_in; j++) {
    peer_t *p = &a->in[j];
    p->rank = peers[j];
    p->weight = weights[j];
    /* A resumed run starts from a checkpoint, where every message of the
     * rounds before its step had been mixed. */
    p->round = (double)node->rank.step - 1.0;
    p->request = MPI_REQUEST_NULL;
    if (!(p->recv = malloc((a->len + 1) * sizeof(float))) ||
        !(p->newest = malloc((a->len + 1) * sizeof(float))))
      return QGM_ENOMEM;
  }
  for (int k = 0; k < a->k_out; k++) {
    a->out[k].rank = sends[k];
    a->out[k].pending = -1.0;
    for (int j = 0; j < a->k_in; j++)
      if (a->in[j].rank == sends[k])
        a->out[k].back = &a->in[j];
    if (!(a->out[k].send = malloc((a->len + 1) * sizeof(float))) ||
        !(a->out[k].next = calloc(a->len + 1, sizeof(float))))
      return QGM_ENOMEM;
  }
  return 0;
}

/* Model gossip between processes of one host goes through the host's
 * window of newest-message slots (--shared-memory=auto). Collective over
 * the host: every rank of it allocates its part, none if no neighbour
 * on the host reads it. Push-sum does not: its shares are mass that must
 * be counted once, and a newest-wins slot may skip one. */
static void share_host(async_node_t *a) {
  const qgmd_rank_t *rank = &a->node->rank;
  if (a->push_sum || strcmp(rank->cfg->shared_memory, "auto") != 0)
    return;
  MPI_Comm host = rank->placement.host;
  const int m = (a->k_in > a->k_out ? a->k_in : a->k_out) + 1;
  int world[m], here[m];
  MPI_Group world_group, host_group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Comm_group(host, &host_group);
  for (int k = 0; k < a->k_out; k++)
    world[k] = a->out[k].rank;
  MPI_Group_translate_ranks(world_group, a->k_out, world, host_group, here);
  for (int k = 0; k < a->k_out; k++)
    a->shared_out += a->out[k].shared = here[k] != MPI_UNDEFINED;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  void *base = NULL;
  MPI_Win_allocate_shared(
      a->shared_out ? (MPI_Aint)qgmd_newest_slot_bytes(a->len) : 0, 1, info,
      host, &base, &a->slots);
  MPI_Info_free(&info);
  a->has_window = 1;
  if (a->shared_out) {
    a->own_slot = base;
    qgmd_newest_slot_init(base, a->len);
  }
  MPI_Barrier(host); /* every slot made before anyone reads one */
  for (int j = 0; j < a->k_in; j++)
    world[j] = a->in[j].rank;
  MPI_Group_translate_ranks(world_group, a->k_in, world, host_group, here);
  MPI_Group_free(&world_group);
  MPI_Group_free(&host_group);
  for (int j = 0; j < a->k_in; j++) {
    if (here[j] == MPI_UNDEFINED)
      continue;
    MPI_Aint size;
    int unit;
    void *slot = NULL;
    MPI_Win_shared_query(a->slots, here[j], &size, &unit, &slot);
    if (size <= 0) { /* the graph's lists disagree: a bug */
      LOG(LOG_ERROR, "rank %d keeps no slot for rank %d", a->in[j].rank,
          a->id);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    a->in[j].slot = slot;
    a->shared_in++;
  }
  uv_timer_init(&a->node->rank.loop.uv, &a->recheck);
  a->recheck.data = a;
}

static void teardown(async_node_t *a) {
  uv_timer_stop(&a->deadline);
  if (a->has_window) {
    uv_timer_stop(&a->recheck);
    MPI_Win_free(&a->slots); /* collective: after END, every rank is here */
  }
  for (int j = 0; a->in && j < a->k_in; j++) {
    free(a->in[j].recv);
    free(a->in[j].newest);
  }
  for (int k = 0; a->out && k < a->k_out; k++) {
    free(a->out[k].send);
    free(a->out[k].next);
  }
  free(a->in);
  free(a->out);
  free(a->from);
  free(a->weights);
  free(a->acc);
  free(a->command_reqs);
}

int qgmd_train_async(qgmd_node_t *node) {
  async_node_t *a = &an;
  /* Agreed: the window below is collective. */
  int ok = setup(a, node) == 0, all_ok;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok) {
    LOG(LOG_ERROR, "out of memory setting up the asynchronous gossip");
    teardown(a);
    return 1;
  }
  share_host(a);
  node->exchange.messages_lost = 0.0; /* counted here (take_message) */
  /* A neighbour may rightly be silent as long as it computes, and a rank
   * that is done waits for the slowest: the watchdog passes over these
   * receives (watchdog.c names the waits it judges: the evaluation's is
   * one). A rank blocked on a neighbour too far behind has its own
   * deadline. */
  for (int j = 0; j < a->k_in; j++)
    if (!a->in[j].slot)
      post_recv(a, &a->in[j]);
  if (a->id == 0) {
    if (a->n > 1)
      post_report_recv(a);
  } else {
    post_command_recv(a);
  }
  qgmd_progress_start(&node->rank);
  begin_step(a);
  qgmd_loop_run(&node->rank.loop);
  teardown(a);
  return node->rank.status;
}
