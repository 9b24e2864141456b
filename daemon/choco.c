/* choco.c - see choco.h. */
#include "choco.h"

#include <stdlib.h>

#include "log.h"
#include "node.h"

struct qgmd_choco {
  qgm_choco_t *state;
  uint8_t *msg;   /* the node's message in flight */
  uint64_t round; /* of the exchange in flight */
};

int qgmd_choco_init(qgmd_node_t *node, char *err, size_t errlen) {
  const qgmd_config_t *cfg = node->rank.cfg;
  qgm_choco_config_t cc = {.dim = qgm_optim_dim(node->optim),
                           .node = node->rank.id,
                           .seed = (uint64_t)cfg->seed,
                           .gamma = cfg->consensus_lr};
  qgm_compress_parse(cfg->compress, &cc.compress); /* checked at start-up */
  if (cc.compress.kind == QGM_COMPRESS_NONE)
    return 0;
  const char *why =
      qgm_choco_refuses(qgm_optim_algorithm(node->optim), node->topology);
  if (why) {
    snprintf(err, errlen, "--compress=%s: not on --topology=%s (%s)",
             cfg->compress, cfg->topology, why);
    return 2;
  }
  /* A static graph: the peers of round 0 are those of every round. */
  const int most = qgm_topology_max_degree(node->topology);
  const size_t k = most > 0 ? (size_t)most : 1;
  int *peers = malloc(k * sizeof *peers);
  double *weights = malloc(k * sizeof *weights), self;
  qgmd_choco_t *c = peers && weights ? calloc(1, sizeof *c) : NULL;
  if (c)
    cc.peers = qgm_topology_neighbors(node->topology, node->rank.id, 0, peers,
                                      weights, &self);
  free(peers);
  free(weights);
  int rc = c ? qgm_choco_create(&cc, &c->state) : QGM_ENOMEM;
  node->choco = c;
  if (rc == 0 && !(c->msg = malloc(qgm_choco_message_bytes(c->state))))
    rc = QGM_ENOMEM;
  if (rc != 0) {
    snprintf(err, errlen, "setting up --compress: %s", qgm_strerror(rc));
    return 1;
  }
  qgm_choco_reset(c->state, qgm_optim_params(node->optim));
  return 0;
}

size_t qgmd_choco_message_bytes(const qgmd_choco_t *c) {
  return qgm_choco_message_bytes(c->state);
}

void qgmd_choco_free(qgmd_choco_t *c) {
  if (!c)
    return;
  qgm_choco_free(c->state);
  free(c->msg);
  free(c);
}

int qgmd_choco_start(qgmd_choco_t *c, qgmd_gossip_t *g, uint64_t round,
                     const float *v) {
  c->round = round;
  qgm_choco_send(c->state, round, v, c->msg); /* cannot fail: sizes match */
  return qgmd_gossip_start(g, round, c->msg);
}

void qgmd_choco_mix(qgmd_choco_t *c, qgmd_gossip_t *g, float *mix,
                    const float *base) {
  for (int j = 0; j < g->degree; j++)
    if (qgm_choco_receive(c->state, j, g->peers[j], c->round,
                          (const uint8_t *)g->recv[j]) != 0) {
      LOG(LOG_ERROR, "a compressed message from rank %d is malformed",
          g->peers[j]);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  qgm_choco_mix(c->state, mix, base, g->weights);
}

float *qgmd_choco_copies(qgmd_choco_t *c, size_t *len) {
  return qgm_choco_copies(c->state, len);
}
