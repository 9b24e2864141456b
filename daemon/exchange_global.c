/* exchange_global.c - the all-reduce baseline's mean over all nodes
 * (see exchange.h), summed as one fixed tree (qgm_vec_tree_sum over the
 * ranks in order), so that it has the same bits on any placement, and
 * sent so that each host link carries about 2 (H - 1) / H of the vector
 * each way a round, H the number of hosts.
 *
 * The ranks form groups: aligned blocks of G consecutive ranks on one
 * host each, G the largest power of two that allows it (all n ranks when
 * they share one host; 1 when no two consecutive ranks do). A block of
 * 2^j ranks is a subtree of the tree, so a group's sum is part of the
 * whole one. Slot s of a group (rank % G) owns slice s of the vector
 * (qgm_host_slice of G parts). A round has these phases:
 *
 *   group sum    slot s sums slice s over its group (the messages read in
 *                place from the host's window, or received)
 *   reduce       slot s of every group sums slice s over the groups' sums,
 *                each keeping a part of it (exchange_global_groups.c)
 *   gather       the slots s of the groups gather the summed parts
 *   share        the group's slots share their slices (in place, or
 *                received) and each assembles the whole sum
 *
 * Only reduce and gather cross between groups: each of a group's G slots
 * sends (H' - 1) / H' of its slice in each (H' = n / G groups),
 * 2 (H' - 1) / H' of the vector for the group. On one host there is one
 * group and those phases are empty. Each phase is point to point and
 * posted at once (the loop sleeps between its tests of MPI; Open MPI's own
 * non-blocking all-reduce advanced one of its steps per test).
 *
 * Between nodes of one group nothing travels but the round's number: the
 * message and the summed slice are read in place from the host's window
 * (qgmd_exchange_share_host), where own_slot[0] is the node's message and
 * own_slot[1] its slice of the sum. One slot each suffices: a node writes
 * its message again only after every node of its group announced its
 * summed slice of the round, which each did after reading the messages;
 * and it writes its summed slice again only after every node of the group
 * announced its next message, which each did after reading the sums. */
#include <stdlib.h>
#include <string.h>

#include "exchange_global.h"
#include "mpi_tags.h"

enum phase {
  PHASE_GROUP_SUM = 1,
  PHASE_GROUPS, /* reduce and gather, between groups */
  PHASE_SHARE,
};

static qgmd_global_t *global_of(const qgmd_exchange_t *x) {
  return x->kind_state;
}

/* The largest group size the placement allows (host_of is every rank's
 * host, the same on all ranks). */
static int group_size(const int *host_of, int n) {
  int one_host = 1;
  for (int r = 0; host_of && r < n; r++)
    one_host &= host_of[r] == host_of[0];
  if (!host_of || one_host)
    return host_of ? n : 1;
  int g = 1;
  while (n % (2 * g) == 0) {
    int fits = 1;
    for (int r = 0; fits && r < n; r++)
      fits = host_of[r] == host_of[r - r % (2 * g)];
    if (!fits)
      break;
    g *= 2;
  }
  return g;
}

int qgmd__global_peer(const qgmd_exchange_t *x, int r) {
  return r < x->rank ? r : r - 1;
}

static int in_group(const qgmd_exchange_t *x, int j) {
  const qgmd_global_t *gl = global_of(x);
  return x->peers[j] / gl->group_size == gl->group;
}

/* Slice s of the vector. */
static void slice(const qgmd_exchange_t *x, int s, size_t *at, size_t *len) {
  qgm_host_slice(x->len, global_of(x)->group_size, s, at, len);
}

