/* gossip.h - the neighbour exchange: every node sends its message to its
 * peers of the round and averages what it receives with the mixing weights.
 * The algorithm is not the transport's business: it moves float vectors,
 * to the neighbours or (for the centralized baseline) to everyone. */
#ifndef QGMD_GOSSIP_H
#define QGMD_GOSSIP_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "qgm.h"

typedef struct qgmd_gossip {
  const qgm_topology_t *topology;
  int rank;
  size_t len;        /* floats per message */
  int max_degree;
  float **recv;      /* one receive buffer per possible peer */
  int *peers;
  double *weights;
  MPI_Request *requests;
  double bytes_sent; /* total over the run */
} qgmd_gossip_t;

int qgmd_gossip_init(qgmd_gossip_t *g, const qgm_topology_t *topology,
                     int rank, size_t len);
void qgmd_gossip_free(qgmd_gossip_t *g);

/* mix = W_ii * msg + sum_j W_ij * msg_j over the peers of `round`. */
void qgmd_gossip_exchange(qgmd_gossip_t *g, uint64_t round, const float *msg,
                          float *mix);

/* mix = (1/n) sum over all ranks of msg (MPI_Allreduce): the centralized
 * baseline's averaging. */
void qgmd_gossip_global_mean(qgmd_gossip_t *g, const float *msg, float *mix);

/* Combines the messages as the optimizer asks (qgm_optim_mixing): the
 * transport knows the kind of mixing, never the algorithm. */
void qgmd_gossip_mix(qgmd_gossip_t *g, qgm_mixing_t mixing, uint64_t round,
                     const float *msg, float *mix);

#endif /* QGMD_GOSSIP_H */
