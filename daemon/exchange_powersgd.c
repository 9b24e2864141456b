/* exchange_powersgd.c - PowerSGD's all-reduce (--algorithm=allreduce
 * --compress=powersgd:R; job/exchange_plan_powersgd.h has the state,
 * libqgm's qgm_powersgd_* the arithmetic). A round is two all-reduces of
 * the all-reduce baseline's own kind (exchange_global.c: host-aware, the
 * same sum bits on any placement), one after the other because the
 * second message needs the first's sum: every matrix's M Q with the
 * other coordinates, then every matrix's M^T P. Each all-reduce is an
 * exchange of its own, posting into this one's requests, so the loop
 * waits on them as on any kind's; their bytes are this exchange's. */
#include <stdlib.h>

#include "exchange_global.h"
#include "exchange_kind.h"
#include "exchange_plan_powersgd.h"

typedef struct powersgd_rounds {
  qgmd_exchange_t first, second; /* the two all-reduces */
  int stage;                     /* 1 or 2: which is in flight */
} powersgd_rounds_t;

static powersgd_rounds_t *rounds_of(const qgmd_exchange_t *x) {
  return x->kind_state;
}

static qgmd_powersgd_state_t *state_of(const qgmd_exchange_t *x) {
  return x->state;
}

/* The sum an all-reduce ended with. */
static const float *sum_of(const qgmd_exchange_t *inner) {
  return ((const qgmd_global_t *)inner->kind_state)->sum;
}

static float scale_of(const qgmd_exchange_t *x) {
  return (float)(1.0 / qgm_topology_nodes(x->topology));
}

static int init_inner(qgmd_exchange_t *x, qgmd_exchange_t *inner,
                      size_t len) {
  qgmd_exchange_plan_t plan = x->plan;
  plan.kind = QGMD_EXCHANGE_GLOBAL_MEAN;
  plan.len = len;
  int rc = qgmd_exchange_init(inner, &plan, x->rank, NULL, x->host_of);
  /* Its requests are this exchange's, which the loop waits on (of the
   * same size: room for every other node). */
  free(inner->requests);
  inner->requests = x->requests;
  return rc;
}

static int init(qgmd_exchange_t *x) {
  powersgd_rounds_t *k = calloc(1, sizeof *k);
  if (!k)
    return QGM_ENOMEM;
  x->kind_state = k;
  const qgm_powersgd_t *p = state_of(x)->powersgd;
  int rc = init_inner(x, &k->first, qgm_powersgd_first_len(p));
  return rc ? rc : init_inner(x, &k->second, qgm_powersgd_second_len(p));
}

/* The inner exchange's bytes, counted as this one's. */
static void take_bytes(qgmd_exchange_t *x, qgmd_exchange_t *inner) {
  x->bytes_sent += inner->bytes_sent;
  x->bytes_between_hosts += inner->bytes_between_hosts;
  x->bytes_in_place += inner->bytes_in_place;
  inner->bytes_sent = inner->bytes_between_hosts = inner->bytes_in_place = 0;
}

/* After the stage's all-reduce is done: the second message and its
 * all-reduce, or the round's end (0). Returns the requests posted. */
static int next(qgmd_exchange_t *x) {
  powersgd_rounds_t *k = rounds_of(x);
  qgmd_powersgd_state_t *s = state_of(x);
  if (k->stage == 1) {
    take_bytes(x, &k->first);
    qgm_powersgd_second(s->powersgd, sum_of(&k->first), scale_of(x),
                        s->second);
    k->stage = 2;
    int n = qgmd_exchange_start(&k->second, x->round, s->second);
    if (n > 0)
      return x->nrequests = n;
  }
  take_bytes(x, &k->second);
  k->stage = 0;
  return x->nrequests = 0;
}

static int start(qgmd_exchange_t *x) {
  powersgd_rounds_t *k = rounds_of(x);
  qgmd_powersgd_state_t *s = state_of(x);
  qgm_powersgd_first(s->powersgd, x->send, s->first);
  k->stage = 1;
  int n = qgmd_exchange_start(&k->first, x->round, s->first);
  return n > 0 ? (x->nrequests = n) : next(x);
}

static int advance(qgmd_exchange_t *x) {
  powersgd_rounds_t *k = rounds_of(x);
  if (k->stage == 0)
    return 0;
  int n = qgmd_exchange_advance(k->stage == 1 ? &k->first : &k->second);
  return n > 0 ? (x->nrequests = n) : next(x);
}

/* The decoded mean, the same on every node (base is NULL: overlap and
 * local steps are refused for the all-reduce). */
static void finish(qgmd_exchange_t *x, qgm_optim_t *o, float lr,
                   const float *base) {
  (void)base;
  qgm_powersgd_decode(state_of(x)->powersgd, sum_of(&rounds_of(x)->second),
                      scale_of(x), qgm_optim_mix_buffer(o));
  qgm_optim_after_gossip(o, lr);
}

static void free_rounds(qgmd_exchange_t *x) {
  powersgd_rounds_t *k = rounds_of(x);
  if (!k)
    return;
  k->first.requests = k->second.requests = NULL; /* this exchange's */
  qgmd_exchange_free(&k->first);
  qgmd_exchange_free(&k->second);
  free(k);
}

const qgmd_exchange_ops_t qgmd_exchange_powersgd = {
    .init = init, .start = start, .advance = advance, .finish = finish,
    .free = free_rounds};