static int init(qgmd_exchange_t *x) {
  const int n = qgm_topology_nodes(x->topology);
  qgmd_global_t *gl = calloc(1, sizeof *gl);
  if (!gl)
    return QGM_ENOMEM;
  x->kind_state = gl;
  gl->group_size = group_size(x->host_of, n);
  gl->groups = n / gl->group_size;
  gl->group = x->rank / gl->group_size;
  gl->slot = x->rank % gl->group_size;
  for (int r = 0, j = 0; r < n; r++)
    if (r != x->rank)
      x->peers[j++] = r;
  x->degree = n - 1;
  slice(x, gl->slot, &x->slice_at, &x->slice_len);
  const size_t room = x->slice_len + 1;
  gl->sum = malloc(x->len * sizeof(float));
  gl->group_parts = malloc((size_t)gl->group_size * room * sizeof(float));
  gl->group_sum = malloc(room * sizeof(float));
  if (!gl->sum || !gl->group_parts || !gl->group_sum)
    return QGM_ENOMEM;
  return qgmd__groups_init(x);
}

/* Its window, when a peer of the group reads it there, or its own
 * buffer. */
float *qgmd__global_sum(const qgmd_exchange_t *x) {
  return x->own_slot[1] ? x->own_slot[1] : global_of(x)->group_sum;
}

void qgmd__global_clear(qgmd_exchange_t *x) {
  for (int j = 0; j < 2 * x->degree; j++)
    x->requests[j] = MPI_REQUEST_NULL;
}

int qgmd__global_posted(qgmd_exchange_t *x, int any) {
  return x->nrequests = any ? 2 * x->degree : 0;
}

/* With peer j of the group on this host: the round's numbers, its into
 * ready[j] and this node's (number) to it. */
static void exchange_numbers(qgmd_exchange_t *x, int j, const void *number,
                             int tag) {
  MPI_Irecv(&x->ready[j], 1, MPI_UINT64_T, x->peers[j], tag, MPI_COMM_WORLD,
            &x->requests[j]);
  MPI_Isend(number, 1, MPI_UINT64_T, x->peers[j], tag, MPI_COMM_WORLD,
            &x->requests[x->degree + j]);
}

/* The peer index of slot t of this node's group (t is not its own). */
static int group_peer(const qgmd_exchange_t *x, int t) {
  const qgmd_global_t *gl = global_of(x);
  return qgmd__global_peer(x, gl->group * gl->group_size + t);
}

/* Every other node of the group gets its slice of the message; this
 * node's slice of theirs arrives in group_parts (by slot), or is
 * announced. */
static int post_group_sum(qgmd_exchange_t *x) {
  qgmd_global_t *gl = global_of(x);
  const void *announce = NULL;
  qgmd__global_clear(x);
  for (int t = 0; t < gl->group_size; t++) {
    if (t == gl->slot)
      continue;
    const int j = group_peer(x, t);
    size_t at, len; /* member t's slice */
    slice(x, t, &at, &len);
    const int here = qgmd__exchange_peer_slot(x, j, 0) != NULL;
    if (here) {
      if (!announce)
        announce = qgmd__exchange_publish(x);
      exchange_numbers(x, j, announce, QGMD_SUM_SLICE_TAG);
    } else {
      MPI_Irecv(gl->group_parts + (size_t)t * (x->slice_len + 1),
                (int)x->slice_len, MPI_FLOAT, x->peers[j], QGMD_SUM_SLICE_TAG,
                MPI_COMM_WORLD, &x->requests[j]);
      MPI_Isend((const float *)x->send + at, (int)len, MPI_FLOAT, x->peers[j],
                QGMD_SUM_SLICE_TAG, MPI_COMM_WORLD,
                &x->requests[x->degree + j]);
    }
    qgmd__exchange_count(x, x->peers[j], (double)len * sizeof(float), here);
  }
  return qgmd__global_posted(x, gl->group_size > 1);
}

/* This node's slice summed over its group, by slot. */
static void sum_group(qgmd_exchange_t *x) {
  qgmd_global_t *gl = global_of(x);
  qgmd__exchange_acquire(x);
  const float *from[gl->group_size];
  for (int t = 0; t < gl->group_size; t++) {
    if (t == gl->slot) {
      from[t] = (const float *)x->send + x->slice_at;
      continue;
    }
    const float *peer = qgmd__exchange_peer_slot(x, group_peer(x, t), 0);
    from[t] = peer ? peer + x->slice_at
                   : gl->group_parts + (size_t)t * (x->slice_len + 1);
  }
  qgm_vec_tree_sum(qgmd__global_sum(x), from, gl->group_size, x->slice_len);
}

