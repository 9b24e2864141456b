/* lossy.c - a gossip round with lost messages (--drop-rate) and push-sum's
 * shares: which peers' messages a node mixes, with what weights, and what
 * its own message keeps. qgmd's exchange and the in-process mix
 * (mixing.c) both call qgm_gossip_round, so they agree on every round.
 *
 * Who decides a loss: nobody. The message of round r from j to i is lost
 * when qgm_rng_message_draw(seed, r, j, i) < rate, a pure function that
 * the sender and the receiver evaluate alike. So the receiver knows which
 * messages will not count without waiting for them, and a push-sum sender
 * knows which of its shares were not delivered and keeps them. */
#include "qgm.h"

int qgm_drop_lost(const qgm_drop_t *d, uint64_t round, int from, int to) {
  return d && d->rate > 0.0 &&
         qgm_rng_message_draw(d->seed, round, from, to) < d->rate;
}

/* What node j sends each receiver of round: 1 / (out-degree + 1), the
 * column-stochastic shares of push-sum (Kempe et al. 2003; Assran et al.
 * 2019 use the same uniform shares on their directed graphs). */
static double share(const qgm_topology_t *t, uint64_t round, int j) {
  const int k = qgm_topology_max_degree(t);
  int out[k > 0 ? k : 1];
  return 1.0 / (double)(qgm_topology_send_peers(t, j, round, out) + 1);
}

int qgm_gossip_round(const qgm_topology_t *t, uint64_t round, int node,
                     qgm_combine_t mixing, const qgm_drop_t *d, int k,
                     int *peers, const float **from, double *weights,
                     double *own_extra) {
  const int push_sum = mixing == QGM_COMBINE_PUSH_SUM;
  double received = 0.0, delivered = 0.0;
  int kept = 0;
  for (int j = 0; j < k; j++) {
    if (qgm_drop_lost(d, round, peers[j], node))
      continue;
    const double w = push_sum ? share(t, round, peers[j]) : weights[j];
    received += w;
    peers[kept] = peers[j];
    weights[kept] = w;
    if (from)
      from[kept] = from[j];
    kept++;
  }
  if (push_sum) {
    const int m = qgm_topology_max_degree(t);
    int out[m > 0 ? m : 1];
    const int sends = qgm_topology_send_peers(t, node, round, out);
    const double mine = share(t, round, node);
    for (int j = 0; j < sends; j++)
      if (!qgm_drop_lost(d, round, node, out[j]))
        delivered += mine;
  }
  if (own_extra)
    *own_extra = push_sum ? received - delivered : 0.0;
  return kept;
}

uint64_t qgm_drop_count(const qgm_topology_t *t, const qgm_drop_t *d,
                        int node, uint64_t rounds) {
  if (!d || !(d->rate > 0.0))
    return 0;
  const int m = qgm_topology_max_degree(t);
  int peers[m > 0 ? m : 1];
  double weights[m > 0 ? m : 1], self;
  uint64_t lost = 0;
  for (uint64_t r = 0; r < rounds; r++) {
    const int k = qgm_topology_neighbors(t, node, r, peers, weights, &self);
    for (int j = 0; j < k; j++)
      lost += (uint64_t)qgm_drop_lost(d, r, peers[j], node);
  }
  return lost;
}
