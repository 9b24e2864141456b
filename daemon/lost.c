/* lost.c - see lost.h.
 *
 * Who is lost is decided by who answers, not by who is named: when a rank
 * dies, its neighbours wait for it, their other neighbours wait for them,
 * and so on round the graph, so every rank names someone. But every rank
 * that is alive and can still reach rank 0 times out within a few steps
 * of the first (each a deadline after its own wait began, one step later
 * per hop) and says so; a dead rank cannot, nor can a rank behind a cut
 * link. Rank 0 waits a grace of half a deadline (at least GRACE_S) for
 * those reports: the deadline is --lost-after step times, so the grace
 * covers as many hops, more than any graph of up to twice that many
 * ranks needs. The others wait longer, so that rank 0 ends the job,
 * having written the record; they end it themselves only if rank 0
 * never does. */
#include "lost.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "mpi_tags.h"
#include "mpi_util.h"
#include "record.h"
#include "report.h"

enum { WINDOW = 64, MIN_STEPS = 8 };
static const double GRACE_S = 1.5;
/* How much longer than rank 0 the others wait before ending the job
 * themselves. */
static const double FALLBACK_S = 5.0;

static struct {
  char *names; /* rank 0: every rank's host, MPI_MAX_PROCESSOR_NAME each */
  double steps[WINDOW]; /* the latest step times, a ring */
  int timed, at;
  double step_s; /* their median, updated every few steps */
  /* The report: a rank's number and step, sent to rank 0 and, on rank 0,
   * received from each that reports. */
  long long report[2];
  MPI_Request request;
  qgmd_wait_t wait;
  unsigned char *answered; /* rank 0 */
  qgmd_rank_t *rank;
  double since, noticed; /* qgmd_now() clock */
  int record; /* the lost record (--lost-after), or only the silent line */
  double deadline, grace;
} lost;

static double unix_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int qgmd_lost_setup(const qgmd_rank_t *rank) {
  char mine[MPI_MAX_PROCESSOR_NAME] = "";
  int len = 0;
  MPI_Get_processor_name(mine, &len);
  mine[MPI_MAX_PROCESSOR_NAME - 1] = '\0';
  if (rank->id == 0) {
    lost.names = calloc((size_t)rank->nodes, MPI_MAX_PROCESSOR_NAME);
    lost.answered = calloc((size_t)rank->nodes, 1);
  }
  int ok = rank->id != 0 || (lost.names && lost.answered), all_ok;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok)
    return 1;
  MPI_Gather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, lost.names,
             MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
  return 0;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void qgmd_lost_step(double seconds) {
  lost.steps[lost.at] = seconds;
  lost.at = (lost.at + 1) % WINDOW;
  if (lost.timed < WINDOW)
    lost.timed++;
  if (lost.timed < MIN_STEPS || lost.at % MIN_STEPS != 0)
    return;
  double sorted[WINDOW];
  memcpy(sorted, lost.steps, sizeof sorted);
  qsort(sorted, (size_t)lost.timed, sizeof *sorted, by_value);
  lost.step_s = sorted[lost.timed / 2];
}

double qgmd_lost_deadline(const qgmd_rank_t *rank, double *step_s) {
  *step_s = lost.step_s;
  return qgmd_config_lost_deadline(rank->cfg, lost.step_s);
}

/* A JSON array of the lost ranks' numbers, or of their hosts (each once,
 * in rank order). */
static void lost_json(const qgmd_rank_t *rank, int hosts, char *out,
                      size_t size) {
  size_t used = (size_t)snprintf(out, size, "[");
  int first = 1;
  for (int r = 0; r < rank->nodes && used < size; r++) {
    if (lost.answered[r])
      continue;
    const char *name = lost.names + (size_t)r * MPI_MAX_PROCESSOR_NAME;
    int seen = 0;
    for (int q = 0; hosts && q < r && !seen; q++)
      seen = !lost.answered[q] &&
             strcmp(name, lost.names + (size_t)q * MPI_MAX_PROCESSOR_NAME) ==
                 0;
    if (seen)
      continue;
    used += (size_t)snprintf(out + used, size - used, "%s", first ? "" : ",");
    if (used < size && hosts)
      used += (size_t)qgmd_json_string(out + used, size - used, name);
    else if (used < size)
      used += (size_t)snprintf(out + used, size - used, "%d", r);
    first = 0;
  }
  if (used < size)
    snprintf(out + used, size - used, "]");
}

/* Rank 0, at the grace's end of a --comm-timeout: one line naming the
 * ranks, and their hosts, that did not answer (a neighbour names only the
 * rank it waits on, which may only wait in turn). */
