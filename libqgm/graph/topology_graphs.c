/* topology_graphs.c - the built-in graphs: each builder lists its edges and
 * qgm_topology_from_edges turns them into a validated W. */
#include <stdlib.h>
#include <string.h>

#include "graph/topology.h"

/* The Davis Southern Women edge list (topologies/davis-southern-women.edges),
 * embedded at build time so that "social" works from any directory. */
static const char social_edges[] =
#include "social_edges.inc"
    ;
#define SOCIAL_NODES 32

/* A growable edge list; builders add a-b in any order and repeat freely. */
typedef struct edge_list {
  qgm_edge_t *e;
  size_t count, cap;
  int failed;
} edge_list_t;

static void add(edge_list_t *l, int a, int b) {
  if (a == b || l->failed)
    return;
  if (l->count == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 64;
    qgm_edge_t *bigger = realloc(l->e, cap * sizeof *bigger);
    if (!bigger) {
      l->failed = 1;
      return;
    }
    l->e = bigger;
    l->cap = cap;
  }
  l->e[l->count++] = (qgm_edge_t){a < b ? a : b, a < b ? b : a, 0.0, 0};
}

static void ring_edges(edge_list_t *l, int n) {
  for (int i = 0; i < n; i++)
    add(l, i, (i + 1) % n);
}

/* rows x cols grid with wrap-around; node = row * cols + col. */
static void torus_edges(edge_list_t *l, int rows, int cols) {
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) {
      add(l, r * cols + c, r * cols + (c + 1) % cols);
      add(l, r * cols + c, ((r + 1) % rows) * cols + c);
    }
}

static void complete_edges(edge_list_t *l, int n) {
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      add(l, i, j);
}

static void star_edges(edge_list_t *l, int n) {
  for (int i = 1; i < n; i++)
    add(l, 0, i);
}

/* Static exponential graph, undirected: i is linked to i +- 2^k. */
static void exp_edges(edge_list_t *l, int n) {
  for (long hop = 1; hop < n; hop *= 2)
    for (int i = 0; i < n; i++)
      add(l, i, (int)((i + hop) % n));
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
    return qgm_topology_fail(error, QGM_ENODES, 0, "one-peer-exp: too many "
                             "nodes (%d)", n);
  qgm_topology_t *t = calloc(1, sizeof *t);
  if (!t)
    return QGM_ENOMEM;
  t->nodes = n;
  t->one_peer = 1;
  t->period = log2_ceil(n);
  t->max_degree = n > 1 ? 1 : 0;
  t->mixing = QGM_MIXING_UNIFORM; /* 1/2 with the one peer of the round */
  int rc = qgm_topology_validate(t, NULL, 0, error);
  if (rc != 0) {
    qgm_topology_free(t);
    return rc;
  }
  *out = t;
  return 0;
}

const char *qgm_topology_names(void) {
  return "ring, torus, social, complete, star, exp, one-peer-exp, hier, "
         "file:PATH";
}

int qgm_topology_build_named(const qgm_topology_spec_t *spec,
                             qgm_topology_t **out,
                             qgm_topology_error_t *error) {
  const char *name = spec->name;
  const int n = spec->nodes;
  qgm_mixing_t mixing = spec->mixing;
  if (strcmp(name, "one-peer-exp") == 0)
    return one_peer_exp(n, out, error);
  if (strcmp(name, "social") == 0) {
    if (n != SOCIAL_NODES)
      return qgm_topology_fail(error, QGM_ENODES, 0,
                               "topology social is the 32-node Davis Southern "
                               "Women graph: it needs 32 nodes, not %d",
                               n);
    return qgm_topology_parse_edges(social_edges, "social", n, mixing, out,
                                    error);
  }
  if (n > 65536) /* complete and exp would allocate n^2 or n log n edges */
    return qgm_topology_fail(error, QGM_ENODES, 0,
                             "at most 65536 nodes, not %d", n);

  edge_list_t l = {0};
  qgm_mixing_t regular = QGM_MIXING_UNIFORM; /* where both rules agree */
  if (strcmp(name, "ring") == 0) {
    ring_edges(&l, n);
  } else if (strcmp(name, "torus") == 0) {
    int rows = spec->torus_rows, cols = spec->torus_cols;
    if (rows == 0 && cols == 0)
      square_factors(n, &rows, &cols);
    if (rows < 1 || cols < 1 || (long)rows * cols != n)
      return qgm_topology_fail(error, QGM_ENODES, 0,
                               "a %dx%d torus has %ld nodes, not %d", rows,
                               cols, (long)rows * cols, n);
    torus_edges(&l, rows, cols);
  } else if (strcmp(name, "complete") == 0) {
    complete_edges(&l, n);
  } else if (strcmp(name, "star") == 0) {
    star_edges(&l, n);
    regular = QGM_MIXING_METROPOLIS;
  } else if (strcmp(name, "exp") == 0) {
    exp_edges(&l, n);
  } else {
    return qgm_topology_fail(error, QGM_EINVAL, 0,
                             "unknown topology '%s' (known: %s)", name,
                             qgm_topology_names());
  }
  int rc = QGM_ENOMEM;
  if (!l.failed)
    rc = qgm_topology_from_edges(
        n, l.e, l.count, mixing == QGM_MIXING_DEFAULT ? regular : mixing, out,
        error);
  free(l.e);
  return rc;
}
