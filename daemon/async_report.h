/* async_report.h - what the asynchronous mode's server measures and
 * writes: the evaluations of its model (on a snapshot, on the worker
 * thread), the staleness of the applied gradients, and the summary with
 * the training-stability figure. The records carry the same fields as a
 * decentralized run's (README "Metrics"), so every tool reads both. */
#ifndef QGMD_ASYNC_REPORT_H
#define QGMD_ASYNC_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "node.h"
#include "qgm.h"

typedef struct qgmd_async_report {
  qgmd_node_t *node;
  float *snapshot; /* the model under evaluation */
  size_t correct;  /* its result, from the worker thread */

  /* What the evaluation in progress describes. */
  uint64_t snapshot_version, snapshot_rounds;
  double snapshot_lr, snapshot_loss, snapshot_compute_s, snapshot_wait_s;
  double snapshot_staleness_mean;
  uint64_t snapshot_staleness_max;

  uint64_t evaluated_version;
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

int qgmd_async_report_init(qgmd_async_report_t *r, qgmd_node_t *node,
                           size_t dim);
void qgmd_async_report_free(qgmd_async_report_t *r);

/* Accounting of arrivals and applied updates (loop thread). */
void qgmd_async_report_loss(qgmd_async_report_t *r, double loss);
void qgmd_async_report_update(qgmd_async_report_t *r,
                              const qgm_server_update_t *u);

/* Copies the server's model and the figures of the interval that ends
 * here; compute_s and wait_s are the workers' mean counters. */
void qgmd_async_report_snapshot(qgmd_async_report_t *r, qgmd_node_t *node,
                                qgm_server_t *rules, double compute_s,
                                double wait_s);
/* Worker thread: scores the snapshot on the test set. */
void qgmd_async_report_evaluate(qgmd_async_report_t *r);
/* Loop thread, after qgmd_async_report_evaluate: the eval record. */
void qgmd_async_report_eval(qgmd_async_report_t *r, qgmd_node_t *node);
/* The summary record and line. */
void qgmd_async_report_summary(qgmd_async_report_t *r, qgmd_node_t *node,
                               const qgm_server_t *rules);

#endif /* QGMD_ASYNC_REPORT_H */
