/* optim_relay.c - RelaySum, the exchange of RelaySGD (Vogels et al.,
 * "RelaySum for Decentralized Deep Learning on Heterogeneous Data",
 * NeurIPS 2021, Algorithm 1).
 *
 * On a tree every pair of nodes is joined by one path, so a node can pass
 * on what it heard without counting anything twice: node i sends neighbour
 * j its half-step model plus the sums it received in the previous round
 * from its other neighbours, with the number of models in that sum. Models
 * travel one edge per round, so after diameter rounds every node holds the
 * sum of all n models (some of them a few rounds old) and divides by n;
 * until then the models not yet heard of are stood in for by the shared
 * initial model x0, as the official code does. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "graph/topology.h"

struct qgm_relay {
  int nodes, peers;
  size_t dim;
  float *x0;    /* the shared initial model */
  float **sums; /* peers x (dim + 1): what each peer sent last round */
  float **inbox; /* peers x (dim + 1): what each peer sends this round */
};

void qgm_relay_free(qgm_relay_t *r) {
  if (!r)
    return;
  for (int j = 0; j < r->peers; j++) {
    free(r->sums[j]);
    free(r->inbox[j]);
  }
  free(r->sums);
  free(r->inbox);
  free(r->x0);
  free(r);
}

int qgm_relay_create(const qgm_topology_t *t, int node, size_t dim,
                     const float *x0, qgm_relay_t **out) {
  if (!t || !x0 || !out || dim == 0 || !qgm_topology_is_tree(t) ||
      node < 0 || node >= t->nodes)
    return QGM_EINVAL;
  qgm_relay_t *r = calloc(1, sizeof *r);
  if (!r)
    return QGM_ENOMEM;
  r->nodes = t->nodes;
  r->peers = t->start[node + 1] - t->start[node];
  r->dim = dim;
  const size_t k = r->peers > 0 ? (size_t)r->peers : 1;
  r->sums = calloc(k, sizeof *r->sums);
  r->inbox = calloc(k, sizeof *r->inbox);
  int ok = r->sums && r->inbox && (r->x0 = qgm_alloc_floats(dim));
  for (int j = 0; ok && j < r->peers; j++) {
    /* Nothing was relayed before the first round: sums and counts 0. */
    ok = (r->sums[j] = qgm_alloc_floats(dim + 1)) &&
         (r->inbox[j] = qgm_alloc_floats(dim + 1));
    if (ok)
      memset(r->sums[j], 0, (dim + 1) * sizeof(float));
  }
  if (!ok) {
    qgm_relay_free(r);
    return QGM_ENOMEM;
  }
  memcpy(r->x0, x0, dim * sizeof *x0);
  *out = r;
  return 0;
}

size_t qgm_relay_message_len(const qgm_relay_t *r) { return r->dim + 1; }

int qgm_relay_peers(const qgm_relay_t *r) { return r->peers; }

/* Summed in peer order, skipping the receiver: every node adds in the same
 * fixed order, so a run is deterministic and the simulator's arithmetic
 * is the daemon's. */
void qgm_relay_message(const qgm_relay_t *r, int j, const float *h,
                       float *out) {
  const size_t n = r->dim;
  memcpy(out, h, n * sizeof *out);
  float count = 1.0f; /* exact: counts are integers <= n < 2^24 */
  for (int k = 0; k < r->peers; k++) {
    if (k == j)
      continue;
    qgm_vec_axpy(out, 1.0f, r->sums[k], n);
    count += r->sums[k][n];
  }
  out[n] = count;
}

float *qgm_relay_inbox(qgm_relay_t *r, int j) { return r->inbox[j]; }

float *qgm_relay_sums(qgm_relay_t *r, int j) { return r->sums[j]; }

void qgm_relay_mix(qgm_relay_t *r, const float *h, float *mix) {
  const size_t n = r->dim;
  float heard = 1.0f;
  memcpy(mix, h, n * sizeof *mix);
  for (int j = 0; j < r->peers; j++) {
    qgm_vec_axpy(mix, 1.0f, r->inbox[j], n);
    heard += r->inbox[j][n];
    /* This round's messages are what the next round relays. */
    float *sent = r->sums[j];
    r->sums[j] = r->inbox[j];
    r->inbox[j] = sent;
  }
  const float missing = (float)r->nodes - heard;
  if (missing > 0.0f)
    qgm_vec_axpy(mix, missing, r->x0, n);
  qgm_vec_scale_copy(mix, 1.0f / (float)r->nodes, mix, n);
}

int qgm_relay_exchange(const qgm_topology_t *t, qgm_relay_t *const *relays,
                       const float *const *h, float *const *mixes) {
  if (!t || !relays || !h || !mixes || !qgm_topology_is_tree(t))
    return QGM_EINVAL;
  /* Node i's message to its j-th peer p lands in p's inbox for i: the
   * position of i among p's (sorted) peers. */
  for (int i = 0; i < t->nodes; i++)
    for (int e = t->start[i]; e < t->start[i + 1]; e++) {
      const int p = t->peer[e];
      int slot = 0;
      while (t->peer[t->start[p] + slot] != i)
        slot++;
      qgm_relay_message(relays[i], e - t->start[i], h[i],
                        qgm_relay_inbox(relays[p], slot));
    }
  for (int i = 0; i < t->nodes; i++)
    qgm_relay_mix(relays[i], h[i], mixes[i]);
  return 0;
}
