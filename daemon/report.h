/* report.h - the records a run writes to --metrics (JSON Lines, README
 * "Metrics"), each a table of fields for job/record.h's writer, and the
 * lines that go with them. The config record and the synchronous node's
 * eval and summary records are here; the asynchronous server's, which
 * carry its own figures as well, are async_report.h's. */
#ifndef QGMD_REPORT_H
#define QGMD_REPORT_H

#include <stdio.h>

#include "rank.h"
#include "record.h"

/* Appends one record (job/record.h) to the metrics file, nothing when
 * metrics is NULL; a write error is reported once, and training goes on. */
void qgmd_report_write(FILE *metrics, const char *type,
                       const qgmd_field_t *fields, size_t n);

/* Rank 0, metrics open: the run's first record, what it is and where it
 * came from: provenance's members (provenance.h), the number of ranks
 * and the flags (config_json). */
void qgmd_report_config(const qgmd_rank_t *rank, const char *provenance,
                        const char *config_json);

/* The summary's rows that every mode writes, from "steps" to
 * "final_train_loss", from rank->last and rank->best, so that tools read
 * a synchronous and an asynchronous run's summaries alike. */
enum { QGMD_OUTCOME_ROWS = 8 };
void qgmd_report_outcome(const qgmd_rank_t *rank, double wall, int early,
                         qgmd_field_t rows[QGMD_OUTCOME_ROWS]);

/* Rank 0: writes the eval record and the progress line of rank->last. */
void qgmd_report_eval(const qgmd_rank_t *rank);

/* After every evaluation of every mode (rank->last): when the run has
 * collapsed by any of job/collapse.h's three rules (the consensus
 * distance or the largest momentum norm past its bound, or the averaged
 * model at chance long enough, --stop-at-chance), rank 0 says so in one
 * line naming the measure, the epoch and the step, and ends the job with
 * exit status 1 (MPI_Abort). Rank 0's evaluations are the job's clock:
 * every rank may call it, only rank 0's verdict acts. */
void qgmd_stop_if_collapsed(qgmd_rank_t *rank);

/* "qg-dsgdm-n on 8 nodes (ring)", "allreduce on 1 node": what the rank's
 * job is, for the log's first and last lines. */
const char *qgmd_report_job(const qgmd_rank_t *rank, char *buf, size_t size);
/* Rank 0: writes the summary record and line. */
void qgmd_report_summary(const qgmd_rank_t *rank);

#endif /* QGMD_REPORT_H */
