/* unit_gut.c - GUT, QG-GUTm and Momentum Tracking against values computed
 * by hand, and the invariants their tracking keeps.
 *
 * Two-step scenario (as test/unit_optim.c): d = 2, x_0 = (1, -2), lr 0.5,
 * beta 0.9, lambda 0.1, gradients g_0 = (0.2, 0.4), g_1 = (-0.1, 0.3), one
 * neighbour whose message is always (0.5, 1.0) (Momentum Tracking:
 * [x, v] = (0.5, 1.0, 0.2, -0.4)), W = [1/2, 1/2]; g' = g + lambda x. The
 * rules are those of docs/ALGORITHMS.md; mu is each algorithm's default
 * (0.9 for gut, 0.01 for qg-gutm). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "qgm.h"

static const float X0[2] = {1.0f, -2.0f};
static const float GRADS[2][2] = {{0.2f, 0.4f}, {-0.1f, 0.3f}};
static const float NEIGHBOUR[4] = {0.5f, 1.0f, 0.2f, -0.4f};
#define TOL 1e-6

static qgm_optim_t *make_scaled(qgm_algorithm_t alg, float mu, size_t dim) {
  qgm_optim_config_t cfg = {.algorithm = alg, .momentum = 0.9f,
                            .weight_decay = 0.1f, .tracking_scale = mu};
  qgm_optim_t *o = NULL;
  assert_int_equal(qgm_optim_create(&cfg, dim, &o), 0);
  return o;
}

static qgm_optim_t *make(qgm_algorithm_t alg) {
  qgm_optim_t *o = make_scaled(alg, 0.0f, 2);
  qgm_vec_copy(qgm_optim_params(o), X0, 2);
  return o;
}

/* One step with gradient GRADS[t], checking the message against expect_msg
 * (message_len floats). */
static void step(qgm_optim_t *o, int t, const float *expect_msg, float lr) {
  qgm_vec_copy(qgm_optim_grad(o), GRADS[t], 2);
  const float *msg = qgm_optim_local_step(o, lr);
  const size_t len = qgm_optim_message_len(o);
  for (size_t i = 0; expect_msg && i < len; i++)
    assert_float_equal(msg[i], expect_msg[i], TOL);
  float *mix = qgm_optim_mix_buffer(o);
  qgm_vec_scale_copy(mix, 0.5f, msg, len);
  qgm_vec_axpy(mix, 0.5f, NEIGHBOUR, len);
  qgm_optim_after_gossip(o, lr);
}

static void expect_vec(const float *v, double a, double b) {
  assert_non_null(v);
  assert_float_equal(v[0], a, TOL);
  assert_float_equal(v[1], b, TOL);
}

/* The state vector called name. */
static const float *state_of(qgm_optim_t *o, const char *name) {
  for (size_t i = 0; i < qgm_optim_state_count(o); i++) {
    qgm_optim_state_t s;
    assert_int_equal(qgm_optim_state_get(o, i, &s), 0);
    if (strcmp(s.name, name) == 0)
      return s.data;
  }
  fail_msg("no state '%s'", name);
  return NULL;
}

static void test_gut_two_steps(void **state) {
  (void)state;
  qgm_optim_t *o = make(QGM_ALG_GUT);
  assert_null(qgm_optim_momentum(o));
  /* e = 0: msg = x - 0.5 g' = (1, -2) - 0.5 (0.3, 0.2); W msg = (0.675,
   * -0.55); r = (msg - W msg) / 0.5 = (0.35, -3.1); e = 0.9 * 0 + r */
  step(o, 0, (const float[]){0.85f, -2.1f}, 0.5f);
  expect_vec(qgm_optim_params(o), 0.675, -0.55);
  expect_vec(state_of(o, "e"), 0.35, -3.1);
  /* g' = (-0.0325, 0.245); msg = x - 0.5 (g' + 0.9 e)
   *    = (0.675, -0.55) - 0.5 (0.2825, -2.545) */
  step(o, 1, (const float[]){0.53375f, 0.7225f}, 0.5f);
  /* W msg = (0.516875, 0.86125); r = (0.03375, -0.2775);
   * e = 0.9 (0.35, -3.1) + r */
  expect_vec(qgm_optim_params(o), 0.516875, 0.86125);
  expect_vec(state_of(o, "e"), 0.34875, -3.0675);
  qgm_optim_free(o);
}

