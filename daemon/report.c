/* report.c - see report.h. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "log.h"
#include "mpi_util.h"
#include "watchdog.h"

void qgmd_report_write(FILE *metrics, const char *type,
                       const qgmd_field_t *fields, size_t n) {
  static int warned;
  if (!metrics)
    return;
  if (qgmd_record_write(metrics, type, fields, n) != 0 && !warned) {
    warned = 1;
    LOG(LOG_WARN, "--metrics: cannot write the metrics file; training goes "
        "on without it");
  }
}

void qgmd_report_config(const qgmd_rank_t *rank, const char *provenance,
                        const char *config_json) {
  const char *eager = getenv("OMPI_MCA_btl_tcp_eager_limit");
  const qgmd_field_t fields[] = {
      QGMD_MEMBERS(provenance),
      QGMD_INT("nodes", rank->nodes),
      /* What Open MPI's TCP messages were sent with
       * (qgmd_mpi_transport_defaults); null: Open MPI's default. */
      QGMD_OR_NULL(eager != NULL, QGMD_STRING("mpi_tcp_eager_limit", eager)),
      /* Rank 0's CPU and the paths its products took (--kernels). */
      QGMD_STRING("cpu", qgm_cpu()),
      QGMD_STRING("kernels", qgm_kernels()),
      QGMD_JSON("flags", config_json),
  };
  qgmd_report_write(rank->metrics, "config", QGMD_FIELDS(fields));
}

const char *qgmd_report_job(const qgmd_rank_t *rank, char *buf,
                            size_t size) {
  const char *graph = qgmd_job_graph(rank->cfg);
  char nodes[48];
  if (snprintf(buf, size, "%s on %s%s%s%s", rank->cfg->algorithm,
               qgm_count_text(nodes, sizeof nodes, rank->nodes, "node"),
               graph ? " (" : "", graph ? graph : "", graph ? ")" : "") < 0)
    buf[0] = '\0';
  return buf;
}

void qgmd_report_eval(const qgmd_rank_t *rank) {
  if (rank->id != 0)
    return;
  const qgmd_evaluation_t *e = &rank->last;
  double wall = qgmd_now() - rank->start_s;
  const int m = e->has_momentum;
  const qgmd_field_t fields[] = {
      QGMD_DOUBLE("epoch", "%.6g", e->epoch),
      QGMD_UINT("step", e->step),
      QGMD_DOUBLE("wall_s", "%.3f", wall),
      QGMD_DOUBLE("lr", "%.6g", e->lr),
      QGMD_DOUBLE("train_loss", "%.6f", e->train_loss),
      QGMD_DOUBLE("test_acc_local_mean", "%.6f", e->acc_local_mean),
      QGMD_DOUBLE("test_acc_avg_model", "%.6f", e->acc_avg_model),
      QGMD_DOUBLE("consensus_dist", "%.6g", e->consensus),
      QGMD_DOUBLE("compute_s", "%.3f", e->compute_s),
      QGMD_DOUBLE("comm_s", "%.3f", e->comm_s),
      QGMD_DOUBLE("test_loss_avg_model", "%.6f", e->loss_avg_model),
      QGMD_DOUBLE("test_loss_local_mean", "%.6f", e->loss_local_mean),
      QGMD_DOUBLE("test_acc_local_min", "%.6f", e->acc_local_min),
      QGMD_DOUBLE("test_acc_local_max", "%.6f", e->acc_local_max),
      QGMD_DOUBLE("bytes_sent", "%.0f",
                  e->bytes_per_step * (double)(rank->step - rank->first_step)),
      QGMD_DOUBLE("bytes_per_step", "%.0f", e->bytes_per_step),
      QGMD_DOUBLE("bytes_between_hosts_per_step", "%.0f",
                  e->between_hosts_per_step),
      QGMD_DOUBLE("bytes_in_place_per_step", "%.0f", e->in_place_per_step),
      QGMD_IF(m, QGMD_DOUBLE("momentum_norm_mean", "%.6g",
                             e->momentum_norm_mean)),
      QGMD_IF(m, QGMD_DOUBLE("momentum_norm_min", "%.6g",
                             e->momentum_norm_min)),
      QGMD_IF(m, QGMD_DOUBLE("momentum_norm_max", "%.6g",
                             e->momentum_norm_max)),
      QGMD_IF(e->dropping,
              QGMD_DOUBLE("messages_lost", "%.0f", e->messages_lost)),
      QGMD_IF(e->has_push_sum, QGMD_DOUBLE("push_sum_weight_min", "%.9g",
                                           e->push_sum_min)),
      QGMD_IF(e->has_push_sum, QGMD_DOUBLE("push_sum_weight_max", "%.9g",
                                           e->push_sum_max)),
      QGMD_IF(e->has_push_sum, QGMD_DOUBLE("push_sum_weight_sum", "%.9g",
                                           e->push_sum_sum)),
  };
  qgmd_report_write(rank->metrics, "eval", QGMD_FIELDS(fields));
  LOG(LOG_INFO,
      "epoch %.4g/%ld  step %llu  lr %.4g  loss %.4f  acc(avg model) %.4f  "
      "acc(local mean) %.4f  consensus %.3g  %.1fs",
      e->epoch, rank->cfg->epochs, (unsigned long long)e->step, e->lr,
      e->train_loss, e->acc_avg_model, e->acc_local_mean, e->consensus, wall);
}

