/* compress.c - compression's flags (docs/COMPRESSION.md): --compress is
 * parsed here once, as it is set, and everything after reads the spec in
 * cfg->parsed.compress. Gossip compresses with CHOCO's copies; the
 * all-reduce compresses its hosts' means (job/exchange_plan_mean.h). */
#include <stdio.h>

#include "feature.h"
#include "job.h"

static int parse(const char *text, qgmd_config_t *cfg) {
  return qgm_compress_parse(text, &cfg->parsed.compress) == 0 ? 0 : -1;
}

const flag_parse_t qgmd_parse_compress = {parse, QGMD_UNPARSED_COMPRESS,
                                          NULL, NULL};

int qgmd_compressing(const qgmd_config_t *cfg) {
  return cfg->parsed.compress.kind != QGM_COMPRESS_NONE;
}

/* What can be told before the topology is built; qgmd_job_compress
 * checks the rest. */
int qgmd_check_compress(const qgmd_config_t *cfg, char *err, size_t errlen) {
  if (cfg->parsed.unknown & QGMD_UNPARSED_COMPRESS) {
    snprintf(err, errlen, "--compress: unknown or malformed '%s' (known: %s; "
             "F in (0, 1], BITS in [%d, %d])", cfg->compress,
             qgm_compress_names(), QGM_COMPRESS_MIN_BITS,
             QGM_COMPRESS_MAX_BITS);
    return -1;
  }
  if (!qgmd_compressing(cfg))
    return 0;
  const qgm_compress_kind_t kind = cfg->parsed.compress.kind;
  const char *refused =
      cfg->parsed.asynchronous
          ? "an asynchronous mode sends gradients to a server; it does not "
            "gossip"
      : !qgmd_averaging_all(cfg) ? qgm_choco_refuses(cfg->parsed.algorithm,
                                                     NULL)
      : kind == QGM_COMPRESS_QSGD || kind == QGM_COMPRESS_RANDK
          ? NULL
          : "the all-reduce's mean of compressed messages needs an unbiased "
            "operator: qsgd:BITS or randk:F";
  if (!refused)
    return 0;
  snprintf(err, errlen, "--compress=%s: not with --algorithm=%s (%s)",
           cfg->compress, cfg->algorithm, refused);
  return -1;
}

int qgmd_job_compress(const qgmd_config_t *cfg, qgm_algorithm_t algorithm,
                      const qgm_topology_t *topology, qgm_choco_config_t *cc,
                      char *err, size_t errlen) {
  *cc = (qgm_choco_config_t){.compress = cfg->parsed.compress,
                             .seed = (uint64_t)cfg->seed,
                             .gamma = cfg->consensus_lr};
  if (!qgmd_compressing(cfg))
    return 0;
  const char *why =
      algorithm != QGM_ALG_ALLREDUCE ? qgm_choco_refuses(algorithm, topology)
      : qgm_topology_hosts(topology) > 0
          ? NULL
          : "the all-reduce compresses each host's mean on its way between "
            "hosts: it needs --topology=hier";
  if (!why)
    return 0;
  snprintf(err, errlen, "--compress=%s: not on --topology=%s (%s)",
           cfg->compress, cfg->topology, why);
  return 2;
}
