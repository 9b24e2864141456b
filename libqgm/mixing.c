/* mixing.c - the gossip of all nodes in one process, for the simulator and
 * the tests. The arithmetic is the daemon's, operation for operation, so
 * that an in-process run is a faithful stand-in for an MPI one. */
#include <stdlib.h>

#include "qgm.h"

static int mix_neighbours(const qgm_topology_t *t, uint64_t round,
                          const float *const *msgs, float *const *mixes,
                          size_t len) {
  const int n = qgm_topology_nodes(t);
  const int k_max = qgm_topology_max_degree(t);
  int *peers = malloc((size_t)(k_max > 0 ? k_max : 1) * sizeof *peers);
  double *weights =
      malloc((size_t)(k_max > 0 ? k_max : 1) * sizeof *weights);
  const float **from = malloc((size_t)(k_max > 0 ? k_max : 1) * sizeof *from);
  int rc = peers && weights && from ? 0 : QGM_ENOMEM;
  for (int i = 0; rc == 0 && i < n; i++) {
    double self; /* implied: the difference form needs no self weight */
    int k = qgm_topology_neighbors(t, i, round, peers, weights, &self);
    if (k < 0) {
      rc = k;
      break;
    }
    for (int j = 0; j < k; j++)
      from[j] = msgs[peers[j]];
    qgm_vec_gossip_mix(mixes[i], msgs[i], msgs[i], k, from, weights, len);
  }
  free(peers);
  free(weights);
  free(from);
  return rc;
}

/* The daemon sums with MPI_Allreduce and then scales; summing in node
 * order is one of the orders MPI may pick, so the results agree to float
 * rounding rather than bit for bit. */
static void mix_global_mean(int n, const float *const *msgs,
                            float *const *mixes, size_t len) {
  qgm_vec_copy(mixes[0], msgs[0], len);
  for (int i = 1; i < n; i++)
    qgm_vec_axpy(mixes[0], 1.0f, msgs[i], len);
  qgm_vec_scale_copy(mixes[0], (float)(1.0 / n), mixes[0], len);
  for (int i = 1; i < n; i++)
    qgm_vec_copy(mixes[i], mixes[0], len);
}

int qgm_mix_messages(const qgm_topology_t *t, uint64_t round,
                     qgm_combine_t mixing, const float *const *msgs,
                     float *const *mixes, size_t len) {
  if (!t || !msgs || !mixes)
    return QGM_EINVAL;
  if (mixing == QGM_COMBINE_NEIGHBOURS)
    return mix_neighbours(t, round, msgs, mixes, len);
  if (mixing == QGM_COMBINE_GLOBAL_MEAN) {
    mix_global_mean(qgm_topology_nodes(t), msgs, mixes, len);
    return 0;
  }
  return QGM_EINVAL;
}
