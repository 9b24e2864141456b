/* exchange_plan_rounds.c - the shared half (exchange_plan.h) of
 * --gossip-rounds: R neighbour averages a step, each of what the one
 * before mixed (job/gossip_rounds.c), or with --gossip-acceleration the
 * Chebyshev rounds that combine each mix with the last two messages. Its
 * state is the vectors the rounds mix into; it keeps nothing from one
 * step to the next, so a checkpoint has no section of it. */
#include <stdlib.h>
#include <string.h>

#include "exchange_plan.h"

static void destroy(void *state) {
  qgmd_rounds_state_t *s = state;
  if (!s)
    return;
  for (int i = 0; i < 2; i++)
    free(s->mix[i]);
  free(s);
}

static int create(const qgmd_exchange_plan_t *p, int node, const float *x0,
                  void **state) {
  (void)node, (void)x0;
  qgmd_rounds_state_t *s = calloc(1, sizeof *s);
  *state = s;
  if (!s)
    return QGM_ENOMEM;
  for (int i = 0; i < 2; i++)
    if (!(s->mix[i] = qgm_alloc_floats(p->len)))
      return QGM_ENOMEM;
  return 0;
}

static float *mix_of(void *const *states, int node, int i) {
  return ((qgmd_rounds_state_t *)states[node])->mix[i];
}

/* Round r mixes round r-1's mixes, in the arithmetic of one round
 * (qgm_mix_messages, the daemon's order), so that qgm-sim follows qgmd's
 * rounds bit for bit. */
static int simulate_powers(const qgmd_exchange_plan_t *p, uint64_t round,
                           void *const *states, const float *const *msgs,
                           float *const *mixes) {
  const int n = qgm_topology_nodes(p->topology);
  const float *from[n];
  int rc = qgm_mix_messages(p->topology, round, p->combine, msgs, mixes,
                            p->len);
  for (int r = 1; r < p->rounds && rc == 0; r++) {
    for (int i = 0; i < n; i++) {
      float *last = mix_of(states, i, 0);
      memcpy(last, mixes[i], p->len * sizeof *last);
      from[i] = last;
    }
    rc = qgm_mix_messages(p->topology, round, p->combine, from, mixes, p->len);
  }
  return rc;
}

/* Chebyshev rounds with daemon/exchange_rounds.c's arithmetic, in two
 * passes where it takes one: round k mixes y_k into t (mixes, which only
 * the last round's result needs), then y_{k+1} = t + b (y_k - t) +
 * e (y_{k-1} - t), y_k for k >= 1 in mix[(k - 1) % 2]; the mix is
 * y_R + w (y_0 - y_R). */
static int simulate_chebyshev(const qgmd_exchange_plan_t *p, uint64_t round,
                              void *const *states, const float *const *msgs,
                              float *const *mixes) {
  const int n = qgm_topology_nodes(p->topology);
  const float *y[n], *before[n];
  for (int i = 0; i < n; i++)
    y[i] = before[i] = msgs[i];
  for (int k = 0; k < p->rounds; k++) {
    const int last = k + 1 == p->rounds;
    int rc = qgm_mix_messages(p->topology, round, p->combine, y, mixes, p->len);
    if (rc != 0)
      return rc;
    for (int i = 0; i < n; i++) {
      float *next = last ? mixes[i] : mix_of(states, i, k % 2);
      qgm_vec_chebyshev_round(next, mixes[i], p->chebyshev_b[k], y[i],
                              p->chebyshev_e[k], before[i], p->len);
      before[i] = y[i];
      y[i] = next;
    }
  }
  for (int i = 0; i < n; i++)
    qgmd_chebyshev_share(p, mixes[i], msgs[i]);
  return 0;
}

void qgmd_chebyshev_share(const qgmd_exchange_plan_t *p, float *mix,
                          const float *message) {
  qgm_vec_chebyshev_round(mix, mix, p->chebyshev_w, message, 0.0f, message,
                          p->len);
}

static int simulate(const qgmd_exchange_plan_t *p, uint64_t round,
                    void *const *states, const float *const *msgs,
                    float *const *mixes) {
  return (p->chebyshev ? simulate_chebyshev : simulate_powers)(
      p, round, states, msgs, mixes);
}

const qgmd_exchange_def_t qgmd_exchange_def_rounds = {"rounds", create,
                                                      destroy, NULL, simulate};
