/* unit_async.c - the parameter server's rules on scripted arrival orders,
 * against values worked out by hand, and GSGM's white list under a
 * straggler.
 *
 * Scenario of the hand-computed tests: d = 2, 3 workers, x_0 = (1, 1),
 * lr = 0.1, beta = 0.5, lambda = 0 unless said (the other rules' tests
 * say their own scenario). Arrivals, in order:
 *   1. worker 0, g = (2, 0),  computed on version 0
 *   2. worker 0, g = (4, 0),  computed on version 1
 *   3. worker 1, g = (0, 2),  computed on version 0
 *   4. worker 2, g = (0, -4), computed on version 1 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "helpers.h"
#include "qgm.h"

#define TOL 1e-6

static const float X0[2] = {1.0f, 1.0f};

static qgm_server_t *make(qgm_async_rule_t rule, qgm_gsgm_base_t base,
                          int workers, float wd) {
  qgm_server_config_t cfg = {.rule = rule, .base = base, .workers = workers,
                             .momentum = 0.5f, .weight_decay = wd};
  qgm_server_t *s = NULL;
  assert_int_equal(qgm_server_create(&cfg, 2, &s), 0);
  qgm_vec_copy(qgm_server_params(s), X0, 2);
  return s;
}

static void submit(qgm_server_t *s, int worker, float g0, float g1,
                   uint64_t version) {
  const float g[2] = {g0, g1};
  assert_int_equal(qgm_server_submit(s, worker, g, version), 0);
}

/* Applies the next admitted gradient and checks who and how stale. */
static void apply(qgm_server_t *s, int worker, uint64_t staleness,
                  uint64_t round) {
  qgm_server_update_t u;
  assert_int_equal(qgm_server_apply_next(s, 0.1f, &u), 1);
  assert_int_equal(u.worker, worker);
  assert_int_equal(u.staleness, staleness);
  assert_int_equal(u.round, round);
  assert_int_equal(u.version, qgm_server_version(s));
}

static void nothing_admitted(qgm_server_t *s) {
  assert_int_equal(qgm_server_apply_next(s, 0.1f, NULL), 0);
}

static void expect2(const float *v, double a, double b) {
  assert_non_null(v);
  assert_near(v[0], a, TOL);
  assert_near(v[1], b, TOL);
}

static void test_gsgm_scripted_arrivals(void **state) {
  (void)state;
  qgm_server_t *s = make(QGM_ASYNC_GSGM, QGM_GSGM_MOMENTUM, 3, 0.0f);
  /* 1: a = (2, 0); m = a; x = (1, 1) - 0.1 m */
  submit(s, 0, 2, 0, 0);
  apply(s, 0, 0, 0);
  expect2(qgm_server_partial_average(s), 2, 0);
  expect2(qgm_server_momentum(s), 2, 0);
  expect2(qgm_server_params(s), 0.8, 1.0);
  /* 2: worker 0 already contributed in round 0: it waits. */
  submit(s, 0, 4, 0, 1);
  nothing_admitted(s);
  assert_true(qgm_server_waiting(s, 0));
  /* 3: worker 1 goes first although it arrived later; computed on version
   * 0, applied after 1 update: staleness 1. a = ((2,0) + (0,2)) / 2;
   * m = 0.5 (2, 0) + (1, 1) = (2, 1) */
  submit(s, 1, 0, 2, 0);
  apply(s, 1, 1, 0);
  nothing_admitted(s);
  expect2(qgm_server_partial_average(s), 1, 1);
  expect2(qgm_server_momentum(s), 2, 1);
  expect2(qgm_server_params(s), 0.6, 0.9);
  /* 4: worker 2 completes round 0. a = ((2,0) + (0,2) + (0,-4)) / 3;
   * m = 0.5 (2, 1) + (2/3, -2/3) = (5/3, -1/6) */
  submit(s, 2, 0, -4, 1);
  apply(s, 2, 1, 0);
  expect2(qgm_server_partial_average(s), 2.0 / 3, -2.0 / 3);
  expect2(qgm_server_momentum(s), 5.0 / 3, -1.0 / 6);
  expect2(qgm_server_params(s), 0.6 - 0.1 * 5 / 3, 0.9 + 0.1 / 6);
  assert_int_equal(qgm_server_rounds(s), 1);
  /* Round 1 admits worker 0's waiting gradient (version 1, applied after
   * 3 updates): it replaces worker 0's latest: a = ((4,0) + (0,2) +
   * (0,-4)) / 3; m = 0.5 (5/3, -1/6) + (4/3, -2/3) = (13/6, -3/4) */
  apply(s, 0, 2, 1);
  assert_false(qgm_server_waiting(s, 0));
  expect2(qgm_server_partial_average(s), 4.0 / 3, -2.0 / 3);
  expect2(qgm_server_momentum(s), 13.0 / 6, -0.75);
  expect2(qgm_server_params(s), 0.6 - 0.1 * 5 / 3 - 0.1 * 13 / 6,
          0.9 + 0.1 / 6 + 0.075);
  assert_int_equal(qgm_server_version(s), 4);
  assert_int_equal(qgm_server_applied(s, 0), 2);
  assert_int_equal(qgm_server_applied(s, 1), 1);
  assert_int_equal(qgm_server_applied(s, 2), 1);
  qgm_server_free(s);
}

