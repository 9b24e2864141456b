/* exchange_hosts.c - the hierarchical exchange (exchange.h): a host's
 * mean, gossiped between hosts slice by slice, then shared on the host.
 * Compressed gossip between hosts (exchange_choco.c) walks the same
 * phases with its own message and mix. */
#include <stdlib.h>

#include "exchange_kind.h"
#include "mpi_tags.h"

enum phase {
  PHASE_HOST_MEAN = 1, /* slices of the host's messages */
  PHASE_HOSTS,         /* the slice of the mean, to and from other hosts */
  PHASE_HOST_SHARE,    /* the mixed slices, to and from the host's nodes */
};

/* The kind's own state: this node's slot on its host, the slice of the
 * host's mean and the host's mixed vector, assembled from the slices. */
typedef struct hosts {
  int slot;
  float *mean, *mixed;
} hosts_t;

static hosts_t *hosts_of(const qgmd_exchange_t *x) { return x->kind_state; }

size_t qgmd__hosts_recv_bytes(const qgmd_exchange_t *x) {
  return (x->slice_len + 1) * sizeof(float);
}

int qgmd__hosts_init(qgmd_exchange_t *x, size_t recv_bytes) {
  const int per_host = qgm_topology_per_host(x->topology);
  hosts_t *h = calloc(1, sizeof *h);
  x->kind_state = h; /* freed by qgmd__hosts_free */
  if (!h)
    return QGM_ENOMEM;
  h->slot = qgm_topology_host_slot(x->topology, x->rank);
  qgm_host_slice(x->len, per_host, h->slot, &x->slice_at, &x->slice_len);
  h->mean = malloc((x->slice_len + 1) * sizeof(float));
  h->mixed = malloc(x->len * sizeof(float));
  if (!h->mean || !h->mixed)
    return QGM_ENOMEM;
  return qgmd__exchange_alloc_recv(
      x, recv_bytes > qgmd__hosts_recv_bytes(x) ? recv_bytes
                                                : qgmd__hosts_recv_bytes(x));
}

/* The exchange with the other nodes of this host, in one of two
 * directions. Gathering (the host's mean): node s gets slice s of `from`,
 * and this node receives its own slice of every other node's message into
 * recv[j]. Sharing (the mixed result): every other node gets this node's
 * slice of `from`, and this node receives node s's slice into mixed. The
 * receives are requests[0..k), the sends requests[k..2k). */
static int post_host(qgmd_exchange_t *x, const float *from, int tag,
                     int sharing) {
  const qgm_topology_t *t = x->topology;
  const int host = qgm_topology_host_of(t, x->rank);
  const int per_host = qgm_topology_per_host(t);
  const int k = per_host - 1;
  const hosts_t *h = hosts_of(x);
  for (int s = 0, j = 0; s < per_host; s++) {
    if (s == h->slot)
      continue;
    const int peer = qgm_topology_host_member(t, host, s);
    size_t at, len; /* node s's slice */
    qgm_host_slice(x->len, per_host, s, &at, &len);
    x->peers[j] = peer;
    MPI_Irecv(sharing ? h->mixed + at : x->recv[j],
              (int)(sharing ? len : x->slice_len), MPI_FLOAT, peer, tag,
              MPI_COMM_WORLD, &x->requests[j]);
    const size_t out_at = sharing ? x->slice_at : at;
    const size_t out_len = sharing ? x->slice_len : len;
    MPI_Isend(from + out_at, (int)out_len, MPI_FLOAT, peer, tag,
              MPI_COMM_WORLD, &x->requests[k + j]);
    qgmd__exchange_count(x, peer, (double)out_len * sizeof(float), 0);
    j++;
  }
  x->degree = k;
  return x->nrequests = 2 * k;
}

/* The host's mean of this node's slice, from the slices just received. */
static void reduce_host_mean(qgmd_exchange_t *x) {
  const int per_host = qgm_topology_per_host(x->topology);
  const hosts_t *h = hosts_of(x);
  const float *send = x->send, *from[per_host];
  for (int s = 0, k = 0; s < per_host; s++)
    from[s] = s == h->slot ? send + x->slice_at : x->recv[k++];
  qgm_vec_mean(h->mean, from, per_host, x->slice_len);
}

