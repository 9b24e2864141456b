/* gossip.h - the neighbour exchange: every node sends its message to its
 * peers of the round and averages what it receives with the mixing weights.
 * The algorithm is not the transport's business: it moves float vectors. */
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
  int *peers;        /* whose messages this node mixes in the round */
  int *send_peers;   /* who mixes this node's message (differs from peers
                        on the directed one-peer exponential graph) */
  double *weights;
  MPI_Request *requests;
  double bytes_sent; /* total over the run */
} qgmd_gossip_t;

int qgmd_gossip_init(qgmd_gossip_t *g, const qgm_topology_t *topology,
                     int rank, size_t len);
void qgmd_gossip_free(qgmd_gossip_t *g);

/* mix = W_ii * msg + sum_j W_ij * msg_j over the peers of `round`. The
 * peers may change every round; one tag suffices because MPI never lets
 * two messages between the same pair overtake each other, and both ends
 * walk the same deterministic sequence of rounds. */
void qgmd_gossip_exchange(qgmd_gossip_t *g, uint64_t round, const float *msg,
                          float *mix);

#endif /* QGMD_GOSSIP_H */
