/* topology.c - the topology handle: construction from edges with a mixing
 * rule, the per-round neighbour queries the transport asks, and the checks
 * every W passes before anyone trains on it. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/topology.h"

/* Row and column sums of W are 1 up to this (sums of <= n doubles). */
#define STOCHASTIC_TOL 1e-9

int qgm__topology_fail(qgm_topology_error_t *error, int rc, int line,
                      const char *fmt, ...) {
  if (error) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error->text, sizeof error->text, fmt, ap);
    va_end(ap);
    error->line = line;
  }
  return rc;
}

int qgm_mixing_parse(const char *name, qgm_mixing_t *out) {
  static const char *const names[] = {"default", "uniform", "metropolis",
                                      "lazy"};
  for (int i = 0; i < 4; i++)
    if (name && strcmp(name, names[i]) == 0) {
      *out = (qgm_mixing_t)i;
      return 0;
    }
  return QGM_EINVAL;
}

const char *qgm_mixing_name(qgm_mixing_t mixing) {
  switch (mixing) {
  case QGM_MIXING_UNIFORM:
    return "uniform";
  case QGM_MIXING_METROPOLIS:
    return "metropolis";
  case QGM_MIXING_LAZY:
    return "lazy";
  default:
    return "default";
  }
}

int qgm_torus_parse(const char *text, int *rows, int *cols) {
  if (!text || !rows || !cols)
    return QGM_EINVAL;
  if (*text == '\0') {
    *rows = *cols = 0;
    return 0;
  }
  char *x, *end;
  long r = strtol(text, &x, 10);
  if (x == text || (*x != 'x' && *x != 'X') || x[1] < '0' || x[1] > '9')
    return QGM_EINVAL;
  long c = strtol(x + 1, &end, 10);
  if (*end != '\0' || r < 1 || c < 1 || r > 65536 || c > 65536)
    return QGM_EINVAL;
  *rows = (int)r;
  *cols = (int)c;
  return 0;
}

void qgm_topology_free(qgm_topology_t *t) {
  if (!t)
    return;
  free(t->start);
  free(t->peer);
  free(t->weight);
  free(t->self);
  free(t->host_of);
  free(t->slot_of);
  free(t->member);
  qgm_topology_free(t->host_graph);
  free(t);
}

static int edge_order(const void *pa, const void *pb) {
  const qgm__edge_t *a = pa, *b = pb;
  if (a->a != b->a)
    return a->a < b->a ? -1 : 1;
  return (a->b > b->b) - (a->b < b->b);
}

/* Both directions of every distinct edge, sorted by (from, to), so that a
 * node's peers come out in ascending order. */
static qgm__edge_t *directed_edges(const qgm__edge_t *edges, size_t m,
                                  size_t *count) {
  qgm__edge_t *d = malloc((2 * m + 1) * sizeof *d);
  if (!d)
    return NULL;
  for (size_t e = 0; e < m; e++) {
    d[2 * e] = edges[e];
    d[2 * e + 1] = edges[e];
    d[2 * e + 1].a = edges[e].b;
    d[2 * e + 1].b = edges[e].a;
  }
  qsort(d, 2 * m, sizeof *d, edge_order);
  size_t kept = 0;
  for (size_t e = 0; e < 2 * m; e++)
    if (kept == 0 || edge_order(&d[kept - 1], &d[e]) != 0)
      d[kept++] = d[e];
  *count = kept;
  return d;
}

static double rule_weight(qgm_mixing_t mixing, int max_degree, int di,
                          int dj) {
  if (mixing == QGM_MIXING_UNIFORM)
    return 1.0 / (1.0 + max_degree);
  return 1.0 / (1.0 + (di > dj ? di : dj));
}

