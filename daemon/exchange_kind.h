/* exchange_kind.h - the interface every kind of exchange implements (one
 * file each, a row of the table in exchange.c), and what the kinds share:
 * the byte counts, the neighbours' phase, the hierarchical phases and the
 * messages read in place (exchange_shared.c). */
#ifndef QGMD_EXCHANGE_KIND_H
#define QGMD_EXCHANGE_KIND_H

#include "exchange.h"

typedef struct qgmd_exchange_ops {
  /* The kind's buffers, after exchange.c built the peers' lists, the
   * requests and the state (x->state). Returns 0 or a QGM_E code. */
  int (*init)(qgmd_exchange_t *x);
  /* Posts the first phase of round x->round for x->send; returns its
   * number of requests, or qgmd_exchange_advance's when it has none. */
  int (*start)(qgmd_exchange_t *x);
  /* After a phase's requests completed: posts the next phase and returns
   * its requests, or 0 when the round is done. NULL: one phase. */
  int (*advance)(qgmd_exchange_t *x);
  /* qgmd_exchange_finish (exchange.h). */
  void (*finish)(qgmd_exchange_t *x, qgm_optim_t *o, float lr,
                 const float *base);
  /* Whether peers of one host may read this node's messages in place
   * (qgmd_exchange_share_host); NULL: never. */
  int (*shares_host)(const qgmd_exchange_t *x);
  /* Whether peer j's slots are read in place when it is on this host;
   * NULL: every such peer's. */
  int (*in_place_peer)(const qgmd_exchange_t *x, int j);
  void (*free)(qgmd_exchange_t *x); /* the kind's buffers; NULL: none */
} qgmd_exchange_ops_t;

extern const qgmd_exchange_ops_t qgmd_exchange_neighbours,
    qgmd_exchange_hosts, qgmd_exchange_global_mean, qgmd_exchange_choco,
    qgmd_exchange_relay, qgmd_exchange_mpi_allreduce,
    qgmd_exchange_compressed_mean, qgmd_exchange_powersgd,
    qgmd_exchange_powergossip, qgmd_exchange_rounds;

/* One receive buffer of `bytes` per possible peer. */
int qgmd__exchange_alloc_recv(qgmd_exchange_t *x, size_t bytes);
/* Adds bytes sent to peer `to` to the run's counts. */
void qgmd__exchange_count(qgmd_exchange_t *x, int to, double bytes,
                          int in_place);

/* A message of the round to the graph's peers, and the room a peer's
 * needs (a compressor's messages can be shorter than the longest their
 * format takes). */
typedef struct qgmd_message {
  const void *data;
  int count, room;
  MPI_Datatype type;
  double bytes;
  float *const *each; /* RelaySum: send peer j's own message, else NULL */
} qgmd_message_t;
/* n floats of v. */
qgmd_message_t qgmd__exchange_floats(const float *v, size_t n);

/* The neighbours' phase (exchange_neighbours.c): posts m to the round's
 * send peers (RelaySum: m->each[j] to send peer j) and receives theirs.
 * Returns the number of requests. */
int qgmd__exchange_post_peers(qgmd_exchange_t *x, const qgmd_message_t *m);
/* The neighbours' gossip average, base or send + sum_j W_ij (m_j - send). */
void qgmd__exchange_mix_peers(qgmd_exchange_t *x, float *mix,
                              const float *base);

/* The hierarchical phases (exchange_hosts.c) for CHOCO's compressed
 * variant too: `message` encodes the slice of the host's mean that goes
 * between hosts, `mix_hosts` mixes it (`mean`) with the neighbouring
 * hosts'. */
typedef struct qgmd_hosts_codec {
  qgmd_message_t (*message)(qgmd_exchange_t *x, const float *v, size_t n);
  /* Posts m between hosts for this node's slot; NULL: to and from slot
   * `slot` of the host graph's neighbours of the round. */
  int (*post)(qgmd_exchange_t *x, const qgmd_message_t *m, int slot);
  void (*mix_hosts)(qgmd_exchange_t *x, float *out, const float *mean);
} qgmd_hosts_codec_t;
int qgmd__hosts_init(qgmd_exchange_t *x, size_t recv_bytes);
int qgmd__hosts_start(qgmd_exchange_t *x);
int qgmd__hosts_advance(qgmd_exchange_t *x, const qgmd_hosts_codec_t *c);
/* The host's mixed vector, applied to base as the neighbours' mix is. */
void qgmd__hosts_mix(qgmd_exchange_t *x, float *mix, const float *base);
/* The floats of a plain message between hosts: a slice (and one float of
 * room: a slice may be one float longer than this node's). */
size_t qgmd__hosts_recv_bytes(const qgmd_exchange_t *x);
void qgmd__hosts_free(qgmd_exchange_t *x);

/* Messages read in place (exchange_shared.c). */
/* Whether peer's messages to this node, and this node's to peer (the
 * graph is symmetric), are read in place; peer is one of the exchange's. */
int qgmd__exchange_in_place(const qgmd_exchange_t *x, int peer);
/* Peer j's slot `which` (own_slot's meaning), or NULL where peer j is on
 * another host or nothing is shared. */
const float *qgmd__exchange_peer_slot(const qgmd_exchange_t *x, int j,
                                      int which);
/* Whether the static graph sends every node's messages to the nodes it
 * receives from: what reading in place needs. The same on every rank. */
int qgmd__exchange_symmetric(const qgm_topology_t *t);
/* Orders this node's stores to its slots before what it sends next, and
 * returns what the in-place peers are sent: one uint64_t, the round's
 * number. */
const void *qgmd__exchange_announce(qgmd_exchange_t *x);
/* The same, after writing the round's message into its slot (unless the
 * local step wrote it there). */
const void *qgmd__exchange_publish(qgmd_exchange_t *x);
/* After the in-place peers' numbers arrived: orders the loads from their
 * slots after them, and checks that the numbers are the round's. */
void qgmd__exchange_acquire(qgmd_exchange_t *x);
/* After the round's requests completed: the messages to mix, peer j's at
 * [j], in place or received. */
const float *const *qgmd__exchange_messages(qgmd_exchange_t *x);
void qgmd__exchange_shared_free(qgmd_exchange_t *x);

#endif /* QGMD_EXCHANGE_KIND_H */
