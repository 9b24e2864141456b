/* report.h - the records a run writes to --metrics (JSON Lines, README
 * "Metrics") and the lines that go with them. The synchronous node's eval
 * and summary records are here; the asynchronous server's, which carry
 * its own figures as well, are async_report.h's. */
#ifndef QGMD_REPORT_H
#define QGMD_REPORT_H

#include <stdio.h>

#include "rank.h"

/* Appends one JSON Lines record to the metrics file (nothing when metrics
 * is NULL) and flushes it, so that a crash loses at most the record being
 * written; a write error is reported once. */
void qgmd_write_record(FILE *metrics, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Rank 0: writes the eval record and the progress line of rank->last. */
void qgmd_report_eval(const qgmd_rank_t *rank);
/* Rank 0: writes the summary record and line. */
void qgmd_report_summary(const qgmd_rank_t *rank);

#endif /* QGMD_REPORT_H */
