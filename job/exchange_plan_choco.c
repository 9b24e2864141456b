/* exchange_plan_choco.c - compressed gossip's shared half
 * (exchange_plan.h): a node's CHOCO copies and the room for its packed
 * message, the copies' checkpoint section, and the in-process form. */
#include <stdlib.h>
#include <string.h>

#include "exchange_plan.h"
#include "exchange_plan_choco.h"

static int create(const qgmd_exchange_plan_t *p, int node, const float *x0,
                  void **state) {
  qgmd_choco_state_t *s = calloc(1, sizeof *s);
  if (!s)
    return QGM_ENOMEM;
  *state = s;
  int rc = qgm_choco_create_node(p->topology, node, p->len, p->choco, x0,
                                 &s->choco);
  if (rc == 0 && !(s->wire = malloc(qgm_choco_message_bytes(s->choco))))
    rc = QGM_ENOMEM;
  return rc;
}

static void destroy(void *state) {
  qgmd_choco_state_t *s = state;
  if (!s)
    return;
  qgm_choco_free(s->choco);
  free(s->wire);
  free(s);
}

static int section(void *state, int i, char *name, float **data,
                   size_t *len) {
  qgmd_choco_state_t *s = state;
  if (i > 0)
    return 0;
  strcpy(name, "choco.copies");
  *data = qgm_choco_copies(s->choco, len);
  return 1;
}

static int simulate(const qgmd_exchange_plan_t *p, uint64_t round,
                    void *const *states, const float *const *msgs,
                    float *const *mixes) {
  const int n = qgm_topology_nodes(p->topology);
  qgm_choco_t *choco[n];
  uint8_t *wire[n];
  for (int i = 0; i < n; i++) {
    const qgmd_choco_state_t *s = states[i];
    choco[i] = s->choco;
    wire[i] = s->wire;
  }
  return qgm_mix_compressed(p->topology, round, choco, wire, msgs, mixes,
                            p->len);
}

const qgmd_exchange_def_t qgmd_exchange_def_choco = {"choco", create,
                                                     destroy, section,
                                                     simulate};