/* Every other node of the group gets this node's summed slice; theirs
 * arrive in their places in the sum, or are announced. */
static int post_share(qgmd_exchange_t *x) {
  qgmd_global_t *gl = global_of(x);
  const float *mine = qgmd__global_sum(x);
  const void *announce = NULL;
  qgmd__global_clear(x);
  for (int t = 0; t < gl->group_size; t++) {
    if (t == gl->slot)
      continue;
    const int j = group_peer(x, t);
    const int here = qgmd__exchange_peer_slot(x, j, 0) != NULL;
    if (here) {
      if (!announce)
        announce = qgmd__exchange_announce(x);
      exchange_numbers(x, j, announce, QGMD_SUM_SHARE_TAG);
    } else {
      size_t at, len; /* member t's slice */
      slice(x, t, &at, &len);
      MPI_Irecv(gl->sum + at, (int)len, MPI_FLOAT, x->peers[j],
                QGMD_SUM_SHARE_TAG, MPI_COMM_WORLD, &x->requests[j]);
      MPI_Isend(mine, (int)x->slice_len, MPI_FLOAT, x->peers[j],
                QGMD_SUM_SHARE_TAG, MPI_COMM_WORLD,
                &x->requests[x->degree + j]);
    }
    qgmd__exchange_count(x, x->peers[j], (double)x->slice_len * sizeof(float),
                         here);
  }
  return qgmd__global_posted(x, gl->group_size > 1);
}

/* The whole sum: this node's slice, and those read in place. */
static void assemble(qgmd_exchange_t *x) {
  qgmd_global_t *gl = global_of(x);
  qgmd__exchange_acquire(x);
  memcpy(gl->sum + x->slice_at, qgmd__global_sum(x),
         x->slice_len * sizeof(float));
  for (int t = 0; t < gl->group_size; t++) {
    if (t == gl->slot)
      continue;
    const int j = group_peer(x, t);
    const float *summed = qgmd__exchange_peer_slot(x, j, 1);
    if (!summed)
      continue;
    size_t at, len;
    slice(x, t, &at, &len);
    memcpy(gl->sum + at, summed, len * sizeof(float));
  }
}

static int start(qgmd_exchange_t *x) {
  x->phase = PHASE_GROUP_SUM;
  int n = post_group_sum(x);
  return n > 0 ? n : qgmd_exchange_advance(x);
}

static int advance(qgmd_exchange_t *x) {
  int n = 0;
  while (n == 0) {
    switch (x->phase) {
    case PHASE_GROUP_SUM:
      sum_group(x);
      x->phase = PHASE_GROUPS;
      n = qgmd__groups_start(x);
      break;
    case PHASE_GROUPS:
      if ((n = qgmd__groups_advance(x)) == 0) {
        x->phase = PHASE_SHARE;
        n = post_share(x);
      }
      break;
    default:
      assemble(x);
      x->phase = 0;
      return 0;
    }
  }
  return n;
}

static void finish(qgmd_exchange_t *x, qgm_optim_t *o, float lr,
                   const float *base) {
  (void)base; /* overlap and local steps are refused for the mean */
  qgm_vec_scale_copy(qgm_optim_mix_buffer(o),
                     (float)(1.0 / qgm_topology_nodes(x->topology)),
                     global_of(x)->sum, x->len);
  qgm_optim_after_gossip(o, lr);
}

static int shares_host(const qgmd_exchange_t *x) {
  return global_of(x)->group_size > 1;
}

static void free_global(qgmd_exchange_t *x) {
  qgmd_global_t *gl = global_of(x);
  if (gl) {
    free(gl->sum);
    free(gl->group_parts);
    free(gl->group_sum);
    free(gl->parts);
    free(gl);
  }
}

const qgmd_exchange_ops_t qgmd_exchange_global_mean = {
    .init = init, .start = start, .advance = advance, .finish = finish,
    .shares_host = shares_host, .in_place_peer = in_group,
    .free = free_global};
