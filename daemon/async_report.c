/* async_report.c - see async_report.h.
 *
 * In the asynchronous mode there is one model, the server's: it is both
 * the "averaged model" and every "local model" of a decentralized run, so
 * test_acc_local_mean repeats test_acc_avg_model and consensus_dist is 0.
 * comm_s is the workers' mean time spent waiting for a model (the
 * transfer, the server's queue and the white list's hold together). */
#include <stdlib.h>

#include "async_report.h"
#include "log.h"
#include "mpi_util.h"
#include "report.h"
#include "watchdog.h"

int qgmd_async_report_init(qgmd_async_report_t *r, qgmd_rank_t *rank,
                           size_t dim) {
  *r = (qgmd_async_report_t){.rank = rank, .dim = dim, .capacity = 64};
  r->accuracy = malloc(r->capacity * sizeof *r->accuracy);
  return r->accuracy ? 0 : -1;
}

static void drop_head(qgmd_async_report_t *r) {
  qgmd_async_snapshot_t *head = r->head;
  r->head = head->next;
  if (!r->head)
    r->tail = NULL;
  free(head->x);
  free(head);
}

void qgmd_async_report_free(qgmd_async_report_t *r) {
  while (r->head)
    drop_head(r);
  free(r->accuracy);
}

void qgmd_async_report_loss(qgmd_async_report_t *r, double loss) {
  r->loss_sum += loss;
  r->losses++;
}

void qgmd_async_report_update(qgmd_async_report_t *r,
                              const qgm_server_update_t *u) {
  r->updates++;
  r->interval_updates++;
  r->staleness_sum += (double)u->staleness;
  r->interval_staleness_sum += (double)u->staleness;
  if (u->staleness > r->staleness_max)
    r->staleness_max = u->staleness;
  if (u->staleness > r->interval_staleness_max)
    r->interval_staleness_max = u->staleness;
}

static double mean_or_zero(double sum, uint64_t n) {
  return n ? sum / (double)n : 0.0;
}

int qgmd_async_report_snapshot(qgmd_async_report_t *r, qgmd_rank_t *rank,
                               qgm_server_t *rules, double compute_s,
                               double wait_s) {
  qgmd_async_snapshot_t *snap = malloc(sizeof *snap);
  float *x = malloc(r->dim * sizeof *x);
  if (!snap || !x) {
    free(snap);
    free(x);
    return -1;
  }
  qgm_vec_copy(x, qgm_server_params(rules), r->dim);
  *snap = (qgmd_async_snapshot_t){
      .x = x,
      .version = qgm_server_version(rules),
      .rounds = qgm_server_rounds(rules),
      .wall_s = qgmd_now() - rank->start_s,
      .lr = rank->lr,
      .loss = mean_or_zero(r->loss_sum, r->losses),
      .compute_s = compute_s,
      .wait_s = wait_s,
      .staleness_mean =
          mean_or_zero(r->interval_staleness_sum, r->interval_updates),
      .staleness_max = r->interval_staleness_max};
  if (r->tail)
    r->tail->next = snap;
  else
    r->head = snap;
  r->tail = snap;
  r->snapshots++;
  r->last_version = snap->version;
  r->loss_sum = 0.0;
  r->losses = 0;
  r->interval_staleness_sum = 0.0;
  r->interval_staleness_max = r->interval_updates = 0;
  return 0;
}

void qgmd_async_report_evaluate(qgmd_async_report_t *r) {
  qgmd_rank_t *rank = r->rank;
  double loss_sum;
  r->correct = 0;
  qgm_model_evaluate(rank->model, r->head->x, qgm_dataset_images(rank->test),
                     qgm_dataset_labels(rank->test),
                     qgm_dataset_count(rank->test), &r->correct, &loss_sum);
}

static void remember_accuracy(qgmd_async_report_t *r, double acc) {
  if (r->evaluations == r->capacity) {
    double *grown = realloc(r->accuracy, 2 * r->capacity * sizeof *grown);
    if (!grown) {
      /* Keep the latest ones: the stability figure needs only those. */
      r->evaluations /= 2;
      for (size_t i = 0; i < r->evaluations; i++)
        r->accuracy[i] = r->accuracy[i + r->evaluations];
    } else {
      r->accuracy = grown;
      r->capacity *= 2;
    }
  }
  r->accuracy[r->evaluations++] = acc;
}