static int post_hosts(qgmd_exchange_t *x, const qgmd_hosts_codec_t *c) {
  const qgm_topology_t *t = x->topology, *hosts = qgm_topology_host_graph(t);
  const int host = qgm_topology_host_of(t, x->rank);
  const hosts_t *h = hosts_of(x);
  const qgmd_message_t m = c->message(x, h->mean, x->slice_len);
  if (c->post)
    return c->post(x, &m, h->slot);
  double self;
  int k = qgm_topology_neighbors(hosts, host, x->round, x->peers, x->weights,
                                 &self);
  int sends = qgm_topology_send_peers(hosts, host, x->round, x->send_peers);
  for (int j = 0; j < k; j++) {
    x->peers[j] = qgm_topology_host_member(t, x->peers[j], h->slot);
    MPI_Irecv(x->recv[j], m.room, m.type, x->peers[j], QGMD_GOSSIP_TAG,
              MPI_COMM_WORLD, &x->requests[j]);
  }
  for (int j = 0; j < sends; j++) {
    int to = qgm_topology_host_member(t, x->send_peers[j], h->slot);
    MPI_Isend(m.data, m.count, m.type, to, QGMD_GOSSIP_TAG, MPI_COMM_WORLD,
              &x->requests[k + j]);
    qgmd__exchange_count(x, to, m.bytes, 0);
  }
  x->degree = k;
  return x->nrequests = k + sends;
}

int qgmd__hosts_start(qgmd_exchange_t *x) {
  x->phase = PHASE_HOST_MEAN;
  int n = post_host(x, x->send, QGMD_HOST_MEAN_TAG, 0);
  return n > 0 ? n : qgmd_exchange_advance(x);
}

int qgmd__hosts_advance(qgmd_exchange_t *x, const qgmd_hosts_codec_t *c) {
  hosts_t *h = hosts_of(x);
  int n = 0;
  while (n == 0) {
    switch (x->phase) {
    case PHASE_HOST_MEAN:
      reduce_host_mean(x);
      x->phase = PHASE_HOSTS;
      n = post_hosts(x, c);
      break;
    case PHASE_HOSTS:
      c->mix_hosts(x, h->mixed + x->slice_at, h->mean);
      x->phase = PHASE_HOST_SHARE;
      n = post_host(x, h->mixed, QGMD_HOST_SHARE_TAG, 1);
      break;
    default:
      x->phase = 0;
      return 0;
    }
  }
  return n;
}

void qgmd__hosts_mix(qgmd_exchange_t *x, float *mix, const float *base) {
  static const double one = 1.0;
  const float *mixed = hosts_of(x)->mixed;
  if (base)
    qgm_vec_gossip_mix(mix, base, x->send, 1, &mixed, &one, x->len);
  else
    qgm_vec_copy(mix, mixed, x->len);
}

/* ------------------------------------------------ the plain exchange */

static qgmd_message_t floats(qgmd_exchange_t *x, const float *v, size_t n) {
  (void)x;
  return qgmd__exchange_floats(v, n);
}

/* The mean gossiped with the neighbouring hosts' means, in the difference
 * form, as flat gossip. */
static void mix_means(qgmd_exchange_t *x, float *out, const float *mean) {
  qgm_vec_gossip_mix(out, mean, mean, x->degree,
                     (const float *const *)x->recv, x->weights,
                     x->slice_len);
}

static const qgmd_hosts_codec_t plain = {floats, NULL, mix_means};

static int init(qgmd_exchange_t *x) { return qgmd__hosts_init(x, 0); }

static int advance(qgmd_exchange_t *x) {
  return qgmd__hosts_advance(x, &plain);
}

static void finish(qgmd_exchange_t *x, qgm_optim_t *o, float lr,
                   const float *base) {
  qgmd__hosts_mix(x, qgm_optim_mix_buffer(o), base);
  qgm_optim_after_gossip(o, lr);
}

void qgmd__hosts_free(qgmd_exchange_t *x) {
  hosts_t *h = hosts_of(x);
  if (!h)
    return;
  free(h->mean);
  free(h->mixed);
  free(h);
}

const qgmd_exchange_ops_t qgmd_exchange_hosts = {
    .init = init, .start = qgmd__hosts_start, .advance = advance,
    .finish = finish, .free = qgmd__hosts_free};
