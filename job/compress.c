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

/* Whether the algorithm's momentum is quasi-global: it replays every
 * consensus move (up to 1/(1 - beta) times), so it takes smaller ones. */
static int quasi_global(qgm_algorithm_t alg) {
  return alg == QGM_ALG_QG_DSGDM_N || alg == QGM_ALG_QG_DSGDM ||
         alg == QGM_ALG_QG_DADAM;
}

/* CHOCO's step size per operator, from the grid of docs/COMPRESSION.md
 * ("Default gamma": 3 epochs of the default job, 8 nodes on a ring): the
 * largest value within a step of the best that stays stable, as a rule of
 * the operator's parameter where two were measured. */
static double choco_gamma(const qgm_compress_spec_t *c, int qg) {
  double g = 1.0;
  switch (c->kind) {
  case QGM_COMPRESS_TOPK: /* topk:0.1 diverged at 0.5 with either */
    g = (qg ? 2.0 : 5.0) * c->fraction;
    if (g > 0.3)
      g = 0.3;
    break;
  case QGM_COMPRESS_RANDK:
    g = qg ? 0.5 * c->fraction : c->fraction;
    break;
  case QGM_COMPRESS_QSGD:
    g = c->bits >= 4 ? 1.0 : qg ? 0.02 : 0.1;
    break;
  case QGM_COMPRESS_SIGN:
    g = qg ? 0.01 : 1.0;
    break;
  default: /* PowerGossip: 1 is its paper's rule */
    break;
  }
  return g > 1.0 ? 1.0 : g < 1e-6 ? 1e-6 : g;
}

double qgmd_default_consensus_lr(const qgmd_config_t *cfg) {
  /* The all-reduce's compression has no consensus step. */
  if (qgmd_averaging_all(cfg) || cfg->parsed.asynchronous)
    return 1.0;
  return choco_gamma(&cfg->parsed.compress,
                     quasi_global(cfg->parsed.algorithm));
}

const char *qgmd_compress_caveat(const qgmd_config_t *cfg) {
  if (!qgmd_compressing(cfg) || qgmd_config_was_set("consensus-lr") ||
      qgmd_averaging_all(cfg) || cfg->parsed.asynchronous)
    return NULL;
  const qgm_compress_spec_t *c = &cfg->parsed.compress;
  const int qg = quasi_global(cfg->parsed.algorithm);
  /* The cells of the table more than 2 points below uncompressed gossip
   * at their default (topk:0.01 with QG-DSGDm-N: 1.85 on the grid's 2000
   * test images, 2.8 on all 10000), and the settings beyond them. */
  const int short_of =
      c->kind == QGM_COMPRESS_RANDK ? (qg ? c->fraction < 0.1 : 1)
      : c->kind == QGM_COMPRESS_TOPK ? c->fraction < 0.1
      : c->kind == QGM_COMPRESS_QSGD ? c->bits < 4
                                      : 0;
  return short_of ? "at its default --consensus-lr it ended more than 2 "
                    "points of test accuracy below uncompressed gossip in "
                    "3 epochs of the default job; docs/COMPRESSION.md "
                    "(\"Default gamma\") has the measured table"
                  : NULL;
}
