/* stop.h - how a run ends: whether this rank was asked to stop, the vote
 * in which the ranks agree on the step to stop at, and where the ending of
 * a synchronous run stands (train.c walks it). */
#ifndef QGMD_STOP_H
#define QGMD_STOP_H

#include <inttypes.h>
#include <mpi.h>

#include "stop_sleep.h"

/* Rank 0's line once the ranks agreed on the step a stop asked for ends
 * at (synchronous and asynchronous alike; the tests read the step). */
#define QGMD_STOPPING_AT "stopping at step %" PRIu64 " as requested"

/* Why a run ends before its last step. */
typedef enum qgmd_stop_reason {
  QGMD_STOP_NONE,   /* it runs to its last step */
  QGMD_STOP_ASKED,  /* a vote found a rank asked to stop */
  QGMD_STOP_TARGET, /* an evaluation reached --target-accuracy */
  QGMD_STOP_FAILED, /* a checkpoint failed on some rank */
} qgmd_stop_reason_t;

/* The ending, in order; it only moves forward. Each phase may wait on the
 * loop and comes back to the next. */
typedef enum qgmd_end_phase {
  QGMD_END_NOT_YET,    /* training */
  QGMD_END_VOTE,       /* the vote in flight completes (every rank posted
                          it, so it does) */
  QGMD_END_DRAIN,      /* the exchange in flight completes (the peers stop
                          at the same step and complete it too) */
  QGMD_END_CHECKPOINT, /* the last checkpoint, when one is due */
  QGMD_END_EVALUATE,   /* an early end's own evaluation, so that the final
                          record describes the final model */
  QGMD_END_REPORT,     /* the summary and the ranks' last status reports */
  QGMD_END_DONE,
} qgmd_end_phase_t;

typedef struct qgmd_stop {
  /* A signal, qgmctl or a full disk asked this rank to stop; its next
   * vote says so. */
  int asked;
  qgmd_stop_reason_t reason;
  qgmd_end_phase_t phase;
  /* The vote: every QGMD_VOTE_EVERY steps one non-blocking MPI_MAX of
   * `vote` into `result` (train.c). */
  int vote, result;
  MPI_Request request;
  int step_waits; /* a step (or the ending) waits for the vote */
} qgmd_stop_t;

/* Steps between two votes: one collective every few steps, and a stop
 * that takes effect within two of those intervals. */
enum { QGMD_VOTE_EVERY = 8 };

/* Asks for a stop at the next agreed step. Returns 1 the first time, so
 * that the caller says so once, and 0 after. */
static inline int qgmd_stop_ask(qgmd_stop_t *s) {
  const int first = !s->asked;
  s->asked = 1;
  qgmd_stop_wake(); /* no emulated device time is waited out now */
  return first;
}

/* Whether the run ends before its last step. */
static inline int qgmd_stop_early(const qgmd_stop_t *s) {
  return s->reason != QGMD_STOP_NONE;
}

#endif /* QGMD_STOP_H */
