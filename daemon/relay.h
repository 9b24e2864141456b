/* relay.h - RelaySGD's exchange in the daemon: RelaySum's state and
 * arithmetic are libqgm's (qgm_relay_*); this gives every neighbour its
 * own message through the node's gossip outboxes and mixes what comes
 * back. */
#ifndef QGMD_RELAY_H
#define QGMD_RELAY_H

#include <stddef.h>
#include <stdint.h>

#include "gossip.h"
#include "qgm.h"

struct qgmd_node;

/* For an optimizer that combines by RelaySum: builds the state from the
 * shared initial model (call after the model is initialised); node->relay
 * stays NULL for every other optimizer. Its exchange, with one outbox per
 * peer, is the node's to build. Returns an exit status. */
int qgmd_relay_init(struct qgmd_node *node, char *err, size_t errlen);

/* Writes the round's message to every peer and posts the exchange; returns
 * the number of requests, as qgmd_gossip_start. */
int qgmd_relay_start(qgm_relay_t *r, qgmd_gossip_t *g, uint64_t round,
                     const float *h);

/* After the exchange: mix = RelaySum's average of h and the messages. */
void qgmd_relay_mix(qgm_relay_t *r, qgmd_gossip_t *g, const float *h,
                    float *mix);

#endif /* QGMD_RELAY_H */