/* The same arrivals under asgd-m: no white list, so worker 0's second
 * gradient goes at once, and no averaging. */
static void test_asgd_m_scripted_arrivals(void **state) {
  (void)state;
  qgm_server_t *s = make(QGM_ASYNC_ASGD_M, QGM_GSGM_MOMENTUM, 3, 0.0f);
  assert_null(qgm_server_partial_average(s));
  submit(s, 0, 2, 0, 0);
  apply(s, 0, 0, 0);
  expect2(qgm_server_params(s), 0.8, 1.0);
  /* m = 0.5 (2, 0) + (4, 0) = (5, 0) */
  submit(s, 0, 4, 0, 1);
  apply(s, 0, 0, 0);
  expect2(qgm_server_momentum(s), 5, 0);
  expect2(qgm_server_params(s), 0.3, 1.0);
  /* Computed on version 0, applied after 2: m = (2.5, 0) + (0, 2) */
  submit(s, 1, 0, 2, 0);
  apply(s, 1, 2, 0);
  expect2(qgm_server_momentum(s), 2.5, 2);
  expect2(qgm_server_params(s), 0.05, 0.8);
  assert_int_equal(qgm_server_rounds(s), 0);
  qgm_server_free(s);
}

/* asgd with weight decay: x -= 0.1 ((2, 0) + 0.5 (1, 1)). */
static void test_asgd_weight_decay(void **state) {
  (void)state;
  qgm_server_t *s = make(QGM_ASYNC_ASGD, QGM_GSGM_MOMENTUM, 2, 0.5f);
  assert_null(qgm_server_momentum(s));
  submit(s, 1, 2, 0, 0);
  apply(s, 1, 0, 0);
  expect2(qgm_server_params(s), 0.75, 0.95);
  qgm_server_free(s);
}

/* GSGM over SGD: m = 0.5 m + 0.5 a is a smoothed average. */
static void test_gsgm_sgd_base(void **state) {
  (void)state;
  qgm_server_t *s = make(QGM_ASYNC_GSGM, QGM_GSGM_SGD, 3, 0.0f);
  submit(s, 0, 2, 0, 0);
  apply(s, 0, 0, 0);
  expect2(qgm_server_momentum(s), 1, 0);
  expect2(qgm_server_params(s), 0.9, 1.0);
  /* a = (1, 1); m = 0.5 (1, 0) + 0.5 (1, 1) = (1, 0.5) */
  submit(s, 1, 0, 2, 0);
  apply(s, 1, 1, 0);
  expect2(qgm_server_momentum(s), 1, 0.5);
  expect2(qgm_server_params(s), 0.8, 0.95);
  qgm_server_free(s);
}

