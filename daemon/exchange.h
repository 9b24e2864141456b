/* exchange.h - the exchange of one step: every node sends a vector to its
 * peers of the round and combines what it receives, as the job's kind of
 * exchange says (job/exchange_plan.h: chosen once, from the algorithm, the
 * topology and --compress). The algorithm is not the transport's business:
 * it moves float vectors, or a compressor's bytes, and ends the
 * optimizer's step with the result.
 *
 * Every kind is one file behind one interface (exchange_kind.h), a row of
 * the table in exchange.c:
 *
 *   exchange_neighbours.c  the graph's neighbours' whole vectors
 *   exchange_hosts.c       hierarchical: in three phases of point-to-point
 *                          messages, the nodes of a host reduce their
 *                          messages to the host's mean (slot s taking slice
 *                          s), slot s gossips its slice with slot s of the
 *                          neighbouring hosts, and the host's nodes share
 *                          their mixed slices; only the second phase
 *                          crosses between hosts, with one copy of each
 *                          host's mean instead of one per node
 *   exchange_global.c      the all-reduce baseline's mean over all nodes,
 *                          in two phases, summed in rank order so that it
 *                          has the same bits wherever the ranks run
 *   exchange_choco.c       compressed (CHOCO-gossip): packed bytes of the
 *                          change to the sender's public copy, every holder
 *                          of a copy keeps it up to date, the mix is
 *                          CHOCO's; flat, or as the second phase between
 *                          hosts, with the exact exchanges inside a host
 *                          float
 *   exchange_relay.c       RelaySum: every neighbour its own message
 *   exchange_rounds.c      the neighbours' whole vectors, R rounds a step,
 *                          each sending the last one's mix
 *                          (--gossip-rounds)
 *
 * Between nodes of one host (qgmd_exchange_share_host), a message does
 * not travel where the kind allows it: the host's nodes keep their
 * messages in one shared-memory window, and MPI carries only the round's
 * number, which tells the peer the message is there to read in place
 * (exchange_shared.c). */
#ifndef QGMD_DAEMON_EXCHANGE_H
#define QGMD_DAEMON_EXCHANGE_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "exchange_plan.h"
#include "qgm.h"

struct qgmd_exchange_ops;

typedef struct qgmd_exchange {
  const struct qgmd_exchange_ops *ops; /* the kind's transport */
  const qgmd_exchange_def_t *def;      /* the kind's shared half */
  qgmd_exchange_plan_t plan; /* how the job exchanges, and what */
  void *state; /* def's state of this node (CHOCO's copies, RelaySum's
                  sums), or NULL */
  const qgm_topology_t *topology;
  qgm_combine_t combine;
  int rank;
  size_t len; /* floats per message */
  int max_degree;
  const int *host_of; /* every rank's real host, for the byte counts */
  float **recv;    /* one receive buffer per possible peer */
  int *peers;      /* whose messages this node receives in the phase */
  int *send_peers; /* who gets this node's message (differs from peers
                      on the directed one-peer exponential graph) */
  double *weights;
  /* The round's mix after lost messages and push-sum's shares
   * (qgm_gossip_round): the peers that count, their messages and
   * weights. */
  int *mix_peers;
  const float **mix_from;
  double *mix_weights;
  MPI_Request *requests;
  /* The round in flight: */
  uint64_t round;
  const void *send;
  int degree;    /* receives of the phase: requests[0..degree) */
  int nrequests; /* then its sends */
  int phase;     /* the kind's own numbering */
  /* This node's slice, for the kinds that cut the vector: of the host's
   * mean on a hierarchical topology, of the sum for the global mean. */
  size_t slice_at, slice_len;
  void *kind_state; /* the kind's own buffers and counters */
  /* Messages read in place (exchange_shared.c): the host's window, this
   * node's two slots, and peer j's two slots (j < shared_peers), or NULL
   * where peer j is on another host. The two slots are the messages of
   * even and odd rounds for neighbour mixing; for the global mean, the
   * message and the node's slice of the sum (exchange_global.c). `from`
   * is what the mix reads, `ready` the round numbers that say a slot is
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
  /* Messages lost (--drop-rate) as the asynchronous transport counts them,
   * or -1: then the draws of every round tell (qgm_drop_count). */
  double messages_lost;
} qgmd_exchange_t;

/* Builds node `rank`'s exchange of the plan, its state from x0 (the model
 * all nodes share). host_of[r]: the host of rank r as the ranks are
 * placed (it must outlive x), which only sorts the byte counts. Returns 0
 * or a QGM_E code. */
int qgmd_exchange_init(qgmd_exchange_t *x, const qgmd_exchange_plan_t *plan,
                       int rank, const float *x0, const int *host_of);
/* Collective over `host` (the ranks of this node's host): afterwards the
 * messages between peers of the host are read in place, where the kind
 * allows it: the global mean, or neighbour mixing of whole float vectors
 * on a static symmetric graph. Elsewhere it does nothing (every rank of
 * the job decides alike). The results are the same bits either way.
 * Returns 0 or QGM_ENOMEM. */
int qgmd_exchange_share_host(qgmd_exchange_t *x, MPI_Comm host);
void qgmd_exchange_free(qgmd_exchange_t *x);

/* Posts the exchange of `send` for `round`; send must stay untouched until
 * qgmd_exchange_advance returns 0. The peers may change every round; one
 * tag per phase suffices because MPI never lets two messages between the
 * same pair overtake each other, and both ends walk the same sequence of
 * rounds. Returns the number of requests, which are x->requests[0..n). */
int qgmd_exchange_start(qgmd_exchange_t *x, uint64_t round, const void *send);

/* After the requests of a phase completed: posts the next phase and returns
 * its number of requests, or returns 0 when the round's exchange is done. */
int qgmd_exchange_advance(qgmd_exchange_t *x);

/* After the exchange is done: ends the optimizer's step with the round's
 * mix. With base NULL the mix is the round's combination of send (the
 * gossip average W send, CHOCO's send + gamma W (xhat - xhat_i), the
 * global mean, RelaySum's average); otherwise base + (that - send), the
 * round's averaging applied to a model that moved on while the exchange
 * ran. */
void qgmd_exchange_finish(qgmd_exchange_t *x, qgm_optim_t *o, float lr,
                          const float *base);

/* Where the local step may write the message of `round` for the peers to
 * read it in place (qgm_optim_set_message_buffer), or NULL. */
float *qgmd_exchange_outbox(qgmd_exchange_t *x, uint64_t round);

/* The exchange's state as checkpoint section i (name of at most
 * QGMD_SECTION_NAME_MAX bytes); 0 past the last. */
int qgmd_exchange_section(qgmd_exchange_t *x, int i, char *name,
                          float **data, size_t *len);

#endif /* QGMD_DAEMON_EXCHANGE_H */
