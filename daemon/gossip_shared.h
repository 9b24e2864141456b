/* gossip_shared.h - what gossip.c asks of gossip_shared.c, the messages
 * read in place between peers of one host (qgmd_gossip_share_host), and
 * of gossip_global.c, the mean over all nodes. */
#ifndef QGMD_GOSSIP_SHARED_H
#define QGMD_GOSSIP_SHARED_H

#include "gossip.h"

/* Adds bytes sent to peer `to` to the run's counts (gossip.c). */
void qgmd__gossip_count(qgmd_gossip_t *g, int to, double bytes,
                        int in_place);
/* Whether peer's messages to this node, and this node's to peer (the
 * graph is symmetric), are read in place; peer is one of the exchange's. */
int qgmd__gossip_in_place(const qgmd_gossip_t *g, int peer);
/* Peer j's slot `which` (own_slot's meaning), or NULL where peer j is on
 * another host or nothing is shared. */
const float *qgmd__gossip_peer_slot(const qgmd_gossip_t *g, int j,
                                    int which);
/* Orders this node's stores to its slots before what it sends next, and
 * returns what the in-place peers are sent: one uint64_t, the round's
 * number. */
const void *qgmd__gossip_announce(qgmd_gossip_t *g);
/* The same, after writing the round's message into its slot (unless the
 * local step wrote it there). */
const void *qgmd__gossip_publish(qgmd_gossip_t *g);
/* After the in-place peers' numbers arrived: orders the loads from their
 * slots after them, and checks that the numbers are the round's. */
void qgmd__gossip_acquire(qgmd_gossip_t *g);
/* After the round's requests completed: the messages to mix, peer j's at
 * [j], in place or received. */
const float *const *qgmd__gossip_messages(qgmd_gossip_t *g);
void qgmd__gossip_shared_free(qgmd_gossip_t *g);

/* The global mean (gossip_global.c): its peers and buffers, then the two
 * phases, each posted (returning the number of requests) and finished. */
int qgmd__global_init(qgmd_gossip_t *g);
int qgmd__global_post_slices(qgmd_gossip_t *g);
void qgmd__global_reduce(qgmd_gossip_t *g);
int qgmd__global_post_sums(qgmd_gossip_t *g);
void qgmd__global_assemble(qgmd_gossip_t *g);

#endif /* QGMD_GOSSIP_SHARED_H */