/* GSGM over Adam (beta1 = 0.5, beta2 = 0.999): step 1 moves each
 * coordinate with a non-zero gradient by exactly lr; step 2 with
 * m = (1, 0.5), v = (0.004996, 0.001), bias corrections 4/3 and
 * 1/(1 - 0.999^2) = 500.250125. */
static void test_gsgm_adam_base(void **state) {
  (void)state;
  qgm_server_t *s = make(QGM_ASYNC_GSGM, QGM_GSGM_ADAM, 3, 0.0f);
  submit(s, 0, 2, 0, 0);
  apply(s, 0, 0, 0);
  expect2(qgm_server_params(s), 0.9, 1.0);
  submit(s, 1, 0, 2, 0);
  apply(s, 1, 1, 0);
  expect2(qgm_server_momentum(s), 1, 0.5);
  /* x -= 0.1 * (4/3 m) / sqrt(500.25 v) */
  assert_near(qgm_server_params(s)[0], 0.81565994, 1e-5);
  assert_near(qgm_server_params(s)[1], 0.90574267, 1e-5);
  qgm_server_free(s);
}

/* An event-driven simulation: worker w needs durations[w] time units per
 * gradient and gets the model again only when its gradient is applied.
 * Returns the largest spread max - min of the applied counts seen after
 * any update. */
static uint64_t simulate(qgm_async_rule_t rule, const double *durations,
                         int workers, int arrivals) {
  qgm_server_t *s = make(rule, QGM_GSGM_MOMENTUM, workers, 0.0f);
  double done_at[8];
  uint64_t sent_version[8] = {0};
  int computing[8];
  for (int w = 0; w < workers; w++) {
    done_at[w] = durations[w];
    computing[w] = 1;
  }
  const float g[2] = {0.01f, -0.01f};
  uint64_t spread = 0;
  for (int a = 0; a < arrivals; a++) {
    int next = 0;
    for (int w = 1; w < workers; w++)
      if (computing[w] && (!computing[next] || done_at[w] < done_at[next]))
        next = w;
    assert_true(computing[next]); /* someone always computes */
    double now = done_at[next];
    computing[next] = 0;
    assert_int_equal(qgm_server_submit(s, next, g, sent_version[next]), 0);
    qgm_server_update_t u;
    while (qgm_server_apply_next(s, 0.1f, &u)) {
      assert_int_equal(u.staleness,
                       u.version - 1 - sent_version[u.worker]);
      uint64_t lo = UINT64_MAX, hi = 0;
      for (int w = 0; w < workers; w++) {
        uint64_t n = qgm_server_applied(s, w);
        lo = n < lo ? n : lo;
        hi = n > hi ? n : hi;
      }
      if (rule == QGM_ASYNC_GSGM)
        assert_int_equal(qgm_server_rounds(s), lo);
      spread = hi - lo > spread ? hi - lo : spread;
      sent_version[u.worker] = u.version;
      computing[u.worker] = 1;
      done_at[u.worker] = now + durations[u.worker];
    }
  }
  qgm_server_free(s);
  return spread;
}

/* With a 5x straggler the white list keeps every worker's applied count
 * within 1 of the others'; plain ASGD lets the fast workers run away, so
 * the check is one that can fail. */
static void test_white_list_with_straggler(void **state) {
  (void)state;
  const double durations[4] = {1.0, 1.1, 0.9, 5.0};
  assert_true(simulate(QGM_ASYNC_GSGM, durations, 4, 400) <= 1);
  assert_true(simulate(QGM_ASYNC_ASGD, durations, 4, 400) > 10);
}

