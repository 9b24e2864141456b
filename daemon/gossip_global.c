/* gossip_global.c - the all-reduce baseline's mean over all nodes, summed
 * in rank order (see gossip.h).
 *
 * Node r owns slice r of the vector (qgm_host_slice of n parts). First
 * every node sends every other node its slice of the message, and each
 * sums its own slice over the nodes in rank order, 0 to n - 1; then every
 * node sends its summed slice to all others. Each node sends 2 (n - 1) / n
 * vectors a round, as a ring all-reduce does, in two steps instead of
 * 2 (n - 1): the loop sleeps between its tests of MPI, and Open MPI's own
 * non-blocking all-reduce advanced one of its steps per test. The order of
 * the sum is fixed, so the mean has the same bits on any placement of the
 * ranks.
 *
 * Between nodes of one host nothing travels but the round's number: the
 * message and the summed slice are read in place from the host's window
 * (qgmd_gossip_share_host), where own_slot[0] is the node's message and
 * own_slot[1] its slice of the sum. One slot each suffices: a node writes
 * its message again only after every node announced its summed slice of
 * the round, which each did after reading the messages; and it writes its
 * summed slice again only after every node announced its next message,
 * which each did after reading the sums. */
#include <stdlib.h>
#include <string.h>

#include "gossip.h"
#include "gossip_shared.h"
#include "mpi_tags.h"

/* With peer j on this host: the round's numbers, its into ready[j] and
 * this node's (number) to it, as requests j and degree + j. */
static void exchange_numbers(qgmd_gossip_t *g, int j, const void *number,
                             int tag) {
  MPI_Irecv(&g->ready[j], 1, MPI_UINT64_T, g->peers[j], tag, MPI_COMM_WORLD,
            &g->requests[j]);
  MPI_Isend(number, 1, MPI_UINT64_T, g->peers[j], tag, MPI_COMM_WORLD,
            &g->requests[g->degree + j]);
}

int qgmd__global_init(qgmd_gossip_t *g) {
  const int n = qgm_topology_nodes(g->topology);
  qgm_host_slice(g->len, n, g->rank, &g->slice_at, &g->slice_len);
  for (int r = 0, j = 0; r < n; r++)
    if (r != g->rank)
      g->peers[j++] = r;
  g->degree = n - 1;
  g->sum = malloc(g->len * sizeof(float));
  g->parts = malloc(((size_t)n * g->slice_len + 1) * sizeof(float));
  return g->sum && g->parts ? 0 : QGM_ENOMEM;
}

/* Every other node gets its slice of the message; this node's slice of
 * every other node's arrives in parts (by sender), or is announced. */
int qgmd__global_post_slices(qgmd_gossip_t *g) {
  const int n = g->degree + 1, k = g->degree;
  const void *announce = NULL;
  for (int j = 0; j < k; j++) {
    const int peer = g->peers[j];
    size_t at, len; /* the peer's slice */
    qgm_host_slice(g->len, n, peer, &at, &len);
    const int here = qgmd__gossip_peer_slot(g, j, 0) != NULL;
    if (here) {
      if (!announce)
        announce = qgmd__gossip_publish(g);
      exchange_numbers(g, j, announce, QGMD_SUM_SLICE_TAG);
    } else {
      MPI_Irecv(g->parts + (size_t)peer * g->slice_len, (int)g->slice_len,
                MPI_FLOAT, peer, QGMD_SUM_SLICE_TAG, MPI_COMM_WORLD,
                &g->requests[j]);
      MPI_Isend((const float *)g->send + at, (int)len, MPI_FLOAT, peer,
                QGMD_SUM_SLICE_TAG, MPI_COMM_WORLD, &g->requests[k + j]);
    }
    qgmd__gossip_count(g, peer, (double)len * sizeof(float), here);
  }
  return g->nrequests = 2 * k;
}

/* This node's slice of the messages, in place or received, by rank. */
static const float *slice_of(qgmd_gossip_t *g, int r, int j) {
  if (r == g->rank)
    return (const float *)g->send + g->slice_at;
  const float *peer = qgmd__gossip_peer_slot(g, j, 0);
  return peer ? peer + g->slice_at : g->parts + (size_t)r * g->slice_len;
}

/* Where this node's summed slice goes: its window, when a peer on the
 * host reads it there, or its place in the sum. */
static float *own_sum(qgmd_gossip_t *g) {
  return g->own_slot[1] ? g->own_slot[1] : g->sum + g->slice_at;
}

void qgmd__global_reduce(qgmd_gossip_t *g) {
  qgmd__gossip_acquire(g);
  float *out = own_sum(g);
  const int n = g->degree + 1;
  for (int r = 0, j = 0; r < n; r++) {
    const float *from = slice_of(g, r, j);
    if (r == 0)
      qgm_vec_copy(out, from, g->slice_len);
    else
      qgm_vec_axpy(out, 1.0f, from, g->slice_len);
    j += r != g->rank;
  }
}

/* Every other node gets this node's summed slice; theirs arrive in their
 * places in the sum, or are announced. */
int qgmd__global_post_sums(qgmd_gossip_t *g) {
  const int n = g->degree + 1, k = g->degree;
  const float *mine = own_sum(g);
  const void *announce = NULL;
  for (int j = 0; j < k; j++) {
    const int peer = g->peers[j];
    const int here = qgmd__gossip_peer_slot(g, j, 0) != NULL;
    if (here) {
      if (!announce)
        announce = qgmd__gossip_announce(g);
      exchange_numbers(g, j, announce, QGMD_SUM_SHARE_TAG);
    } else {
      size_t at, len; /* the peer's slice */
      qgm_host_slice(g->len, n, peer, &at, &len);
      MPI_Irecv(g->sum + at, (int)len, MPI_FLOAT, peer, QGMD_SUM_SHARE_TAG,
                MPI_COMM_WORLD, &g->requests[j]);
      MPI_Isend(mine, (int)g->slice_len, MPI_FLOAT, peer, QGMD_SUM_SHARE_TAG,
                MPI_COMM_WORLD, &g->requests[k + j]);
    }
    qgmd__gossip_count(g, peer, (double)g->slice_len * sizeof(float),
                       here);
  }
  return g->nrequests = 2 * k;
}

/* The whole sum in g->sum: the slices read in place are copied in. */
void qgmd__global_assemble(qgmd_gossip_t *g) {
  if (!g->own_slot[1])
    return;
  qgmd__gossip_acquire(g);
  const int n = g->degree + 1;
  memcpy(g->sum + g->slice_at, g->own_slot[1], g->slice_len * sizeof(float));
  for (int j = 0; j < g->degree; j++) {
    const float *slice = qgmd__gossip_peer_slot(g, j, 1);
    if (!slice)
      continue;
    size_t at, len;
    qgm_host_slice(g->len, n, g->peers[j], &at, &len);
    memcpy(g->sum + at, slice, len * sizeof(float));
  }
}
