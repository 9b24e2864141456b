/* output.c - what a run writes: the log's level (--log-level). */
#include <stdio.h>

#include "feature.h"

/* Most severe first: a level shows its own lines and those before it. */
static const char *const log_level_names[] = {"error", "warning", "info",
                                              "debug", NULL};

static int parse_log_level(const char *text, qgmd_config_t *cfg) {
  return qgmd_name_index(log_level_names, text, &cfg->parsed.log_level);
}

const flag_parse_t qgmd_parse_log_level = {
    parse_log_level, QGMD_UNPARSED_LOG_LEVEL, log_level_names, NULL};

int qgmd_check_log_level(const qgmd_config_t *cfg, char *err,
                         size_t errlen) {
  if (!(cfg->parsed.unknown & QGMD_UNPARSED_LOG_LEVEL))
    return 0;
  char names[64];
  snprintf(err, errlen, "--log-level: unknown level '%s' (%s)",
           cfg->log_level,
           qgmd_flag_names("log-level", ", ", names, sizeof names));
  return -1;
}
