/* exchange_neighbours.c - the exchange of whole float vectors with the
 * graph's neighbours of the round (exchange.h), and its phase, which
 * compressed gossip and RelaySum post too. */
#include "exchange_kind.h"
#include "mpi_tags.h"

int qgmd__exchange_post_peers(qgmd_exchange_t *x, const qgmd_message_t *m) {
  double self; /* implied by the difference form: 1 - sum_j W_ij */
  int k = qgm_topology_neighbors(x->topology, x->rank, x->round, x->peers,
                                 x->weights, &self);
  int sends = qgm_topology_send_peers(x->topology, x->rank, x->round,
                                      x->send_peers);
  const void *announce = NULL; /* the round's number, for in-place peers */
  for (int j = 0; j < k; j++) {
    if (qgmd__exchange_peer_slot(x, j, 0)) /* static: peer j every round */
      MPI_Irecv(&x->ready[j], 1, MPI_UINT64_T, x->peers[j], QGMD_GOSSIP_TAG,
                MPI_COMM_WORLD, &x->requests[j]);
    else
      MPI_Irecv(x->recv[j], m->room, m->type, x->peers[j], QGMD_GOSSIP_TAG,
                MPI_COMM_WORLD, &x->requests[j]);
  }
  for (int j = 0; j < sends; j++) {
    const int to = x->send_peers[j], here = qgmd__exchange_in_place(x, to);
    if (here) {
      if (!announce)
        announce = qgmd__exchange_publish(x);
      MPI_Isend(announce, 1, MPI_UINT64_T, to, QGMD_GOSSIP_TAG,
                MPI_COMM_WORLD, &x->requests[k + j]);
    } else {
      const void *send = m->each ? m->each[j] : m->data;
      MPI_Isend(send, m->count, m->type, to, QGMD_GOSSIP_TAG, MPI_COMM_WORLD,
                &x->requests[k + j]);
    }
    qgmd__exchange_count(x, to, m->bytes, here);
  }
  x->degree = k;
  return x->nrequests = k + sends;
}

/* Computed as (base or send) + sum_j W_ij (recv_j - send), which keeps the
 * nodes' mean exactly in float (see qgm_vec_mix_peer) and matches
 * qgm-sim's order. */
void qgmd__exchange_mix_peers(qgmd_exchange_t *x, float *mix,
                              const float *base) {
  const float *send = x->send;
  qgm_vec_gossip_mix(mix, base ? base : send, send, x->degree,
                     qgmd__exchange_messages(x), x->weights, x->len);
}

static int init(qgmd_exchange_t *x) {
  return qgmd__exchange_alloc_recv(x, x->len * sizeof(float));
}

static int start(qgmd_exchange_t *x) {
  const qgmd_message_t m = qgmd__exchange_floats(x->send, x->len);
  return qgmd__exchange_post_peers(x, &m);
}

/* The mix and the optimizer's update in one pass (qgm_optim_gossip_step):
 * the mixed vector is never written. A lost message arrived all the same
 * (the transport's rounds stay whole, and so do the in-place slots'
 * handshakes); qgm_gossip_round leaves it out of the mix, as qgm-sim's
 * in-process mix does. Push-sum's own extra share follows the mix. */
static void finish(qgmd_exchange_t *x, qgm_optim_t *o, float lr,
                   const float *base) {
  const float *send = x->send;
  const float *const *msgs = qgmd__exchange_messages(x);
  const double *weights = x->weights;
  int k = x->degree;
  double extra = 0.0;
  if (x->plan.drop.rate > 0.0 || x->combine == QGM_COMBINE_PUSH_SUM) {
    for (int j = 0; j < k; j++) {
      x->mix_peers[j] = x->peers[j];
      x->mix_from[j] = msgs[j];
      x->mix_weights[j] = x->weights[j];
    }
    k = qgm_gossip_round(x->topology, x->round, x->rank, x->combine,
                         &x->plan.drop, k, x->mix_peers, x->mix_from,
                         x->mix_weights, &extra);
    msgs = x->mix_from;
    weights = x->mix_weights;
  }
  if (extra == 0.0) {
    qgm_optim_gossip_step(o, lr, base ? base : send, send, k, msgs, weights);
    return;
  }
  float *mix = qgm_optim_mix_buffer(o);
  qgm_vec_gossip_mix(mix, base ? base : send, send, k, msgs, weights, x->len);
  qgm_vec_axpy(mix, (float)extra, send, x->len);
  qgm_optim_after_gossip(o, lr);
}

/* Two slots by round parity (exchange_shared.c) need a static symmetric
 * graph. */
static int shares_host(const qgmd_exchange_t *x) {
  return qgm_topology_period(x->topology) == 1 && x->max_degree > 0 &&
         qgmd__exchange_symmetric(x->topology);
}

const qgmd_exchange_ops_t qgmd_exchange_neighbours = {
    .init = init, .start = start, .finish = finish,
    .shares_host = shares_host};