void qgmd_async_report_eval(qgmd_async_report_t *r, qgmd_rank_t *rank) {
  const qgmd_async_snapshot_t *e = r->head;
  const double acc =
      (double)r->correct / (double)qgm_dataset_count(rank->test);
  const double epoch = (double)e->version / (double)rank->steps_per_epoch;
  remember_accuracy(r, acc);
  rank->last = (qgmd_evaluation_t){.epoch = epoch,
                                   .step = e->version,
                                   .lr = e->lr,
                                   .train_loss = e->loss,
                                   .acc_local_mean = acc,
                                   .acc_avg_model = acc,
                                   .compute_s = e->compute_s,
                                   .comm_s = e->wait_s};
  if (acc > rank->best.acc_avg_model)
    rank->best = rank->last;
  /* One model: it is the averaged one and every local one, and the
   * consensus distance is 0. */
  const qgmd_field_t fields[] = {
      QGMD_DOUBLE("epoch", "%.4f", epoch),
      QGMD_UINT("step", e->version),
      QGMD_DOUBLE("wall_s", "%.3f", e->wall_s),
      QGMD_DOUBLE("lr", "%.6g", e->lr),
      QGMD_DOUBLE("train_loss", "%.6f", e->loss),
      QGMD_DOUBLE("test_acc_local_mean", "%.6f", acc),
      QGMD_DOUBLE("test_acc_avg_model", "%.6f", acc),
      QGMD_DOUBLE("consensus_dist", "%.6g", 0.0),
      QGMD_DOUBLE("compute_s", "%.3f", e->compute_s),
      QGMD_DOUBLE("comm_s", "%.3f", e->wait_s),
      QGMD_DOUBLE("staleness_mean", "%.3f", e->staleness_mean),
      QGMD_UINT("staleness_max", e->staleness_max),
      QGMD_UINT("rounds", e->rounds),
  };
  qgmd_report_write(rank->metrics, "eval", QGMD_FIELDS(fields));
  LOG(LOG_INFO, "epoch %.2f/%ld  update %llu  lr %.4g  loss %.4f  "
      "acc(server model) %.4f  staleness %.2f (max %llu)  %.1fs",
      epoch, rank->cfg->epochs, (unsigned long long)e->version, e->lr,
      e->loss, acc, e->staleness_mean, (unsigned long long)e->staleness_max,
      e->wall_s);
  drop_head(r);
}

void qgmd_async_report_summary(qgmd_async_report_t *r, qgmd_rank_t *rank,
                               const qgm_server_t *rules) {
  /* A job being aborted did not finish: no record or line says it did. */
  if (qgmd_watchdog_aborting())
    return;
  const qgmd_config_t *cfg = rank->cfg;
  const qgmd_evaluation_t *e = &rank->last;
  const int workers = rank->nodes - 1;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int w = 0; w < workers; w++) {
    uint64_t n = qgm_server_applied(rules, w);
    lo = n < lo ? n : lo;
    hi = n > hi ? n : hi;
  }
  const size_t k = (size_t)cfg->stability_k;
  const double stability = qgm_stability_std(r->accuracy, r->evaluations, k);
  const double staleness = mean_or_zero(r->staleness_sum, r->updates);
  const double epochs = (double)rank->step / (double)rank->steps_per_epoch;
  const int early = qgmd_stop_early(&rank->stop);
  double wall = qgmd_now() - rank->start_s;
  /* The histogram up to its last non-empty bucket: [n_0, n_1, ...]. */
  size_t len, used = 0, last = 0;
  const uint64_t *hist = qgm_server_staleness_hist(rules, &len);
  for (size_t t = 0; t < len; t++)
    if (hist[t])
      last = t + 1;
  char histogram[8192] = "[";
  for (size_t t = 0; t < last && used < sizeof histogram - 32; t++)
    used += (size_t)snprintf(histogram + 1 + used, sizeof histogram - 1 - used,
                             "%s%llu", t ? "," : "",
                             (unsigned long long)hist[t]);
  snprintf(histogram + 1 + used, sizeof histogram - 1 - used, "]");
  qgmd_field_t outcome[QGMD_OUTCOME_ROWS];
  qgmd_report_outcome(rank, wall, early, outcome);
  const qgmd_field_t fields[] = {
      QGMD_STRING("mode", "async"),
      QGMD_STRING("algorithm", cfg->algorithm),
      QGMD_INT("workers", workers),
      QGMD_DOUBLE("epochs", "%.4f", epochs),
      QGMD_ROWS(outcome), /* its consensus distance: 0, one model */
      QGMD_DOUBLE("stability_std_last_k", "%.6f", stability),
      QGMD_UINT("stability_k", k),
      QGMD_UINT("evaluations", r->evaluations),
      QGMD_DOUBLE("staleness_mean", "%.3f", staleness),
      QGMD_UINT("staleness_max", r->staleness_max),
      QGMD_UINT("rounds", qgm_server_rounds(rules)),
      QGMD_UINT("applied_min", lo),
      QGMD_UINT("applied_max", hi),
      QGMD_DOUBLE("compute_s", "%.3f", rank->compute_s),
      QGMD_DOUBLE("comm_s", "%.3f", rank->wait_s),
      QGMD_STRING("gsgm_rule", cfg->gsgm_rule),
      QGMD_JSON("staleness_hist", histogram),
      QGMD_UINT("staleness_hist_last", len - 1),
  };
  qgmd_report_write(rank->metrics, "summary", QGMD_FIELDS(fields));
  char with[48], updates[48];
  qgm_count_text(with, sizeof with, workers, "worker");
  qgm_count_text(updates, sizeof updates, (long long)rank->step, "update");
  LOG(LOG_INFO, "%s: %s with %s, %s in %.1f s: "
      "server-model test accuracy %.4f (best %.4f), stability (std of the "
      "last %zu) %.4f, staleness mean %.2f max %llu",
      early ? "stopped" : "done", cfg->algorithm, with, updates, wall,
      e->acc_avg_model,
      rank->best.acc_avg_model, k, stability, staleness,
      (unsigned long long)r->staleness_max);
}
