/* gossip.c - see gossip.h. */
#include "gossip.h"

#include <stdlib.h>
#include <string.h>

#include "gossip_shared.h"
#include "log.h"
#include "mpi_tags.h"

enum phase {
  PHASE_IDLE,
  PHASE_PEERS,      /* flat: the messages of the round's peers */
  PHASE_HOST_MEAN,  /* hierarchical: slices of the host's messages */
  PHASE_HOSTS,      /* the slice of the mean, to and from other hosts */
  PHASE_HOST_SHARE, /* the mixed slices, to and from the host's nodes */
  PHASE_SUM_SLICES, /* global mean: the slices each node sums */
  PHASE_SUM_SHARE,  /* global mean: the summed slices, to every node */
};

static int hierarchical(const qgmd_gossip_t *g) {
  return g->combine != QGM_COMBINE_GLOBAL_MEAN &&
         qgm_topology_hosts(g->topology) > 0;
}

void qgmd__gossip_count(qgmd_gossip_t *g, int to, double bytes,
                        int in_place) {
  g->bytes_sent += bytes;
  if (g->host_of && g->host_of[to] != g->host_of[g->rank])
    g->bytes_between_hosts += bytes;
  if (in_place)
    g->bytes_in_place += bytes;
}

/* What every exchange holds: the peers' lists and requests, the global
 * sum, or a hierarchical topology's slice and its host's buffers. The
 * receive buffers are the caller's to size (alloc_recv). */
static int init(qgmd_gossip_t *g, const qgm_topology_t *topology,
                qgm_combine_t combine, int rank, size_t len,
                const int *host_of) {
  memset(g, 0, sizeof *g);
  g->topology = topology;
  g->combine = combine;
  g->rank = rank;
  g->len = len;
  g->host_of = host_of;
  g->max_degree = qgm_topology_max_degree(topology);
  int k = g->max_degree > 0 ? g->max_degree : 1;
  if (combine == QGM_COMBINE_GLOBAL_MEAN) /* every other node is a peer */
    k = qgm_topology_nodes(topology) > 1 ? qgm_topology_nodes(topology) - 1
                                          : 1;
  g->recv = calloc((size_t)k, sizeof *g->recv);
  g->peers = calloc((size_t)k, sizeof *g->peers);
  g->send_peers = calloc((size_t)k, sizeof *g->send_peers);
  g->weights = calloc((size_t)k, sizeof *g->weights);
  g->requests = calloc(2 * (size_t)k, sizeof *g->requests);
  if (!g->recv || !g->peers || !g->send_peers || !g->weights ||
      !g->requests)
    return QGM_ENOMEM;
  if (combine == QGM_COMBINE_GLOBAL_MEAN)
    return qgmd__global_init(g);
  if (hierarchical(g)) {
    const int per_host = qgm_topology_per_host(topology);
    g->slot = qgm_topology_host_slot(topology, rank);
    qgm_host_slice(len, per_host, g->slot, &g->slice_at, &g->slice_len);
    g->mean = malloc((g->slice_len + 1) * sizeof(float));
    g->mixed = malloc(len * sizeof(float));
    if (!g->mean || !g->mixed)
      return QGM_ENOMEM;
  }
  return 0;
}

/* One receive buffer of `bytes` per possible peer. */
static int alloc_recv(qgmd_gossip_t *g, size_t bytes) {
  for (int j = 0; j < g->max_degree; j++)
    if (!(g->recv[j] = malloc(bytes)))
      return QGM_ENOMEM;
  return 0;
}

/* The bytes of a plain message: on a hierarchical topology a slice of
 * the host's messages or of a neighbouring host's mean (never more of
 * them than peers), otherwise a whole vector. */
static size_t plain_recv_bytes(const qgmd_gossip_t *g) {
  return (hierarchical(g) ? g->slice_len + 1 : g->len) * sizeof(float);
}

int qgmd_gossip_init(qgmd_gossip_t *g, const qgm_topology_t *topology,
                     qgm_combine_t combine, int rank, size_t len,
                     const int *host_of) {
  int rc = init(g, topology, combine, rank, len, host_of);
  if (rc == 0 && combine != QGM_COMBINE_GLOBAL_MEAN)
    rc = alloc_recv(g, plain_recv_bytes(g));
  return rc;
}

