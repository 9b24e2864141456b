/* exchange_shared.c - the messages between peers of one host, read in
 * place (see exchange.h).
 *
 * A node writes its message of round r into its slot r % 2 of the host's
 * window and sends each peer on the host the number r; the peer, once it
 * has the number, reads the slot in its mix. Two slots suffice: the node
 * writes slot r % 2 again in round r + 2, after its exchange of round
 * r + 1 completed; that needed every peer's number r + 1, and a peer
 * sends it only after its mix of round r (the graph is static and
 * symmetric: the peers a node reads are the peers that wait for it).
 * MPI_Win_sync orders the slot's stores before the number is sent, and
 * the reader's loads after it arrived.
 *
 * The local step writes its message straight into the slot where it can
 * (qgmd_exchange_outbox); otherwise publishing copies it there.
 *
 * What this saves is the transport's copy: Open MPI moves a large message
 * between processes of one host with process_vm_readv, one system call
 * per message that pins the sender's pages and copies them into the
 * receiver's buffer, which the mix then reads again. */
#include <stdlib.h>
#include <string.h>

#include "exchange_kind.h"
#include "log.h"

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

int qgmd__exchange_symmetric(const qgm_topology_t *t) {
  const int n = qgm_topology_nodes(t), k = qgm_topology_max_degree(t) + 1;
  int in[k], out[k]; /* no allocation that could fail on one rank only */
  double w[k], self;
  int same = 1;
  for (int node = 0; same && node < n; node++) {
    int a = qgm_topology_neighbors(t, node, 0, in, w, &self);
    int b = qgm_topology_send_peers(t, node, 0, out);
    qsort(in, (size_t)a, sizeof *in, cmp_int);
    qsort(out, (size_t)b, sizeof *out, cmp_int);
    same = a == b && memcmp(in, out, (size_t)a * sizeof *in) == 0;
  }
  return same;
}

/* The two layouts of the slots: the global mean's message and summed
 * slice, or neighbour mixing's messages of even and odd rounds. */
static int global(const qgmd_exchange_t *x) {
  return x->plan.kind == QGMD_EXCHANGE_GLOBAL_MEAN;
}

int qgmd_exchange_share_host(qgmd_exchange_t *x, MPI_Comm host) {
  if (!x->ops->shares_host || !x->ops->shares_host(x))
    return 0;
  double self;
  /* The peers, in the order the exchange lists them: every other node in
   * rank order (qgmd__global_init) or the graph's neighbours. */
  const int k = global(x) ? x->degree
                          : qgm_topology_neighbors(x->topology, x->rank, 0,
                                                   x->peers, x->weights,
                                                   &self);
  /* Each peer's rank on the host, or MPI_UNDEFINED on another host. */
  int here[k > 0 ? k : 1], any = 0;
  MPI_Group world_group, host_group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Comm_group(host, &host_group);
  MPI_Group_translate_ranks(world_group, k, x->peers, host_group, here);
  MPI_Group_free(&world_group);
  MPI_Group_free(&host_group);
  for (int j = 0; j < k; j++) {
    if (x->ops->in_place_peer && !x->ops->in_place_peer(x, j))
      here[j] = MPI_UNDEFINED; /* on the host, but read from MPI */
    any |= here[j] != MPI_UNDEFINED;
  }
  /* The lists first, and agreed on: the window is collective. */
  const size_t slots = (size_t)(k > 0 ? k : 1);
  const float *(*peer_slot)[2] = calloc(slots, sizeof *peer_slot);
  x->from = calloc(slots, sizeof *x->from);
  x->ready = calloc(slots, sizeof *x->ready);
  int ok = peer_slot && x->from && x->ready, all_ok;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, host);
  if (!all_ok) {
    free(peer_slot);
    return QGM_ENOMEM; /* qgmd_exchange_free frees from and ready */
  }
  /* Every rank of the host takes part; one without peers here adds no
   * slots. Separate segments keep each node's slots on its own pages. */
  const size_t second = global(x) ? x->slice_len : x->len;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  float *base = NULL;
  MPI_Win_allocate_shared(
      any ? (MPI_Aint)((x->len + second) * sizeof(float)) : 0,
      (int)sizeof(float), info, host, &base, &x->window);
  MPI_Info_free(&info);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, x->window); /* for MPI_Win_sync */
  x->peer_slot = peer_slot;
  x->shared_peers = k;
  if (!any)
    return 0;
  x->own_slot[0] = base;
  x->own_slot[1] = base + x->len;
  for (int j = 0; j < k; j++) {
    if (here[j] == MPI_UNDEFINED)
      continue;
    MPI_Aint size;
    int unit;
    float *slots_j = NULL;
    MPI_Win_shared_query(x->window, here[j], &size, &unit, &slots_j);
    x->peer_slot[j][0] = slots_j;
    x->peer_slot[j][1] = slots_j + x->len;
    if (!global(x)) {
      free(x->recv[j]); /* its messages never come by MPI */
      x->recv[j] = NULL;
    }
  }
  return 0;
}

void qgmd__exchange_shared_free(qgmd_exchange_t *x) {
  free(x->from);
  free(x->ready);
  if (!x->peer_slot)
    return; /* no window: peer_slot is made with it */
  MPI_Win_unlock_all(x->window);
  MPI_Win_free(&x->window); /* collective: every rank of the host is here */
  free(x->peer_slot);
}

int qgmd__exchange_in_place(const qgmd_exchange_t *x, int peer) {
  if (!x->own_slot[0])
    return 0;
  for (int j = 0; j < x->shared_peers; j++)
    if (x->peers[j] == peer)
      return x->peer_slot[j][0] != NULL;
  return 0;
}

const float *qgmd__exchange_peer_slot(const qgmd_exchange_t *x, int j,
                                    int which) {
  return x->own_slot[0] ? x->peer_slot[j][which] : NULL;
}

float *qgmd_exchange_outbox(qgmd_exchange_t *x, uint64_t round) {
  if (!x->own_slot[0])
    return NULL;
  return global(x) ? x->own_slot[0] : x->own_slot[round & 1];
}

const void *qgmd__exchange_announce(qgmd_exchange_t *x) {
  MPI_Win_sync(x->window);
  return &x->ready_out;
}

const void *qgmd__exchange_publish(qgmd_exchange_t *x) {
  float *slot = qgmd_exchange_outbox(x, x->round);
  if (x->send != slot)
    memcpy(slot, x->send, x->len * sizeof(float));
  return qgmd__exchange_announce(x);
}

void qgmd__exchange_acquire(qgmd_exchange_t *x) {
  if (!x->own_slot[0])
    return;
  MPI_Win_sync(x->window);
  for (int j = 0; j < x->degree; j++)
    if (x->peer_slot[j][0] && x->ready[j] != x->round) {
      LOG(LOG_ERROR, "rank %d announced round %llu in round %llu",
          x->peers[j], (unsigned long long)x->ready[j],
          (unsigned long long)x->round);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

const float *const *qgmd__exchange_messages(qgmd_exchange_t *x) {
  if (!x->own_slot[0])
    return (const float *const *)x->recv;
  qgmd__exchange_acquire(x);
  for (int j = 0; j < x->degree; j++)
    x->from[j] = x->peer_slot[j][0] ? x->peer_slot[j][x->round & 1]
                                    : x->recv[j];
  return x->from;
}
