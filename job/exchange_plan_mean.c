/* exchange_plan_mean.c - the compressed mean's shared half
 * (exchange_plan_mean.h, exchange_plan.h): a node's operator, and the
 * in-process form, every host's mean compressed and decoded as qgmd's
 * slots do it. */
#include "exchange_plan_mean.h"

#include <stdlib.h>
#include <string.h>

/* Each message's draws: a stream of the seed for (round, sender), beyond
 * the model's and the samplers' (0 and 1 + node). */
static void message_rng(const qgmd_exchange_plan_t *p, uint64_t round,
                        int node, qgm_rng_t *rng) {
  const uint64_t n = (uint64_t)qgm_topology_nodes(p->topology);
  qgm_rng_seed(rng, p->choco.seed, (1ULL << 63) + round * n + (uint64_t)node);
}

int qgmd_mean_encode(qgmd_mean_state_t *s, const qgmd_exchange_plan_t *p,
                     uint64_t round, int node, const float *v,
                     size_t *bytes) {
  qgm_rng_t rng;
  message_rng(p, round, node, &rng);
  return qgm_compress_encode(s->compress, v, NULL, &rng, s->wire, bytes);
}

int qgmd_mean_decode(qgmd_mean_state_t *s, const qgmd_exchange_plan_t *p,
                     uint64_t round, int node, const uint8_t *in,
                     float *out) {
  qgm_rng_t rng;
  message_rng(p, round, node, &rng);
  memset(out, 0, s->slice_len * sizeof *out);
  int rc = qgm_compress_apply(s->compress, in, &rng, out);
  qgm_vec_scale_copy(out, (float)qgm_compress_unbiased_scale(s->compress),
                     out, s->slice_len);
  return rc;
}

void qgmd_mean_over_hosts(const float *const *dec, int hosts, size_t n,
                          float *out) {
  qgm_vec_tree_sum(out, dec, hosts, n);
  qgm_vec_scale_copy(out, (float)(1.0 / hosts), out, n);
}

static int create(const qgmd_exchange_plan_t *p, int node, const float *x0,
                  void **state) {
  (void)x0;
  const qgm_topology_t *t = p->topology;
  qgmd_mean_state_t *s = calloc(1, sizeof *s);
  if (!s)
    return QGM_ENOMEM;
  *state = s;
  qgm_host_slice(p->len, qgm_topology_per_host(t),
                 qgm_topology_host_slot(t, node), &s->slice_at,
                 &s->slice_len);
  int rc = qgm_compress_create(&p->choco.compress, s->slice_len,
                               &s->compress);
  if (rc == 0 && !(s->wire = malloc(qgm_compress_bytes(s->compress))))
    rc = QGM_ENOMEM;
  const size_t decoded = (size_t)qgm_topology_hosts(t) * s->slice_len + 1;
  if (rc == 0 && !(s->decoded = malloc(decoded * sizeof *s->decoded)))
    rc = QGM_ENOMEM;
  return rc;
}

static void destroy(void *state) {
  qgmd_mean_state_t *s = state;
  if (!s)
    return;
  qgm_compress_free(s->compress);
  free(s->wire);
  free(s->decoded);
  free(s);
}

/* Every node gets the mean over the hosts of their compressed means. */
static int simulate(const qgmd_exchange_plan_t *p, uint64_t round,
                    void *const *states, const float *const *msgs,
                    float *const *mixes) {
  const qgm_topology_t *t = p->topology;
  const int hosts = qgm_topology_hosts(t), per_host = qgm_topology_per_host(t);
  float *mean = malloc(p->len * sizeof *mean);
  float *dec = malloc((size_t)hosts * p->len * sizeof *dec);
  int rc = mean && dec ? 0 : QGM_ENOMEM;
  for (int h = 0; rc == 0 && h < hosts; h++) {
    const float *member[per_host];
    for (int s = 0; s < per_host; s++)
      member[s] = msgs[qgm_topology_host_member(t, h, s)];
    qgm_vec_mean(mean, member, per_host, p->len);
    for (int s = 0; rc == 0 && s < per_host; s++) {
      const int node = qgm_topology_host_member(t, h, s);
      qgmd_mean_state_t *st = states[node];
      rc = qgmd_mean_encode(st, p, round, node, mean + st->slice_at, NULL);
      if (rc == 0)
        rc = qgmd_mean_decode(st, p, round, node, st->wire,
                              dec + (size_t)h * p->len + st->slice_at);
    }
  }
  for (int i = 0; rc == 0 && i < qgm_topology_nodes(t); i++) {
    const float *from[hosts];
    for (int h = 0; h < hosts; h++)
      from[h] = dec + (size_t)h * p->len;
    qgmd_mean_over_hosts(from, hosts, p->len, mixes[i]);
  }
  free(mean);
  free(dec);
  return rc;
}

const qgmd_exchange_def_t qgmd_exchange_def_mean = {"compressed-mean", create,
                                                    destroy, NULL, simulate};
