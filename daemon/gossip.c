/* gossip.c - see gossip.h. */
#include "gossip.h"

#include <stdlib.h>
#include <string.h>

enum { GOSSIP_TAG = 17 };

static int init(qgmd_gossip_t *g, const qgm_topology_t *topology,
                qgm_combine_t combine, int rank, size_t len,
                MPI_Datatype type, size_t elem_bytes) {
  memset(g, 0, sizeof *g);
  g->topology = topology;
  g->combine = combine;
  g->rank = rank;
  g->len = len;
  g->type = type;
  g->elem_bytes = elem_bytes;
  g->max_degree = qgm_topology_max_degree(topology);
  int k = g->max_degree > 0 ? g->max_degree : 1;
  g->recv = calloc((size_t)k, sizeof *g->recv);
  g->peers = calloc((size_t)k, sizeof *g->peers);
  g->send_peers = calloc((size_t)k, sizeof *g->send_peers);
  g->weights = calloc((size_t)k, sizeof *g->weights);
  g->requests = calloc(2 * (size_t)k, sizeof *g->requests);
  if (!g->recv || !g->peers || !g->send_peers || !g->weights ||
      !g->requests)
    return QGM_ENOMEM;
  if (combine == QGM_COMBINE_GLOBAL_MEAN)
    return (g->sum = malloc(len * sizeof(float))) ? 0 : QGM_ENOMEM;
  for (int j = 0; j < g->max_degree; j++)
    if (!(g->recv[j] = malloc(len * elem_bytes)))
      return QGM_ENOMEM;
  return 0;
}

int qgmd_gossip_init(qgmd_gossip_t *g, const qgm_topology_t *topology,
                     qgm_combine_t combine, int rank, size_t len) {
  return init(g, topology, combine, rank, len, MPI_FLOAT, sizeof(float));
}

int qgmd_gossip_init_packed(qgmd_gossip_t *g, const qgm_topology_t *topology,
                            int rank, size_t bytes) {
  return init(g, topology, QGM_COMBINE_NEIGHBOURS, rank, bytes, MPI_BYTE, 1);
}

void qgmd_gossip_free(qgmd_gossip_t *g) {
  if (g->recv)
    for (int j = 0; j < g->max_degree; j++)
      free(g->recv[j]);
  free(g->recv);
  free(g->sum);
  free(g->peers);
  free(g->send_peers);
  free(g->weights);
  free(g->requests);
  memset(g, 0, sizeof *g);
}

int qgmd_gossip_start(qgmd_gossip_t *g, uint64_t round, const void *send) {
  const int count = (int)g->len;
  g->send = send;
  if (g->combine == QGM_COMBINE_GLOBAL_MEAN) {
    MPI_Iallreduce(send, g->sum, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                   &g->requests[0]);
    g->bytes_sent += (double)g->len * sizeof(float);
    return g->nrequests = 1;
  }
  double self; /* implied by the difference form: 1 - sum_j W_ij */
  int k = qgm_topology_neighbors(g->topology, g->rank, round, g->peers,
                                 g->weights, &self);
  int sends = qgm_topology_send_peers(g->topology, g->rank, round,
                                      g->send_peers);
  for (int j = 0; j < k; j++)
    MPI_Irecv(g->recv[j], count, g->type, g->peers[j], GOSSIP_TAG,
              MPI_COMM_WORLD, &g->requests[j]);
  for (int j = 0; j < sends; j++)
    MPI_Isend(send, count, g->type, g->send_peers[j], GOSSIP_TAG,
              MPI_COMM_WORLD, &g->requests[k + j]);
  g->degree = k;
  g->bytes_sent += (double)sends * (double)g->len * (double)g->elem_bytes;
  return g->nrequests = k + sends;
}

void qgmd_gossip_mix(qgmd_gossip_t *g, float *mix, const float *base) {
  if (g->combine == QGM_COMBINE_GLOBAL_MEAN) {
    qgm_vec_scale_copy(mix, (float)(1.0 / qgm_topology_nodes(g->topology)),
                       g->sum, g->len);
    return;
  }
  const float *send = g->send;
  qgm_vec_gossip_mix(mix, base ? base : send, send, g->degree,
                     (const float *const *)g->recv, g->weights, g->len);
}