int qgm__topology_from_edges(int nodes, const qgm__edge_t *edges, size_t m,
                            qgm_mixing_t mixing, qgm_topology_t **out,
                            qgm_topology_error_t *error) {
  if (nodes < 1 || !out)
    return QGM_EINVAL;
  for (size_t e = 0; e < m; e++)
    if (edges[e].a < 0 || edges[e].b < 0 || edges[e].a >= nodes ||
        edges[e].b >= nodes || edges[e].a == edges[e].b)
      return QGM_EINVAL; /* builders and the parser never ask for these */
  size_t count = 0;
  qgm__edge_t *d = directed_edges(edges, m, &count);
  qgm_topology_t *t = calloc(1, sizeof *t);
  if (!d || !t) {
    free(d);
    free(t);
    return QGM_ENOMEM;
  }
  t->nodes = nodes;
  t->period = 1;
  t->mixing = mixing == QGM_MIXING_DEFAULT ? QGM_MIXING_METROPOLIS : mixing;
  t->start = calloc((size_t)nodes + 1, sizeof *t->start);
  t->peer = malloc((count + 1) * sizeof *t->peer);
  t->weight = malloc((count + 1) * sizeof *t->weight);
  t->self = malloc((size_t)nodes * sizeof *t->self);
  if (!t->start || !t->peer || !t->weight || !t->self) {
    free(d);
    qgm_topology_free(t);
    return QGM_ENOMEM;
  }
  for (size_t e = 0; e < count; e++)
    t->start[d[e].a + 1]++;
  for (int i = 0; i < nodes; i++) {
    int deg = t->start[i + 1];
    if (deg > t->max_degree)
      t->max_degree = deg;
    t->start[i + 1] += t->start[i];
  }
  for (size_t e = 0; e < count; e++) {
    const int i = d[e].a, j = d[e].b;
    t->peer[e] = j;
    t->weight[e] =
        d[e].w > 0 ? d[e].w
                   : rule_weight(t->mixing, t->max_degree,
                                 t->start[i + 1] - t->start[i],
                                 t->start[j + 1] - t->start[j]);
  }
  free(d);
  for (int i = 0; i < nodes; i++) {
    double sum = 0.0;
    for (int e = t->start[i]; e < t->start[i + 1]; e++)
      sum += t->weight[e];
    t->self[i] = 1.0 - sum;
  }
  int rc = qgm__topology_validate(t, NULL, 0, error);
  if (rc != 0) {
    qgm_topology_free(t);
    return rc;
  }
  *out = t;
  return 0;
}

int qgm_topology_ring(int nodes, qgm_topology_t **out) {
  qgm_topology_spec_t spec = {.name = "ring", .nodes = nodes};
  return qgm_topology_create_ex(&spec, out, NULL);
}

int qgm_topology_create(const char *name, int nodes, qgm_topology_t **out) {
  qgm_topology_spec_t spec = {.name = name, .nodes = nodes};
  return qgm_topology_create_ex(&spec, out, NULL);
}

static int create(const qgm_topology_spec_t *spec, qgm_topology_t **out,
                  qgm_topology_error_t *error) {
  if (strcmp(spec->name, "hier") == 0)
    return qgm__topology_build_hier(spec, out, error);
  if (strncmp(spec->name, "file:", 5) == 0)
    return qgm__topology_load_file(spec->name + 5, spec->nodes, spec->mixing,
                                  out, error);
  return qgm__topology_build_named(spec, out, error);
}

/* (I + W)/2 of the graph's own W: every weight to a peer halved, the rest
 * kept by the node. Only a stored W can be rewritten this way; the
 * one-peer graph already keeps half of every model. */
static int create_lazy(const qgm_topology_spec_t *spec, qgm_topology_t **out,
                       qgm_topology_error_t *error) {
  qgm_topology_spec_t own = *spec;
  own.mixing = QGM_MIXING_DEFAULT;
  qgm_topology_t *t = NULL;
  int rc = create(&own, &t, error);
  if (rc != 0)
    return rc;
  if (!qgm__topology_stored(t)) {
    qgm_topology_free(t);
    return qgm__topology_fail(error, QGM_EINVAL, 0,
                             "lazy mixing needs a static graph, not %s",
                             spec->name);
  }
  for (int i = 0; i < t->nodes; i++) {
    double sum = 0.0;
    for (int e = t->start[i]; e < t->start[i + 1]; e++)
      sum += t->weight[e] *= 0.5;
    t->self[i] = 1.0 - sum;
  }
  t->mixing = QGM_MIXING_LAZY;
  rc = qgm__topology_validate(t, NULL, 0, error);
  if (rc != 0) {
    qgm_topology_free(t);
    return rc;
  }
  *out = t;
  return 0;
}

