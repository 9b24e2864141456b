/* lost.h - a neighbour that stays silent in a step's exchange longer than
 * --lost-after median step times is lost (died, hangs or cut off). Open
 * MPI 4.1 cannot take a rank out of a running job (docs/RELIABILITY.md),
 * so the job ends, and says who is gone in a form a supervisor reads
 * (tools/qgm-run): every rank that times out tells rank 0, which gives
 * the others a grace to do the same, takes the ranks that did not for
 * lost, writes the "lost" record (to the metrics and, with
 * --checkpoint-dir, to DIR/lost.json) and aborts the job. A rank that is
 * alive but stuck behind the silent one answers too, so only the ranks
 * that died or were cut off are named. */
#ifndef QGMD_LOST_H
#define QGMD_LOST_H

#include "rank.h"

/* The name of the record's file in the checkpoint directory. */
#define QGMD_LOST_FILE "lost.json"

/* Collective, at start-up: rank 0 learns every rank's host name, for the
 * record. Returns 0, or 1 when out of memory (rank 0). */
int qgmd_lost_setup(const qgmd_rank_t *rank);

/* A step of `seconds` (from its start to its end, waits included) is
 * done: the median of the recent ones sets the deadline. */
void qgmd_lost_step(double seconds);

/* How long a step's exchange may wait before its silent peers are lost:
 * qgmd_config_lost_deadline of the median step time, --comm-timeout until
 * enough steps were timed. Its median step time into *step_s (0 when not
 * known yet). */
double qgmd_lost_deadline(const qgmd_rank_t *rank, double *step_s);

/* The watchdog found the exchange silent since `since` (qgmd_now()
 * clock): reports to rank 0 (rank 0 collects the others' reports), and
 * ends the job after the grace. With `record` (--lost-after) rank 0 writes
 * the lost record; without (--comm-timeout), one line naming the ranks and
 * hosts that did not report. Returns what the job's end waits for, in
 * seconds. */
double qgmd_lost_noticed(qgmd_rank_t *rank, double since, int record);

void qgmd_lost_free(void);

#endif /* QGMD_LOST_H */
