/* exchange_global.c - the all-reduce baseline's mean over all nodes,
 * summed in rank order (see exchange.h).
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
 * (qgmd_exchange_share_host), where own_slot[0] is the node's message and
 * own_slot[1] its slice of the sum. One slot each suffices: a node writes
 * its message again only after every node announced its summed slice of
 * the round, which each did after reading the messages; and it writes its
 * summed slice again only after every node announced its next message,
 * which each did after reading the sums. */
#include <stdlib.h>
#include <string.h>

#include "exchange_kind.h"
#include "mpi_tags.h"

/* With peer j on this host: the round's numbers, its into ready[j] and
 * this node's (number) to it, as requests j and degree + j. */
static void exchange_numbers(qgmd_exchange_t *x, int j, const void *number,
                             int tag) {
  MPI_Irecv(&x->ready[j], 1, MPI_UINT64_T, x->peers[j], tag, MPI_COMM_WORLD,
            &x->requests[j]);
  MPI_Isend(number, 1, MPI_UINT64_T, x->peers[j], tag, MPI_COMM_WORLD,
            &x->requests[x->degree + j]);
}

static int init(qgmd_exchange_t *x) {
  const int n = qgm_topology_nodes(x->topology);
  qgm_host_slice(x->len, n, x->rank, &x->slice_at, &x->slice_len);
  for (int r = 0, j = 0; r < n; r++)
    if (r != x->rank)
      x->peers[j++] = r;
  x->degree = n - 1;
  x->sum = malloc(x->len * sizeof(float));
  x->parts = malloc(((size_t)n * x->slice_len + 1) * sizeof(float));
  return x->sum && x->parts ? 0 : QGM_ENOMEM;
}

/* Every other node gets its slice of the message; this node's slice of
 * every other node's arrives in parts (by sender), or is announced. */
static int post_slices(qgmd_exchange_t *x) {
  const int n = x->degree + 1, k = x->degree;
  const void *announce = NULL;
  for (int j = 0; j < k; j++) {
    const int peer = x->peers[j];
    size_t at, len; /* the peer's slice */
    qgm_host_slice(x->len, n, peer, &at, &len);
    const int here = qgmd__exchange_peer_slot(x, j, 0) != NULL;
    if (here) {
      if (!announce)
        announce = qgmd__exchange_publish(x);
      exchange_numbers(x, j, announce, QGMD_SUM_SLICE_TAG);
    } else {
      MPI_Irecv(x->parts + (size_t)peer * x->slice_len, (int)x->slice_len,
                MPI_FLOAT, peer, QGMD_SUM_SLICE_TAG, MPI_COMM_WORLD,
                &x->requests[j]);
      MPI_Isend((const float *)x->send + at, (int)len, MPI_FLOAT, peer,
                QGMD_SUM_SLICE_TAG, MPI_COMM_WORLD, &x->requests[k + j]);
    }
    qgmd__exchange_count(x, peer, (double)len * sizeof(float), here);
  }
  return x->nrequests = 2 * k;
}

/* This node's slice of the messages, in place or received, by rank. */
static const float *slice_of(qgmd_exchange_t *x, int r, int j) {
  if (r == x->rank)
    return (const float *)x->send + x->slice_at;
  const float *peer = qgmd__exchange_peer_slot(x, j, 0);
  return peer ? peer + x->slice_at : x->parts + (size_t)r * x->slice_len;
}

/* Where this node's summed slice goes: its window, when a peer on the
 * host reads it there, or its place in the sum. */
static float *own_sum(qgmd_exchange_t *x) {
  return x->own_slot[1] ? x->own_slot[1] : x->sum + x->slice_at;
}

static void reduce(qgmd_exchange_t *x) {
  qgmd__exchange_acquire(x);
  float *out = own_sum(x);
  const int n = x->degree + 1;
  for (int r = 0, j = 0; r < n; r++) {
    const float *from = slice_of(x, r, j);
    if (r == 0)
      qgm_vec_copy(out, from, x->slice_len);
    else
      qgm_vec_axpy(out, 1.0f, from, x->slice_len);
    j += r != x->rank;
  }
}

/* Every other node gets this node's summed slice; theirs arrive in their
 * places in the sum, or are announced. */
static int post_sums(qgmd_exchange_t *x) {
  const int n = x->degree + 1, k = x->degree;
  const float *mine = own_sum(x);
  const void *announce = NULL;
  for (int j = 0; j < k; j++) {
    const int peer = x->peers[j];
    const int here = qgmd__exchange_peer_slot(x, j, 0) != NULL;
    if (here) {
      if (!announce)
        announce = qgmd__exchange_announce(x);
      exchange_numbers(x, j, announce, QGMD_SUM_SHARE_TAG);
    } else {
      size_t at, len; /* the peer's slice */
      qgm_host_slice(x->len, n, peer, &at, &len);
      MPI_Irecv(x->sum + at, (int)len, MPI_FLOAT, peer, QGMD_SUM_SHARE_TAG,
                MPI_COMM_WORLD, &x->requests[j]);
      MPI_Isend(mine, (int)x->slice_len, MPI_FLOAT, peer, QGMD_SUM_SHARE_TAG,
                MPI_COMM_WORLD, &x->requests[k + j]);
    }
    qgmd__exchange_count(x, peer, (double)x->slice_len * sizeof(float),
                       here);
  }
  return x->nrequests = 2 * k;
}

/* The whole sum in x->sum: the slices read in place are copied in. */
static void assemble(qgmd_exchange_t *x) {
  if (!x->own_slot[1])
    return;
  qgmd__exchange_acquire(x);
  const int n = x->degree + 1;
  memcpy(x->sum + x->slice_at, x->own_slot[1], x->slice_len * sizeof(float));
  for (int j = 0; j < x->degree; j++) {
    const float *slice = qgmd__exchange_peer_slot(x, j, 1);
    if (!slice)
      continue;
    size_t at, len;
    qgm_host_slice(x->len, n, x->peers[j], &at, &len);
    memcpy(x->sum + at, slice, len * sizeof(float));
  }
}

enum phase {
  PHASE_SUM_SLICES = 1, /* the slices each node sums */
  PHASE_SUM_SHARE,      /* the summed slices, to every node */
};

static int start(qgmd_exchange_t *x) {
  x->phase = PHASE_SUM_SLICES;
  int n = post_slices(x);
  return n > 0 ? n : qgmd_exchange_advance(x);
}

static int advance(qgmd_exchange_t *x) {
  if (x->phase == PHASE_SUM_SLICES) {
    reduce(x);
    x->phase = PHASE_SUM_SHARE;
    int n = post_sums(x);
    if (n > 0)
      return n;
  }
  assemble(x);
  x->phase = 0;
  return 0;
}

static void finish(qgmd_exchange_t *x, qgm_optim_t *o, float lr,
                   const float *base) {
  (void)base; /* overlap and local steps are refused for the mean */
  qgm_vec_scale_copy(qgm_optim_mix_buffer(o),
                     (float)(1.0 / qgm_topology_nodes(x->topology)), x->sum,
                     x->len);
  qgm_optim_after_gossip(o, lr);
}

static int shares_host(const qgmd_exchange_t *x) {
  return qgm_topology_nodes(x->topology) > 1;
}

static void free_global(qgmd_exchange_t *x) {
  free(x->sum);
  free(x->parts);
}

const qgmd_exchange_ops_t qgmd_exchange_global_mean = {
    .init = init, .start = start, .advance = advance, .finish = finish,
    .shares_host = shares_host, .free = free_global};
