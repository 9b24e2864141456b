/* gossip.h - the exchange of one step: every node sends a vector to its
 * peers of the round and averages what it receives with the mixing weights,
 * or (for the centralized baseline) all nodes average over everyone. The
 * algorithm is not the transport's business: it moves float vectors and
 * knows only the kind of mixing the optimizer asks for.
 *
 * On a hierarchical topology (qgm_topology_hosts > 0) a round has three
 * phases, each a set of point-to-point messages: the nodes of a host
 * reduce their messages to the host's mean, slot s taking slice s; slot s
 * exchanges its slice of the mean with slot s of the neighbouring hosts
 * and mixes it; the host's nodes share their mixed slices. Only the
 * second phase crosses between hosts, and it carries one copy of each
 * host's mean instead of one per node.
 *
 * With compression (qgmd_gossip_init_compressed) the messages that cross
 * between nodes of the graph are CHOCO-gossip's: packed bytes of the
 * change to the sender's public copy, every holder of a copy keeps it
 * up to date, and the mix is CHOCO's. On a hierarchical topology that is
 * the second phase: the copies are of slices of the hosts' means, and the
 * exact exchanges inside a host stay float.
 *
 * Between nodes of one host (qgmd_gossip_share_host), a message does not
 * travel: the host's nodes keep their messages in one shared-memory
 * window, and MPI carries only the round's number, which tells the peer
 * the message is there to read in place (gossip_shared.c).
 *
 * The global mean is summed in rank order, slice by slice, so that it has
 * the same bits wherever the ranks run (gossip_global.c). */
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
  size_t len; /* floats per message */
  int max_degree;
  const int *host_of; /* every rank's real host, for the byte counts */
  float **recv;    /* one receive buffer per possible peer */
  float **outbox;  /* one send buffer per possible peer when every peer gets
                      its own message (qgmd_gossip_init_outboxes), or NULL */
  float *sum;      /* the global sum, for QGM_COMBINE_GLOBAL_MEAN */
  float *parts;    /* this node's slice of every node's message, by rank */
  int *peers;      /* whose messages this node receives in the phase */
  int *send_peers; /* who gets this node's message (differs from peers
                      on the directed one-peer exponential graph) */
  double *weights;
  MPI_Request *requests;
  /* The round in flight: */
  uint64_t round;
  const void *send;
  int degree;    /* receives of the phase: requests[0..degree) */
  int nrequests; /* then its sends */
  int phase;
  /* This node's slice: of the host's mean on a hierarchical topology (and
   * its slot there), of the sum for the global mean. */
  int slot;
  size_t slice_at, slice_len;
  float *mean;  /* the slice of the host's mean */
  float *mixed; /* the host's mixed vector, assembled from the slices */
  /* Compressed gossip: this node's CHOCO state (its copies of the
   * vector, or of its slice, that it and its graph peers send) and its
   * packed message of the round; NULL without compression. */
  qgm_choco_t *choco;
  uint8_t *wire;
  /* Messages read in place (gossip_shared.c): the host's window, this
   * node's two slots, and peer j's two slots (j < shared_peers), or NULL
   * where peer j is on another host. The two slots are the messages of
   * even and odd rounds for neighbour mixing; for the global mean, the
   * message and the node's slice of the sum (gossip_global.c). `from` is
   * what the mix reads, `ready` the round numbers that say a slot is
   * written. */
  MPI_Win window;
  float *own_slot[2];
  int shared_peers;
  const float *(*peer_slot)[2];
  const float **from;
  uint64_t *ready;
  uint64_t ready_out;
  /* Bytes sent over the whole run, the part to ranks on other hosts, and
   * the part its peers read in place. */
  double bytes_sent, bytes_between_hosts, bytes_in_place;
} qgmd_gossip_t;

/* host_of[r]: the host of rank r as the ranks are placed (it must outlive
 * g), which only sorts the byte counts. */
int qgmd_gossip_init(qgmd_gossip_t *g, const qgm_topology_t *topology,
                     qgm_combine_t combine, int rank, size_t len,
                     const int *host_of);
