/* gossip.h - the exchange of one step: every node sends a vector to its
 * peers of the round and averages what it receives with the mixing weights,
 * or (for the centralized baseline) all nodes average over everyone. The
 * algorithm is not the transport's business: it moves float vectors and
 * knows only the kind of mixing the optimizer asks for. */
#ifndef QGMD_GOSSIP_H
#define QGMD_GOSSIP_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "qgm.h"

typedef struct qgmd_gossip {
  const qgm_topology_t *topology;
  qgm_combine_t combine;
  int rank;
  size_t len; /* elements per message */
  MPI_Datatype type; /* MPI_FLOAT, or MPI_BYTE for packed messages */
  size_t elem_bytes; /* bytes per element */
  int max_degree;
  float **recv;    /* one receive buffer per possible peer */
  float *sum;      /* the global sum, for QGM_COMBINE_GLOBAL_MEAN */
  int *peers;      /* whose messages this node mixes in the round */
  int *send_peers; /* who mixes this node's message (differs from peers
                      on the directed one-peer exponential graph) */
  double *weights;
  MPI_Request *requests;
  /* The round in flight: */
  const void *send;
  int degree;
  int nrequests;
  double bytes_sent; /* over the whole run */
} qgmd_gossip_t;

int qgmd_gossip_init(qgmd_gossip_t *g, const qgm_topology_t *topology,
                     qgm_combine_t combine, int rank, size_t len);
/* Neighbour exchange of packed messages of `bytes` bytes each (compressed
 * gossip, choco.h): recv[j] then holds peer j's bytes; qgmd_gossip_mix does
 * not apply. */
int qgmd_gossip_init_packed(qgmd_gossip_t *g, const qgm_topology_t *topology,
                            int rank, size_t bytes);
void qgmd_gossip_free(qgmd_gossip_t *g);

/* Posts the exchange of `send` for `round`; send must stay untouched until
 * the requests complete. The peers may change every round; one tag
 * suffices because MPI never lets two messages between the same pair
 * overtake each other, and both ends walk the same sequence of rounds.
 * Returns the number of requests, which are g->requests[0..n). */
int qgmd_gossip_start(qgmd_gossip_t *g, uint64_t round, const void *send);

/* After the requests completed, with neighbour mixing: mix = (W send)_i,
 * the gossip average, when base is NULL; otherwise mix = base +
 * (W send)_i - send, the round's averaging applied to a model that moved
 * on while the exchange ran. It is computed as (base or send) +
 * sum_j W_ij (recv_j - send), which keeps the nodes' mean exactly in float
 * (see qgm_vec_mix_peer) and matches qgm-sim's order. With global mixing:
 * mix = the mean of all nodes' send (base must be NULL). */
void qgmd_gossip_mix(qgmd_gossip_t *g, float *mix, const float *base);
#endif /* QGMD_GOSSIP_H */
