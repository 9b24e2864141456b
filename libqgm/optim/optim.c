/* optim.c - the generic optimizer entry points: names, the graphs an
 * algorithm refuses, allocation, the state listing and the dispatch to the
 * algorithm families (optim.h).
 *
 * Every algorithm is split at the gossip: qgm_optim_local_step produces the
 * message, the transport combines messages into the mix buffer, and
 * qgm_optim_after_gossip finishes the step. The update rules are those of
 * docs/ALGORITHMS.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "optim/adam.h"
#include "optim/optim.h"
#include "qgm.h"

static const optim_kind_t *const kinds[] = {
    [QGM_ALG_DSGD] = &qgm_optim_dsgd,
    [QGM_ALG_DSGDM_N] = &qgm_optim_dsgdm_n,
    [QGM_ALG_QG_DSGDM_N] = &qgm_optim_qg_dsgdm_n,
    [QGM_ALG_DSGDM] = &qgm_optim_dsgdm,
    [QGM_ALG_QG_DSGDM] = &qgm_optim_qg_dsgdm,
    [QGM_ALG_DADAM] = &qgm_optim_dadam,
    [QGM_ALG_QG_DADAM] = &qgm_optim_qg_dadam,
    [QGM_ALG_D2] = &qgm_optim_d2,
    [QGM_ALG_GT] = &qgm_optim_gt,
    [QGM_ALG_ALLREDUCE] = &qgm_optim_allreduce,
    [QGM_ALG_RELAYSGD] = &qgm_optim_relaysgd,
    [QGM_ALG_SGP] = &qgm_optim_sgp,
    [QGM_ALG_GUT] = &qgm_optim_gut,
    [QGM_ALG_QG_GUTM] = &qgm_optim_qg_gutm,
    [QGM_ALG_MT] = &qgm_optim_mt,
    [QGM_ALG_QG_SGP] = &qgm_optim_qg_sgp,
};
#define NUM_ALGORITHMS (sizeof kinds / sizeof kinds[0])

int qgm_algorithm_parse(const char *name, qgm_algorithm_t *out) {
  if (!name || !out)
    return QGM_EINVAL;
  for (size_t i = 0; i < NUM_ALGORITHMS; i++)
    if (strcmp(name, kinds[i]->name) == 0) {
      *out = (qgm_algorithm_t)i;
      return 0;
    }
  return QGM_EINVAL;
}

const char *qgm_algorithm_name(qgm_algorithm_t alg) {
  return (size_t)alg < NUM_ALGORITHMS ? kinds[alg]->name : "unknown";
}

qgm_combine_t qgm_algorithm_combine(qgm_algorithm_t alg) {
  return (size_t)alg < NUM_ALGORITHMS ? kinds[alg]->mixing
                                      : QGM_COMBINE_NEIGHBOURS;
}

static const char *kind_name(size_t i) { return kinds[i]->name; }

const char *qgm_algorithm_names(void) {
  static char names[256];
  return names[0] ? names
                  : qgm__join_names(names, sizeof names, NUM_ALGORITHMS,
                                   kind_name);
}

/* D^2's analysis (Tang et al. 2018, Theorem 1) needs lambda_min(W) > -1/3;
 * an even ring's uniform W sits exactly on it, so equality (to rounding)
 * counts as a violation. */
#define D2_LAMBDA_MIN (-1.0 / 3.0)
#define D2_LAMBDA_TOL 1e-12

