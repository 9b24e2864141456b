/* choco.h - the compressed exchange of --compress: CHOCO-gossip's state and
 * arithmetic are libqgm's (qgm_choco_*); this moves its messages, packed
 * into bytes, through the node's gossip (one MPI_BYTE message per peer, of
 * the exact length the format gives), so that the wire bytes are counted
 * where every exchange's are. */
#ifndef QGMD_CHOCO_H
#define QGMD_CHOCO_H

#include <stddef.h>
#include <stdint.h>

#include "gossip.h"
#include "qgm.h"

struct qgmd_node;
typedef struct qgmd_choco qgmd_choco_t;

/* With --compress other than none: refuses a combination CHOCO cannot run
 * (exit status 2 and one line in err) and builds the state with every copy
 * at the shared initial model (call after the model is initialised);
 * node->choco stays NULL for none. The exchange for its packed messages is
 * the node's to build (qgmd_choco_message_bytes). Returns an exit
 * status. */
int qgmd_choco_init(struct qgmd_node *node, char *err, size_t errlen);
/* The bytes of one packed message: what the exchange carries. */
size_t qgmd_choco_message_bytes(const qgmd_choco_t *c);
void qgmd_choco_free(qgmd_choco_t *c);

/* Encodes q = C(v - xhat_i) for round, applies it to the node's own copy
 * and posts its exchange; returns the number of requests, as
 * qgmd_gossip_start. */
int qgmd_choco_start(qgmd_choco_t *c, qgmd_gossip_t *g, uint64_t round,
                     const float *v);

/* After the exchange: every peer's message updates its copy, then
 * mix = base + gamma sum_j W_ij (xhat_j - xhat_i). */
void qgmd_choco_mix(qgmd_choco_t *c, qgmd_gossip_t *g, float *mix,
                    const float *base);

/* The copies, for checkpoints: (1 + peers) x dim floats. */
float *qgmd_choco_copies(qgmd_choco_t *c, size_t *len);

#endif /* QGMD_CHOCO_H */
