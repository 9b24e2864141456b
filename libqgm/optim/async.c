/* async.c - the parameter server's rules for asynchronous training: ASGD,
 * ASGD with server momentum, and GSGM (white-list scheduling, partial
 * average of the latest gradients, global momentum), as pure compute.
 *
 * Arrivals are held in one slot per worker until the schedule admits them:
 * a worker computes on the model it was last sent, so it has at most one
 * gradient in flight, and a waiting gradient is the caller's cue to hold
 * that worker back. ASGD's schedule admits everything at once; GSGM's
 * admits a worker once per round. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "qgm.h"

enum { NO_ARRIVAL = 0 };

static const float ADAM_BETA2 = 0.999f, ADAM_EPS = 1e-8f;

struct qgm_server {
  qgm_server_config_t cfg;
  size_t dim;
  float *x;
  float *m; /* momentum, or Adam's first moment; NULL for asgd */
  float *v; /* Adam's second moment */
  uint64_t version;

  /* Waiting gradients: slot w holds worker w's, stamped with its arrival
   * number (NO_ARRIVAL: the slot is empty) and the version it was computed
   * on. */
  float *waiting;
  uint64_t *arrival;
  uint64_t *computed_on;
  uint64_t arrivals;
  uint64_t *applied;

  /* GSGM: the latest applied gradient of every worker, their sum (in
   * double: it is updated by subtraction millions of times), the average
   * handed to the momentum, and the white list of the round. */
  float *latest;
  double *latest_sum;
  float *average;
  int *has_latest;
  int contributors;
  int *white_listed;
  int white_left;
  uint64_t rounds;
};

static const char *const rule_names[] = {
    [QGM_ASYNC_ASGD] = "asgd",
    [QGM_ASYNC_ASGD_M] = "asgd-m",
    [QGM_ASYNC_GSGM] = "gsgm",
};
static const char *const base_names[] = {
    [QGM_GSGM_MOMENTUM] = "momentum",
    [QGM_GSGM_SGD] = "sgd",
    [QGM_GSGM_ADAM] = "adam",
};
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

static int parse_name(const char *name, const char *const *names, size_t n) {
  if (!name)
    return QGM_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (strcmp(name, names[i]) == 0)
      return (int)i;
  return QGM_EINVAL;
}

int qgm_async_rule_parse(const char *name, qgm_async_rule_t *out) {
  int i = parse_name(name, rule_names, COUNT_OF(rule_names));
  if (i < 0 || !out)
    return QGM_EINVAL;
  *out = (qgm_async_rule_t)i;
  return 0;
}

const char *qgm_async_rule_name(qgm_async_rule_t rule) {
  return (size_t)rule < COUNT_OF(rule_names) ? rule_names[rule] : "unknown";
}

const char *qgm_async_rule_names(void) { return "asgd, asgd-m, gsgm"; }

int qgm_gsgm_base_parse(const char *name, qgm_gsgm_base_t *out) {
  int i = parse_name(name, base_names, COUNT_OF(base_names));
  if (i < 0 || !out)
    return QGM_EINVAL;
  *out = (qgm_gsgm_base_t)i;
  return 0;
}

const char *qgm_gsgm_base_names(void) { return "momentum, sgd, adam"; }

/* ------------------------------------------------------------ lifetime */

static int is_gsgm(const qgm_server_t *s) {
  return s->cfg.rule == QGM_ASYNC_GSGM;
}

static float *zeroed_floats(size_t n) {
  float *p = qgm_alloc_floats(n);
  if (p)
    memset(p, 0, n * sizeof *p);
  return p;
}

static void start_round(qgm_server_t *s) {
  for (int w = 0; w < s->cfg.workers; w++)
    s->white_listed[w] = 1;
  s->white_left = s->cfg.workers;
}