static void test_bad_arguments(void **state) {
  (void)state;
  qgm_server_config_t cfg = {.rule = QGM_ASYNC_GSGM, .workers = 0,
                             .momentum = 0.9f};
  qgm_server_t *s = NULL;
  assert_int_equal(qgm_server_create(&cfg, 2, &s), QGM_EINVAL);
  cfg.workers = 2;
  cfg.momentum = 1.0f;
  assert_int_equal(qgm_server_create(&cfg, 2, &s), QGM_EINVAL);
  qgm_server_free(NULL);
  s = make(QGM_ASYNC_GSGM, QGM_GSGM_MOMENTUM, 2, 0.0f);
  const float g[2] = {1, 1};
  assert_int_equal(qgm_server_submit(s, 2, g, 0), QGM_EINVAL);
  assert_int_equal(qgm_server_submit(s, -1, g, 0), QGM_EINVAL);
  assert_int_equal(qgm_server_submit(s, 0, g, 1), QGM_EINVAL); /* future */
  assert_int_equal(qgm_server_submit(s, 0, g, 0), 0);
  assert_int_equal(qgm_server_submit(s, 0, g, 0), QGM_EINVAL); /* twice */
  qgm_server_free(s);
}

static void test_names(void **state) {
  (void)state;
  qgm_async_rule_t rule;
  qgm_gsgm_base_t base;
  assert_int_equal(qgm_async_rule_parse("asgd-m", &rule), 0);
  assert_int_equal(rule, QGM_ASYNC_ASGD_M);
  assert_string_equal(qgm_async_rule_name(QGM_ASYNC_GSGM), "gsgm");
  assert_int_equal(qgm_async_rule_parse("qg-dsgdm-n", &rule), QGM_EINVAL);
  assert_int_equal(qgm_gsgm_base_parse("adam", &base), 0);
  assert_int_equal(base, QGM_GSGM_ADAM);
  assert_int_equal(qgm_gsgm_base_parse("nadam", &base), QGM_EINVAL);
  assert_int_equal(qgm_async_rule_parse("dc-asgd", &rule), 0);
  assert_int_equal(rule, QGM_ASYNC_DC_ASGD);
  assert_string_equal(qgm_async_rule_name(QGM_ASYNC_SA_ASGD), "sa-asgd");
  /* The help lists come from the same tables as the parsers. */
  assert_string_equal(qgm_async_rule_names(),
                      "asgd, asgd-m, gsgm, sa-asgd, dc-asgd");
  assert_string_equal(qgm_gsgm_base_names(), "momentum, sgd, adam");
  qgm_gsgm_rule_t gr;
  assert_int_equal(qgm_gsgm_rule_parse("weighted", &gr), 0);
  assert_int_equal(gr, QGM_GSGM_WEIGHTED);
  assert_int_equal(qgm_gsgm_rule_parse("rounds", &gr), QGM_EINVAL);
  assert_string_equal(qgm_gsgm_rule_names(), "round, window, weighted, fresh");
}

static qgm_server_t *make_cfg(qgm_server_config_t cfg) {
  qgm_server_t *s = NULL;
  assert_int_equal(qgm_server_create(&cfg, 2, &s), 0);
  qgm_vec_copy(qgm_server_params(s), X0, 2);
  return s;
}

/* Staleness-aware ASGD: a gradient of staleness tau steps lr / tau (lr
 * itself at staleness 0 and 1). */
static void test_sa_asgd_divides_by_staleness(void **state) {
  (void)state;
  qgm_server_t *s = make(QGM_ASYNC_SA_ASGD, QGM_GSGM_MOMENTUM, 3, 0.0f);
  assert_null(qgm_server_momentum(s));
  submit(s, 0, 2, 0, 0);
  apply(s, 0, 0, 0); /* x = (1, 1) - 0.1 (2, 0) */
  expect2(qgm_server_params(s), 0.8, 1.0);
  submit(s, 0, 0, 2, 1);
  apply(s, 0, 0, 0); /* x = (0.8, 1) - 0.1 (0, 2) */
  submit(s, 1, 4, 0, 0);
  apply(s, 1, 2, 0); /* staleness 2: x -= 0.05 (4, 0) */
  expect2(qgm_server_params(s), 0.6, 0.8);
  qgm_server_free(s);
}

/* DC-ASGD: g + 0.5 g*g*(x - x_sent). Worker 1 is sent x = (1, 1); then
 * worker 0's g = (2, 0) moves x to (0.8, 1); worker 1's g = (1, 2),
 * computed at (1, 1), is compensated by 0.5 (1, 4) (-0.2, 0) = (-0.1, 0):
 * x = (0.8, 1) - 0.1 (0.9, 2) = (0.71, 0.8). */
