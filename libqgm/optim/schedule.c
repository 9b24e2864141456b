/* schedule.c - the learning-rate schedule of Lin et al. (warm-up, then
 * step decay), as a pure function of the step so that a resumed run
 * recomputes it instead of storing it. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qgm.h"

void qgm_lr_schedule_paper(qgm_lr_schedule_t *s, double base_lr,
                           uint64_t warmup_steps, uint64_t total_steps) {
  *s = (qgm_lr_schedule_t){.base_lr = base_lr,
                           .warmup_steps = warmup_steps,
                           .total_steps = total_steps,
                           .decay_factor = 0.1,
                           .num_decays = 2,
                           .decay_at = {0.5, 0.75}};
}

int qgm_lr_schedule_set_decays(qgm_lr_schedule_t *s, const char *kind,
                               const char *fractions, double factor) {
  if (!s || !kind)
    return QGM_EINVAL;
  if (strcmp(kind, "constant") == 0) {
    s->num_decays = 0;
    return 0;
  }
  if (strcmp(kind, "step") != 0 || !fractions || !(factor > 0.0) ||
      !(factor <= 1.0))
    return QGM_EINVAL;
  double at[QGM_LR_MAX_DECAYS];
  size_t n = 0;
  for (const char *p = fractions; *p;) {
    char *end;
    errno = 0;
    double v = strtod(p, &end);
    if (end == p || errno || !(v > 0.0 && v <= 1.0) ||
        n == QGM_LR_MAX_DECAYS || (n > 0 && v <= at[n - 1]))
      return QGM_EINVAL;
    at[n++] = v;
    if (*end == ',' && end[1] != '\0')
      end++;
    else if (*end != '\0')
      return QGM_EINVAL;
    p = end;
  }
  if (n == 0)
    return QGM_EINVAL;
  s->decay_factor = factor;
  s->num_decays = n;
  memcpy(s->decay_at, at, n * sizeof at[0]);
  return 0;
}

double qgm_lr_at(const qgm_lr_schedule_t *s, uint64_t t) {
  if (t < s->warmup_steps)
    return s->base_lr * (double)(t + 1) / (double)s->warmup_steps;
  double lr = s->base_lr;
  /* Fractions such as 0.5 and 0.75 are exact in binary, so their
   * milestones fall on the same step however the total divides. */
  for (size_t k = 0; k < s->num_decays; k++)
    if ((double)t >= s->decay_at[k] * (double)s->total_steps)
      lr *= s->decay_factor;
  return lr;
}
