/* exchange_plan_powersgd.c - PowerSGD's all-reduce, its shared half
 * (exchange_plan_powersgd.h, exchange_plan.h): a node's state, its two
 * checkpoint sections, and the in-process form, the sums taken as qgmd's
 * all-reduce takes them. */
#include <stdlib.h>
#include <string.h>

#include "exchange_plan.h"
#include "exchange_plan_powersgd.h"

static int create(const qgmd_exchange_plan_t *p, int node, const float *x0,
                  void **state) {
  (void)node;
  (void)x0;
  qgmd_powersgd_state_t *s = calloc(1, sizeof *s);
  if (!s)
    return QGM_ENOMEM;
  *state = s;
  const qgm_compress_spec_t *c = &p->choco.compress;
  int rc = qgm_powersgd_create(p->len, c->rank, c->matrices, c->nmatrices,
                               &s->powersgd);
  if (rc == 0 &&
      (!(s->first = qgm_alloc_floats(qgm_powersgd_first_len(s->powersgd))) ||
       !(s->second = qgm_alloc_floats(qgm_powersgd_second_len(s->powersgd)))))
    rc = QGM_ENOMEM;
  return rc;
}

static void destroy(void *state) {
  qgmd_powersgd_state_t *s = state;
  if (!s)
    return;
  qgm_powersgd_free(s->powersgd);
  free(s->first);
  free(s->second);
  free(s);
}

/* The error feedback differs from node to node; the warm start is the
 * same on all (a mean), but each saves its own. */
static int section(void *state, int i, char *name, float **data,
                   size_t *len) {
  qgmd_powersgd_state_t *s = state;
  if (i == 0) {
    strcpy(name, "powersgd.error");
    *data = qgm_powersgd_error(s->powersgd, len);
    return 1;
  }
  if (i == 1) {
    strcpy(name, "powersgd.warm");
    *data = qgm_powersgd_warm(s->powersgd, len);
    return 1;
  }
  return 0;
}

static int simulate(const qgmd_exchange_plan_t *p, uint64_t round,
                    void *const *states, const float *const *msgs,
                    float *const *mixes) {
  (void)round;
  const int n = qgm_topology_nodes(p->topology);
  const qgmd_powersgd_state_t *s0 = states[0];
  const size_t first = qgm_powersgd_first_len(s0->powersgd);
  const size_t second = qgm_powersgd_second_len(s0->powersgd);
  float *sum = malloc((first > second ? first : second) * sizeof *sum + 1);
  if (!sum)
    return QGM_ENOMEM;
  const float *each[n];
  const float scale = (float)(1.0 / n); /* exchange_global.c's */
  for (int i = 0; i < n; i++) {
    qgmd_powersgd_state_t *s = states[i];
    qgm_powersgd_first(s->powersgd, msgs[i], s->first);
    each[i] = s->first;
  }
  qgm_vec_tree_sum(sum, each, n, first);
  for (int i = 0; i < n; i++) {
    qgmd_powersgd_state_t *s = states[i];
    qgm_powersgd_second(s->powersgd, sum, scale, s->second);
    each[i] = s->second;
  }
  qgm_vec_tree_sum(sum, each, n, second);
  for (int i = 0; i < n; i++) {
    qgmd_powersgd_state_t *s = states[i];
    qgm_powersgd_decode(s->powersgd, sum, scale, mixes[i]);
  }
  free(sum);
  return 0;
}

const qgmd_exchange_def_t qgmd_exchange_def_powersgd = {
    "powersgd", create, destroy, section, simulate};