static void test_dc_asgd_compensates_the_delay(void **state) {
  (void)state;
  qgm_server_t *s = make_cfg((qgm_server_config_t){
      .rule = QGM_ASYNC_DC_ASGD, .workers = 2, .dc_lambda = 0.5f});
  qgm_server_sent(s, 0);
  qgm_server_sent(s, 1);
  submit(s, 0, 2, 0, 0);
  apply(s, 0, 0, 0);
  expect2(qgm_server_params(s), 0.8, 1.0);
  qgm_server_sent(s, 0);
  submit(s, 1, 1, 2, 0);
  apply(s, 1, 1, 0);
  expect2(qgm_server_params(s), 0.71, 0.8);
  qgm_server_free(s);
}

/* The window variant lets a worker run up to 2 gradients ahead of the
 * slowest: worker 0's third waits until worker 1 has one applied. */
static void test_gsgm_window(void **state) {
  (void)state;
  qgm_server_t *s = make_cfg((qgm_server_config_t){
      .rule = QGM_ASYNC_GSGM, .gsgm_rule = QGM_GSGM_WINDOW, .window = 2,
      .workers = 2, .momentum = 0.5f});
  submit(s, 0, 1, 0, 0);
  apply(s, 0, 0, 0);
  submit(s, 0, 1, 0, 1);
  apply(s, 0, 0, 0);
  submit(s, 0, 1, 0, 2);
  nothing_admitted(s);
  submit(s, 1, 0, 1, 0);
  apply(s, 1, 2, 0); /* the round count is the fewest applied: 0 */
  assert_int_equal(qgm_server_rounds(s), 1);
  apply(s, 0, 1, 1);
  assert_int_equal(qgm_server_applied(s, 0), 3);
  qgm_server_free(s);
  /* Window 0 is refused. */
  qgm_server_config_t bad = {.rule = QGM_ASYNC_GSGM,
                             .gsgm_rule = QGM_GSGM_WINDOW, .workers = 2};
  assert_int_equal(qgm_server_create(&bad, 2, &s), QGM_EINVAL);
}

/* The weighted variant, 3 workers: gamma = 2/3, a gradient of age k
 * weighs gamma^k. */
static void test_gsgm_weighted(void **state) {
  (void)state;
  qgm_server_t *s = make_cfg((qgm_server_config_t){
      .rule = QGM_ASYNC_GSGM, .base = QGM_GSGM_SGD,
      .gsgm_rule = QGM_GSGM_WEIGHTED, .workers = 3, .momentum = 0.5f});
  submit(s, 0, 2, 0, 0);
  apply(s, 0, 0, 0);
  expect2(qgm_server_partial_average(s), 2, 0);
  /* Worker 1's (0, 3), computed on version 0, at version 1: both are 1
   * old, a = (1, 1.5). */
  submit(s, 1, 0, 3, 0);
  apply(s, 1, 1, 0);
  expect2(qgm_server_partial_average(s), 1, 1.5);
  submit(s, 2, 0, 0, 2); /* completes round 0: worker 0 is admitted again */
  submit(s, 0, 0, 6, 1);
  apply(s, 2, 0, 0);
  /* At version 2 workers 0 and 1's gradients are 2 old, worker 2's zero
   * gradient fresh: a = (4/9 (2, 0) + 4/9 (0, 3)) / (4/9 + 4/9 + 1) =
   * (8/17, 12/17). */
  expect2(qgm_server_partial_average(s), 8.0 / 17, 12.0 / 17);
  apply(s, 0, 2, 1);
  /* Worker 0's (0, 6) from version 1 at version 3: gamma^2; worker 1's
   * gamma^3, worker 2's gamma^1: a = (4/9 (0, 6) + 8/27 (0, 3)) / (4/9 +
   * 8/27 + 2/3) = (0, 96/27) / (38/27) = (0, 48/19). */
  expect2(qgm_server_partial_average(s), 0, 48.0 / 19);
  qgm_server_free(s);
}

