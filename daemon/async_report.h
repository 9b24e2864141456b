/* async_report.h - what the asynchronous mode's server measures and
 * writes: the evaluations of its model (on a snapshot, on the worker
 * thread), the staleness of the applied gradients, and the summary with
 * the training-stability figure. The records carry the same fields as a
 * decentralized run's (README "Metrics"), so every tool reads both. */
#ifndef QGMD_ASYNC_REPORT_H
#define QGMD_ASYNC_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "rank.h"
#include "qgm.h"

/* The server's model at one version, waiting to be evaluated, with the
 * figures of the interval that ended there. */
typedef struct qgmd_async_snapshot {
  float *x;
  uint64_t version, rounds;
  double wall_s, lr, loss, compute_s, wait_s, staleness_mean;
  uint64_t staleness_max;
  struct qgmd_async_snapshot *next;
} qgmd_async_snapshot_t;

typedef struct qgmd_async_report {
  qgmd_rank_t *rank;
  size_t dim;
  /* Snapshots are taken on schedule and evaluated one after the other:
   * a fast run's evaluations fall at the same versions as a slow one's. */
  qgmd_async_snapshot_t *head, *tail;
  size_t correct; /* the head's result, from the worker thread */
  uint64_t snapshots, last_version;

  double *accuracy; /* of every evaluation, for the stability figure */
  size_t evaluations, capacity;

  /* Since the last snapshot, and over the run. */
  double loss_sum;
  uint64_t losses;
  double interval_staleness_sum;
  uint64_t interval_staleness_max, interval_updates;
  double staleness_sum;
  uint64_t staleness_max, updates;
} qgmd_async_report_t;

int qgmd_async_report_init(qgmd_async_report_t *r, qgmd_rank_t *rank,
                           size_t dim);
void qgmd_async_report_free(qgmd_async_report_t *r);

/* Accounting of arrivals and applied updates (loop thread). */
void qgmd_async_report_loss(qgmd_async_report_t *r, double loss);
void qgmd_async_report_update(qgmd_async_report_t *r,
                              const qgm_server_update_t *u);

/* Queues a copy of the server's model with the figures of the interval
 * that ends here; compute_s and wait_s are the workers' mean counters.
 * Returns 0, or -1 when out of memory. */
int qgmd_async_report_snapshot(qgmd_async_report_t *r, qgmd_rank_t *rank,
                               qgm_server_t *rules, double compute_s,
                               double wait_s);
/* Worker thread: scores the oldest queued snapshot on the test set. */
void qgmd_async_report_evaluate(qgmd_async_report_t *r);
/* Loop thread, after qgmd_async_report_evaluate: the eval record of the
 * oldest snapshot, which is then dropped. */
void qgmd_async_report_eval(qgmd_async_report_t *r, qgmd_rank_t *rank);
/* The summary record and line. */
void qgmd_async_report_summary(qgmd_async_report_t *r, qgmd_rank_t *rank,
                               const qgm_server_t *rules);

#endif /* QGMD_ASYNC_REPORT_H */
