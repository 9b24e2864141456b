/* relay.c - see relay.h. */
#include "relay.h"

#include <string.h>

#include "node.h"

int qgmd_relay_init(qgmd_node_t *node, char *err, size_t errlen) {
  if (qgm_optim_combine(node->optim) != QGM_COMBINE_RELAY)
    return 0;
  /* qgmd_make_topology refused a graph that is no tree. */
  int rc = qgm_relay_create(node->topology, node->rank.id,
                            qgm_optim_dim(node->optim),
                            qgm_optim_params(node->optim), &node->relay);
  if (rc != 0) {
    snprintf(err, errlen, "setting up RelaySum: %s", qgm_strerror(rc));
    return 1;
  }
  return 0;
}

/* A static tree: the peers a node sends to are those it receives from, in
 * the same order, which is the order of the relay's peers. */
int qgmd_relay_start(qgm_relay_t *r, qgmd_gossip_t *g, uint64_t round,
                     const float *h) {
  const int k = qgmd_gossip_send_peers(g, round);
  for (int j = 0; j < k; j++)
    qgm_relay_message(r, j, h, g->outbox[j]);
  return qgmd_gossip_start(g, round, NULL);
}

void qgmd_relay_mix(qgm_relay_t *r, qgmd_gossip_t *g, const float *h,
                    float *mix) {
  for (int j = 0; j < g->degree; j++)
    memcpy(qgm_relay_inbox(r, j), g->recv[j], g->len * sizeof(float));
  qgm_relay_mix(r, h, mix);
}
