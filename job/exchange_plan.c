/* exchange_plan.c - see exchange_plan.h: the choice of the exchange and
 * the table of the kinds' shared halves. */
#include "exchange_plan.h"

#include <stdio.h>

#include "job.h"

/* The kinds that mix whole float vectors keep no state between rounds;
 * in process, libqgm's mix is the daemon's arithmetic for all three. */
static int simulate_plain(const qgmd_exchange_plan_t *p, uint64_t round,
                          void *const *states, const float *const *msgs,
                          float *const *mixes) {
  (void)states;
  return qgm_mix_messages_lossy(p->topology, round, p->combine, &p->drop,
                                msgs, mixes, p->len);
}

static const qgmd_exchange_def_t neighbours = {"neighbours", NULL, NULL, NULL,
                                               simulate_plain};
static const qgmd_exchange_def_t hosts = {"hosts", NULL, NULL, NULL,
                                          simulate_plain};
static const qgmd_exchange_def_t global_mean = {"global-mean", NULL, NULL,
                                                NULL, simulate_plain};
/* In process, Open MPI's sum order cannot be had: qgm-sim sums as qgmd's
 * own all-reduce does, which agrees with it to float rounding. */
static const qgmd_exchange_def_t mpi_allreduce = {"mpi-allreduce", NULL,
                                                  NULL, NULL, simulate_plain};

static const qgmd_exchange_def_t *const defs[QGMD_EXCHANGE_KINDS] = {
    [QGMD_EXCHANGE_NEIGHBOURS] = &neighbours,
    [QGMD_EXCHANGE_HOSTS] = &hosts,
    [QGMD_EXCHANGE_GLOBAL_MEAN] = &global_mean,
    [QGMD_EXCHANGE_CHOCO] = &qgmd_exchange_def_choco,
    [QGMD_EXCHANGE_RELAY] = &qgmd_exchange_def_relay,
    [QGMD_EXCHANGE_MPI_ALLREDUCE] = &mpi_allreduce,
    [QGMD_EXCHANGE_COMPRESSED_MEAN] = &qgmd_exchange_def_mean,
    [QGMD_EXCHANGE_POWERSGD] = &qgmd_exchange_def_powersgd,
    [QGMD_EXCHANGE_POWERGOSSIP] = &qgmd_exchange_def_powergossip,
    [QGMD_EXCHANGE_ROUNDS] = &qgmd_exchange_def_rounds,
};

const qgmd_exchange_def_t *qgmd_exchange_def(qgmd_exchange_kind_t kind) {
  return defs[kind];
}

/* The coefficients of the plan's Chebyshev rounds, fitted to the
 * eigenvalues of the topology's W. */
static int chebyshev_rounds(const qgmd_config_t *cfg,
                            const qgm_topology_t *topology,
                            qgmd_exchange_plan_t *plan, char *err,
                            size_t errlen) {
  double lo, hi;
  if (qgm_topology_eigen_range(topology, &lo, &hi) != 0) {
    snprintf(err, errlen,
             "--gossip-acceleration=%s: needs the eigenvalues of a fixed "
             "symmetric W of at most 2048 nodes, which --topology=%s is not",
             cfg->gossip_acceleration, cfg->topology);
    return 2;
  }
  if (qgm_chebyshev_rounds(lo, hi, plan->rounds, plan->chebyshev_b,
                           plan->chebyshev_e, &plan->chebyshev_w, NULL) != 0) {
    snprintf(err, errlen,
             "--gossip-acceleration=%s: --topology=%s is not connected "
             "(second eigenvalue %.6g): no rounds reach the average",
             cfg->gossip_acceleration, cfg->topology, hi);
    return 2;
  }
  plan->chebyshev = 1;
  return 0;
}

int qgmd_job_exchange(const qgmd_config_t *cfg, qgm_algorithm_t algorithm,
                      qgm_combine_t combine, size_t len, size_t dim,
                      const qgm_matrix_block_t *matrices, size_t nmatrices,
                      const qgm_topology_t *topology,
                      qgmd_exchange_plan_t *plan, char *err, size_t errlen) {
  *plan = (qgmd_exchange_plan_t){
      .topology = topology, .combine = combine, .len = len, .dim = dim,
      .drop = {.rate = cfg->drop_rate, .seed = (uint64_t)cfg->seed},
      .rounds = 1};
  int rc = qgmd_job_compress(cfg, algorithm, topology, matrices, nmatrices,
                             &plan->choco, err, errlen);
  if (rc != 0)
    return rc;
  const qgm_compress_kind_t compress = plan->choco.compress.kind;
  const int powersgd = compress == QGM_COMPRESS_POWERSGD;
  if (compress != QGM_COMPRESS_NONE && combine == QGM_COMBINE_GLOBAL_MEAN)
    plan->kind = powersgd ? QGMD_EXCHANGE_POWERSGD
                          : QGMD_EXCHANGE_COMPRESSED_MEAN;
  else if (compress != QGM_COMPRESS_NONE)
    plan->kind = powersgd ? QGMD_EXCHANGE_POWERGOSSIP : QGMD_EXCHANGE_CHOCO;
  else if (combine == QGM_COMBINE_RELAY)
    plan->kind = QGMD_EXCHANGE_RELAY;
  else if (combine == QGM_COMBINE_GLOBAL_MEAN)
    plan->kind = cfg->parsed.allreduce_mpi ? QGMD_EXCHANGE_MPI_ALLREDUCE
                                           : QGMD_EXCHANGE_GLOBAL_MEAN;
  else if (qgm_topology_hosts(topology) > 0)
    plan->kind = QGMD_EXCHANGE_HOSTS;
  else if (cfg->gossip_rounds > 1) { /* its check refused the others */
    plan->kind = QGMD_EXCHANGE_ROUNDS;
    plan->rounds = (int)cfg->gossip_rounds;
    if (cfg->parsed.gossip_chebyshev)
      return chebyshev_rounds(cfg, topology, plan, err, errlen);
  } else
    plan->kind = QGMD_EXCHANGE_NEIGHBOURS;
  return 0;
}
