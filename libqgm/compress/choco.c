/* choco.c - CHOCO-gossip (Koloskova, Stich, Jaggi, ICML 2019): one node's
 * public copies and the arithmetic of a compressed exchange. The transport
 * moves the bytes; everything that decides what they mean is here, so the
 * daemon and the simulator cannot disagree. docs/ALGORITHMS.md gives the
 * rule. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "qgm.h"

struct qgm_choco {
  qgm_choco_config_t cfg;
  qgm_compress_t *op;
  float *copies;        /* (1 + peers) x dim: own public copy, then peers' */
  const float **others; /* the peers' copies, for the mix */
  double *scaled;       /* gamma * W_ij */
};

const char *qgm_choco_refuses(qgm_algorithm_t alg, const qgm_topology_t *t) {
  if (alg == QGM_ALG_ALLREDUCE)
    return "allreduce averages gradients over all nodes; it does not gossip";
  if (alg == QGM_ALG_D2)
    return "D^2 feeds every step's consensus move back through its "
           "correction e, and with copies that lag the models it diverged "
           "on the heterogeneous least-squares problem (docs/ALGORITHMS.md)";
  if (alg == QGM_ALG_RELAYSGD)
    return "RelaySGD relays exact sums; compressing them needs public "
           "copies of every relayed sum, which are not built";
  if (alg == QGM_ALG_GT)
    return "gradient tracking gossips [x, y]: compressing its tracker needs "
           "public copies of y with their own scale, which are not built";
  if (alg == QGM_ALG_GUT || alg == QGM_ALG_QG_GUTM)
    return "GUT feeds every step's consensus move back through its "
           "correction e, divided by lr, as D^2 does (which diverged with "
           "lagging copies); with compressed copies it is not measured";
  if (alg == QGM_ALG_MT)
    return "Momentum Tracking gossips [x, v]: compressing its tracker needs "
           "public copies of v with their own scale, which are not built";
  if (qgm_algorithm_combine(alg) == QGM_COMBINE_PUSH_SUM)
    return "push-sum gossips [w z, w]: its public copies would need the "
           "weight's own scale, which is not built";
  if (t && qgm_topology_period(t) > 1)
    return "the graph changes every round, and a public copy stays exact "
           "only if its holder receives every one of the owner's messages";
  return NULL;
}

int qgm_choco_create(const qgm_choco_config_t *cfg, qgm_choco_t **out) {
  if (!cfg || !out || cfg->peers < 0 || cfg->dim == 0 ||
      !(cfg->gamma > 0.0 && cfg->gamma <= 1.0))
    return QGM_EINVAL;
  qgm_choco_t *c = calloc(1, sizeof *c);
  if (!c)
    return QGM_ENOMEM;
  c->cfg = *cfg;
  int rc = qgm_compress_create(&cfg->compress, cfg->dim, &c->op);
  const size_t k = (size_t)cfg->peers, len = (1 + k) * cfg->dim;
  if (rc == 0 && (!(c->copies = qgm_alloc_floats(len)) ||
                  !(c->others = calloc(k + 1, sizeof *c->others)) ||
                  !(c->scaled = calloc(k + 1, sizeof *c->scaled))))
    rc = QGM_ENOMEM;
  if (rc != 0) {
    qgm_choco_free(c);
    return rc;
  }
  memset(c->copies, 0, len * sizeof *c->copies);
  for (size_t j = 0; j < k; j++)
    c->others[j] = c->copies + (1 + j) * cfg->dim;
  *out = c;
  return 0;
}

int qgm_choco_create_node(const qgm_topology_t *t, int node, size_t len,
                          qgm_choco_config_t cc, const float *x0,
                          qgm_choco_t **out) {
  const int hier = qgm_topology_hosts(t) > 0;
  const qgm_topology_t *graph = hier ? qgm_topology_host_graph(t) : t;
  size_t at = 0;
  cc.dim = len;
  if (hier)
    qgm_host_slice(len, qgm_topology_per_host(t),
                   qgm_topology_host_slot(t, node), &at, &cc.dim);
  cc.node = node; /* the seed of its messages' draws */
  const int most = qgm_topology_max_degree(graph) > 0
                       ? qgm_topology_max_degree(graph)
                       : 1;
  int *peers = malloc((size_t)most * sizeof *peers);
  double *weights = malloc((size_t)most * sizeof *weights), self;
  int rc = peers && weights ? 0 : QGM_ENOMEM;
  /* A static graph: the peers of round 0 are those of every round. */
  if (rc == 0)
    cc.peers = qgm_topology_neighbors(
        graph, hier ? qgm_topology_host_of(t, node) : node, 0, peers,
        weights, &self);
  free(peers);
  free(weights);
  if (rc == 0)
    rc = qgm_choco_create(&cc, out);
  if (rc == 0)
    qgm_choco_reset(*out, x0 + at);
  return rc;
}

void qgm_choco_free(qgm_choco_t *c) {
  if (!c)
    return;
  qgm_compress_free(c->op);
  free(c->copies);
  free(c->others);
  free(c->scaled);
  free(c);
}

size_t qgm_choco_message_bytes(const qgm_choco_t *c) {
  return qgm_compress_bytes(c->op);
}

float *qgm_choco_copies(qgm_choco_t *c, size_t *len) {
  *len = (1 + (size_t)c->cfg.peers) * c->cfg.dim;
  return c->copies;
}

void qgm_choco_reset(qgm_choco_t *c, const float *x0) {
  for (int j = 0; j <= c->cfg.peers; j++)
    qgm_vec_copy(c->copies + (size_t)j * c->cfg.dim, x0, c->cfg.dim);
}

/* The draws of node's message of round (rand-k's positions, QSGD's
 * rounding): a function of the seed, the sender and the round only, so
 * that every holder of the copy draws the same positions and a resumed
 * run the same roundings, with no generator state to carry. */
static void message_rng(const qgm_choco_t *c, int node, uint64_t round,
                        qgm_rng_t *rng) {
  const uint64_t who = (uint64_t)node;
  qgm_rng_seed(rng, qgm_hash64(&who, sizeof who, c->cfg.seed), round);
}

int qgm_choco_send(qgm_choco_t *c, uint64_t round, const float *v,
                   uint8_t *msg, size_t *bytes) {
  qgm_rng_t rng;
  message_rng(c, c->cfg.node, round, &rng);
  int rc = qgm_compress_encode(c->op, v, c->copies, &rng, msg, bytes);
  if (rc != 0)
    return rc;
  /* The node's own copy takes the message as every holder does: decoded
   * from the same bytes, so all copies of it stay equal bit for bit. */
  message_rng(c, c->cfg.node, round, &rng);
  return qgm_compress_apply(c->op, msg, &rng, c->copies);
}

int qgm_choco_receive(qgm_choco_t *c, int copy, int from, uint64_t round,
                      const uint8_t *msg) {
  if (copy < 0 || copy >= c->cfg.peers)
    return QGM_EINVAL;
  qgm_rng_t rng;
  message_rng(c, from, round, &rng);
  return qgm_compress_apply(c->op, msg, &rng,
                            c->copies + (1 + (size_t)copy) * c->cfg.dim);
}

void qgm_choco_mix(qgm_choco_t *c, float *mix, const float *base,
                   const double *weights) {
  for (int j = 0; j < c->cfg.peers; j++)
    c->scaled[j] = c->cfg.gamma * weights[j];
  qgm_vec_gossip_mix(mix, base, c->copies, c->cfg.peers, c->others,
                     c->scaled, c->cfg.dim);
}
