/* exchange_plan_powergossip.c - PowerGossip's shared half (exchange_plan.h,
 * qgm_powergossip_* in libqgm): a node's warm starts, one checkpoint
 * section per edge, and the in-process form. Gossip with
 * --compress=powersgd:R on a static flat graph. */
#include <stdio.h>
#include <stdlib.h>

#include "exchange_plan.h"

static int create(const qgmd_exchange_plan_t *p, int node, const float *x0,
                  void **state) {
  (void)x0;
  const qgm_topology_t *t = p->topology;
  const int most = qgm_topology_max_degree(t) > 0 ? qgm_topology_max_degree(t)
                                                  : 1;
  int *peers = malloc((size_t)most * sizeof *peers);
  double *weights = malloc((size_t)most * sizeof *weights), self;
  int rc = peers && weights ? 0 : QGM_ENOMEM;
  int degree = 0;
  if (rc == 0) /* static: qgm_choco_refuses refused the others */
    degree = qgm_topology_neighbors(t, node, 0, peers, weights, &self);
  free(peers);
  free(weights);
  const qgm_compress_spec_t *c = &p->choco.compress;
  qgm_powergossip_t *g = NULL;
  if (rc == 0)
    rc = qgm_powergossip_create(p->len, c->rank, c->matrices, c->nmatrices,
                                degree, p->choco.gamma, &g);
  *state = g;
  return rc;
}

static void destroy(void *state) { qgm_powergossip_free(state); }

/* Peer count is not kept apart: the sections stop at the first peer the
 * state does not have. */
static int section(void *state, int i, char *name, float **data,
                   size_t *len) {
  qgm_powergossip_t *g = state;
  if (i >= qgm_powergossip_peers(g))
    return 0;
  snprintf(name, QGMD_SECTION_NAME_MAX, "powergossip.warm.%d", i);
  *data = qgm_powergossip_warm(g, i, len);
  return 1;
}

static int simulate(const qgmd_exchange_plan_t *p, uint64_t round,
                    void *const *states, const float *const *msgs,
                    float *const *mixes) {
  const int n = qgm_topology_nodes(p->topology);
  qgm_powergossip_t *g[n];
  for (int i = 0; i < n; i++)
    g[i] = states[i];
  return qgm_powergossip_exchange(p->topology, round, g, msgs, mixes);
}

const qgmd_exchange_def_t qgmd_exchange_def_powergossip = {
    "powergossip", create, destroy, section, simulate};
