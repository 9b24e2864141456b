/* schedule.c - the learning-rate schedule of Lin et al. (warm-up, then
 * step decay), as a pure function of the step so that a resumed run
 * recomputes it instead of storing it. */
#include "qgm.h"

double qgm_lr_at(const qgm_lr_schedule_t *s, uint64_t t) {
  if (t < s->warmup_steps)
    return s->base_lr * (double)(t + 1) / (double)s->warmup_steps;
  double lr = s->base_lr;
  /* Milestones compare 2t and 4t with whole multiples of the total so that
   * 50% and 75% fall on the same step however the total divides. */
  if (2 * t >= s->total_steps)
    lr *= 0.1;
  if (4 * t >= 3 * s->total_steps)
    lr *= 0.1;
  return lr;
}