int qgm_topology_is_tree(const qgm_topology_t *t) {
  return t && qgm__topology_stored(t) &&
         qgm_topology_edges(t) + 1 == (size_t)t->nodes;
}

int qgm_topology_create_ex(const qgm_topology_spec_t *spec,
                           qgm_topology_t **out,
                           qgm_topology_error_t *error) {
  if (error) {
    error->line = 0;
    error->text[0] = '\0';
  }
  if (!spec || !spec->name || !out)
    return QGM_EINVAL;
  if (spec->nodes < 1)
    return qgm__topology_fail(error, QGM_ENODES, 0,
                             "a topology needs at least 1 node, not %d",
                             spec->nodes);
  if (spec->mixing == QGM_MIXING_LAZY)
    return create_lazy(spec, out, error);
  return create(spec, out, error);
}

int qgm_topology_nodes(const qgm_topology_t *t) { return t->nodes; }

int qgm_topology_max_degree(const qgm_topology_t *t) { return t->max_degree; }

int qgm_topology_period(const qgm_topology_t *t) { return t->period; }

qgm_mixing_t qgm_topology_mixing(const qgm_topology_t *t) { return t->mixing; }

/* The one-peer exponential graph's shift in a round: 2^(round mod period). */
static int one_peer_shift(const qgm_topology_t *t, uint64_t round) {
  return (int)(1u << (round % (uint64_t)t->period)) % t->nodes;
}

int qgm_topology_neighbors(const qgm_topology_t *t, int node, uint64_t round,
                           int *peers, double *weights, double *self_weight) {
  const int n = t->nodes;
  if (node < 0 || node >= n)
    return QGM_EINVAL;
  if (t->hosts)
    return qgm__topology_hier_neighbors(t, node, round, peers, weights,
                                       self_weight);
  if (t->one_peer) {
    if (n == 1) {
      *self_weight = 1.0;
      return 0;
    }
    peers[0] = (node + n - one_peer_shift(t, round)) % n;
    weights[0] = 0.5;
    *self_weight = 0.5;
    return 1;
  }
  const int k = t->start[node + 1] - t->start[node];
  memcpy(peers, t->peer + t->start[node], (size_t)k * sizeof *peers);
  memcpy(weights, t->weight + t->start[node], (size_t)k * sizeof *weights);
  *self_weight = t->self[node];
  return k;
}

int qgm_topology_send_peers(const qgm_topology_t *t, int node, uint64_t round,
                            int *peers) {
  const int n = t->nodes;
  if (node < 0 || node >= n)
    return QGM_EINVAL;
  if (t->hosts)
    return qgm__topology_hier_send_peers(t, node, round, peers);
  if (t->one_peer) {
    if (n == 1)
      return 0;
    peers[0] = (node + one_peer_shift(t, round)) % n;
    return 1;
  }
  const int k = t->start[node + 1] - t->start[node];
  memcpy(peers, t->peer + t->start[node], (size_t)k * sizeof *peers);
  return k;
}

void qgm_topology_weights(const qgm_topology_t *t, uint64_t round,
                          double *w) {
  const int n = t->nodes;
  int *peers = malloc(((size_t)t->max_degree + 1) * sizeof *peers);
  double *weights = malloc(((size_t)t->max_degree + 1) * sizeof *weights);
  memset(w, 0, (size_t)n * (size_t)n * sizeof *w);
  for (int i = 0; peers && weights && i < n; i++) {
    double self;
    int k = qgm_topology_neighbors(t, i, round, peers, weights, &self);
    w[(size_t)i * (size_t)n + (size_t)i] = self;
    for (int j = 0; j < k; j++)
      w[(size_t)i * (size_t)n + (size_t)peers[j]] += weights[j];
  }
  free(peers);
  free(weights);
}

