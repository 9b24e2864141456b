/* collapse.h - when a run that stays finite has collapsed: its consensus
 * distance or its largest momentum norm far past anything a healthy run
 * records. qgmd stops such a run at the evaluation that shows it (exit
 * status 1), as it stops one whose loss is not finite.
 *
 * The bounds come from the recorded runs (docs/RESULTS.md, "No silent
 * collapse"; tools/collapse-check tests them against docs/results/ and
 * against a sweep's metrics): the healthy runs' consensus distance stays
 * below 9 at every evaluation and their largest momentum norm below 100,
 * while the collapsed LeNet DSGDm-N run of ring16-lenet.grid (seed 3) went
 * to a consensus distance of 9.9e3, and the recorded gradient-tracking
 * runs that ended at 28% and 48% to 2.7e12 and 1.4e25. */
#ifndef QGMD_COLLAPSE_H
#define QGMD_COLLAPSE_H

#include <stddef.h>

/* mean over nodes of ||x_i - x_bar||^2 */
#define QGMD_COLLAPSE_CONSENSUS 100.0
/* the largest node's ||m_i|| */
#define QGMD_COLLAPSE_MOMENTUM_NORM 1000.0

/* 0 when the evaluation's measures are within the bounds; 1 with one line
 * in why naming the measure, its value and the bound. has_momentum 0: the
 * algorithm keeps no momentum, and momentum_max is not looked at. */
int qgmd_collapsed(double consensus, int has_momentum, double momentum_max,
                   char *why, size_t len);

#endif /* QGMD_COLLAPSE_H */
