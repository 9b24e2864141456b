/* topology_graphs.c - the built-in graphs: each builder lists its edges and
 * qgm__topology_from_edges turns them into a validated W. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "graph/topology.h"

/* The Davis Southern Women edge list (topologies/davis-southern-women.edges),
 * embedded at build time so that "social" works from any directory. */
static const char social_edges[] =
#include "social_edges.inc"
    ;
#define SOCIAL_NODES 32

/* A growable edge list; builders add a-b in any order and repeat freely. */
typedef struct edge_list {
  qgm__edge_t *e;
  size_t count, cap;
  int failed;
} edge_list_t;

static void add(edge_list_t *l, int a, int b) {
  if (a == b || l->failed)
    return;
  if (l->count == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    qgm__edge_t *bigger = realloc(l->e, cap * sizeof *bigger);
    if (!bigger) {
      l->failed = 1;
      return;
    }
    l->e = bigger;
    l->cap = cap;
  }
  l->e[l->count++] = (qgm__edge_t){a < b ? a : b, a < b ? b : a, 0.0, 0};
}

/* The edge builders of the graphs table below: each adds its edges to l,
 * or fails with a reason. */
static int ring(const qgm_topology_spec_t *spec, edge_list_t *l,
                qgm_topology_error_t *error) {
  (void)error;
  for (int i = 0; i < spec->nodes; i++)
    add(l, i, (i + 1) % spec->nodes);
  return 0;
}

/* rows x cols grid with wrap-around; node = row * cols + col. */
static void torus_edges(edge_list_t *l, int rows, int cols) {
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) {
      add(l, r * cols + c, r * cols + (c + 1) % cols);
      add(l, r * cols + c, ((r + 1) % rows) * cols + c);
    }
}

static int complete(const qgm_topology_spec_t *spec, edge_list_t *l,
                    qgm_topology_error_t *error) {
  (void)error;
  for (int i = 0; i < spec->nodes; i++)
    for (int j = i + 1; j < spec->nodes; j++)
      add(l, i, j);
  return 0;
}

static int star(const qgm_topology_spec_t *spec, edge_list_t *l,
                qgm_topology_error_t *error) {
  (void)error;
  for (int i = 1; i < spec->nodes; i++)
    add(l, 0, i);
  return 0;
}

/* Static exponential graph, undirected: i is linked to i +- 2^k. */
static int exponential(const qgm_topology_spec_t *spec, edge_list_t *l,
                       qgm_topology_error_t *error) {
  (void)error;
  const int n = spec->nodes;
  for (long hop = 1; hop < n; hop *= 2)
    for (int i = 0; i < n; i++)
      add(l, i, (int)((i + hop) % n));
  return 0;
}

/* A tree in heap order: node i > 0 hangs from node (i - 1) / arity. Arity
 * 1 is the chain 0 - 1 - ... - (n-1). */
static void tree_edges(edge_list_t *l, int n, int arity) {
  for (int i = 1; i < n; i++)
    add(l, (i - 1) / arity, i);
}

/* The most square factorisation rows x cols = n with rows <= cols. */
static void square_factors(int n, int *rows, int *cols) {
  int r = 1;
  for (int d = 1; (long)d * d <= n; d++)
    if (n % d == 0)
      r = d;
  *rows = r;
  *cols = n / r;
}

/* ceil(log2 n), and 1 for n <= 2: the one-peer graph's period. */
static int log2_ceil(int n) {
  int k = 0;
  while ((1L << k) < n)
    k++;
  return k ? k : 1;
}

static int one_peer_exp(int n, qgm_topology_t **out,
                        qgm_topology_error_t *error) {
  if (n > (1 << 30))
    return qgm__topology_fail(error, QGM_ENODES, 0, "one-peer-exp: too many "
                             "nodes (%d)", n);
  qgm_topology_t *t = calloc(1, sizeof *t);
  if (!t)
    return QGM_ENOMEM;
  t->nodes = n;
  t->one_peer = 1;
  t->period = log2_ceil(n);
  t->max_degree = n > 1 ? 1 : 0;
  t->mixing = QGM_MIXING_UNIFORM; /* 1/2 with the one peer of the round */
  int rc = qgm__topology_validate(t, NULL, 0, error);
  if (rc != 0) {
    qgm_topology_free(t);
    return rc;
  }
  *out = t;
  return 0;
}

/* The graphs by name: the only list of them. A graph is either an edge
 * list (edges, made into W by qgm__topology_from_edges with the mixing rule
 * `regular` unless the spec names one) or built whole (build). */
