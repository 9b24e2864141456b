/* async.c - the parameter server's rules for asynchronous training: ASGD,
 * ASGD with server momentum, staleness-aware ASGD, DC-ASGD and GSGM
 * (white-list scheduling, partial average of the latest gradients, global
 * momentum, and its variants), as pure compute.
 *
 * Arrivals are held in one slot per worker until the schedule admits them:
 * a worker computes on the model it was last sent, so it has at most one
 * gradient in flight, and a waiting gradient is the caller's cue to hold
 * that worker back. The ASGD family's schedule admits everything at once;
 * GSGM's admits a worker while it is less than `window` applied gradients
 * ahead of the slowest (1: once per round). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "optim/adam.h"
#include "qgm.h"

enum { NO_ARRIVAL = 0 };


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
  uint64_t *hist; /* staleness histogram, HIST_PER_WORKER x workers + 1 */
  size_t hist_len;

  /* dc-asgd: the model each worker was last sent. */
  float *sent;

  /* GSGM: the latest applied gradient of every worker and the version it
   * was computed on, their sum (in double: it is updated by subtraction
   * millions of times), the average handed to the momentum, and the
   * schedule's lead: a worker is admitted while applied[w] < rounds +
   * window, where rounds is the fewest gradients applied from one worker
   * (with window 1, the white list of whole rounds). */
  float *latest;
  uint64_t *latest_on;
  double *latest_sum;
  /* The weighted variant's sum and total weight, as of version
   * weighted_at. */
  double *weighted_sum;
  double weight_total;
  uint64_t weighted_at;
  float *average;
  int *has_latest;
  int contributors;
  uint64_t window;
  uint64_t rounds;
};

enum { HIST_PER_WORKER = 8 };

static const char *const rule_names[] = {
    [QGM_ASYNC_ASGD] = "asgd",
    [QGM_ASYNC_ASGD_M] = "asgd-m",
    [QGM_ASYNC_GSGM] = "gsgm",
    [QGM_ASYNC_SA_ASGD] = "sa-asgd",
    [QGM_ASYNC_DC_ASGD] = "dc-asgd",
};
static const char *const base_names[] = {
    [QGM_GSGM_MOMENTUM] = "momentum",
    [QGM_GSGM_SGD] = "sgd",
    [QGM_GSGM_ADAM] = "adam",
};
static const char *const gsgm_rule_names[] = {
    [QGM_GSGM_ROUND] = "round",
    [QGM_GSGM_WINDOW] = "window",
    [QGM_GSGM_WEIGHTED] = "weighted",
    [QGM_GSGM_FRESH] = "fresh",
};
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* The name lists of the help texts and error messages come from the same
 * tables as the parsers (qgm__join_names). */
static const char *rule_at(size_t i) { return rule_names[i]; }
static const char *base_at(size_t i) { return base_names[i]; }
static const char *gsgm_rule_at(size_t i) { return gsgm_rule_names[i]; }

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

const char *qgm_async_rule_names(void) {
  static char buf[128];
  return qgm__join_names(buf, sizeof buf, COUNT_OF(rule_names), rule_at);
}

int qgm_gsgm_base_parse(const char *name, qgm_gsgm_base_t *out) {
  int i = parse_name(name, base_names, COUNT_OF(base_names));
  if (i < 0 || !out)
    return QGM_EINVAL;
  *out = (qgm_gsgm_base_t)i;
  return 0;
}

const char *qgm_gsgm_base_names(void) {
  static char buf[64];
  return qgm__join_names(buf, sizeof buf, COUNT_OF(base_names), base_at);
}

int qgm_gsgm_rule_parse(const char *name, qgm_gsgm_rule_t *out) {
  int i = parse_name(name, gsgm_rule_names, COUNT_OF(gsgm_rule_names));
  if (i < 0 || !out)
    return QGM_EINVAL;
  *out = (qgm_gsgm_rule_t)i;
  return 0;
}

const char *qgm_gsgm_rule_names(void) {
  static char buf[64];
  return qgm__join_names(buf, sizeof buf, COUNT_OF(gsgm_rule_names),
                        gsgm_rule_at);
}

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