static void test_qg_gutm_two_steps(void **state) {
  (void)state;
  qgm_optim_t *o = make(QGM_ALG_QG_GUTM);
  /* m = e = 0: the first message is DSGD's */
  step(o, 0, (const float[]){0.85f, -2.1f}, 0.5f);
  expect_vec(qgm_optim_params(o), 0.675, -0.55);
  /* r = (0.35, -3.1); m = g' + r = (x_0 - x_1) / 0.5 = (0.65, -2.9);
   * e = 1.9 r */
  expect_vec(qgm_optim_momentum(o), 0.65, -2.9);
  expect_vec(state_of(o, "e"), 0.665, -5.89);
  /* msg = x - 0.5 (0.9 m + g' + 0.01 e)
   *     = (0.675, -0.55) - 0.5 (0.55915, -2.4239) */
  step(o, 1, (const float[]){0.395425f, 0.66195f}, 0.5f);
  /* W msg = (0.4477125, 0.830975); r = (-0.104575, -0.33805);
   * m = (x_1 - x_2) / 0.5; e = 0.9 m_1 + 0.01 e_1 + 1.9 r */
  expect_vec(qgm_optim_params(o), 0.4477125, 0.830975);
  expect_vec(qgm_optim_momentum(o), 0.454575, -2.76195);
  expect_vec(state_of(o, "e"), 0.3929575, -3.311195);
  qgm_optim_free(o);
}

static void test_mt_two_steps(void **state) {
  (void)state;
  qgm_optim_t *o = make(QGM_ALG_MT);
  assert_int_equal(qgm_optim_message_len(o), 4);
  /* u = v = g'_0 = (0.3, 0.2); the message is [x_0, v_0] */
  step(o, 0, (const float[]){1.0f, -2.0f, 0.3f, 0.2f}, 0.5f);
  /* W x = (0.75, -0.5); x_1 = W x - 0.5 v_0; W v = (0.25, -0.1) */
  expect_vec(qgm_optim_params(o), 0.6, -0.6);
  expect_vec(qgm_optim_momentum(o), 0.3, 0.2);
  /* g'_1 = (-0.04, 0.24); u_1 = 0.9 u_0 + g'_1 = (0.23, 0.42);
   * v_1 = W v + u_1 - u_0 = (0.18, 0.12) */
  step(o, 1, (const float[]){0.6f, -0.6f, 0.18f, 0.12f}, 0.5f);
  /* W x = (0.55, 0.2); x_2 = W x - 0.5 v_1; W v_1 = (0.19, -0.14) */
  expect_vec(qgm_optim_params(o), 0.46, 0.14);
  expect_vec(qgm_optim_momentum(o), 0.23, 0.42);
  expect_vec(qgm_optim_params(o) + 2, 0.19, -0.14);
  qgm_optim_free(o);
}

static void test_state_listing(void **state) {
  (void)state;
  static const struct {
    qgm_algorithm_t alg;
    const char *names;
  } expect[] = {{QGM_ALG_GUT, "x e"},
                {QGM_ALG_QG_GUTM, "x m e"},
                {QGM_ALG_MT, "x y m"}};
  for (size_t k = 0; k < sizeof expect / sizeof expect[0]; k++) {
    qgm_optim_t *o = make(expect[k].alg);
    char names[64] = "";
    size_t used = 0;
    for (size_t i = 0; i < qgm_optim_state_count(o); i++) {
      qgm_optim_state_t s;
      assert_int_equal(qgm_optim_state_get(o, i, &s), 0);
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                               i ? " " : "", s.name);
    }
    assert_string_equal(names, expect[k].names);
    qgm_optim_free(o);
  }
}

/* A fresh optimizer given the listed state (and the step count) of one
 * that took a step takes the next step exactly as it: a checkpoint that
 * saves the listing resumes exactly. */