int qgm_server_create(const qgm_server_config_t *cfg, size_t dim,
                      qgm_server_t **out) {
  if (!cfg || !out || dim == 0 || cfg->workers < 1 ||
      (size_t)cfg->rule >= COUNT_OF(rule_names) ||
      (size_t)cfg->base >= COUNT_OF(base_names) ||
      !(cfg->momentum >= 0.0f && cfg->momentum < 1.0f) ||
      !(cfg->weight_decay >= 0.0f))
    return QGM_EINVAL;
  const size_t n = (size_t)cfg->workers;
  if (qgm_mul_size(n, dim) == 0)
    return QGM_ENOMEM;
  qgm_server_t *s = calloc(1, sizeof *s);
  if (!s)
    return QGM_ENOMEM;
  s->cfg = *cfg;
  s->dim = dim;
  int ok = (s->x = zeroed_floats(dim)) &&
           (s->waiting = qgm_alloc_floats(n * dim)) &&
           (s->arrival = calloc(n, sizeof *s->arrival)) &&
           (s->computed_on = calloc(n, sizeof *s->computed_on)) &&
           (s->applied = calloc(n, sizeof *s->applied));
  if (ok && cfg->rule != QGM_ASYNC_ASGD)
    ok = (s->m = zeroed_floats(dim)) != NULL;
  if (ok && is_gsgm(s)) {
    ok = (s->latest = zeroed_floats(n * dim)) &&
         (s->latest_sum = calloc(dim, sizeof *s->latest_sum)) &&
         (s->average = zeroed_floats(dim)) &&
         (s->has_latest = calloc(n, sizeof *s->has_latest)) &&
         (s->white_listed = calloc(n, sizeof *s->white_listed));
    if (ok && cfg->base == QGM_GSGM_ADAM)
      ok = (s->v = zeroed_floats(dim)) != NULL;
    if (ok)
      start_round(s);
  }
  if (!ok) {
    qgm_server_free(s);
    return QGM_ENOMEM;
  }
  *out = s;
  return 0;
}

void qgm_server_free(qgm_server_t *s) {
  if (!s)
    return;
  free(s->x);
  free(s->m);
  free(s->v);
  free(s->waiting);
  free(s->arrival);
  free(s->computed_on);
  free(s->applied);
  free(s->latest);
  free(s->latest_sum);
  free(s->average);
  free(s->has_latest);
  free(s->white_listed);
  free(s);
}

size_t qgm_server_dim(const qgm_server_t *s) { return s->dim; }
float *qgm_server_params(qgm_server_t *s) { return s->x; }
uint64_t qgm_server_version(const qgm_server_t *s) { return s->version; }
uint64_t qgm_server_rounds(const qgm_server_t *s) { return s->rounds; }
const float *qgm_server_momentum(const qgm_server_t *s) { return s->m; }
const float *qgm_server_partial_average(const qgm_server_t *s) {
  return s->average;
}

static int valid_worker(const qgm_server_t *s, int worker) {
  return worker >= 0 && worker < s->cfg.workers;
}

uint64_t qgm_server_applied(const qgm_server_t *s, int worker) {
  return valid_worker(s, worker) ? s->applied[worker] : 0;
}

int qgm_server_waiting(const qgm_server_t *s, int worker) {
  return valid_worker(s, worker) && s->arrival[worker] != NO_ARRIVAL;
}

/* ------------------------------------------------------------ arrivals */

int qgm_server_submit(qgm_server_t *s, int worker, const float *grad,
                      uint64_t version) {
  if (!s || !grad || !valid_worker(s, worker) || version > s->version ||
      s->arrival[worker] != NO_ARRIVAL)
    return QGM_EINVAL;
  memcpy(s->waiting + (size_t)worker * s->dim, grad, s->dim * sizeof *grad);
  s->arrival[worker] = ++s->arrivals;
  s->computed_on[worker] = version;
  return 0;
}

/* The earliest waiting worker the schedule admits, or -1. */
static int next_admitted(const qgm_server_t *s) {
  int best = -1;
  for (int w = 0; w < s->cfg.workers; w++)
    if (s->arrival[w] != NO_ARRIVAL &&
        (!is_gsgm(s) || s->white_listed[w]) &&
        (best < 0 || s->arrival[w] < s->arrival[best]))
      best = w;
  return best;
}

/* ---------------------------------------------------------------- rules */

static void apply_asgd(qgm_server_t *s, const float *restrict g, float lr) {
  const float wd = s->cfg.weight_decay;
  float *restrict x = s->x;
  for (size_t i = 0; i < s->dim; i++)
    x[i] -= lr * (g[i] + wd * x[i]);
}

