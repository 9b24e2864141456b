/* progress.h - how far a run is and how long it has taken: the run's
 * clock (which a resumed run continues), the progress lines between
 * evaluations and the estimate of the time left. */
#ifndef QGMD_PROGRESS_H
#define QGMD_PROGRESS_H

#include <stdint.h>

#include "rank.h"

/* Starts the run's clock; call when the first step begins. */
void qgmd_progress_start(qgmd_rank_t *rank);

/* Seconds since the run started (a resumed run counts the stopped run's
 * time too). */
double qgmd_progress_elapsed(const qgmd_rank_t *rank);

/* Seconds left at this process's pace so far, evaluations included;
 * returns -1 until a step has been done. */
double qgmd_progress_eta(const qgmd_rank_t *rank);

/* Rank 0, after a step that ends no evaluation interval: every
 * --log-every steps, one line of progress, with the mean of the batch
 * losses whose sum since the last evaluation is loss_sum. */
void qgmd_progress_report(const qgmd_rank_t *rank, double loss_sum);

#endif /* QGMD_PROGRESS_H */