static void test_state_restore_continues_exactly(void **state) {
  (void)state;
  const qgm_algorithm_t algs[] = {QGM_ALG_GUT, QGM_ALG_QG_GUTM, QGM_ALG_MT};
  for (size_t k = 0; k < 3; k++) {
    qgm_optim_t *a = make(algs[k]), *b = make(algs[k]);
    step(a, 0, NULL, 0.5f);
    for (size_t i = 0; i < qgm_optim_state_count(a); i++) {
      qgm_optim_state_t sa, sb;
      qgm_optim_state_get(a, i, &sa);
      qgm_optim_state_get(b, i, &sb);
      qgm_vec_copy(sb.data, sa.data, sa.len);
    }
    qgm_optim_set_steps(b, qgm_optim_steps(a));
    step(a, 1, NULL, 0.5f);
    step(b, 1, NULL, 0.5f);
    for (size_t i = 0; i < qgm_optim_state_count(a); i++) {
      qgm_optim_state_t sa, sb;
      qgm_optim_state_get(a, i, &sa);
      qgm_optim_state_get(b, i, &sb);
      assert_memory_equal(sa.data, sb.data, sa.len * sizeof(float));
    }
    qgm_optim_free(a);
    qgm_optim_free(b);
  }
}

/* GUT with mu = 1 is D^2: the same model and correction, bit for bit,
 * over steps with changing gradients, neighbours and lr. */
static void test_gut_mu_one_is_d2(void **state) {
  (void)state;
  enum { DIM = 37, STEPS = 6 };
  qgm_optim_t *gut = make_scaled(QGM_ALG_GUT, 1.0f, DIM);
  qgm_optim_t *d2 = make_scaled(QGM_ALG_D2, 0.0f, DIM);
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 7, 0);
  float x[DIM], peer[DIM];
  for (size_t i = 0; i < DIM; i++)
    x[i] = (float)qgm_rng_normal(&rng);
  qgm_vec_copy(qgm_optim_params(gut), x, DIM);
  qgm_vec_copy(qgm_optim_params(d2), x, DIM);
  for (int t = 0; t < STEPS; t++) {
    const float lr = t < 3 ? 0.1f : 0.01f;
    for (size_t i = 0; i < DIM; i++) {
      qgm_optim_grad(gut)[i] = qgm_optim_grad(d2)[i] =
          (float)qgm_rng_normal(&rng);
      peer[i] = (float)qgm_rng_normal(&rng);
    }
    const float *peers[1] = {peer};
    const double w[1] = {1.0 / 3.0};
    const float *mg = qgm_optim_local_step(gut, lr);
    const float *md = qgm_optim_local_step(d2, lr);
    assert_memory_equal(mg, md, DIM * sizeof(float));
    qgm_optim_gossip_step(gut, lr, mg, mg, 1, peers, w);
    qgm_optim_gossip_step(d2, lr, md, md, 1, peers, w);
    assert_memory_equal(qgm_optim_params(gut), qgm_optim_params(d2),
                        DIM * sizeof(float));
    assert_memory_equal(state_of(gut, "e"), state_of(d2, "e"),
                        DIM * sizeof(float));
  }
  qgm_optim_free(gut);
  qgm_optim_free(d2);
}

/* Three nodes, complete graph, W = 1/3 everywhere (an exact average), one
 * coordinate, node i's gradient g_i = i - 1 + t (mean t), no L2. Every
 * mix is the mean, so the consensus moves r_i sum to 0: GUT's corrections
 * stay mean-free and the mean model takes the mean gradient's SGD step,
 * x_mean_{t+1} = x_mean_t - lr t. Momentum Tracking's trackers keep the
 * mean of the local momenta: mean(v) = mean(u) at every step. */