typedef struct graph_kind {
  const char *name;
  int (*edges)(const qgm_topology_spec_t *spec, edge_list_t *l,
               qgm_topology_error_t *error);
  int (*build)(const qgm_topology_spec_t *spec, qgm_topology_t **out,
               qgm_topology_error_t *error);
  qgm_mixing_t regular; /* uniform where both rules agree */
} graph_kind_t;

static int torus(const qgm_topology_spec_t *spec, edge_list_t *l,
                 qgm_topology_error_t *error) {
  const int n = spec->nodes;
  int rows = spec->torus_rows, cols = spec->torus_cols;
  if (rows == 0 && cols == 0)
    square_factors(n, &rows, &cols);
  if (rows < 1 || cols < 1 || (long)rows * cols != n)
    return qgm__topology_fail(error, QGM_ENODES, 0,
                             "a %dx%d torus has %ld nodes, not %d", rows,
                             cols, (long)rows * cols, n);
  torus_edges(l, rows, cols);
  return 0;
}

static int chain(const qgm_topology_spec_t *spec, edge_list_t *l,
                 qgm_topology_error_t *error) {
  (void)error;
  tree_edges(l, spec->nodes, 1);
  return 0;
}

static int tree(const qgm_topology_spec_t *spec, edge_list_t *l,
                qgm_topology_error_t *error) {
  const int arity = spec->tree_arity ? spec->tree_arity : 2;
  if (arity < 1)
    return qgm__topology_fail(error, QGM_EINVAL, 0,
                             "a tree needs at least 1 child per node, not %d",
                             arity);
  tree_edges(l, spec->nodes, arity);
  return 0;
}

static int social(const qgm_topology_spec_t *spec, qgm_topology_t **out,
                  qgm_topology_error_t *error) {
  if (spec->nodes != SOCIAL_NODES)
    return qgm__topology_fail(error, QGM_ENODES, 0,
                             "topology social is the 32-node Davis Southern "
                             "Women graph: it needs 32 nodes, not %d",
                             spec->nodes);
  return qgm__topology_parse_edges(social_edges, "social", spec->nodes,
                                  spec->mixing, out, error);
}

static int one_peer(const qgm_topology_spec_t *spec, qgm_topology_t **out,
                    qgm_topology_error_t *error) {
  return one_peer_exp(spec->nodes, out, error);
}

static const graph_kind_t graphs[] = {
    {"ring", ring, NULL, QGM_MIXING_UNIFORM},
    {"torus", torus, NULL, QGM_MIXING_UNIFORM},
    {"social", NULL, social, QGM_MIXING_DEFAULT},
    {"complete", complete, NULL, QGM_MIXING_UNIFORM},
    {"star", star, NULL, QGM_MIXING_METROPOLIS},
    {"exp", exponential, NULL, QGM_MIXING_UNIFORM},
    {"one-peer-exp", NULL, one_peer, QGM_MIXING_DEFAULT},
    {"chain", chain, NULL, QGM_MIXING_METROPOLIS},
    {"tree", tree, NULL, QGM_MIXING_METROPOLIS},
};
#define NUM_GRAPHS (sizeof graphs / sizeof graphs[0])

static const char *graph_name(size_t i) { return graphs[i].name; }

const char *qgm_topology_graph_names(void) {
  static char names[256];
  return names[0] ? names
                  : qgm__join_names(names, sizeof names, NUM_GRAPHS,
                                   graph_name);
}

const char *qgm_topology_names(void) {
  static char names[320];
  if (!names[0])
    snprintf(names, sizeof names, "%s, hier, file:PATH",
             qgm_topology_graph_names());
  return names;
}

int qgm__topology_build_named(const qgm_topology_spec_t *spec,
                             qgm_topology_t **out,
                             qgm_topology_error_t *error) {
  const graph_kind_t *g = NULL;
  for (size_t i = 0; i < NUM_GRAPHS && !g; i++)
    if (strcmp(spec->name, graphs[i].name) == 0)
      g = &graphs[i];
  if (!g)
    return qgm__topology_fail(error, QGM_EINVAL, 0,
                             "unknown topology '%s' (known: %s)", spec->name,
                             qgm_topology_names());
  if (g->build)
    return g->build(spec, out, error);
  if (spec->nodes > 65536) /* complete and exp: n^2 or n log n edges */
    return qgm__topology_fail(error, QGM_ENODES, 0,
                             "at most 65536 nodes, not %d", spec->nodes);
  edge_list_t l = {0};
  int rc = g->edges(spec, &l, error);
  if (rc == 0)
    rc = l.failed ? QGM_ENOMEM
                  : qgm__topology_from_edges(
                        spec->nodes, l.e, l.count,
                        spec->mixing == QGM_MIXING_DEFAULT ? g->regular
                                                           : spec->mixing,
                        out, error);
  free(l.e);
  return rc;
}
