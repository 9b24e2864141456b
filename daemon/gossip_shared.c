/* gossip_shared.c - the messages between peers of one host, read in place
 * (see gossip.h).
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
 * (qgmd_gossip_outbox); otherwise publishing copies it there.
 *
 * What this saves is the transport's copy: Open MPI moves a large message
 * between processes of one host with process_vm_readv, one system call
 * per message that pins the sender's pages and copies them into the
 * receiver's buffer, which the mix then reads again. */
#include <stdlib.h>
#include <string.h>

#include "gossip.h"
#include "gossip_shared.h"
#include "log.h"

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Whether every node's senders are its receivers: what the two slots'
 * argument needs. The same answer on every rank. */
static int symmetric(const qgm_topology_t *t) {
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

static int global(const qgmd_gossip_t *g) {
  return g->combine == QGM_COMBINE_GLOBAL_MEAN;
}

static int eligible(const qgmd_gossip_t *g) {
  const qgm_topology_t *t = g->topology;
  if (global(g))
    return qgm_topology_nodes(t) > 1;
  return g->combine == QGM_COMBINE_NEIGHBOURS && !g->choco && !g->outbox &&
         qgm_topology_hosts(t) == 0 && qgm_topology_period(t) == 1 &&
         g->max_degree > 0 && symmetric(t);
}

int qgmd_gossip_share_host(qgmd_gossip_t *g, MPI_Comm host) {
  if (!eligible(g))
    return 0;
  double self;
  /* The peers, in the order the exchange lists them: every other node in
   * rank order (qgmd__global_init) or the graph's neighbours. */
  const int k = global(g) ? g->degree
                          : qgm_topology_neighbors(g->topology, g->rank, 0,
                                                   g->peers, g->weights,
                                                   &self);
  /* Each peer's rank on the host, or MPI_UNDEFINED on another host. */
  int here[k > 0 ? k : 1], any = 0;
  MPI_Group world_group, host_group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Comm_group(host, &host_group);
  MPI_Group_translate_ranks(world_group, k, g->peers, host_group, here);
  MPI_Group_free(&world_group);
  MPI_Group_free(&host_group);
  for (int j = 0; j < k; j++)
    any |= here[j] != MPI_UNDEFINED;
  /* The lists first, and agreed on: the window is collective. */
  const size_t slots = (size_t)(k > 0 ? k : 1);
  const float *(*peer_slot)[2] = calloc(slots, sizeof *peer_slot);
  g->from = calloc(slots, sizeof *g->from);
  g->ready = calloc(slots, sizeof *g->ready);
  int ok = peer_slot && g->from && g->ready, all_ok;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, host);
  if (!all_ok) {
    free(peer_slot);
    return QGM_ENOMEM; /* qgmd_gossip_free frees from and ready */
  }
  /* Every rank of the host takes part; one without peers here adds no
   * slots. Separate segments keep each node's slots on its own pages. */
  const size_t second = global(g) ? g->slice_len : g->len;
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  float *base = NULL;
  MPI_Win_allocate_shared(
      any ? (MPI_Aint)((g->len + second) * sizeof(float)) : 0,
      (int)sizeof(float), info, host, &base, &g->window);
  MPI_Info_free(&info);
  MPI_Win_lock_all(MPI_MODE_NOCHECK, g->window); /* for MPI_Win_sync */
  g->peer_slot = peer_slot;
  g->shared_peers = k;
  if (!any)
    return 0;
  g->own_slot[0] = base;
  g->own_slot[1] = base + g->len;
  for (int j = 0; j < k; j++) {
    if (here[j] == MPI_UNDEFINED)
      continue;
    MPI_Aint size;
    int unit;
    float *slots_j = NULL;
    MPI_Win_shared_query(g->window, here[j], &size, &unit, &slots_j);
    g->peer_slot[j][0] = slots_j;
    g->peer_slot[j][1] = slots_j + g->len;
    if (!global(g)) {
      free(g->recv[j]); /* its messages never come by MPI */
      g->recv[j] = NULL;
    }
  }
  return 0;
}

void qgmd__gossip_shared_free(qgmd_gossip_t *g) {
  free(g->from);
  free(g->ready);
  if (!g->peer_slot)
    return; /* no window: peer_slot is made with it */
  MPI_Win_unlock_all(g->window);
  MPI_Win_free(&g->window); /* collective: every rank of the host is here */
  free(g->peer_slot);
}

int qgmd__gossip_in_place(const qgmd_gossip_t *g, int peer) {
  if (!g->own_slot[0])
    return 0;
  for (int j = 0; j < g->shared_peers; j++)
    if (g->peers[j] == peer)
      return g->peer_slot[j][0] != NULL;
  return 0;
}

const float *qgmd__gossip_peer_slot(const qgmd_gossip_t *g, int j,
                                    int which) {
  return g->own_slot[0] ? g->peer_slot[j][which] : NULL;
}

float *qgmd_gossip_outbox(qgmd_gossip_t *g, uint64_t round) {
  if (!g->own_slot[0])
    return NULL;
  return global(g) ? g->own_slot[0] : g->own_slot[round & 1];
}

const void *qgmd__gossip_announce(qgmd_gossip_t *g) {
  MPI_Win_sync(g->window);
  return &g->ready_out;
}

const void *qgmd__gossip_publish(qgmd_gossip_t *g) {
  float *slot = qgmd_gossip_outbox(g, g->round);
  if (g->send != slot)
    memcpy(slot, g->send, g->len * sizeof(float));
  return qgmd__gossip_announce(g);
}

void qgmd__gossip_acquire(qgmd_gossip_t *g) {
  if (!g->own_slot[0])
    return;
  MPI_Win_sync(g->window);
  for (int j = 0; j < g->degree; j++)
    if (g->peer_slot[j][0] && g->ready[j] != g->round) {
      LOG(LOG_ERROR, "rank %d announced round %llu in round %llu",
          g->peers[j], (unsigned long long)g->ready[j],
          (unsigned long long)g->round);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

const float *const *qgmd__gossip_messages(qgmd_gossip_t *g) {
  if (!g->own_slot[0])
    return (const float *const *)g->recv;
  qgmd__gossip_acquire(g);
  for (int j = 0; j < g->degree; j++)
    g->from[j] = g->peer_slot[j][0] ? g->peer_slot[j][g->round & 1]
                                    : g->recv[j];
  return g->from;
}
