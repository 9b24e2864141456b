/* progress.c - see progress.h. */
#include "progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mpi_util.h"

/* Progress lines per epoch when --log-every is 0. */
enum { DEFAULT_LINES_PER_EPOCH = 4 };

void qgmd_progress_start(qgmd_rank_t *rank) {
  rank->process_start_s = qgmd_now();
  rank->first_step = rank->step;
  rank->start_s = rank->process_start_s - rank->resumed_wall_s;
}

double qgmd_progress_elapsed(const qgmd_rank_t *rank) {
  return qgmd_now() - rank->start_s;
}

double qgmd_progress_eta(const qgmd_rank_t *rank) {
  const double done = (double)(rank->step - rank->first_step);
  if (done <= 0.0 || rank->process_start_s <= 0.0)
    return -1.0;
  const double pace = (qgmd_now() - rank->process_start_s) / done;
  return pace * (double)(rank->total_steps - rank->step);
}

/* "42 s", "3 min 05 s", "2 h 07 min": precise enough to plan by. */
static void duration_text(double s, char *buf, size_t size) {
  const long t = (long)(s + 0.5);
  if (t < 100)
    snprintf(buf, size, "%ld s", t);
  else if (t < 3600)
    snprintf(buf, size, "%ld min %02ld s", t / 60, t % 60);
  else
    snprintf(buf, size, "%ld h %02ld min", t / 3600, t / 60 % 60);
}

void qgmd_progress_report(const qgmd_rank_t *rank, double loss_sum) {
  uint64_t every = (uint64_t)rank->cfg->log_every;
  if (every == 0)
    every = rank->steps_per_epoch / DEFAULT_LINES_PER_EPOCH;
  if (rank->id != 0 || every == 0 || rank->step % every != 0)
    return;
  const double elapsed = qgmd_progress_elapsed(rank);
  const double pace_s = qgmd_now() - rank->process_start_s;
  const double steps = (double)(rank->step - rank->first_step);
  /* Rank 0's own loss since the last evaluation: no collective here. */
  const double loss = loss_sum / (double)(rank->step - rank->last.step);
  char took[32], left[32];
  duration_text(elapsed, took, sizeof took);
  duration_text(qgmd_progress_eta(rank), left, sizeof left);
  LOG(LOG_INFO, "step %llu/%llu (epoch %.2f/%ld)  %.1f steps/s  loss %.4f "
      "(rank 0)  sent %.1f MB  elapsed %s  ETA %s",
      (unsigned long long)rank->step, (unsigned long long)rank->total_steps,
      (double)rank->step / (double)rank->steps_per_epoch, rank->cfg->epochs,
      pace_s > 0.0 ? steps / pace_s : 0.0, loss,
      qgmd_rank_traffic(rank).bytes_sent / 1e6, took, left);
}
