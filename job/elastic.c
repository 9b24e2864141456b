/* elastic.c - a run that goes on with fewer ranks than it started with:
 * --resume-ranks maps this run's ranks onto a checkpoint's, and
 * --lost-after decides when a silent neighbour counts as lost, so that
 * the job ends soon enough for a supervisor (tools/qgm-run) to relaunch it
 * on the hosts that are left (docs/RELIABILITY.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature.h"

int qgmd_config_resume_ranks(const qgmd_config_t *cfg, int *ranks, int max) {
  const char *s = cfg->resume_ranks;
  int n = 0;
  if (!s[0])
    return 0;
  for (;;) {
    char *end;
    errno = 0;
    long r = strtol(s, &end, 10);
    if (end == s || errno || r < 0 || r > 1000000 ||
        (*end != ',' && *end != '\0'))
      return -1;
    for (int i = 0; i < n && i < max; i++)
      if (ranks[i] == r)
        return -1;
    if (n < max)
      ranks[n] = (int)r;
    n++;
    if (*end == '\0')
      return n;
    s = end + 1;
  }
}

double qgmd_config_lost_deadline(const qgmd_config_t *cfg, double step_s) {
  double d = cfg->lost_after * step_s;
  if (cfg->lost_after <= 0 || step_s <= 0)
    return cfg->comm_timeout;
  if (d < QGMD_LOST_FLOOR_S)
    d = QGMD_LOST_FLOOR_S;
  if (cfg->comm_timeout > 0 && d > cfg->comm_timeout)
    d = cfg->comm_timeout;
  return d;
}

int qgmd_check_resume_ranks(const qgmd_config_t *cfg, char *err,
                            size_t errlen) {
  if (!cfg->resume_ranks[0])
    return 0;
  /* Distinctness is checked against the ones stored: enough for any job
   * this check lets start (the count is checked against -np later). */
  enum { CHECKED = 4096 };
  static int ranks[CHECKED];
  if (qgmd_config_resume_ranks(cfg, ranks, CHECKED) < 0) {
    snprintf(err, errlen, "--resume-ranks=%s: not a list of distinct ranks "
             "(e.g. 0,1,2,3,6,7)", cfg->resume_ranks);
    return -1;
  }
  if (strcmp(cfg->resume, "no") == 0 || !cfg->resume[0]) {
    snprintf(err, errlen, "--resume-ranks needs --resume: it says which "
             "ranks of a checkpoint this run continues");
    return -1;
  }
  if (qgmd_asynchronous(cfg)) {
    snprintf(err, errlen, "--resume-ranks: the asynchronous mode (%s) "
             "writes no checkpoints", cfg->algorithm);
    return -1;
  }
  /* The tracker's mean over the nodes must stay their gradients' mean
   * (the update conserves any offset): without the lost nodes it would
   * not, and the survivors would drift by it for the rest of the run. */
  if (cfg->parsed.algorithm == QGM_ALG_GT ||
      cfg->parsed.algorithm == QGM_ALG_MT) {
    snprintf(err, errlen, "--resume-ranks: --algorithm=%s cannot go on "
             "without some of its nodes (the trackers' mean would no longer "
             "be the mean of what they track); resume on as many ranks",
             cfg->algorithm);
    return -1;
  }
  return 0;
}
