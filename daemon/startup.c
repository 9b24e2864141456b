/* startup.c - see startup.h. */
#include "startup.h"

#include <string.h>

#include <mpi.h>

#include "job.h"
#include "log.h"

/* Larger graphs skip the start-up gap: it is dense O(n^3) work that
 * tools/qgm-topo can do once, off the critical path. */
#define MAX_LOGGED_GAP_NODES 256

/* One collective: the maximum of v and of ~v is the maximum and the
 * minimum of v, so a value is the same everywhere iff both agree. Returns
 * the index of the first value that differs somewhere, or -1. */
static int first_difference(const uint64_t *v, int n) {
  uint64_t mine[8], all[8];
  for (int i = 0; i < n; i++) {
    mine[i] = v[i];
    mine[n + i] = ~v[i];
  }
  MPI_Allreduce(mine, all, 2 * n, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  for (int i = 0; i < n; i++)
    if (all[i] != ~all[n + i])
      return i;
  return -1;
}

static int rank0(void) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank == 0;
}

int qgmd_check_same_flags(const char *config_json) {
  uint64_t h = qgm_hash64(config_json, strlen(config_json), QGM_HASH_INIT);
  if (first_difference(&h, 1) < 0)
    return 0;
  if (rank0())
    LOG(LOG_ERROR, "the ranks were started with different flags; every rank "
        "must get the same command line and flag files (compare "
        "'qgmd --show-config' on each)");
  return 2;
}

int qgmd_make_topology(const qgmd_rank_t *rank, qgm_topology_t **topology,
                       char *err, size_t errlen) {
  return qgmd_job_topology(rank->cfg, rank->nodes, rank->placement.host_of,
                           rank->placement.hosts, topology, err, errlen);
}

static void log_topology(const qgmd_rank_t *rank, const qgm_topology_t *t) {
  if (!qgmd_job_graph(rank->cfg)) {
    if (rank->nodes > 1)
      LOG(LOG_INFO, "no graph: every step averages all %d nodes",
          rank->nodes);
    return;
  }
  char gap[64] = "";
  double g;
  if (rank->nodes <= MAX_LOGGED_GAP_NODES &&
      qgm_topology_spectral_gap(t, &g) == 0)
    snprintf(gap, sizeof gap, ", spectral gap %.4g", g);
  double least;
  if (rank->nodes <= MAX_LOGGED_GAP_NODES &&
      qgm_topology_lambda_min(t, &least) == 0)
    snprintf(gap + strlen(gap), sizeof gap - strlen(gap),
             ", lambda_min(W) %.4g", least);
  char period[64] = "";
  if (qgm_topology_period(t) > 1)
    snprintf(period, sizeof period, ", a new W every round (period %d)",
             qgm_topology_period(t));
  char hosts[384] = "";
  if (qgm_topology_hosts(t) > 0)
    snprintf(hosts, sizeof hosts, " (%d hosts of %d, %s between hosts)",
             qgm_topology_hosts(t), qgm_topology_per_host(t),
             rank->cfg->host_topology);
  const size_t edges = qgm_topology_edges(t);
  const int peers = qgm_topology_max_degree(t);
  LOG(LOG_INFO, "topology %s%s: %d node%s, %zu edge%s, up to %d peer%s, %s "
      "weights%s%s", rank->cfg->topology, hosts, rank->nodes,
      rank->nodes == 1 ? "" : "s", edges,
      edges == 1 ? "" : "s", peers, peers == 1 ? "" : "s",
      qgm_mixing_name(qgm_topology_mixing(t)), period, gap);
}

void qgmd_log_startup(const qgmd_rank_t *rank,
                      const qgm_topology_t *topology,
                      const char *config_json) {
  if (rank->id != 0)
    return;
  char changed[2048];
  qgmd_config_changed(rank->cfg, changed, sizeof changed);
  LOG(LOG_INFO, "flags: %s", changed);
  const char *caveat = qgmd_compress_caveat(rank->cfg);
  if (caveat)
    LOG(LOG_WARN, "--compress=%s (--consensus-lr=%g): %s", rank->cfg->compress,
        rank->cfg->consensus_lr, caveat);
  LOG(LOG_DEBUG, "configuration: %s", config_json);
  if (topology) /* the asynchronous mode has none */
    log_topology(rank, topology);
  char placed[128];
  qgmd_placement_describe(&rank->placement, placed, sizeof placed);
  LOG(LOG_INFO, "ranks on %s", placed);
}

int qgmd_check_same_inputs(const qgmd_rank_t *rank,
                           const qgm_topology_t *topology) {
  static const char *const what[] = {
      "the topology (an edge file differs between machines)",
      "the test set (the data files differ between machines)",
      "the training set's size (the data files differ between machines)"};
  const uint64_t v[3] = {topology ? qgm_topology_hash(topology) : 0,
                         rank->test_set.hash,
                         qgm_dataset_count(rank->train)};
  int bad = first_difference(v, 3);
  if (bad < 0)
    return 0;
  if (rank0())
    LOG(LOG_ERROR, "the ranks disagree on %s", what[bad]);
  return 2;
}