/* Calls visit(i, j, W_ij) for every non-zero off-diagonal entry of every
 * round of one period, and self(i, W_ii) for every diagonal one. */
typedef struct walker {
  void (*edge)(struct walker *, int i, int j, double w);
  void (*self)(struct walker *, int i, double w);
} walker_t;

static int walk(const qgm_topology_t *t, walker_t *v) {
  int *peers = malloc(((size_t)t->max_degree + 1) * sizeof *peers);
  double *weights = malloc(((size_t)t->max_degree + 1) * sizeof *weights);
  if (!peers || !weights) {
    free(peers);
    free(weights);
    return QGM_ENOMEM;
  }
  for (int r = 0; r < t->period; r++)
    for (int i = 0; i < t->nodes; i++) {
      double self;
      int k = qgm_topology_neighbors(t, i, (uint64_t)r, peers, weights, &self);
      if (v->self)
        v->self(v, i, self);
      for (int j = 0; j < k; j++)
        v->edge(v, i, peers[j], weights[j]);
    }
  free(peers);
  free(weights);
  return 0;
}

/* Connectivity and column sums, gathered in one walk. */
typedef struct checker {
  walker_t base;
  int *root;        /* union-find over the period's edges */
  double *column;   /* column sums of W, all rounds added up */
  double min_weight;
} checker_t;

static int find_root(int *root, int i) {
  while (root[i] != i)
    i = root[i] = root[root[i]];
  return i;
}

static void check_edge(walker_t *w, int i, int j, double weight) {
  checker_t *c = (checker_t *)w;
  c->column[j] += weight;
  if (weight < c->min_weight)
    c->min_weight = weight;
  int a = find_root(c->root, i), b = find_root(c->root, j);
  if (a != b)
    c->root[a > b ? a : b] = a < b ? a : b;
}

static void check_self(walker_t *w, int i, double weight) {
  checker_t *c = (checker_t *)w;
  c->column[i] += weight;
}

static int is_symmetric(const qgm_topology_t *t, int *bad_i, int *bad_j) {
  for (int i = 0; i < t->nodes; i++)
    for (int e = t->start[i]; e < t->start[i + 1]; e++) {
      const int j = t->peer[e];
      const int *lo = t->peer + t->start[j], *hi = t->peer + t->start[j + 1];
      const int *at = lo;
      while (at < hi && *at < i) /* short rows: a scan beats bsearch setup */
        at++;
      if (at == hi || *at != i ||
          fabs(t->weight[at - t->peer] - t->weight[e]) > STOCHASTIC_TOL) {
        *bad_i = i;
        *bad_j = j;
        return 0;
      }
    }
  return 1;
}

/* Whether a static W has eigenvalue -1: a zero diagonal on a bipartite
 * graph (2-coloured here, breadth first). Gossip with such a W swaps the
 * two sides' models every round and never averages them. */
static int swaps_forever(const qgm_topology_t *t, int *rc) {
  const int n = t->nodes;
  if (n < 2 || !qgm__topology_stored(t))
    return 0;
  for (int i = 0; i < n; i++)
    if (t->self[i] > STOCHASTIC_TOL)
      return 0;
  signed char *colour = calloc((size_t)n, 1);
  int *queue = malloc((size_t)n * sizeof *queue);
  int bipartite = 1;
  if (!colour || !queue)
    *rc = QGM_ENOMEM;
  for (int s = 0; *rc == 0 && bipartite && s < n; s++) {
    if (colour[s])
      continue;
    int head = 0, tail = 0;
    colour[s] = 1;
    queue[tail++] = s;
    while (bipartite && head < tail) {
      const int i = queue[head++];
      for (int e = t->start[i]; bipartite && e < t->start[i + 1]; e++) {
        const int j = t->peer[e];
        if (colour[j] == colour[i])
          bipartite = 0;
        else if (!colour[j]) {
          colour[j] = (signed char)-colour[i];
          queue[tail++] = j;
        }
      }
    }
  }
  free(colour);
  free(queue);
  return *rc == 0 && bipartite;
}