const char *qgm_optim_refuses(qgm_algorithm_t alg, const qgm_topology_t *t,
                              char *why, size_t len) {
  double least;
  if (!t || !why || len == 0)
    return NULL;
  if (alg == QGM_ALG_D2 && qgm_topology_lambda_min(t, &least) == 0 &&
      least <= D2_LAMBDA_MIN + D2_LAMBDA_TOL) {
    snprintf(why, len, "D^2 needs lambda_min(W) > -1/3 and this W has "
             "lambda_min(W) = %.4f; lazy mixing (I + W)/2 "
             "(--mixing=lazy) has lambda_min >= 0", least);
    return why;
  }
  if (qgm_algorithm_combine(alg) == QGM_COMBINE_PUSH_SUM &&
      qgm_topology_hosts(t) > 0) {
    snprintf(why, len, "push-sum mixes each node with its graph "
             "neighbours; a host's exact mean has no push-sum weights "
             "(use a flat graph)");
    return why;
  }
  if (alg == QGM_ALG_RELAYSGD && !qgm_topology_is_tree(t)) {
    char nodes[48], edges[48];
    snprintf(why, len, "RelaySGD relays sums along the one path between "
             "any two nodes, which only a static tree has (this graph: %s, "
             "%s); use topology chain or tree",
             qgm_count_text(nodes, sizeof nodes, qgm_topology_nodes(t), "node"),
             qgm_count_text(edges, sizeof edges,
                            (long long)qgm_topology_edges(t), "edge"));
    return why;
  }
  return NULL;
}

static size_t state_vectors(const optim_kind_t *k) {
  size_t n = 0;
  while (n < OPTIM_MAX_STATE && k->state[n])
    n++;
  return n;
}

/* Zeroed, so that every state starts from the algorithm's initial values
 * (momentum 0, no previous gradient, tracker 0). */
static float *zeroed(size_t n) {
  float *p = qgm_alloc_floats(n);
  if (p)
    memset(p, 0, n * sizeof *p);
  return p;
}

/* The buffers qgm_optim_create allocates, counted in dim-long vectors:
 * x and mix (message_parts each), g, msg (when the message is x alone)
 * and the state. */
static size_t vectors(const optim_kind_t *k) {
  return 2 * (size_t)k->message_parts + 1 + (k->message_parts == 1) +
         state_vectors(k);
}

/* The floats of the message, and of the model buffer and the mix: the
 * parts, and push-sum's weight. */
static size_t kind_message_len(const optim_kind_t *k, size_t dim) {
  return (size_t)k->message_parts * dim + (size_t)k->weighted;
}

size_t qgm_optim_footprint(qgm_algorithm_t algorithm, size_t dim,
                           size_t *message_len) {
  if ((size_t)algorithm >= NUM_ALGORITHMS)
    return 0;
  const optim_kind_t *k = kinds[algorithm];
  if (message_len)
    *message_len = kind_message_len(k, dim);
  /* x, mix and msg each hold the weight too */
  return vectors(k) * dim + 3 * (size_t)k->weighted;
}

int qgm_optim_create(const qgm_optim_config_t *cfg, size_t dim,
                     qgm_optim_t **out) {
  if (!cfg || !out || dim == 0 || (size_t)cfg->algorithm >= NUM_ALGORITHMS ||
      !(cfg->momentum >= 0.0f && cfg->momentum < 1.0f) ||
      !(cfg->weight_decay >= 0.0f) ||
      !(cfg->adam_beta2 >= 0.0f && cfg->adam_beta2 < 1.0f) ||
      !(cfg->adam_eps >= 0.0f) ||
      !(cfg->tracking_scale >= 0.0f && cfg->tracking_scale <= 1.0f) || dim > ((size_t)-1) / 2 / sizeof(float))
    return QGM_EINVAL;
  qgm_optim_t *o = calloc(1, sizeof *o);
  if (!o)
    return QGM_ENOMEM;
  o->cfg = *cfg;
  if (o->cfg.adam_beta2 == 0.0f)
    o->cfg.adam_beta2 = QGM__ADAM_BETA2;
  if (o->cfg.adam_eps == 0.0f)
    o->cfg.adam_eps = QGM__ADAM_EPS;
  o->kind = kinds[cfg->algorithm];
  o->dim = dim;
  const size_t len = kind_message_len(o->kind, dim);
  int ok = (o->x = zeroed(len)) && (o->g = zeroed(dim)) &&
           (o->mix = zeroed(len));
  if (ok && o->kind->message_parts == 1)
    ok = (o->msg = o->own_msg = zeroed(len)) != NULL;
  if (ok && o->kind->weighted)
    o->x[dim] = 1.0f; /* every node starts with push-sum weight 1 */
  for (size_t i = 0; ok && i < state_vectors(o->kind); i++)
    ok = (o->buf[i] = zeroed(dim)) != NULL;
  if (!ok) {
    qgm_optim_free(o);
    return QGM_ENOMEM;
  }
  *out = o;
  return 0;
}