static void apply_asgd_m(qgm_server_t *s, const float *restrict g, float lr) {
  const float wd = s->cfg.weight_decay, beta = s->cfg.momentum;
  float *restrict x = s->x, *restrict m = s->m;
  for (size_t i = 0; i < s->dim; i++) {
    m[i] = beta * m[i] + g[i] + wd * x[i];
    x[i] -= lr * m[i];
  }
}

/* Replaces worker's latest gradient with g and refreshes the partial
 * average over the workers heard from so far. */
static void update_average(qgm_server_t *s, int worker, const float *g) {
  float *restrict latest = s->latest + (size_t)worker * s->dim;
  double *restrict sum = s->latest_sum;
  if (!s->has_latest[worker]) {
    s->has_latest[worker] = 1;
    s->contributors++;
  }
  const double inv = 1.0 / s->contributors;
  for (size_t i = 0; i < s->dim; i++) {
    sum[i] += (double)g[i] - (double)latest[i];
    latest[i] = g[i];
    s->average[i] = (float)(sum[i] * inv);
  }
}

static void apply_gsgm(qgm_server_t *s, float lr) {
  const float wd = s->cfg.weight_decay, beta = s->cfg.momentum;
  const float *restrict a = s->average;
  float *restrict x = s->x, *restrict m = s->m, *restrict v = s->v;
  switch (s->cfg.base) {
  case QGM_GSGM_MOMENTUM:
    for (size_t i = 0; i < s->dim; i++) {
      m[i] = beta * m[i] + a[i] + wd * x[i];
      x[i] -= lr * m[i];
    }
    break;
  case QGM_GSGM_SGD:
    for (size_t i = 0; i < s->dim; i++) {
      m[i] = beta * m[i] + (1.0f - beta) * (a[i] + wd * x[i]);
      x[i] -= lr * m[i];
    }
    break;
  case QGM_GSGM_ADAM: {
    /* version was already counted: t = 1 at the first update. */
    const double t = (double)s->version;
    const float c1 = (float)(1.0 / (1.0 - pow(beta, t)));
    const float c2 = (float)(1.0 / (1.0 - pow(ADAM_BETA2, t)));
    for (size_t i = 0; i < s->dim; i++) {
      float d = a[i] + wd * x[i];
      m[i] = beta * m[i] + (1.0f - beta) * d;
      v[i] = ADAM_BETA2 * v[i] + (1.0f - ADAM_BETA2) * d * d;
      x[i] -= lr * (m[i] * c1) / (sqrtf(v[i] * c2) + ADAM_EPS);
    }
    break;
  }
  }
}

int qgm_server_apply_next(qgm_server_t *s, float lr,
                          qgm_server_update_t *out) {
  int w = next_admitted(s);
  if (w < 0)
    return 0;
  const float *g = s->waiting + (size_t)w * s->dim;
  qgm_server_update_t u = {.worker = w,
                           .staleness = s->version - s->computed_on[w],
                           .round = s->rounds};
  s->arrival[w] = NO_ARRIVAL;
  s->applied[w]++;
  s->version++;
  switch (s->cfg.rule) {
  case QGM_ASYNC_ASGD:
    apply_asgd(s, g, lr);
    break;
  case QGM_ASYNC_ASGD_M:
    apply_asgd_m(s, g, lr);
    break;
  case QGM_ASYNC_GSGM:
    update_average(s, w, g);
    apply_gsgm(s, lr);
    s->white_listed[w] = 0;
    if (--s->white_left == 0) {
      s->rounds++;
      start_round(s);
    }
    break;
  }
  u.version = s->version;
  if (out)
    *out = u;
  return 1;
}

/* ------------------------------------------------------------ stability */

double qgm_stability_std(const double *values, size_t n, size_t k) {
  size_t first = n > k ? n - k : 0, count = n - first;
  if (count == 0)
    return 0.0;
  double mean = 0.0, var = 0.0;
  for (size_t i = first; i < n; i++)
    mean += values[i];
  mean /= (double)count;
  for (size_t i = first; i < n; i++)
    var += (values[i] - mean) * (values[i] - mean);
  return sqrt(var / (double)count);
}
