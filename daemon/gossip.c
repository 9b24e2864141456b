/* gossip.c - see gossip.h. */
#include "gossip.h"

#include <stdlib.h>
#include <string.h>

#include "mpi_util.h"

enum { GOSSIP_TAG = 17 };

int qgmd_gossip_init(qgmd_gossip_t *g, const qgm_topology_t *topology,
                     int rank, size_t len) {
  memset(g, 0, sizeof *g);
  g->topology = topology;
  g->rank = rank;
  g->len = len;
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
  for (int j = 0; j < g->max_degree; j++)
    if (!(g->recv[j] = malloc(len * sizeof(float))))
      return QGM_ENOMEM;
  return 0;
}

void qgmd_gossip_free(qgmd_gossip_t *g) {
  if (g->recv)
    for (int j = 0; j < g->max_degree; j++)
      free(g->recv[j]);
  free(g->recv);
  free(g->peers);
  free(g->send_peers);
  free(g->weights);
  free(g->requests);
  memset(g, 0, sizeof *g);
}

void qgmd_gossip_exchange(qgmd_gossip_t *g, uint64_t round, const float *msg,
                          float *mix) {
  double self;
  int k = qgm_topology_neighbors(g->topology, g->rank, round, g->peers,
                                 g->weights, &self);
  int sends = qgm_topology_send_peers(g->topology, g->rank, round,
                                      g->send_peers);
  const int count = (int)g->len;
  for (int j = 0; j < k; j++)
    MPI_Irecv(g->recv[j], count, MPI_FLOAT, g->peers[j], GOSSIP_TAG,
              MPI_COMM_WORLD, &g->requests[j]);
  for (int j = 0; j < sends; j++)
    MPI_Isend(msg, count, MPI_FLOAT, g->send_peers[j], GOSSIP_TAG,
              MPI_COMM_WORLD, &g->requests[k + j]);
  /* The own share is mixed while the messages are in flight. */
  qgm_vec_scale_copy(mix, (float)self, msg, g->len);
  qgmd_wait_all(k + sends, g->requests);
  for (int j = 0; j < k; j++)
    qgm_vec_axpy(mix, (float)g->weights[j], g->recv[j], g->len);
  g->bytes_sent += (double)sends * (double)g->len * sizeof(float);
}
