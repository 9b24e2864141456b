/* schedule.c - the learning-rate schedule's flags: a linear warm-up, then
 * --lr-schedule: step (decays at --lr-decay-at by --lr-decay-factor) or
 * constant. */
#include <stdio.h>

#include "feature.h"
#include "job.h"

/* In the order of enum qgmd_lr_schedule. */
static const char *const lr_schedule_names[] = {"step", "constant", NULL};

static int parse_lr_schedule(const char *text, qgmd_config_t *cfg) {
  int i;
  if (qgmd_name_index(lr_schedule_names, text, &i) != 0)
    return -1;
  cfg->parsed.lr_schedule = (enum qgmd_lr_schedule)i;
  return 0;
}

const flag_parse_t qgmd_parse_lr_schedule = {
    parse_lr_schedule, QGMD_UNPARSED_LR_SCHEDULE, lr_schedule_names, NULL};

/* Sets the schedule's decays from the flags: 0, or -1 for a malformed
 * --lr-decay-at (a constant schedule has none and ignores it). */
static int set_decays(const qgmd_config_t *cfg, qgm_lr_schedule_t *s) {
  return qgm_lr_schedule_set_decays(
             s, lr_schedule_names[cfg->parsed.lr_schedule], cfg->lr_decay_at,
             cfg->lr_decay_factor) == 0 ? 0 : -1;
}

int qgmd_check_schedule(const qgmd_config_t *cfg, char *err, size_t errlen) {
  if (cfg->parsed.unknown & QGMD_UNPARSED_LR_SCHEDULE) {
    char names[64];
    snprintf(err, errlen, "--lr-schedule: unknown schedule '%s' (%s)",
             cfg->lr_schedule,
             qgmd_flag_names("lr-schedule", ", ", names, sizeof names));
    return -1;
  }
  qgm_lr_schedule_t schedule;
  if (set_decays(cfg, &schedule) == 0)
    return 0;
  snprintf(err, errlen, "--lr-decay-at: '%s' is not a rising list of 1 to "
           "%d fractions in (0, 1]", cfg->lr_decay_at, QGM_LR_MAX_DECAYS);
  return -1;
}

void qgmd_job_schedule(const qgmd_config_t *cfg, uint64_t steps_per_epoch,
                       qgm_lr_schedule_t *schedule) {
  qgm_lr_schedule_paper(
      schedule, cfg->lr,
      (uint64_t)(cfg->warmup_epochs * (double)steps_per_epoch),
      steps_per_epoch * (uint64_t)cfg->epochs);
  set_decays(cfg, schedule); /* qgmd_config_check accepted them */
}
