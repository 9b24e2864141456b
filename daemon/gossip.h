/* gossip.h - the neighbour exchange: every node sends a vector to its peers
 * of the round and averages what it receives with the mixing weights. The
 * algorithm is not the transport's business: it moves float vectors. */
#ifndef QGMD_GOSSIP_H
#define QGMD_GOSSIP_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "qgm.h"

typedef struct qgmd_gossip {
  const qgm_topology_t *topology;
  int rank;
  size_t len; /* floats per message */
  int max_degree;
  float **recv; /* one receive buffer per possible peer */
  int *peers;
  double *weights;
  MPI_Request *requests;
  /* The round in flight: */
  const float *send;
  int degree;
  double self_weight;
  double bytes_sent; /* over the whole run */
} qgmd_gossip_t;

int qgmd_gossip_init(qgmd_gossip_t *g, const qgm_topology_t *topology,
                     int rank, size_t len);
void qgmd_gossip_free(qgmd_gossip_t *g);

/* Posts the exchange of `send` with the peers of `round`; send must stay
 * untouched until the requests complete. Returns the number of requests,
 * which are g->requests[0..n). */
int qgmd_gossip_start(qgmd_gossip_t *g, uint64_t round, const float *send);

/* After the requests completed: mix = (W send)_i, the gossip average, when
 * base is NULL; otherwise mix = base + (W send)_i - send, which applies the
 * round's averaging to a model that moved on while the exchange ran. */
void qgmd_gossip_mix(qgmd_gossip_t *g, float *mix, const float *base);

#endif /* QGMD_GOSSIP_H */
