/* mixing.c - the gossip of all nodes in one process, for the simulator and
 * the tests. The arithmetic is the daemon's, operation for operation, so
 * that an in-process run is a faithful stand-in for an MPI one. */
#include <stdlib.h>

#include "qgm.h"

static int mix_neighbours(const qgm_topology_t *t, uint64_t round,
                          qgm_combine_t mixing, const qgm_drop_t *d,
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
    double extra = 0.0;
    k = qgm_gossip_round(t, round, i, mixing, d, k, peers, from, weights,
                         &extra);
    qgm_vec_gossip_mix(mixes[i], msgs[i], msgs[i], k, from, weights, len);
    if (extra != 0.0)
      qgm_vec_axpy(mixes[i], (float)extra, msgs[i], len);
  }
  free(peers);
  free(weights);
  free(from);
  return rc;
}

/* The hosts' mean messages of a hierarchical topology, whole vectors,
 * or NULL when out of memory. */
static float **host_means(const qgm_topology_t *t, const float *const *msgs,
                          size_t len) {
  const int hosts = qgm_topology_hosts(t), per_host = qgm_topology_per_host(t);
  float **means = calloc((size_t)hosts, sizeof *means);
  const float **from = malloc((size_t)per_host * sizeof *from);
  int ok = means && from;
  for (int h = 0; ok && h < hosts; h++) {
    if (!(means[h] = malloc(len * sizeof(float)))) {
      ok = 0;
      break;
    }
    for (int s = 0; s < per_host; s++)
      from[s] = msgs[qgm_topology_host_member(t, h, s)];
    qgm_vec_mean(means[h], from, per_host, len);
  }
  free(from);
  for (int h = 0; !ok && means && h < hosts; h++)
    free(means[h]);
  if (!ok) {
    free(means);
    return NULL;
  }
  return means;
}

/* A hierarchical topology, as the daemon's host-aware exchange computes
 * it: every host's mean message, then the gossip of the means between
 * hosts; every node of a host gets its host's result. (The daemon does
 * this slice by slice; the arithmetic is elementwise, so it agrees bit for
 * bit.) */
static int mix_hosts(const qgm_topology_t *t, uint64_t round,
                     const float *const *msgs, float *const *mixes,
                     size_t len) {
  const int hosts = qgm_topology_hosts(t), per_host = qgm_topology_per_host(t);
  const qgm_topology_t *g = qgm_topology_host_graph(t);
  const int k_max = qgm_topology_max_degree(g) > 0 ? qgm_topology_max_degree(g)
                                                   : 1;
  float **means = host_means(t, msgs, len);
  const float **from = malloc((size_t)k_max * sizeof *from);
  int *peers = malloc((size_t)k_max * sizeof *peers);
  double *weights = malloc((size_t)k_max * sizeof *weights);
  int rc = means && from && peers && weights ? 0 : QGM_ENOMEM;
  for (int h = 0; rc == 0 && h < hosts; h++) {
    double self;
    int k = qgm_topology_neighbors(g, h, round, peers, weights, &self);
    for (int j = 0; j < k; j++)
      from[j] = means[peers[j]];
    float *out = mixes[qgm_topology_host_member(t, h, 0)];
    qgm_vec_gossip_mix(out, means[h], means[h], k, from, weights, len);
    for (int s = 1; s < per_host; s++)
      qgm_vec_copy(mixes[qgm_topology_host_member(t, h, s)], out, len);
  }
  for (int h = 0; means && h < hosts; h++)
    free(means[h]);
  free(means);
  free(from);
  free(peers);
  free(weights);
  return rc;
}

/* The daemon's all-reduce sums in the same tree (qgm_vec_tree_sum over
 * the nodes in order) and then scales, so the two agree bit for bit. */
static void mix_global_mean(int n, const float *const *msgs,
                            float *const *mixes, size_t len) {
  qgm_vec_tree_sum(mixes[0], msgs, n, len);
  qgm_vec_scale_copy(mixes[0], (float)(1.0 / n), mixes[0], len);
  for (int i = 1; i < n; i++)
    qgm_vec_copy(mixes[i], mixes[0], len);
}