int qgm_server_create(const qgm_server_config_t *cfg, size_t dim,
                      qgm_server_t **out) {
  if (!cfg || !out || dim == 0 || cfg->workers < 1 ||
      (size_t)cfg->rule >= COUNT_OF(rule_names) ||
      (size_t)cfg->base >= COUNT_OF(base_names) ||
      (size_t)cfg->gsgm_rule >= COUNT_OF(gsgm_rule_names) ||
      (cfg->gsgm_rule == QGM_GSGM_WINDOW && cfg->window < 1) ||
      !(cfg->momentum >= 0.0f && cfg->momentum < 1.0f) ||
      !(cfg->weight_decay >= 0.0f) || !(cfg->dc_lambda >= 0.0f))
    return QGM_EINVAL;
  const size_t n = (size_t)cfg->workers;
  if (qgm__mul_size(n, dim) == 0)
    return QGM_ENOMEM;
  qgm_server_t *s = calloc(1, sizeof *s);
  if (!s)
    return QGM_ENOMEM;
  s->cfg = *cfg;
  s->dim = dim;
  s->window = cfg->gsgm_rule == QGM_GSGM_WINDOW ? (uint64_t)cfg->window : 1;
  s->hist_len = HIST_PER_WORKER * n + 1;
  int ok = (s->x = zeroed_floats(dim)) &&
           (s->waiting = qgm_alloc_floats(n * dim)) &&
           (s->arrival = calloc(n, sizeof *s->arrival)) &&
           (s->computed_on = calloc(n, sizeof *s->computed_on)) &&
           (s->applied = calloc(n, sizeof *s->applied)) &&
           (s->hist = calloc(s->hist_len, sizeof *s->hist));
  if (ok && (cfg->rule == QGM_ASYNC_ASGD_M || is_gsgm(s)))
    ok = (s->m = zeroed_floats(dim)) != NULL;
  if (ok && cfg->rule == QGM_ASYNC_DC_ASGD)
    ok = (s->sent = zeroed_floats(n * dim)) != NULL;
  if (ok && is_gsgm(s)) {
    ok = (s->latest = zeroed_floats(n * dim)) &&
         (s->latest_on = calloc(n, sizeof *s->latest_on)) &&
         (s->latest_sum = calloc(dim, sizeof *s->latest_sum)) &&
         (s->average = zeroed_floats(dim)) &&
         (s->has_latest = calloc(n, sizeof *s->has_latest));
    if (ok && cfg->base == QGM_GSGM_ADAM)
      ok = (s->v = zeroed_floats(dim)) != NULL;
    if (ok && cfg->gsgm_rule == QGM_GSGM_WEIGHTED)
      ok = (s->weighted_sum = calloc(dim, sizeof *s->weighted_sum)) != NULL;
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
  free(s->hist);
  free(s->sent);
  free(s->latest);
  free(s->latest_on);
  free(s->latest_sum);
  free(s->weighted_sum);
  free(s->average);
  free(s->has_latest);
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

const uint64_t *qgm_server_staleness_hist(const qgm_server_t *s,
                                          size_t *len) {
  *len = s->hist_len;
  return s->hist;
}

void qgm_server_sent(qgm_server_t *s, int worker) {
  if (s->sent && valid_worker(s, worker))
    memcpy(s->sent + (size_t)worker * s->dim, s->x, s->dim * sizeof *s->x);
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
        (!is_gsgm(s) || s->applied[w] < s->rounds + s->window) &&
        (best < 0 || s->arrival[w] < s->arrival[best]))
      best = w;
  return best;
}

/* ---------------------------------------------------------------- rules */

/* Plain ASGD, also staleness-aware ASGD's step (with lr / tau). */
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

/* x -= lr (g + dc_lambda g*g*(x - x_sent) + lambda x): the first-order
 * correction of a gradient computed at x_sent to the current x, with the
 * diagonal g*g standing in for the Hessian (Zheng et al. 2017). */
static void apply_dc_asgd(qgm_server_t *s, const float *restrict g,
                          const float *restrict sent, float lr) {
  const float wd = s->cfg.weight_decay, dc = s->cfg.dc_lambda;
  float *restrict x = s->x;
  for (size_t i = 0; i < s->dim; i++)
    x[i] -= lr * (g[i] + dc * g[i] * g[i] * (x[i] - sent[i]) + wd * x[i]);
}

/* Replaces worker's latest gradient with g (computed on version `on`) and
 * refreshes the partial average over the workers heard from so far. */
static void update_average(qgm_server_t *s, int worker, const float *g,
                           uint64_t on) {
  float *restrict latest = s->latest + (size_t)worker * s->dim;
  double *restrict sum = s->latest_sum;
  if (!s->has_latest[worker]) {
    s->has_latest[worker] = 1;
    s->contributors++;
  }
  s->latest_on[worker] = on;
  const double inv = 1.0 / s->contributors;
  for (size_t i = 0; i < s->dim; i++) {
    sum[i] += (double)g[i] - (double)latest[i];
    latest[i] = g[i];
    s->average[i] = (float)(sum[i] * inv);
  }
}

/* The weighted variant: a = sum_w c_w G_w / sum_w c_w with c_w = gamma^age_w,
 * age_w the versions between the model G_w was computed on and `now` (the
 * version before this update), gamma = 1 - 1/workers: a gradient one
 * round old counts about 1/e as much as a fresh one. Geometric weights
 * age together, so the weighted sum is kept up to date in O(dim): decay
 * it by gamma per version, take out worker's previous latest (not yet
 * replaced) and add g. */
static void weigh_in(qgm_server_t *s, int worker, const float *g, uint64_t on,
                     uint64_t now) {
  const double gamma = 1.0 - 1.0 / s->cfg.workers;
  const double decay = pow(gamma, (double)(now - s->weighted_at));
  const double old = s->has_latest[worker]
                         ? pow(gamma, (double)(now - s->latest_on[worker]))
                         : 0.0;
  const double fresh = pow(gamma, (double)(now - on));
  const float *restrict latest = s->latest + (size_t)worker * s->dim;
  double *restrict sum = s->weighted_sum;
  for (size_t i = 0; i < s->dim; i++)
    sum[i] = decay * sum[i] - old * (double)latest[i] + fresh * (double)g[i];
  s->weight_total = decay * s->weight_total - old + fresh;
  s->weighted_at = now;
}

static void weighted_average(qgm_server_t *s) {
  const double inv = 1.0 / s->weight_total;
  for (size_t i = 0; i < s->dim; i++)
    s->average[i] = (float)(s->weighted_sum[i] * inv);
}

/* The direction d = a + lambda x fed to the global momentum, where a is
 * the partial average, or the arriving gradient g itself for the fresh
 * variant. */
static void apply_gsgm(qgm_server_t *s, const float *a, float lr) {
  const float wd = s->cfg.weight_decay, beta = s->cfg.momentum;
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
    const qgm__adam_step_t c = qgm__adam_at(
        beta, QGM__ADAM_BETA2, QGM__ADAM_EPS, lr, (double)s->version);
    for (size_t i = 0; i < s->dim; i++)
      x[i] -= qgm__adam_update(&c, &m[i], &v[i], a[i] + wd * x[i]);
    break;
  }
  }
}

