/* topology.h - what the topology files of libqgm share; not installed.
 *
 * A static graph is stored once, as the in-neighbours of every node in CSR
 * form (the graph is undirected, so they are also its out-neighbours). The
 * one time-varying graph, the one-peer exponential graph, is computed from
 * the round instead of being stored, and so is a hierarchical topology
 * (topology_hosts.c), from the graph between its hosts. */
#ifndef QGM_TOPOLOGY_H
#define QGM_TOPOLOGY_H

#include <stddef.h>

#include "qgm.h"

struct qgm_topology {
  int nodes;
  int period;     /* 1 for static graphs */
  int max_degree;
  int one_peer;   /* 1: the one-peer exponential graph (nothing stored) */
  qgm_mixing_t mixing;
  int *start;     /* n + 1 offsets into peer and weight */
  int *peer;      /* sorted ascending within a node */
  double *weight; /* W_ij, aligned with peer */
  double *self;   /* W_ii */
  /* A hierarchical topology (hosts > 0): the exact average inside every
   * host, host_graph between hosts, so W_ij = W_H[host(i)][host(j)] / L
   * with L = per_host nodes on every host. */
  int hosts, per_host;
  int *host_of;  /* n: node -> host */
  int *slot_of;  /* n: node -> its index among its host's nodes */
  int *member;   /* hosts x per_host: (host, slot) -> node */
  qgm_topology_t *host_graph;
};

/* Whether W is stored (CSR above) rather than computed from the round. */
static inline int qgm__topology_stored(const qgm_topology_t *t) {
  return !t->one_peer && !t->hosts;
}

/* Whether W may be asymmetric: the directed one-peer graph, or hosts
 * joined by it. */
static inline int qgm__topology_directed(const qgm_topology_t *t) {
  return t->one_peer || (t->hosts && t->host_graph->one_peer);
}

/* One undirected edge a-b; w > 0 is a weight from an edge file, w == 0 asks
 * for the mixing rule's. line: where it was read (0 for built-in graphs). */
typedef struct qgm_edge {
  int a, b;
  double w;
  int line;
} qgm__edge_t;

/* Builds a static topology from m undirected edges (duplicates allowed:
 * they are merged) with the given rule, then validates it. Takes ownership
 * of nothing. */
int qgm__topology_from_edges(int nodes, const qgm__edge_t *edges, size_t m,
                            qgm_mixing_t mixing, qgm_topology_t **out,
                            qgm_topology_error_t *error);

/* Rows and columns sum to 1, weights positive, symmetric if static,
 * connected over one period. `source` prefixes the message (a file name,
 * or NULL). */
int qgm__topology_validate(const qgm_topology_t *t, const char *source,
                          int last_line, qgm_topology_error_t *error);

/* The built-in graphs by name (topology_graphs.c). */
int qgm__topology_build_named(const qgm_topology_spec_t *spec,
                             qgm_topology_t **out,
                             qgm_topology_error_t *error);

/* An edge list (topology_file.c): the text of a file named `source`, or the
 * file at path. Duplicate edges, self-loops, ids >= nodes, bad text and
 * weights outside (0, 1] are errors naming source:line. */
int qgm__topology_parse_edges(const char *text, const char *source, int nodes,
                             qgm_mixing_t mixing, qgm_topology_t **out,
                             qgm_topology_error_t *error);
int qgm__topology_load_file(const char *path, int nodes, qgm_mixing_t mixing,
                           qgm_topology_t **out, qgm_topology_error_t *error);

/* The hierarchical topology of spec (topology_hosts.c). */
int qgm__topology_build_hier(const qgm_topology_spec_t *spec,
                            qgm_topology_t **out,
                            qgm_topology_error_t *error);
/* Its peers in a round (the qgm_topology_neighbors contract). */
int qgm__topology_hier_neighbors(const qgm_topology_t *t, int node,
                                uint64_t round, int *peers, double *weights,
                                double *self_weight);
int qgm__topology_hier_send_peers(const qgm_topology_t *t, int node,
                                 uint64_t round, int *peers);

/* printf into error->text (error may be NULL); returns rc. */
int qgm__topology_fail(qgm_topology_error_t *error, int rc, int line,
                      const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif /* QGM_TOPOLOGY_H */
