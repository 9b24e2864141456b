/* compress.c - compression's flags (docs/COMPRESSION.md): --compress is
 * parsed here once, as it is set, and everything after reads the spec in
 * cfg->parsed.compress. Gossip compresses with CHOCO's copies; the
 * all-reduce compresses its hosts' means (job/exchange_plan_mean.h), or
 * with powersgd its gradient's matrices (job/exchange_plan_powersgd.h). */
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
             "F in (0, 1], BITS in [%d, %d], R an integer in [1, %d])",
             cfg->compress, qgm_compress_names(), QGM_COMPRESS_MIN_BITS,
             QGM_COMPRESS_MAX_BITS, QGM_COMPRESS_MAX_RANK);
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
      : kind == QGM_COMPRESS_QSGD || kind == QGM_COMPRESS_RANDK ||
              kind == QGM_COMPRESS_POWERSGD
          ? NULL
          : "the all-reduce's mean of compressed messages needs an unbiased "
            "operator (qsgd:BITS or randk:F) or PowerSGD's error feedback "
            "(powersgd:R)";
  if (!refused)
    return 0;
  snprintf(err, errlen, "--compress=%s: not with --algorithm=%s (%s)",
           cfg->compress, cfg->algorithm, refused);
  return -1;
}

/* Why powersgd cannot approximate these matrices at its rank, into err;
 * 0 when it can. */
static int check_rank(const qgmd_config_t *cfg,
                      const qgm_matrix_block_t *matrices, size_t nmatrices,
                      char *err, size_t errlen) {
  const size_t most = qgm_matrices_max_rank(matrices, nmatrices);
  if (nmatrices == 0)
    snprintf(err, errlen, "--compress=%s: --model=%s lists no weight "
             "matrices to approximate (powersgd takes the mlp's and "
             "softmax's; the synthetic problems have none)", cfg->compress,
             cfg->model);
  else if ((size_t)cfg->parsed.compress.rank > most)
    snprintf(err, errlen, "--compress=%s: rank %d is more than the model's "
             "smallest weight matrix allows (%zu, the least of its rows and "
             "columns)", cfg->compress, cfg->parsed.compress.rank, most);
  else
    return 0;
  return 2;
}

int qgmd_job_compress(const qgmd_config_t *cfg, qgm_algorithm_t algorithm,
                      const qgm_topology_t *topology,
                      const qgm_matrix_block_t *matrices, size_t nmatrices,
                      qgm_choco_config_t *cc, char *err, size_t errlen) {
  *cc = (qgm_choco_config_t){.compress = cfg->parsed.compress,
                             .seed = (uint64_t)cfg->seed,
                             .gamma = cfg->consensus_lr};
  if (!qgmd_compressing(cfg))
    return 0;
  const int powersgd = cfg->parsed.compress.kind == QGM_COMPRESS_POWERSGD;
  if (powersgd) {
    cc->compress.matrices = matrices;
    cc->compress.nmatrices = nmatrices;
    if (check_rank(cfg, matrices, nmatrices, err, errlen) != 0)
      return 2;
  }
  const int hier = qgm_topology_hosts(topology) > 0;
  const char *why =
      algorithm != QGM_ALG_ALLREDUCE
          ? (powersgd && hier
                 ? "the host-aware exchange cuts the model into slices, "
                   "and the low-rank operator needs whole weight matrices"
                 : qgm_choco_refuses(algorithm, topology))
      : hier || powersgd
          ? NULL
          : "the all-reduce compresses each host's mean on its way between "
            "hosts: it needs --topology=hier";
  if (!why)
    return 0;
  snprintf(err, errlen, "--compress=%s: not on --topology=%s (%s)",
           cfg->compress, cfg->topology, why);
  return 2;
}

/* --consensus-lr's default: measured on the default job (3 epochs, 8
 * nodes on a ring, docs/COMPRESSION.md, "Choosing gamma"). PLACEHOLDER */
double qgmd_default_consensus_lr(const qgmd_config_t *cfg) {
  (void)cfg;
  return 1.0;
}