/* A gap g shrinks the distance between the models by about e every 1/g
 * rounds: below this, more rounds than any run has. Well above the
 * eigen-solver's rounding (an identity W gives about -2e-16). */
#define MIN_GAP 1e-9
/* Nodes up to which the gap is computed exactly (O(n^3), ~0.1 s). */
#define EXACT_GAP_NODES 256

/* The smallest bound on the gap that costs O(n): for a symmetric W and
 * x = e_i - 1/n, the Rayleigh quotient of I - W gives
 * gap <= (1 - W_ii) n / (n - 1); the node whose weights to its peers are
 * smallest decides. */
static double gap_bound(const qgm_topology_t *t, int *node) {
  const int n = t->nodes;
  double bound = 2.0;
  for (int i = 0; n > 1 && qgm__topology_stored(t) && i < n; i++) {
    double peers = 0.0;
    for (int e = t->start[i]; e < t->start[i + 1]; e++)
      peers += t->weight[e];
    if (peers * n / (n - 1) < bound) {
      bound = peers * n / (n - 1);
      *node = i;
    }
  }
  return bound;
}

/* Refuses a W that never averages in practice: weights that underflow,
 * or a bridge between two parts too weak to carry anything. */
static int check_gap(const qgm_topology_t *t, const char *where, int line,
                     qgm_topology_error_t *error) {
  int node = 0;
  double gap, bound = gap_bound(t, &node);
  if (bound < MIN_GAP)
    return qgm__topology_fail(error, QGM_EMIXING, line,
                             "%snode %d's weights to its peers sum to %.3g: "
                             "the spectral gap is at most %.3g, and W never "
                             "averages the models (it needs more than %g)",
                             where, node, bound * (t->nodes - 1) / t->nodes,
                             bound, MIN_GAP);
  if (t->nodes > EXACT_GAP_NODES || t->nodes < 2)
    return 0;
  int rc = qgm_topology_spectral_gap(t, &gap);
  if (rc == 0 && gap < MIN_GAP)
    rc = qgm__topology_fail(error, QGM_EMIXING, line,
                           "%sthe spectral gap of W is %.3g: W never averages "
                           "the models (it needs more than %g; are some "
                           "weights vanishingly small?)", where, gap, MIN_GAP);
  return rc;
}