int qgmd_gossip_init_compressed(qgmd_gossip_t *g,
                                const qgm_topology_t *topology, int rank,
                                size_t len, qgm_choco_config_t cc,
                                const float *x0, const int *host_of) {
  int rc = init(g, topology, QGM_COMBINE_NEIGHBOURS, rank, len, host_of);
  if (rc != 0)
    return rc;
  rc = qgm_choco_create_node(topology, rank, len, cc, x0, &g->choco);
  if (rc != 0)
    return rc;
  const size_t wire = qgm_choco_message_bytes(g->choco);
  if (!(g->wire = malloc(wire)))
    return QGM_ENOMEM;
  const size_t plain = plain_recv_bytes(g);
  return alloc_recv(g, hierarchical(g) && plain > wire ? plain : wire);
}

float *qgmd_gossip_copies(qgmd_gossip_t *g, size_t *len) {
  *len = 0;
  return g->choco ? qgm_choco_copies(g->choco, len) : NULL;
}

int qgmd_gossip_init_outboxes(qgmd_gossip_t *g,
                              const qgm_topology_t *topology, int rank,
                              size_t len, const int *host_of) {
  if (qgm_topology_hosts(topology) > 0)
    return QGM_EINVAL; /* a host's nodes share one message between hosts */
  int rc = qgmd_gossip_init(g, topology, QGM_COMBINE_NEIGHBOURS, rank, len,
                            host_of);
  const size_t k = g->max_degree > 0 ? (size_t)g->max_degree : 1;
  if (rc == 0 && !(g->outbox = calloc(k, sizeof *g->outbox)))
    rc = QGM_ENOMEM;
  for (int j = 0; rc == 0 && j < g->max_degree; j++)
    if (!(g->outbox[j] = malloc(len * sizeof(float))))
      rc = QGM_ENOMEM;
  return rc;
}

int qgmd_gossip_send_peers(qgmd_gossip_t *g, uint64_t round) {
  return qgm_topology_send_peers(g->topology, g->rank, round, g->send_peers);
}

void qgmd_gossip_free(qgmd_gossip_t *g) {
  qgmd__gossip_shared_free(g);
  if (g->recv)
    for (int j = 0; j < g->max_degree; j++)
      free(g->recv[j]);
  if (g->outbox)
    for (int j = 0; j < g->max_degree; j++)
      free(g->outbox[j]);
  free(g->outbox);
  free(g->recv);
  free(g->sum);
  free(g->parts);
  free(g->peers);
  free(g->send_peers);
  free(g->weights);
  free(g->requests);
  free(g->mean);
  free(g->mixed);
  qgm_choco_free(g->choco);
  free(g->wire);
  memset(g, 0, sizeof *g);
}

/* -------------------------------------------------------------- flat */

/* The message of the round to the graph's peers: CHOCO's packed bytes of
 * v (which it encodes now), or v's n floats; and the room a peer's needs
 * (CHOCO's messages can be shorter than the longest their format takes). */
typedef struct message {
  const void *data;
  int count, room;
  MPI_Datatype type;
  double bytes;
} message_t;

static message_t message_of(qgmd_gossip_t *g, const float *v, size_t n) {
  if (!g->choco)
    return (message_t){v, (int)n, (int)n, MPI_FLOAT,
                       (double)n * sizeof(float)};
  size_t bytes; /* g->wire has the room */
  qgm_choco_send(g->choco, g->round, v, g->wire, &bytes);
  return (message_t){g->wire, (int)bytes,
                     (int)qgm_choco_message_bytes(g->choco), MPI_BYTE,
                     (double)bytes};
}

