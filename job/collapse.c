/* collapse.c - the rules of collapse.h, checked. */
#include "collapse.h"

#include <math.h>
#include <stdio.h>

int qgmd_collapsed(double consensus, int has_momentum, double momentum_max,
                   size_t dim, char *why, size_t len) {
  const double d = dim > 0 ? (double)dim : 1.0;
  const double per = consensus / d, rms = momentum_max / sqrt(d);
  /* "!(x <= bound)": a NaN measure counts as past it */
  if (!(per <= QGMD_COLLAPSE_CONSENSUS)) {
    snprintf(why, len, "consensus distance %.4g (%.3g per parameter) is "
             "above %g per parameter", consensus, per,
             QGMD_COLLAPSE_CONSENSUS);
    return 1;
  }
  if (has_momentum && !(rms <= QGMD_COLLAPSE_MOMENTUM_RMS)) {
    snprintf(why, len, "largest momentum norm %.4g (%.3g per parameter, "
             "root mean square) is above %g", momentum_max, rms,
             QGMD_COLLAPSE_MOMENTUM_RMS);
    return 1;
  }
  return 0;
}

int qgmd_chance_collapsed(qgmd_chance_t *s, double accuracy, int classes,
                          uint64_t step, uint64_t steps_per_epoch, char *why,
                          size_t len) {
  const double bound = QGMD_CHANCE_FACTOR / (double)classes;
  if (classes < 2 || accuracy > bound) {
    s->on = 0;
    return 0;
  }
  if (!s->on) {
    s->on = 1;
    s->since = step;
  }
  /* In whole steps, so that the span is exact at its edge. */
  const uint64_t span = step - s->since;
  if (span < QGMD_CHANCE_STEPS ||
      span < (uint64_t)QGMD_CHANCE_EPOCHS * steps_per_epoch)
    return 0;
  snprintf(why, len, "averaged-model test accuracy %.4f is at most %g "
           "(chance: %g / %d classes) at every evaluation from epoch %.4g "
           "step %llu", accuracy, bound, QGMD_CHANCE_FACTOR, classes,
           steps_per_epoch ? (double)s->since / (double)steps_per_epoch : 0.0,
           (unsigned long long)s->since);
  return 1;
}

int qgmd_collapse_check(const qgmd_collapse_eval_t *e, qgmd_chance_t *s,
                        int chance_rule, char *line, size_t len) {
  char why[192];
  if (qgmd_collapsed(e->consensus, e->has_momentum, e->momentum_max, e->dim,
                     why, sizeof why)) {
    snprintf(line, len, "%s at epoch %.4g step %llu: training collapsed "
             "(try a smaller --lr); the last complete checkpoint, if any, "
             "is kept", why, e->epoch, (unsigned long long)e->step);
    return 1;
  }
  if (chance_rule &&
      qgmd_chance_collapsed(s, e->accuracy, e->classes, e->step,
                            e->steps_per_epoch, why, sizeof why)) {
    snprintf(line, len, "%s to epoch %.4g step %llu: training collapsed "
             "(try a smaller --lr, or --stop-at-chance=0 to train on); the "
             "last complete checkpoint, if any, is kept", why, e->epoch,
             (unsigned long long)e->step);
    return 1;
  }
  return 0;
}
