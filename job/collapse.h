/* collapse.h - when a run that stays finite has collapsed: its models far
 * further apart, or a node's momentum far larger, than anything a healthy
 * run records, or its averaged model at chance for epochs. qgmd stops
 * such a run, in every mode, at the evaluation that shows it (exit status
 * 1; qgmd_collapse_check), as it stops one whose loss is not finite;
 * qgm-sim stops a model's run on a dataset by the same rules, with the
 * same line (tools/sim/main.c), so that a simulated sweep lists no
 * collapsed run as finished.
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
 * healthy grids' runs stay below 1.4e-4.
 *
 * A third rule reads the accuracy, for a run that collapses with its
 * models together, each predicting one class (the LeNet DSGDm-N run of
 * gut-lenet16.grid, alpha 0.01, seed 2: 10.00% at all 20 evaluations while
 * its consensus distance fell). The averaged model is at chance at an
 * evaluation when its test accuracy is at most QGMD_CHANCE_FACTOR /
 * classes; the run has collapsed when it has been at chance at every
 * evaluation from one at least QGMD_CHANCE_EPOCHS epochs and
 * QGMD_CHANCE_STEPS steps back. The span runs between evaluations, not
 * from the start: an untrained model is at chance, and one evaluation
 * says nothing of how long it stays there (with one per epoch, the rule
 * needs three). The factor 1.25: one class predicted for every input
 * scores exactly 1 / classes on a balanced test set (Fashion-MNIST's,
 * CIFAR's) and 8.7-11.5% on Fashion-MNIST's first 1000 (--test-limit;
 * its first 500 up to 13%, which the rule misses), while a healthy
 * run ends at 50% or more (tools/collapse-check). Two epochs, because a
 * run may start slowly (a warm-up, a small rate), and 200 steps as well,
 * because a model learns by steps and a small job's epoch is a few of
 * them (15 for 2000 samples on 4 ranks); the default job's epoch is 234
 * steps and LeNet's on the ring of 16 is 117, so there the epochs decide.
 * A resumed run starts its streak again: it is not saved, and the rule
 * only ever stops a run, so a resume delays a stop by at most the span. */
#ifndef QGMD_COLLAPSE_H
#define QGMD_COLLAPSE_H

#include <stddef.h>
#include <stdint.h>

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

/* at chance: test accuracy <= factor / classes */
#define QGMD_CHANCE_FACTOR 1.25
/* for at least this many epochs, and steps, of evaluations */
#define QGMD_CHANCE_EPOCHS 2
#define QGMD_CHANCE_STEPS 200

/* The streak of evaluations at chance; zeroed: none yet. */
typedef struct qgmd_chance {
  int on;         /* the last evaluation was at chance */
  uint64_t since; /* the step of the streak's first evaluation */
} qgmd_chance_t;

/* Adds an evaluation of the averaged model (its test accuracy, over
 * `classes` classes, at `step` of steps_per_epoch a epoch) to the streak
 * s. 0 while the run has not collapsed; 1 with one line in why naming the
 * accuracy, the bound and the epoch and step the streak began at ("...
 * from epoch E step S"), when
 * the streak spans QGMD_CHANCE_EPOCHS and QGMD_CHANCE_STEPS. Fewer than 2
 * classes: never 1 (every model is right). */
int qgmd_chance_collapsed(qgmd_chance_t *s, double accuracy, int classes,
                          uint64_t step, uint64_t steps_per_epoch, char *why,
                          size_t len);

/* What the three rules read of one evaluation, in every mode of qgmd. A
 * measure a mode does not have cannot stop it: one model (the parameter
 * server's) has consensus 0, and has_momentum 0 leaves momentum_max
 * unread. */
typedef struct qgmd_collapse_eval {
  double epoch;      /* epochs done, as the evaluation's record says */
  uint64_t step;     /* the evaluation's step (the server's: its update) */
  uint64_t steps_per_epoch;
  size_t dim;        /* the model's parameters */
  double consensus;  /* mean over nodes of ||x_i - x_bar||^2 */
  int has_momentum;
  double momentum_max; /* the largest node's ||m_i|| */
  double accuracy;   /* the averaged model's test accuracy */
  int classes;
} qgmd_collapse_eval_t;

/* The three rules on one evaluation, in turn: the consensus and momentum
 * bounds (qgmd_collapsed), then, when chance_rule (--stop-at-chance), the
 * streak at chance s (qgmd_chance_collapsed; not added to when a bound
 * is passed). 0 while the run has not collapsed; 1 with the one line to
 * report in `line`: the rule's reason, "at" (a bound) or "to" (the
 * streak's end) the evaluation's epoch and step, ": training collapsed",
 * what to try, and that the last complete checkpoint is kept. */
int qgmd_collapse_check(const qgmd_collapse_eval_t *e, qgmd_chance_t *s,
                        int chance_rule, char *line, size_t len);

#endif /* QGMD_COLLAPSE_H */
