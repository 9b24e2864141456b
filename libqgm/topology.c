/* topology.c - communication graphs and their mixing weights W. */
#include <stdlib.h>
#include <string.h>

#include "qgm.h"

struct qgm_topology {
  int nodes;
  int max_degree;
};

int qgm_topology_ring(int nodes, qgm_topology_t **out) {
  if (!out || nodes < 1)
    return QGM_EINVAL;
  qgm_topology_t *t = calloc(1, sizeof *t);
  if (!t)
    return QGM_ENOMEM;
  t->nodes = nodes;
  t->max_degree = nodes >= 3 ? 2 : nodes - 1;
  *out = t;
  return 0;
}

void qgm_topology_free(qgm_topology_t *t) { free(t); }

int qgm_topology_nodes(const qgm_topology_t *t) { return t->nodes; }

int qgm_topology_max_degree(const qgm_topology_t *t) { return t->max_degree; }

int qgm_topology_neighbors(const qgm_topology_t *t, int node, uint64_t round,
                           int *peers, double *weights, double *self_weight) {
  (void)round; /* the ring does not change with time */
  const int n = t->nodes;
  if (node < 0 || node >= n)
    return QGM_EINVAL;
  const int k = t->max_degree;
  const double w = 1.0 / (k + 1);
  if (k >= 1) {
    peers[0] = (node + n - 1) % n;
    weights[0] = w;
  }
  if (k >= 2) {
    peers[1] = (node + 1) % n;
    weights[1] = w;
  }
  *self_weight = w;
  return k;
}

int qgm_topology_create(const char *name, int nodes, qgm_topology_t **out) {
  if (!name || !out)
    return QGM_EINVAL;
  if (strcmp(name, "ring") == 0)
    return qgm_topology_ring(nodes, out);
  return QGM_EINVAL;
}

const char *qgm_topology_names(void) { return "ring"; }