/* Compressed: every peer's message of the round updates its copy. */
static void receive_copies(qgmd_gossip_t *g) {
  for (int j = 0; j < g->degree; j++)
    if (qgm_choco_receive(g->choco, j, g->peers[j], g->round,
                          (const uint8_t *)g->recv[j]) != 0) {
      LOG(LOG_ERROR, "a compressed message from rank %d is malformed",
          g->peers[j]);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static int start_peers(qgmd_gossip_t *g) {
  double self; /* implied by the difference form: 1 - sum_j W_ij */
  int k = qgm_topology_neighbors(g->topology, g->rank, g->round, g->peers,
                                 g->weights, &self);
  int sends = qgmd_gossip_send_peers(g, g->round);
  const message_t m = message_of(g, g->send, g->len);
  const void *announce = NULL; /* the round's number, for in-place peers */
  for (int j = 0; j < k; j++) {
    if (qgmd__gossip_peer_slot(g, j, 0)) /* static: peer j of every round */
      MPI_Irecv(&g->ready[j], 1, MPI_UINT64_T, g->peers[j], QGMD_GOSSIP_TAG,
                MPI_COMM_WORLD, &g->requests[j]);
    else
      MPI_Irecv(g->recv[j], m.room, m.type, g->peers[j], QGMD_GOSSIP_TAG,
                MPI_COMM_WORLD, &g->requests[j]);
  }
  for (int j = 0; j < sends; j++) {
    const int to = g->send_peers[j], here = qgmd__gossip_in_place(g, to);
    if (here) {
      if (!announce)
        announce = qgmd__gossip_publish(g);
      MPI_Isend(announce, 1, MPI_UINT64_T, to, QGMD_GOSSIP_TAG,
                MPI_COMM_WORLD, &g->requests[k + j]);
    } else {
      const void *send = g->outbox ? g->outbox[j] : m.data;
      MPI_Isend(send, m.count, m.type, to, QGMD_GOSSIP_TAG, MPI_COMM_WORLD,
                &g->requests[k + j]);
    }
    qgmd__gossip_count(g, to, m.bytes, here);
  }
  g->degree = k;
  return g->nrequests = k + sends;
}

/* ------------------------------------------------------ hierarchical */

/* The exchange with the other nodes of this host, in one of two
 * directions. Gathering (the host's mean): node s gets slice s of `from`,
 * and this node receives its own slice of every other node's message into
 * recv[j]. Sharing (the mixed result): every other node gets this node's
 * slice of `from`, and this node receives node s's slice into mixed. The
 * receives are requests[0..k), the sends requests[k..2k). */
static int post_host(qgmd_gossip_t *g, const float *from, int tag,
                     int sharing) {
  const qgm_topology_t *t = g->topology;
  const int host = qgm_topology_host_of(t, g->rank);
  const int per_host = qgm_topology_per_host(t);
  const int k = per_host - 1;
  for (int s = 0, j = 0; s < per_host; s++) {
    if (s == g->slot)
      continue;
    const int peer = qgm_topology_host_member(t, host, s);
    size_t at, len; /* node s's slice */
    qgm_host_slice(g->len, per_host, s, &at, &len);
    g->peers[j] = peer;
    MPI_Irecv(sharing ? g->mixed + at : g->recv[j],
              (int)(sharing ? len : g->slice_len), MPI_FLOAT, peer, tag,
              MPI_COMM_WORLD, &g->requests[j]);
    const size_t out_at = sharing ? g->slice_at : at;
    const size_t out_len = sharing ? g->slice_len : len;
    MPI_Isend(from + out_at, (int)out_len, MPI_FLOAT, peer, tag,
              MPI_COMM_WORLD, &g->requests[k + j]);
    qgmd__gossip_count(g, peer, (double)out_len * sizeof(float), 0);
    j++;
  }
  g->degree = k;
  return g->nrequests = 2 * k;
}

/* The host's mean of this node's slice, from the slices just received. */
static void reduce_host_mean(qgmd_gossip_t *g) {
  const int per_host = qgm_topology_per_host(g->topology);
  const float *send = g->send, *from[per_host];
  for (int s = 0, k = 0; s < per_host; s++)
    from[s] = s == g->slot ? send + g->slice_at : g->recv[k++];
  qgm_vec_mean(g->mean, from, per_host, g->slice_len);
}

static int post_hosts(qgmd_gossip_t *g) {
  const qgm_topology_t *t = g->topology, *hosts = qgm_topology_host_graph(t);
  const int host = qgm_topology_host_of(t, g->rank);
  double self;
  int k = qgm_topology_neighbors(hosts, host, g->round, g->peers, g->weights,
                                 &self);
  int sends = qgm_topology_send_peers(hosts, host, g->round, g->send_peers);
  const message_t m = message_of(g, g->mean, g->slice_len);
  for (int j = 0; j < k; j++) {
    g->peers[j] = qgm_topology_host_member(t, g->peers[j], g->slot);
    MPI_Irecv(g->recv[j], m.room, m.type, g->peers[j], QGMD_GOSSIP_TAG,
              MPI_COMM_WORLD, &g->requests[j]);
  }
  for (int j = 0; j < sends; j++) {
    int to = qgm_topology_host_member(t, g->send_peers[j], g->slot);
    MPI_Isend(m.data, m.count, m.type, to, QGMD_GOSSIP_TAG, MPI_COMM_WORLD,
              &g->requests[k + j]);
    qgmd__gossip_count(g, to, m.bytes, 0);
  }
  g->degree = k;
  return g->nrequests = k + sends;
}

/* This node's slice of the host's mix: the mean gossiped with the
 * neighbouring hosts' means (in the difference form, as flat gossip), or
 * compressed, with the public copies of the hosts' slices. */
static void mix_hosts(qgmd_gossip_t *g) {
  float *out = g->mixed + g->slice_at;
  if (g->choco) {
    receive_copies(g);
    qgm_choco_mix(g->choco, out, g->mean, g->weights);
    return;
  }
  qgm_vec_gossip_mix(out, g->mean, g->mean, g->degree,
                     (const float *const *)g->recv, g->weights,
                     g->slice_len);
}

/* ------------------------------------------------------------ rounds */

int qgmd_gossip_start(qgmd_gossip_t *g, uint64_t round, const void *send) {
  g->send = send;
  g->round = round;
  g->ready_out = round; /* the last round's sends of it have completed */
  if (g->combine == QGM_COMBINE_GLOBAL_MEAN) {
    g->phase = PHASE_SUM_SLICES;
    int n = qgmd__global_post_slices(g);
    return n > 0 ? n : qgmd_gossip_advance(g);
  }
  if (!hierarchical(g)) {
    g->phase = PHASE_PEERS;
    return start_peers(g);
  }
  g->phase = PHASE_HOST_MEAN;
  int n = post_host(g, send, QGMD_HOST_MEAN_TAG, 0);
  return n > 0 ? n : qgmd_gossip_advance(g);
}

int qgmd_gossip_advance(qgmd_gossip_t *g) {
  int n = 0;
  while (n == 0) {
    switch (g->phase) {
    case PHASE_HOST_MEAN:
      reduce_host_mean(g);
      g->phase = PHASE_HOSTS;
      n = post_hosts(g);
      break;
    case PHASE_SUM_SLICES:
      qgmd__global_reduce(g);
      g->phase = PHASE_SUM_SHARE;
      n = qgmd__global_post_sums(g);
      break;
    case PHASE_SUM_SHARE:
      qgmd__global_assemble(g);
      g->phase = PHASE_IDLE;
      g->nrequests = 0;
      return 0;
    case PHASE_HOSTS:
      mix_hosts(g);
      g->phase = PHASE_HOST_SHARE;
      n = post_host(g, g->mixed, QGMD_HOST_SHARE_TAG, 1);
      break;
    default:
      g->phase = PHASE_IDLE;
      g->nrequests = 0;
      return 0;
    }
  }
  return n;
}

void qgmd_gossip_mix(qgmd_gossip_t *g, float *mix, const float *base) {
  if (g->combine == QGM_COMBINE_GLOBAL_MEAN) {
    qgm_vec_scale_copy(mix, (float)(1.0 / qgm_topology_nodes(g->topology)),
                       g->sum, g->len);
    return;
  }
  const float *send = g->send;
  if (hierarchical(g)) {
    static const double one = 1.0;
    const float *mixed = g->mixed;
    if (base)
      qgm_vec_gossip_mix(mix, base, send, 1, &mixed, &one, g->len);
    else
      qgm_vec_copy(mix, mixed, g->len);
    return;
  }
  if (g->choco) {
    receive_copies(g);
    qgm_choco_mix(g->choco, mix, base ? base : send, g->weights);
    return;
  }
  qgm_vec_gossip_mix(mix, base ? base : send, send, g->degree,
                     qgmd__gossip_messages(g), g->weights, g->len);
}

void qgmd_gossip_step(qgmd_gossip_t *g, qgm_optim_t *o, float lr,
                      const float *base) {
  if (g->combine != QGM_COMBINE_NEIGHBOURS || hierarchical(g) || g->choco) {
    qgmd_gossip_mix(g, qgm_optim_mix_buffer(o), base);
    qgm_optim_after_gossip(o, lr);
    return;
  }
  const float *send = g->send;
  qgm_optim_gossip_step(o, lr, base ? base : send, send, g->degree,
                        qgmd__gossip_messages(g), g->weights);
}