/* The fewest gradients applied from one worker. */
static uint64_t fewest_applied(const qgm_server_t *s) {
  uint64_t lo = s->applied[0];
  for (int w = 1; w < s->cfg.workers; w++)
    lo = s->applied[w] < lo ? s->applied[w] : lo;
  return lo;
}

int qgm_server_apply_next(qgm_server_t *s, float lr,
                          qgm_server_update_t *out) {
  int w = next_admitted(s);
  if (w < 0)
    return 0;
  const float *g = s->waiting + (size_t)w * s->dim;
  const uint64_t before = s->version;
  qgm_server_update_t u = {.worker = w,
                           .staleness = before - s->computed_on[w],
                           .round = s->rounds};
  s->arrival[w] = NO_ARRIVAL;
  s->applied[w]++;
  s->version++;
  s->hist[u.staleness < s->hist_len ? u.staleness : s->hist_len - 1]++;
  switch (s->cfg.rule) {
  case QGM_ASYNC_ASGD:
    apply_asgd(s, g, lr);
    break;
  case QGM_ASYNC_SA_ASGD:
    apply_asgd(s, g, lr / (float)(u.staleness > 1 ? u.staleness : 1));
    break;
  case QGM_ASYNC_DC_ASGD:
    apply_dc_asgd(s, g, s->sent + (size_t)w * s->dim, lr);
    break;
  case QGM_ASYNC_ASGD_M:
    apply_asgd_m(s, g, lr);
    break;
  case QGM_ASYNC_GSGM:
    if (s->cfg.gsgm_rule == QGM_GSGM_WEIGHTED)
      weigh_in(s, w, g, s->computed_on[w], before);
    update_average(s, w, g, s->computed_on[w]);
    if (s->cfg.gsgm_rule == QGM_GSGM_WEIGHTED)
      weighted_average(s);
    apply_gsgm(s, s->cfg.gsgm_rule == QGM_GSGM_FRESH ? g : s->average, lr);
    s->rounds = fewest_applied(s);
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
