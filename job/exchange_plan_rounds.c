/* exchange_plan_rounds.c - the shared half (exchange_plan.h) of
 * --gossip-rounds: R neighbour averages a step, each of what the one
 * before mixed (job/gossip_rounds.c). Its state is the vectors the rounds
 * mix into; it keeps nothing from one step to the next, so a checkpoint
 * has no section of it. */
#include <stdlib.h>
#include <string.h>

#include "exchange_plan.h"

static void destroy(void *state) {
  qgmd_rounds_state_t *s = state;
  if (!s)
    return;
  free(s->mix[0]);
  free(s->mix[1]);
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

/* Round r mixes round r-1's mixes, in the arithmetic of one round
 * (qgm_mix_messages, the daemon's order), so that qgm-sim follows qgmd's
 * rounds bit for bit. */
static int simulate(const qgmd_exchange_plan_t *p, uint64_t round,
                    void *const *states, const float *const *msgs,
                    float *const *mixes) {
  const int n = qgm_topology_nodes(p->topology);
  const float *from[n];
  int rc = qgm_mix_messages(p->topology, round, p->combine, msgs, mixes,
                            p->len);
  for (int r = 1; r < p->rounds && rc == 0; r++) {
    for (int i = 0; i < n; i++) {
      float *last = ((qgmd_rounds_state_t *)states[i])->mix[0];
      memcpy(last, mixes[i], p->len * sizeof *last);
      from[i] = last;
    }
    rc = qgm_mix_messages(p->topology, round, p->combine, from, mixes, p->len);
  }
  return rc;
}

const qgmd_exchange_def_t qgmd_exchange_def_rounds = {"rounds", create,
                                                      destroy, NULL, simulate};
