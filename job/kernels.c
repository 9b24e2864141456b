/* kernels.c - --kernels: the paths and matrix-product kernels of the
 * model's products (qgm_kernels_use). The plan only changes rounding, not
 * what is computed, so it is no training flag: a checkpoint resumes on a
 * CPU with other kernels. */
#include <stdio.h>
#include <string.h>

#include "feature.h"
#include "job.h"

static const char *plan_of(const char *text) {
  return strcmp(text, "auto") == 0 ? NULL : text;
}

/* Whether this CPU runs the plan only the library can tell: the plan is
 * tried, then the CPU's own put back (qgmd_job_model sets the run's). */
static int parse_kernels(const char *text, qgmd_config_t *cfg) {
  (void)cfg;
  int rc = qgm_kernels_use(plan_of(text));
  qgm_kernels_use(NULL);
  return rc;
}

void qgmd_job_kernels(const qgmd_config_t *cfg) {
  qgm_kernels_use(plan_of(cfg->kernels)); /* checked by the parser */
}

const flag_parse_t qgmd_parse_kernels = {parse_kernels, QGMD_UNPARSED_KERNELS,
                                         NULL, NULL};

int qgmd_check_kernels(const qgmd_config_t *cfg, char *err, size_t errlen) {
  if (!(cfg->parsed.unknown & QGMD_UNPARSED_KERNELS))
    return 0;
  snprintf(err, errlen,
           "--kernels: '%s' is not a plan this CPU runs: auto, or "
           "dense=K,conv=K,conv3x3=winograd-K (or direct-K), K a kernel it "
           "has (its own plan: %s)",
           cfg->kernels, qgm_kernels());
  return -1;
}
