/* async.c - the flags of the asynchronous modes (a parameter server on
 * rank 0, docs/ALGORITHMS-ASYNC.md): GSGM's base and variant. */
#include <stdio.h>
#include <string.h>

#include "feature.h"

static int parse_gsgm_base(const char *text, qgmd_config_t *cfg) {
  return qgm_gsgm_base_parse(text, &cfg->parsed.gsgm_base) == 0 ? 0 : -1;
}

static int parse_gsgm_rule(const char *text, qgmd_config_t *cfg) {
  return qgm_gsgm_rule_parse(text, &cfg->parsed.gsgm_rule) == 0 ? 0 : -1;
}

/* The library's names (both flags are the daemon's alone). */
static const char *gsgm_base_names(unsigned program) {
  (void)program;
  return qgm_gsgm_base_names();
}

static const char *gsgm_rule_names(unsigned program) {
  (void)program;
  return qgm_gsgm_rule_names();
}

const flag_parse_t qgmd_parse_gsgm_base = {
    parse_gsgm_base, QGMD_UNPARSED_GSGM_BASE, NULL, gsgm_base_names};
const flag_parse_t qgmd_parse_gsgm_rule = {
    parse_gsgm_rule, QGMD_UNPARSED_GSGM_RULE, NULL, gsgm_rule_names};

int qgmd_asynchronous(const qgmd_config_t *cfg) {
  return cfg->parsed.asynchronous;
}

int qgmd_check_gsgm(const qgmd_config_t *cfg, char *err, size_t errlen) {
  if (cfg->parsed.unknown & QGMD_UNPARSED_GSGM_BASE)
    snprintf(err, errlen, "--gsgm-base: unknown base '%s' (known: %s)",
             cfg->gsgm_base, qgm_gsgm_base_names());
  else if (cfg->parsed.unknown & QGMD_UNPARSED_GSGM_RULE)
    snprintf(err, errlen, "--gsgm-rule: unknown rule '%s' (known: %s)",
             cfg->gsgm_rule, qgm_gsgm_rule_names());
  else
    return 0;
  return -1;
}

/* The server's state is not saved: the workers' gradients in flight are
 * part of it. */
int qgmd_check_async_checkpoint(const qgmd_config_t *cfg, char *err,
                                size_t errlen) {
  if (!qgmd_asynchronous(cfg) ||
      (!cfg->checkpoint_dir[0] && strcmp(cfg->resume, "no") == 0))
    return 0;
  snprintf(err, errlen, "--checkpoint-dir: the asynchronous mode (%s) "
           "writes no checkpoints", cfg->algorithm);
  return -1;
}