/* Neighbour exchange compressed with CHOCO-gossip, on a static graph, flat
 * or hierarchical: the node's state is qgm_choco_create_node's for cc and
 * x0, the model all nodes share. qgm_choco_refuses has been asked. */
int qgmd_gossip_init_compressed(qgmd_gossip_t *g,
                                const qgm_topology_t *topology, int rank,
                                size_t len, qgm_choco_config_t cc,
                                const float *x0, const int *host_of);
/* The CHOCO copies (checkpoint state), NULL without compression. */
float *qgmd_gossip_copies(qgmd_gossip_t *g, size_t *len);
/* Neighbour exchange in which every peer of the round gets its own message
 * of len floats (RelaySum's relayed sums): the caller fills outbox[j] for
 * send_peers[j] (qgmd_gossip_send_peers) and starts the round with send
 * NULL; recv[j] then holds peer j's message and qgmd_gossip_mix does not
 * apply. Flat topologies only. */
int qgmd_gossip_init_outboxes(qgmd_gossip_t *g,
                              const qgm_topology_t *topology, int rank,
                              size_t len, const int *host_of);
/* Collective over `host` (the ranks of this node's host): afterwards the
 * messages between peers of the host are read in place, where the
 * exchange allows it: the global mean, or neighbour mixing of whole float
 * vectors, flat, uncompressed, on a static symmetric graph. Elsewhere it
 * does nothing (every rank of the job decides alike). The results are the
 * same bits either way. Returns 0 or QGM_ENOMEM. */
int qgmd_gossip_share_host(qgmd_gossip_t *g, MPI_Comm host);
/* Lists the peers this node sends to in round (send_peers[0..k)); k. */
int qgmd_gossip_send_peers(qgmd_gossip_t *g, uint64_t round);
void qgmd_gossip_free(qgmd_gossip_t *g);

/* Posts the exchange of `send` (NULL with outboxes) for `round`; send, or
 * the outboxes, must stay untouched until qgmd_gossip_advance returns 0. The peers may change every round; one tag
 * per phase suffices because MPI never lets two messages between the same
 * pair overtake each other, and both ends walk the same sequence of rounds.
 * Returns the number of requests, which are g->requests[0..n). */
int qgmd_gossip_start(qgmd_gossip_t *g, uint64_t round, const void *send);

/* After the requests of a phase completed: posts the next phase and returns
 * its number of requests, or returns 0 when the round's exchange is done. */
int qgmd_gossip_advance(qgmd_gossip_t *g);

/* After the exchange is done, with neighbour mixing: mix = (W send)_i,
 * the gossip average, when base is NULL; otherwise mix = base +
 * (W send)_i - send, the round's averaging applied to a model that moved
 * on while the exchange ran. It is computed as (base or send) +
 * sum_j W_ij (recv_j - send), which keeps the nodes' mean exactly in float
 * (see qgm_vec_mix_peer) and matches qgm-sim's order. With global mixing:
 * mix = the mean of all nodes' send (base must be NULL). Compressed, the
 * public copies replace the messages: mix = (base or send) +
 * gamma sum_j W_ij (xhat_j - xhat_i); on a hierarchical topology that is
 * the mix of the hosts' means, applied to base as in the plain case. */
void qgmd_gossip_mix(qgmd_gossip_t *g, float *mix, const float *base);
/* Where the local step may write the message of `round` for the peers to
 * read it in place (qgm_optim_set_message_buffer), or NULL. */
float *qgmd_gossip_outbox(qgmd_gossip_t *g, uint64_t round);
/* Ends the optimizer's step with the round's mix (base as above): where
 * the mix is the plain neighbour average, qgm_optim_gossip_step; else
 * qgmd_gossip_mix into the mix buffer, then qgm_optim_after_gossip. */
void qgmd_gossip_step(qgmd_gossip_t *g, qgm_optim_t *o, float lr,
                      const float *base);
#endif /* QGMD_GOSSIP_H */
