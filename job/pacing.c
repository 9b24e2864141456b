/* pacing.c - the flags that slow ranks down on purpose, for measuring:
 * --straggle (some ranks compute FACTOR times slower) and --device-time
 * (an emulated accelerator). They change how fast, never what. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature.h"

int qgmd_config_straggle(const qgmd_config_t *cfg, int rank, double *factor,
                         int *max_rank) {
  *factor = 1.0;
  *max_rank = -1;
  /* "none", which is how a user writes "no straggler", as the empty
   * default. */
  if (!cfg->straggle[0] || strcmp(cfg->straggle, "none") == 0)
    return 0;
  const char *colon = strrchr(cfg->straggle, ':');
  if (!colon)
    return -1;
  char *end;
  errno = 0;
  double f = strtod(colon + 1, &end);
  if (*end || errno || !(f >= 1.0 && f <= 1000.0))
    return -1;
  const char *s = cfg->straggle;
  while (s < colon) {
    long r = strtol(s, &end, 10);
    if (end == s || r < 0 || r > 1000000 || (*end != ',' && end != colon))
      return -1;
    if (r == rank)
      *factor = f;
    if (r > *max_rank)
      *max_rank = (int)r;
    s = end + (end != colon);
  }
  return *max_rank >= 0 ? 0 : -1;
}

int qgmd_config_device_time(const qgmd_config_t *cfg, double *ms,
                            double *jitter) {
  *ms = *jitter = 0.0;
  if (!cfg->device_time[0] || strcmp(cfg->device_time, "none") == 0)
    return 0;
  char *end;
  errno = 0;
  double m = strtod(cfg->device_time, &end), j = 0.0;
  if (end == cfg->device_time || errno)
    return -1;
  if (*end == ':') {
    const char *from = end + 1;
    j = strtod(from, &end);
    if (end == from || errno)
      return -1;
  }
  if (*end || !(m >= 0.0 && m <= 600000.0) || !(j >= 0.0 && j <= 3.0))
    return -1;
  *ms = m;
  *jitter = j;
  return 0;
}

int qgmd_check_straggle(const qgmd_config_t *cfg, char *err, size_t errlen) {
  double factor;
  int max_rank;
  if (qgmd_config_straggle(cfg, 0, &factor, &max_rank) == 0)
    return 0;
  snprintf(err, errlen, "--straggle: '%s' is not RANKS:FACTOR (e.g. 1,3:4 "
           "with FACTOR in [1, 1000])", cfg->straggle);
  return -1;
}

int qgmd_check_device_time(const qgmd_config_t *cfg, char *err,
                           size_t errlen) {
  double ms, jitter;
  if (qgmd_config_device_time(cfg, &ms, &jitter) == 0)
    return 0;
  snprintf(err, errlen, "--device-time: '%s' is not MS[:JITTER] (MS in "
           "[0, 600000], JITTER in [0, 3])", cfg->device_time);
  return -1;
}
