/* exchange_compressed_mean.c - the all-reduce's mean with the hosts'
 * means compressed between hosts (--algorithm=allreduce --compress on
 * --topology=hier; job/exchange_plan_mean.h has the arithmetic). It walks
 * the hierarchical phases (exchange_hosts.c): the host's exact mean,
 * slice by slice; between hosts, slot s sends its compressed slice to
 * slot s of every other host and takes the mean of all of them, decoded;
 * the host's slots share their slices. Each host link carries the hosts'
 * compressed means once each way: (H - 1) of them a host, compressed,
 * against 2 (H - 1) / H of the uncompressed model for the exact mean. */
#include "exchange_kind.h"
#include "exchange_plan_mean.h"
#include "log.h"
#include "mpi_tags.h"

static qgmd_mean_state_t *mean_of(const qgmd_exchange_t *x) {
  return x->state;
}

static qgmd_message_t message(qgmd_exchange_t *x, const float *v, size_t n) {
  (void)n; /* the operator's length */
  qgmd_mean_state_t *s = mean_of(x);
  size_t bytes;
  qgmd_mean_encode(s, &x->plan, x->round, x->rank, v, &bytes);
  return (qgmd_message_t){s->wire, (int)bytes,
                          (int)qgm_compress_bytes(s->compress), MPI_BYTE,
                          (double)bytes, NULL};
}

/* To and from slot `slot` of every other host. */
static int post_all_hosts(qgmd_exchange_t *x, const qgmd_message_t *m,
                          int slot) {
  const qgm_topology_t *t = x->topology;
  const int hosts = qgm_topology_hosts(t);
  const int own = qgm_topology_host_of(t, x->rank);
  int k = 0;
  for (int h = 0; h < hosts; h++)
    if (h != own)
      x->peers[k++] = qgm_topology_host_member(t, h, slot);
  for (int j = 0; j < k; j++) {
    MPI_Irecv(x->recv[j], m->room, m->type, x->peers[j], QGMD_GOSSIP_TAG,
              MPI_COMM_WORLD, &x->requests[j]);
    MPI_Isend(m->data, m->count, m->type, x->peers[j], QGMD_GOSSIP_TAG,
              MPI_COMM_WORLD, &x->requests[k + j]);
    qgmd__exchange_count(x, x->peers[j], m->bytes, 0);
  }
  x->degree = k;
  return x->nrequests = 2 * k;
}

/* This node's slice of the mean over the hosts: every host's message,
 * its own included, decoded, then averaged in host order. */
static void mix_hosts(qgmd_exchange_t *x, float *out, const float *mean) {
  (void)mean; /* its message, which it decodes as the others do */
  const qgm_topology_t *t = x->topology;
  qgmd_mean_state_t *s = mean_of(x);
  const int hosts = qgm_topology_hosts(t);
  const float *from[hosts];
  for (int h = 0; h < hosts; h++)
    from[h] = s->decoded + (size_t)h * s->slice_len;
  /* Its own message first (from it, j = -1), then the other hosts'. */
  int rc = 0;
  for (int j = -1; rc == 0 && j < x->degree; j++) {
    const int from_rank = j < 0 ? x->rank : x->peers[j];
    const uint8_t *in = j < 0 ? s->wire : (const uint8_t *)x->recv[j];
    rc = qgmd_mean_decode(s, &x->plan, x->round, from_rank, in,
                          (float *)from[qgm_topology_host_of(t, from_rank)]);
  }
  if (rc != 0) {
    LOG(LOG_ERROR, "a compressed mean from another host is malformed");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  qgmd_mean_over_hosts(from, hosts, s->slice_len, out);
}

static const qgmd_hosts_codec_t compressed = {message, post_all_hosts,
                                              mix_hosts};

static int init(qgmd_exchange_t *x) {
  const int others = qgm_topology_hosts(x->topology) - 1;
  if (x->max_degree < others) /* every other host is a peer between hosts */
    x->max_degree = others;
  return qgmd__hosts_init(x, qgm_compress_bytes(mean_of(x)->compress));
}

static int advance(qgmd_exchange_t *x) {
  return qgmd__hosts_advance(x, &compressed);
}

/* The mean, the same on every node (base is NULL: overlap is refused). */
static void finish(qgmd_exchange_t *x, qgm_optim_t *o, float lr,
                   const float *base) {
  (void)base;
  qgmd__hosts_mix(x, qgm_optim_mix_buffer(o), NULL);
  qgm_optim_after_gossip(o, lr);
}

const qgmd_exchange_ops_t qgmd_exchange_compressed_mean = {
    .init = init, .start = qgmd__hosts_start, .advance = advance,
    .finish = finish, .free = qgmd__hosts_free};
