/* collapse.h - when a run that stays finite has collapsed: its models far
 * further apart, or a node's momentum far larger, than anything a healthy
 * run records. qgmd stops such a run at the evaluation that shows it (exit
 * status 1), as it stops one whose loss is not finite.
 *
 * Both measures are taken per parameter, so that one bound holds for
 * models of any size: the consensus distance (mean over nodes of
 * ||x_i - x_bar||^2) divided by the parameter count d, and the largest
 * momentum norm divided by sqrt(d) (a root mean square per coordinate).
 * The bounds come from the recorded runs (docs/RESULTS.md, "No silent
 * collapse"; tools/collapse-check tests them against docs/results/ and a
 * sweep's metrics). The consensus bound lies between two runs 18 times
 * apart: the collapsed LeNet DSGDm-N run of ring16-lenet.grid (seed 3,
 * 9.9e3 over 61706 parameters: 0.16) and a 15-step qg-dadam job at Adam's
 * rate 0.1 whose models flew apart in its first steps and came back
 * together (1837 over 203530: 0.009), at their geometric mean; the
 * healthy grids' runs stay below 1.4e-4. */
#ifndef QGMD_COLLAPSE_H
#define QGMD_COLLAPSE_H

#include <stddef.h>

/* consensus distance / d */
#define QGMD_COLLAPSE_CONSENSUS 0.04
/* largest ||m_i|| / sqrt(d) */
#define QGMD_COLLAPSE_MOMENTUM_RMS 2.0

/* 0 when the evaluation's measures are within the bounds; 1 with one line
 * in why naming the measure, its value and the bound. dim: the model's
 * parameters; has_momentum 0: the algorithm keeps no momentum, and
 * momentum_max is not looked at. */
int qgmd_collapsed(double consensus, int has_momentum, double momentum_max,
                   size_t dim, char *why, size_t len);

#endif /* QGMD_COLLAPSE_H */