static void write_silent_line(void) {
  qgmd_rank_t *rank = lost.rank;
  static char ranks[16384], hosts[65536];
  lost_json(rank, 0, ranks, sizeof ranks);
  lost_json(rank, 1, hosts, sizeof hosts);
  LOG(LOG_ERROR, "silent: rank%s %s on host%s %s at step %" PRIu64 " (no "
      "word from them in the %.1f s after this rank's timeout, while the "
      "others reported theirs); aborting the job (--resume continues from "
      "the last complete checkpoint)", strchr(ranks, ',') ? "s" : "", ranks,
      strchr(hosts, ',') ? "s" : "", hosts, rank->step, lost.grace);
}

/* Rank 0, at the grace's end: the record, in the metrics and in the
 * checkpoint directory, and one line. */
static void write_record(void) {
  qgmd_rank_t *rank = lost.rank;
  static char ranks[16384], hosts[65536];
  lost_json(rank, 0, ranks, sizeof ranks);
  lost_json(rank, 1, hosts, sizeof hosts);
  const double to_unix = unix_now() - qgmd_now();
  const qgmd_field_t fields[] = {
      QGMD_UINT("step", rank->step),
      QGMD_INT("nodes", rank->nodes),
      QGMD_JSON("lost_ranks", ranks),
      QGMD_JSON("lost_hosts", hosts),
      QGMD_DOUBLE("silent_since", "%.3f", lost.since + to_unix),
      QGMD_DOUBLE("noticed", "%.3f", lost.noticed + to_unix),
      QGMD_DOUBLE("deadline_s", "%.3f", lost.deadline),
      QGMD_DOUBLE("median_step_s", "%.6f", lost.step_s),
  };
  qgmd_report_write(rank->metrics, "lost", QGMD_FIELDS(fields));
  LOG(LOG_ERROR, "lost: rank%s %s on host%s %s at step %" PRIu64 " (no "
      "word from them in the %.1f s after this rank's timeout); ending the "
      "job", strchr(ranks, ',') ? "s" : "", ranks,
      strchr(hosts, ',') ? "s" : "", hosts, rank->step, lost.grace);
  if (!rank->cfg->checkpoint_dir[0])
    return;
  char *json = qgmd_record_json("lost", QGMD_FIELDS(fields));
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", rank->cfg->checkpoint_dir,
           QGMD_LOST_FILE);
  size_t len = json ? strlen(json) : 0;
  if (json) {
    json[len] = '\n'; /* the terminator becomes the line's end */
    if (qgm_write_file_atomic(path, json, len + 1) != 0)
      LOG(LOG_ERROR, "%s: cannot write the record of the lost ranks", path);
  }
  free(json);
}

static void end_job(uv_timer_t *timer) {
  (void)timer;
  if (lost.rank->id == 0 && lost.record)
    write_record();
  else if (lost.rank->id == 0)
    write_silent_line();
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void reported(void *arg) {
  (void)arg;
  if (lost.rank->id != 0)
    return;
  long long r = lost.report[0];
  if (r > 0 && r < lost.rank->nodes)
    lost.answered[r] = 1;
  MPI_Irecv(lost.report, 2, MPI_LONG_LONG, MPI_ANY_SOURCE, QGMD_LOST_TAG,
            MPI_COMM_WORLD, &lost.request);
  qgmd_loop_wait(&lost.rank->loop, &lost.wait, &lost.request, 1, reported,
                 NULL);
}

double qgmd_lost_noticed(qgmd_rank_t *rank, double since, int record) {
  static uv_timer_t timer;
  double step_s;
  lost.rank = rank;
  lost.record = record;
  lost.since = since;
  lost.noticed = qgmd_now();
  lost.deadline = qgmd_lost_deadline(rank, &step_s);
  /* --lost-after's deadline is that many step times, so half of it covers
   * as many hops of the wait's spread; --comm-timeout's is no multiple of
   * a step, and a hop per rank is the most the spread can take. */
  double grace = record ? lost.deadline / 2 : rank->nodes * step_s;
  if (grace < GRACE_S)
    grace = GRACE_S;
  lost.grace = grace;
  if (rank->id == 0) {
    lost.answered[0] = 1;
    lost.report[0] = -1;
    reported(NULL); /* posts the first receive */
  } else {
    lost.report[0] = rank->id;
    lost.report[1] = (long long)rank->step;
    MPI_Isend(lost.report, 2, MPI_LONG_LONG, 0, QGMD_LOST_TAG, MPI_COMM_WORLD,
              &lost.request);
    qgmd_loop_wait(&rank->loop, &lost.wait, &lost.request, 1, reported, NULL);
    grace += FALLBACK_S;
  }
  if (uv_timer_init(&rank->loop.uv, &timer) != 0 ||
      uv_timer_start(&timer, end_job, (uint64_t)(grace * 1000), 0) != 0)
    end_job(NULL);
  return grace;
}

void qgmd_lost_free(void) {
  free(lost.names);
  free(lost.answered);
  lost.names = NULL;
  lost.answered = NULL;
}
