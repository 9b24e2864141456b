/* exchange_plan_relay.c - RelaySum's shared half (exchange_plan.h): the
 * sums a node relays, a checkpoint section per peer, and the in-process
 * form. The state is libqgm's qgm_relay_t. */
#include <stdio.h>

#include "exchange_plan.h"

static int create(const qgmd_exchange_plan_t *p, int node, const float *x0,
                  void **state) {
  qgm_relay_t *r = NULL;
  int rc = qgm_relay_create(p->topology, node, p->dim, x0, &r);
  *state = r;
  return rc;
}

static void destroy(void *state) { qgm_relay_free(state); }

static int section(void *state, int i, char *name, float **data,
                   size_t *len) {
  qgm_relay_t *r = state;
  if (i >= qgm_relay_peers(r))
    return 0;
  snprintf(name, QGMD_SECTION_NAME_MAX, "relay.sums.%d", i);
  *data = qgm_relay_sums(r, i);
  *len = qgm_relay_message_len(r);
  return 1;
}

static int simulate(const qgmd_exchange_plan_t *p, uint64_t round,
                    void *const *states, const float *const *msgs,
                    float *const *mixes) {
  (void)round;
  const int n = qgm_topology_nodes(p->topology);
  qgm_relay_t *relays[n];
  for (int i = 0; i < n; i++)
    relays[i] = states[i];
  return qgm_relay_exchange(p->topology, relays, msgs, mixes);
}

const qgmd_exchange_def_t qgmd_exchange_def_relay = {"relay", create, destroy,
                                                     section, simulate};