static void run_three(qgm_algorithm_t alg, float beta) {
  enum { N = 3, STEPS = 5 };
  const float lr = 0.1f;
  qgm_optim_t *o[N];
  for (int i = 0; i < N; i++) {
    qgm_optim_config_t cfg = {.algorithm = alg, .momentum = beta};
    assert_int_equal(qgm_optim_create(&cfg, 1, &o[i]), 0);
    qgm_optim_params(o[i])[0] = (float)(2 * i); /* mean 2 */
  }
  const size_t len = qgm_optim_message_len(o[0]);
  double mean = 2.0;
  for (int t = 0; t < STEPS; t++) {
    float avg[2] = {0, 0};
    for (int i = 0; i < N; i++) {
      qgm_optim_grad(o[i])[0] = (float)(i - 1 + t);
      const float *m = qgm_optim_local_step(o[i], lr);
      for (size_t k = 0; k < len; k++)
        avg[k] += m[k] / N;
    }
    double sum_e = 0, sum_v = 0, sum_u = 0, xbar = 0;
    for (int i = 0; i < N; i++) {
      qgm_vec_copy(qgm_optim_mix_buffer(o[i]), avg, len);
      if (alg == QGM_ALG_MT) { /* v_t, still in the model buffer */
        sum_v += qgm_optim_params(o[i])[1];
        sum_u += qgm_optim_momentum(o[i])[0];
      }
      qgm_optim_after_gossip(o[i], lr);
      xbar += qgm_optim_params(o[i])[0] / N;
      if (alg == QGM_ALG_GUT)
        sum_e += state_of(o[i], "e")[0];
    }
    if (alg == QGM_ALG_GUT) {
      mean -= lr * t;
      assert_float_equal(xbar, mean, 1e-5);
      assert_float_equal(sum_e, 0.0, 1e-5);
    } else {
      assert_float_equal(sum_v / N, sum_u / N, 1e-5);
    }
  }
  for (int i = 0; i < N; i++)
    qgm_optim_free(o[i]);
}

static void test_gut_three_nodes_mean(void **state) {
  (void)state;
  run_three(QGM_ALG_GUT, 0.0f);
}

static void test_mt_three_nodes_tracks_momentum(void **state) {
  (void)state;
  run_three(QGM_ALG_MT, 0.9f);
}

/* lr = 0 moves nothing and says nothing about a direction: GUT's and
 * QG-GUTm's state is kept. */
static void test_zero_lr_keeps_state(void **state) {
  (void)state;
  const qgm_algorithm_t algs[] = {QGM_ALG_GUT, QGM_ALG_QG_GUTM};
  for (size_t k = 0; k < 2; k++) {
    qgm_optim_t *o = make(algs[k]);
    step(o, 0, NULL, 0.5f);
    float e[2];
    memcpy(e, state_of(o, "e"), sizeof e);
    step(o, 1, NULL, 0.0f);
    assert_memory_equal(state_of(o, "e"), e, sizeof e);
    qgm_optim_free(o);
  }
}

static void test_names_and_config(void **state) {
  (void)state;
  const struct {
    const char *name;
    qgm_algorithm_t alg;
  } names[] = {{"gut", QGM_ALG_GUT}, {"qg-gutm", QGM_ALG_QG_GUTM},
               {"mt", QGM_ALG_MT}};
  for (size_t i = 0; i < 3; i++) {
    qgm_algorithm_t alg;
    assert_int_equal(qgm_algorithm_parse(names[i].name, &alg), 0);
    assert_int_equal(alg, names[i].alg);
    assert_string_equal(qgm_algorithm_name(alg), names[i].name);
  }
  qgm_optim_t *o = NULL;
  qgm_optim_config_t cfg = {.algorithm = QGM_ALG_GUT, .tracking_scale = 1.5f};
  assert_int_equal(qgm_optim_create(&cfg, 2, &o), QGM_EINVAL);
  cfg.tracking_scale = -0.1f;
  assert_int_equal(qgm_optim_create(&cfg, 2, &o), QGM_EINVAL);
  assert_null(o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gut_two_steps),
      cmocka_unit_test(test_qg_gutm_two_steps),
      cmocka_unit_test(test_mt_two_steps),
      cmocka_unit_test(test_state_listing),
      cmocka_unit_test(test_state_restore_continues_exactly),
      cmocka_unit_test(test_gut_mu_one_is_d2),
      cmocka_unit_test(test_gut_three_nodes_mean),
      cmocka_unit_test(test_mt_three_nodes_tracks_momentum),
      cmocka_unit_test(test_zero_lr_keeps_state),
      cmocka_unit_test(test_names_and_config),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
