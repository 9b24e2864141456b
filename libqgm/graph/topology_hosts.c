/* topology_hosts.c - the hierarchical topology: nodes grouped by host,
 * averaged exactly inside a host, gossiping between hosts.
 *
 * On a cluster the links between hosts are the scarce resource and shared
 * memory inside a host is almost free. A flat graph spends the links on
 * every node's model; here a host's nodes first agree on their mean, and
 * only that mean crosses to the neighbouring hosts, cut into one slice per
 * node so that each node carries 1/L of it. The mixing matrix is
 * W = W_H (x) J/L (for nodes placed host by host; any placement with L
 * nodes per host permutes it), which is doubly stochastic, symmetric when
 * W_H is, and mixes as fast as W_H: its spectral gap is W_H's. */
#include <stdlib.h>
#include <string.h>

#include "graph/topology.h"

/* The host graph's peers of a round live on the stack. */
#define MAX_HOSTS 4096

static int build_placement(qgm_topology_t *t, const int *host_of,
                           qgm_topology_error_t *error) {
  const int n = t->nodes, hosts = t->hosts;
  int *count = calloc((size_t)hosts, sizeof *count);
  t->host_of = malloc((size_t)n * sizeof *t->host_of);
  t->slot_of = malloc((size_t)n * sizeof *t->slot_of);
  if (!count || !t->host_of || !t->slot_of) {
    free(count);
    return QGM_ENOMEM;
  }
  for (int i = 0; i < n; i++) {
    int h = host_of ? host_of[i] : i / (n / hosts);
    if (h < 0 || h >= hosts) {
      free(count);
      return qgm__topology_fail(error, QGM_EINVAL, 0,
                               "node %d is placed on host %d of %d", i, h,
                               hosts);
    }
    t->host_of[i] = h;
    t->slot_of[i] = count[h]++;
  }
  t->per_host = n / hosts;
  for (int h = 0; h < hosts; h++)
    if (count[h] != t->per_host) {
      char has[48], all[48];
      qgm_count_text(has, sizeof has, count[h], "node");
      qgm_count_text(all, sizeof all, n, "node");
      free(count);
      /* Unless the hosts divide the nodes, no count is "right". */
      if (n % hosts != 0)
        return qgm__topology_fail(
            error, QGM_ENODES, 0,
            "topology hier needs the same number of nodes on every host: "
            "%s cannot be split evenly over %d hosts (host %d has %s)",
            all, hosts, h, has);
      return qgm__topology_fail(
          error, QGM_ENODES, 0,
          "topology hier needs the same number of nodes on every host: "
          "host %d has %s, not the %d each of %s on %d hosts",
          h, has, t->per_host, all, hosts);
    }
  free(count);
  t->member = malloc((size_t)n * sizeof *t->member);
  if (!t->member)
    return QGM_ENOMEM;
  for (int i = 0; i < n; i++)
    t->member[t->host_of[i] * t->per_host + t->slot_of[i]] = i;
  return 0;
}