void qgmd_stop_if_collapsed(qgmd_rank_t *rank) {
  const qgmd_evaluation_t *e = &rank->last;
  const qgmd_collapse_eval_t measures = {
      .epoch = e->epoch,
      .step = e->step,
      .steps_per_epoch = rank->steps_per_epoch,
      .dim = qgm_model_num_params(rank->model),
      .consensus = e->consensus,
      .has_momentum = e->has_momentum,
      .momentum_max = e->momentum_norm_max,
      .accuracy = e->acc_avg_model,
      .classes = qgm_dataset_classes(rank->test),
  };
  char line[448];
  if (qgmd_collapse_check(&measures, &rank->chance,
                          rank->cfg->stop_at_chance != 0, line,
                          sizeof line) &&
      rank->id == 0) {
    LOG(LOG_ERROR, "%s", line);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

void qgmd_report_outcome(const qgmd_rank_t *rank, double wall, int early,
                         qgmd_field_t rows[QGMD_OUTCOME_ROWS]) {
  const qgmd_evaluation_t *e = &rank->last;
  const qgmd_field_t outcome[QGMD_OUTCOME_ROWS] = {
      QGMD_UINT("steps", rank->step),
      QGMD_BOOL("stopped_early", early),
      QGMD_DOUBLE("wall_s", "%.3f", wall),
      QGMD_DOUBLE("final_test_acc_avg_model", "%.6f", e->acc_avg_model),
      QGMD_DOUBLE("best_test_acc_avg_model", "%.6f", rank->best.acc_avg_model),
      QGMD_DOUBLE("final_test_acc_local_mean", "%.6f", e->acc_local_mean),
      QGMD_DOUBLE("final_consensus_dist", "%.6g", e->consensus),
      QGMD_DOUBLE("final_train_loss", "%.6f", e->train_loss),
  };
  memcpy(rows, outcome, sizeof outcome);
}

void qgmd_report_summary(const qgmd_rank_t *rank) {
  /* A job being aborted did not finish: no record or line says it did. */
  if (rank->id != 0 || qgmd_watchdog_aborting())
    return;
  const qgmd_evaluation_t *e = &rank->last;
  double wall = qgmd_now() - rank->start_s;
  const int early = qgmd_stop_early(&rank->stop);
  qgmd_field_t outcome[QGMD_OUTCOME_ROWS];
  qgmd_report_outcome(rank, wall, early, outcome);
  const qgmd_field_t fields[] = {
      QGMD_DOUBLE("epochs", "%.6g",
                  (double)rank->step / (double)rank->steps_per_epoch),
      QGMD_ROWS(outcome),
      QGMD_DOUBLE("compute_s", "%.3f", rank->compute_s),
      QGMD_DOUBLE("comm_s", "%.3f", rank->comm_s),
      QGMD_DOUBLE("wait_s", "%.3f", rank->wait_s),
      QGMD_DOUBLE("steps_s", "%.3f", rank->steps_s),
      QGMD_DOUBLE("wait_cpu_s", "%.4f", rank->wait_cpu_s),
      QGMD_DOUBLE("bytes_sent", "%.0f", qgmd_rank_traffic(rank).bytes_sent),
  };
  qgmd_report_write(rank->metrics, "summary", QGMD_FIELDS(fields));
  char job[256];
  qgmd_report_job(rank, job, sizeof job);
  char steps[48];
  qgm_count_text(steps, sizeof steps, (long long)rank->step, "step");
  LOG(LOG_INFO, "%s: %s, %s in %.1f s: "
      "averaged-model test accuracy %.4f (best %.4f), local models %.4f, "
      "consensus distance %.3g",
      early ? "stopped" : "done", job,
      steps, wall,
      e->acc_avg_model, rank->best.acc_avg_model, e->acc_local_mean,
      e->consensus);
}