void qgm_optim_free(qgm_optim_t *o) {
  if (!o)
    return;
  free(o->x);
  free(o->g);
  free(o->own_msg);
  free(o->mix);
  for (size_t i = 0; i < OPTIM_MAX_STATE; i++)
    free(o->buf[i]);
  free(o);
}

size_t qgm_optim_dim(const qgm_optim_t *o) { return o->dim; }
qgm_algorithm_t qgm_optim_algorithm(const qgm_optim_t *o) {
  return o->cfg.algorithm;
}
float *qgm_optim_params(qgm_optim_t *o) { return o->x; }
float *qgm_optim_grad(qgm_optim_t *o) { return o->g; }
float *qgm_optim_mix_buffer(qgm_optim_t *o) { return o->mix; }
qgm_combine_t qgm_optim_combine(const qgm_optim_t *o) { return o->kind->mixing; }
uint64_t qgm_optim_steps(const qgm_optim_t *o) { return o->steps; }
void qgm_optim_set_steps(qgm_optim_t *o, uint64_t steps) { o->steps = steps; }

size_t qgm_optim_message_len(const qgm_optim_t *o) {
  return kind_message_len(o->kind, o->dim);
}

double qgm_optim_push_sum_weight(const qgm_optim_t *o) {
  return o->kind->weighted ? (double)o->x[o->dim] : 1.0;
}

/* The first state vector is the first moment wherever one is kept. */
const float *qgm_optim_momentum(const qgm_optim_t *o) {
  for (size_t i = 0; i < state_vectors(o->kind); i++)
    if (strcmp(o->kind->state[i], "m") == 0)
      return o->buf[i];
  return NULL;
}

const float *qgm_optim_local_step(qgm_optim_t *o, float lr) {
  o->kind->local_step(o, lr);
  return o->msg ? o->msg : o->x;
}

void qgm_optim_after_gossip(qgm_optim_t *o, float lr) {
  o->kind->after_gossip(o, lr);
  o->steps++;
}

int qgm_optim_set_message_buffer(qgm_optim_t *o, float *msg) {
  if (o->kind->message_parts != 1)
    return QGM_EINVAL;
  o->msg = msg ? msg : o->own_msg;
  return 0;
}

void qgm_optim_gossip_step(qgm_optim_t *o, float lr, const float *base,
                           const float *own, int k,
                           const float *const *peers,
                           const double *weights) {
  if (o->kind->mix_and_update &&
      o->kind->mix_and_update(o, lr, base, own, k, peers, weights) == 0) {
    o->steps++;
    return;
  }
  qgm_vec_gossip_mix(o->mix, base, own, k, peers, weights,
                     qgm_optim_message_len(o));
  qgm_optim_after_gossip(o, lr);
}

size_t qgm_optim_state_count(const qgm_optim_t *o) {
  return (size_t)o->kind->message_parts + (size_t)o->kind->weighted +
         state_vectors(o->kind);
}

int qgm_optim_state_get(qgm_optim_t *o, size_t i, qgm_optim_state_t *out) {
  if (!o || !out || i >= qgm_optim_state_count(o))
    return QGM_EINVAL;
  /* Gradient tracking keeps its tracker in the model buffer's second half
   * (between steps it holds W y, the mixed tracker). */
  static const char *const parts[] = {"x", "y"};
  /* Push-sum's weight follows the model in its buffer. */
  const size_t nparts = (size_t)o->kind->message_parts,
               nmodel = nparts + (size_t)o->kind->weighted;
  if (i < nparts)
    *out = (qgm_optim_state_t){parts[i], o->x + i * o->dim, o->dim};
  else if (i < nmodel)
    *out = (qgm_optim_state_t){"w", o->x + nparts * o->dim, 1};
  else
    *out = (qgm_optim_state_t){o->kind->state[i - nmodel],
                               o->buf[i - nmodel], o->dim};
  return 0;
}