int qgm__topology_validate(const qgm_topology_t *t, const char *source,
                          int last_line, qgm_topology_error_t *error) {
  const int n = t->nodes;
  char where[300] = "";
  if (source)
    snprintf(where, sizeof where, "%.255s:%d: ", source, last_line);
  for (int r = 0; r < t->period; r++)
    for (int i = 0; i < n; i++) {
      int peers[1];
      double w[1], self;
      if (qgm__topology_stored(t)) { /* rows of stored graphs */
        double sum = t->self[i];
        for (int e = t->start[i]; e < t->start[i + 1]; e++)
          sum += t->weight[e];
        self = t->self[i];
        if (self < -STOCHASTIC_TOL || fabs(sum - 1.0) > STOCHASTIC_TOL)
          return qgm__topology_fail(
              error, QGM_EMIXING, last_line,
              "%snode %d's weights to its peers sum to %.6g > 1", where, i,
              1.0 - self);
      } else if (t->one_peer && /* rows of hierarchical ones are those of
                                   their validated host graph, over L */
                 qgm_topology_neighbors(t, i, (uint64_t)r, peers, w, &self) >
                     0 &&
                 fabs(self + w[0] - 1.0) > STOCHASTIC_TOL) {
        return qgm__topology_fail(error, QGM_EMIXING, 0,
                                 "row %d of W does not sum to 1", i);
      }
    }
  checker_t c = {.base = {check_edge, check_self}, .min_weight = 1.0};
  c.root = malloc((size_t)n * sizeof *c.root);
  c.column = calloc((size_t)n, sizeof *c.column);
  int rc = (c.root && c.column) ? 0 : QGM_ENOMEM;
  for (int i = 0; rc == 0 && i < n; i++)
    c.root[i] = i;
  if (rc == 0)
    rc = walk(t, &c.base);
  int bad = -1;
  for (int i = 0; rc == 0 && i < n && bad < 0; i++)
    if (fabs(c.column[i] - t->period) > STOCHASTIC_TOL * t->period)
      bad = i;
  if (rc == 0 && bad >= 0)
    rc = qgm__topology_fail(error, QGM_EMIXING, last_line,
                           "%scolumn %d of W does not sum to 1", where, bad);
  if (rc == 0 && c.min_weight <= 0.0)
    rc = qgm__topology_fail(error, QGM_EMIXING, last_line,
                           "%sa mixing weight is not positive", where);
  int i_bad, j_bad;
  if (rc == 0 && qgm__topology_stored(t) && !is_symmetric(t, &i_bad, &j_bad))
    rc = qgm__topology_fail(error, QGM_EMIXING, last_line,
                           "%sW is not symmetric: W[%d][%d] != W[%d][%d]",
                           where, i_bad, j_bad, j_bad, i_bad);
  for (int i = 0; rc == 0 && i < n; i++)
    if (find_root(c.root, i) != 0)
      rc = qgm__topology_fail(error, QGM_EGRAPH, last_line,
                             "%sthe graph is not connected: node %d cannot "
                             "reach node 0",
                             where, i);
  if (rc == 0 && swaps_forever(t, &rc))
    rc = qgm__topology_fail(error, QGM_EMIXING, last_line,
                           "%severy node's weights sum to 1 (W_ii = 0) on a "
                           "bipartite graph: W has eigenvalue -1 and never "
                           "averages; make some W_ii > 0", where);
  if (rc == 0)
    rc = check_gap(t, where, last_line, error);
  free(c.root);
  free(c.column);
  return rc;
}

/* Counts the distinct pairs of the period. */
typedef struct pair_counter {
  walker_t base;
  qgm__edge_t *pairs;
  size_t count;
} pair_counter_t;

static void count_pair(walker_t *w, int i, int j, double weight) {
  (void)weight;
  pair_counter_t *p = (pair_counter_t *)w;
  p->pairs[p->count].a = i < j ? i : j;
  p->pairs[p->count].b = i < j ? j : i;
  p->count++;
}

size_t qgm_topology_edges(const qgm_topology_t *t) {
  if (qgm__topology_stored(t))
    return (size_t)t->start[t->nodes] / 2;
  pair_counter_t p = {.base = {count_pair, NULL}};
  p.pairs = malloc(((size_t)t->nodes * (size_t)t->period *
                       (size_t)t->max_degree + 1) * sizeof *p.pairs);
  if (!p.pairs || walk(t, &p.base) != 0) {
    free(p.pairs);
    return 0;
  }
  qsort(p.pairs, p.count, sizeof *p.pairs, edge_order);
  size_t distinct = 0;
  for (size_t e = 0; e < p.count; e++)
    distinct += e == 0 || edge_order(&p.pairs[e - 1], &p.pairs[e]) != 0;
  free(p.pairs);
  return distinct;
}

/* Hashes every entry in walk order, which is fixed by the topology. */
typedef struct hasher {
  walker_t base;
  uint64_t h;
} hasher_t;

static void hash_edge(walker_t *w, int i, int j, double weight) {
  hasher_t *hs = (hasher_t *)w;
  int ij[2] = {i, j};
  hs->h = qgm_hash64(ij, sizeof ij, hs->h);
  hs->h = qgm_hash64(&weight, sizeof weight, hs->h);
}

static void hash_self(walker_t *w, int i, double weight) {
  hash_edge(w, i, i, weight);
}

uint64_t qgm_topology_hash(const qgm_topology_t *t) {
  hasher_t hs = {.base = {hash_edge, hash_self}, .h = QGM_HASH_INIT};
  int head[2] = {t->nodes, t->period};
  hs.h = qgm_hash64(head, sizeof head, hs.h);
  if (walk(t, &hs.base) != 0)
    return 0;
  return hs.h;
}