int qgm__topology_build_hier(const qgm_topology_spec_t *spec,
                            qgm_topology_t **out,
                            qgm_topology_error_t *error) {
  const int n = spec->nodes, hosts = spec->hosts;
  const char *inner = spec->host_topology ? spec->host_topology : "ring";
  if (hosts < 1 || hosts > n || hosts > MAX_HOSTS ||
      (!spec->host_of && n % hosts != 0))
    return qgm__topology_fail(
        error, QGM_ENODES, 0,
        "topology hier puts the same number of nodes on every host: %d "
        "nodes cannot go on %d hosts",
        n, hosts);
  if (strcmp(inner, "hier") == 0 || strncmp(inner, "file:", 5) == 0)
    return qgm__topology_fail(error, QGM_EINVAL, 0,
                             "the graph between hosts must be a built-in "
                             "one (%s), not '%s'",
                             qgm_topology_graph_names(), inner);
  qgm_topology_spec_t between = *spec;
  between.name = inner;
  between.nodes = hosts;
  between.hosts = 0;
  between.host_of = NULL;
  between.host_topology = NULL;
  qgm_topology_t *t = calloc(1, sizeof *t);
  if (!t)
    return QGM_ENOMEM;
  int rc = qgm__topology_build_named(&between, &t->host_graph, error);
  if (rc == QGM_ENODES && error) { /* the message speaks of nodes */
    char why[sizeof error->text];
    memcpy(why, error->text, sizeof why);
    qgm__topology_fail(error, rc, 0, "between the %d hosts: %s", hosts, why);
  }
  t->nodes = n;
  t->hosts = hosts;
  if (rc == 0)
    rc = build_placement(t, spec->host_of, error);
  if (rc != 0) {
    qgm_topology_free(t);
    return rc;
  }
  t->period = t->host_graph->period;
  t->mixing = t->host_graph->mixing;
  t->max_degree = t->per_host - 1 + t->per_host * t->host_graph->max_degree;
  rc = qgm__topology_validate(t, NULL, 0, error);
  if (rc != 0) {
    qgm_topology_free(t);
    return rc;
  }
  *out = t;
  return 0;
}

/* Appends every node of `host` but `skip` with weight w. */
static int add_host(const qgm_topology_t *t, int host, int skip, double w,
                    int k, int *peers, double *weights) {
  for (int s = 0; s < t->per_host; s++) {
    int j = t->member[host * t->per_host + s];
    if (j == skip)
      continue;
    peers[k] = j;
    if (weights)
      weights[k] = w;
    k++;
  }
  return k;
}

int qgm__topology_hier_neighbors(const qgm_topology_t *t, int node,
                                uint64_t round, int *peers, double *weights,
                                double *self_weight) {
  const qgm_topology_t *g = t->host_graph;
  const int h = t->host_of[node];
  const double l = (double)t->per_host;
  int hp[g->max_degree + 1];
  double hw[g->max_degree + 1];
  double hself;
  int kh = qgm_topology_neighbors(g, h, round, hp, hw, &hself);
  *self_weight = hself / l;
  int k = add_host(t, h, node, hself / l, 0, peers, weights);
  for (int j = 0; j < kh; j++)
    k = add_host(t, hp[j], -1, hw[j] / l, k, peers, weights);
  return k;
}

int qgm__topology_hier_send_peers(const qgm_topology_t *t, int node,
                                 uint64_t round, int *peers) {
  const qgm_topology_t *g = t->host_graph;
  const int h = t->host_of[node];
  int hp[g->max_degree + 1];
  int kh = qgm_topology_send_peers(g, h, round, hp);
  int k = add_host(t, h, node, 0.0, 0, peers, NULL);
  for (int j = 0; j < kh; j++)
    k = add_host(t, hp[j], -1, 0.0, k, peers, NULL);
  return k;
}

int qgm_topology_hosts(const qgm_topology_t *t) { return t->hosts; }

int qgm_topology_per_host(const qgm_topology_t *t) { return t->per_host; }

int qgm_topology_host_of(const qgm_topology_t *t, int node) {
  return t->host_of[node];
}

int qgm_topology_host_slot(const qgm_topology_t *t, int node) {
  return t->slot_of[node];
}

int qgm_topology_host_member(const qgm_topology_t *t, int host, int slot) {
  return t->member[host * t->per_host + slot];
}

const qgm_topology_t *qgm_topology_host_graph(const qgm_topology_t *t) {
  return t->host_graph;
}

void qgm_host_slice(size_t len, int parts, int slot, size_t *offset,
                    size_t *count) {
  const size_t p = (size_t)parts, s = (size_t)slot;
  *offset = len / p * s + (s < len % p ? s : len % p);
  *count = len / p + (s < len % p);
}

void qgm_vec_mean(float *out, const float *const *v, int k, size_t n) {
  qgm_vec_copy(out, v[0], n);
  for (int i = 1; i < k; i++)
    qgm_vec_axpy(out, 1.0f, v[i], n);
  qgm_vec_scale_copy(out, (float)(1.0 / k), out, n);
}
