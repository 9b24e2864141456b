/* report.c - see report.h. */
#include "report.h"

#include <stdarg.h>

#include "log.h"
#include "mpi_util.h"

void qgmd_write_record(FILE *metrics, const char *fmt, ...) {
  static int warned;
  if (!metrics)
    return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(metrics, fmt, ap);
  va_end(ap);
  if ((fflush(metrics) != 0 || ferror(metrics)) && !warned) {
    warned = 1;
    LOG(LOG_WARN, "--metrics: cannot write the metrics file; training goes "
        "on without it");
  }
}

void qgmd_report_eval(const qgmd_rank_t *rank) {
  if (rank->id != 0)
    return;
  const qgmd_evaluation_t *e = &rank->last;
  double wall = qgmd_now() - rank->start_s;
  char momentum[160] = "";
  if (e->has_momentum)
    snprintf(momentum, sizeof momentum,
             ",\"momentum_norm_mean\":%.6g,\"momentum_norm_min\":%.6g,"
             "\"momentum_norm_max\":%.6g",
             e->momentum_norm_mean, e->momentum_norm_min,
             e->momentum_norm_max);
  qgmd_write_record(rank->metrics,
            "{\"type\":\"eval\",\"epoch\":%.6g,\"step\":%llu,\"wall_s\":%.3f,"
            "\"lr\":%.6g,\"train_loss\":%.6f,\"test_acc_local_mean\":%.6f,"
            "\"test_acc_avg_model\":%.6f,\"consensus_dist\":%.6g,"
            "\"compute_s\":%.3f,\"comm_s\":%.3f,"
            "\"test_loss_avg_model\":%.6f,\"test_loss_local_mean\":%.6f,"
            "\"test_acc_local_min\":%.6f,\"test_acc_local_max\":%.6f,"
            "\"bytes_sent\":%.0f,\"bytes_per_step\":%.0f,"
            "\"bytes_between_hosts_per_step\":%.0f,"
            "\"bytes_in_place_per_step\":%.0f%s}\n",
            e->epoch, (unsigned long long)e->step, wall, e->lr,
            e->train_loss, e->acc_local_mean, e->acc_avg_model, e->consensus,
            e->compute_s, e->comm_s, e->loss_avg_model, e->loss_local_mean,
            e->acc_local_min, e->acc_local_max,
            e->bytes_per_step * (double)(rank->step - rank->first_step),
            e->bytes_per_step, e->between_hosts_per_step,
            e->in_place_per_step, momentum);
  LOG(LOG_INFO,
      "epoch %.4g/%ld  step %llu  lr %.4g  loss %.4f  acc(avg model) %.4f  "
      "acc(local mean) %.4f  consensus %.3g  %.1fs",
      e->epoch, rank->cfg->epochs, (unsigned long long)e->step, e->lr,
      e->train_loss, e->acc_avg_model, e->acc_local_mean, e->consensus, wall);
}

void qgmd_report_summary(const qgmd_rank_t *rank) {
  if (rank->id != 0)
    return;
  const qgmd_evaluation_t *e = &rank->last;
  double wall = qgmd_now() - rank->start_s;
  const int early = qgmd_stop_early(&rank->stop);
  qgmd_write_record(rank->metrics,
            "{\"type\":\"summary\",\"epochs\":%.6g,\"steps\":%llu,"
            "\"stopped_early\":%s,\"wall_s\":%.3f,"
            "\"final_test_acc_avg_model\":%.6f,"
            "\"best_test_acc_avg_model\":%.6f,"
            "\"final_test_acc_local_mean\":%.6f,"
            "\"final_consensus_dist\":%.6g,\"final_train_loss\":%.6f,"
            "\"compute_s\":%.3f,\"comm_s\":%.3f,\"wait_s\":%.3f,"
            "\"steps_s\":%.3f,\"wait_cpu_s\":%.4f,\"bytes_sent\":%.0f}\n",
            (double)rank->step / (double)rank->steps_per_epoch,
            (unsigned long long)rank->step,
            early ? "true" : "false", wall, e->acc_avg_model,
            rank->best.acc_avg_model, e->acc_local_mean, e->consensus,
            e->train_loss, rank->compute_s, rank->comm_s, rank->wait_s,
            rank->steps_s, rank->wait_cpu_s,
            qgmd_rank_traffic(rank).bytes_sent);
  LOG(LOG_INFO, "%s: %s on %d nodes (%s), %llu steps in %.1f s: "
      "averaged-model test accuracy %.4f (best %.4f), local models %.4f, "
      "consensus distance %.3g",
      early ? "stopped" : "done", rank->cfg->algorithm, rank->nodes,
      rank->cfg->topology, (unsigned long long)rank->step, wall,
      e->acc_avg_model, rank->best.acc_avg_model, e->acc_local_mean,
      e->consensus);
}