/* The fresh variant feeds the momentum the arriving gradient, not the
 * average: m = 0.5 (1, 0) + 0.5 (0, 2) = (0.5, 1). */
static void test_gsgm_fresh(void **state) {
  (void)state;
  qgm_server_t *s = make_cfg((qgm_server_config_t){
      .rule = QGM_ASYNC_GSGM, .base = QGM_GSGM_SGD,
      .gsgm_rule = QGM_GSGM_FRESH, .workers = 2, .momentum = 0.5f});
  submit(s, 0, 2, 0, 0);
  apply(s, 0, 0, 0);
  submit(s, 1, 0, 2, 0);
  apply(s, 1, 1, 0);
  expect2(qgm_server_partial_average(s), 1, 1);
  expect2(qgm_server_momentum(s), 0.5, 1);
  expect2(qgm_server_params(s), 0.85, 0.9);
  qgm_server_free(s);
}

/* The histogram of the scripted GSGM arrivals (staleness 0, 1, 1, 2) and
 * its overflow bucket: with 1 worker it has 9 buckets, the last counting
 * staleness 8 and more. */
static void test_staleness_histogram(void **state) {
  (void)state;
  qgm_server_t *s = make(QGM_ASYNC_GSGM, QGM_GSGM_MOMENTUM, 3, 0.0f);
  submit(s, 0, 2, 0, 0);
  apply(s, 0, 0, 0);
  submit(s, 0, 4, 0, 1);
  submit(s, 1, 0, 2, 0);
  apply(s, 1, 1, 0);
  submit(s, 2, 0, -4, 1);
  apply(s, 2, 1, 0);
  apply(s, 0, 2, 1);
  size_t len;
  const uint64_t *hist = qgm_server_staleness_hist(s, &len);
  assert_int_equal(len, 25);
  const uint64_t want[4] = {1, 2, 1, 0};
  for (size_t t = 0; t < len; t++)
    assert_int_equal(hist[t], t < 4 ? want[t] : 0);
  qgm_server_free(s);

  s = make(QGM_ASYNC_ASGD, QGM_GSGM_MOMENTUM, 1, 0.0f);
  for (uint64_t v = 0; v < 12; v++) {
    submit(s, 0, 0, 0, 0); /* always computed on version 0 */
    apply(s, 0, v, 0);
  }
  hist = qgm_server_staleness_hist(s, &len);
  assert_int_equal(len, 9);
  for (size_t t = 0; t < 8; t++)
    assert_int_equal(hist[t], 1);
  assert_int_equal(hist[8], 4); /* staleness 8, 9, 10, 11 */
  qgm_server_free(s);
}

/* Population standard deviation of the last k values. */
static void test_stability_std(void **state) {
  (void)state;
  const double acc[4] = {0.5, 0.7, 0.6, 0.8};
  /* last 3: mean 0.7, variance (0 + 0.01 + 0.01) / 3 */
  assert_near(qgm_stability_std(acc, 4, 3), sqrt(0.02 / 3), 1e-12);
  /* fewer than k: all four, mean 0.65, variance 0.05 / 4 */
  assert_near(qgm_stability_std(acc, 4, 10), sqrt(0.0125), 1e-12);
  assert_near(qgm_stability_std(acc, 0, 10), 0.0, 0.0);
  assert_near(qgm_stability_std(acc, 4, 1), 0.0, 0.0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gsgm_scripted_arrivals),
      cmocka_unit_test(test_asgd_m_scripted_arrivals),
      cmocka_unit_test(test_asgd_weight_decay),
      cmocka_unit_test(test_gsgm_sgd_base),
      cmocka_unit_test(test_gsgm_adam_base),
      cmocka_unit_test(test_white_list_with_straggler),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_stability_std),
      cmocka_unit_test(test_sa_asgd_divides_by_staleness),
      cmocka_unit_test(test_dc_asgd_compensates_the_delay),
      cmocka_unit_test(test_gsgm_window),
      cmocka_unit_test(test_gsgm_weighted),
      cmocka_unit_test(test_gsgm_fresh),
      cmocka_unit_test(test_staleness_histogram),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