int qgm_mix_messages(const qgm_topology_t *t, uint64_t round,
                     qgm_combine_t mixing, const float *const *msgs,
                     float *const *mixes, size_t len) {
  return qgm_mix_messages_lossy(t, round, mixing, NULL, msgs, mixes, len);
}

int qgm_mix_messages_lossy(const qgm_topology_t *t, uint64_t round,
                           qgm_combine_t mixing, const qgm_drop_t *d,
                           const float *const *msgs, float *const *mixes,
                           size_t len) {
  if (!t || !msgs || !mixes)
    return QGM_EINVAL;
  const int lossy = d && d->rate > 0.0;
  if (lossy && (mixing == QGM_COMBINE_GLOBAL_MEAN || qgm_topology_hosts(t)))
    return QGM_EINVAL;
  if (mixing == QGM_COMBINE_NEIGHBOURS && qgm_topology_hosts(t))
    return mix_hosts(t, round, msgs, mixes, len);
  if (mixing == QGM_COMBINE_NEIGHBOURS || mixing == QGM_COMBINE_PUSH_SUM)
    return mix_neighbours(t, round, mixing, d, msgs, mixes, len);
  if (mixing == QGM_COMBINE_GLOBAL_MEAN) {
    mix_global_mean(qgm_topology_nodes(t), msgs, mixes, len);
    return 0;
  }
  return QGM_EINVAL;
}

int qgm_mix_compressed(const qgm_topology_t *t, uint64_t round,
                       qgm_choco_t *const *choco, uint8_t *const *wire,
                       const float *const *msgs, float *const *mixes,
                       size_t len) {
  const int n = qgm_topology_nodes(t), hier = qgm_topology_hosts(t) > 0;
  const int per_host = hier ? qgm_topology_per_host(t) : 1;
  const qgm_topology_t *graph = hier ? qgm_topology_host_graph(t) : t;
  const int k_max = qgm_topology_max_degree(graph) > 0
                        ? qgm_topology_max_degree(graph)
                        : 1;
  float **means = hier ? host_means(t, msgs, len) : NULL;
  int *peers = malloc((size_t)k_max * sizeof *peers);
  double *weights = malloc((size_t)k_max * sizeof *weights);
  int rc = peers && weights && (means || !hier) ? 0 : QGM_ENOMEM;
  /* Node i sends what the daemon's rank i sends: its message, or its
   * slice of its host's mean, which then mixes into host member 0's
   * buffer slice by slice, as the daemon's slots assemble theirs. */
  size_t at = 0, count = len;
  for (int i = 0; rc == 0 && i < n; i++) {
    const float *v = msgs[i];
    if (hier) {
      qgm_host_slice(len, per_host, qgm_topology_host_slot(t, i), &at, &count);
      v = means[qgm_topology_host_of(t, i)] + at;
    }
    rc = qgm_choco_send(choco[i], round, v, wire[i], NULL);
  }
  for (int i = 0; rc == 0 && i < n; i++) {
    double self;
    const int h = hier ? qgm_topology_host_of(t, i) : i;
    const int slot = hier ? qgm_topology_host_slot(t, i) : 0;
    int k = qgm_topology_neighbors(graph, h, round, peers, weights, &self);
    for (int j = 0; rc == 0 && j < k; j++) {
      const int from =
          hier ? qgm_topology_host_member(t, peers[j], slot) : peers[j];
      rc = qgm_choco_receive(choco[i], j, from, round, wire[from]);
    }
    if (!hier) {
      qgm_choco_mix(choco[i], mixes[i], msgs[i], weights);
      continue;
    }
    qgm_host_slice(len, per_host, slot, &at, &count);
    qgm_choco_mix(choco[i], mixes[qgm_topology_host_member(t, h, 0)] + at,
                  means[h] + at, weights);
  }
  for (int h = 0; rc == 0 && hier && h < qgm_topology_hosts(t); h++)
    for (int s = 1; s < per_host; s++)
      qgm_vec_copy(mixes[qgm_topology_host_member(t, h, s)],
                   mixes[qgm_topology_host_member(t, h, 0)], len);
  for (int h = 0; means && h < qgm_topology_hosts(t); h++)
    free(means[h]);
  free(means);
  free(peers);
  free(weights);
  return rc;
}
