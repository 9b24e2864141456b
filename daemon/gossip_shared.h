/* gossip_shared.h - what gossip.c asks of gossip_shared.c, the messages
 * read in place between peers of one host (qgmd_gossip_share_host). */
#ifndef QGMD_GOSSIP_SHARED_H
#define QGMD_GOSSIP_SHARED_H

#include "gossip.h"

/* Whether peer's messages to this node, and this node's to peer (the
 * graph is symmetric), are read in place; peer is one of the round's. */
int qgmd__gossip_in_place(const qgmd_gossip_t *g, int peer);
/* Writes the round's message into this node's slot (unless it is there
 * already) and returns what the in-place peers are sent instead of it:
 * one uint64_t, the round's number. */
const void *qgmd__gossip_publish(qgmd_gossip_t *g);
/* After the round's requests completed: the messages to mix, peer j's at
 * [j], in place or received. */
const float *const *qgmd__gossip_messages(qgmd_gossip_t *g);
void qgmd__gossip_shared_free(qgmd_gossip_t *g);

#endif /* QGMD_GOSSIP_SHARED_H */
