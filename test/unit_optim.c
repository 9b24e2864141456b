/* unit_optim.c - the update rules against values computed by hand.
 *
 * Scenario: d = 2, x_0 = (1, -2), lr = 0.5, beta = 0.9, lambda = 0.1,
 * gradients g_0 = (0.2, 0.4), g_1 = (-0.1, 0.3); one neighbour whose message
 * is always (0.5, 1.0), W = [1/2, 1/2]. The expected numbers below were
 * worked out on paper from DESIGN.md section 2 (the intermediate values are
 * in the comments so that a failure can be traced). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "qgm.h"

static const float X0[2] = {1.0f, -2.0f};
static const float GRADS[2][2] = {{0.2f, 0.4f}, {-0.1f, 0.3f}};
static const float NEIGHBOUR[2] = {0.5f, 1.0f};
#define TOL 1e-6

static qgm_optim_t *make(qgm_algorithm_t alg) {
  qgm_optim_config_t cfg = {.algorithm = alg, .momentum = 0.9f,
                            .weight_decay = 0.1f};
  qgm_optim_t *o = NULL;
  assert_int_equal(qgm_optim_create(&cfg, 2, &o), 0);
  qgm_vec_copy(qgm_optim_params(o), X0, 2);
  return o;
}

static void step(qgm_optim_t *o, int t, const float expect_msg[2]) {
  qgm_vec_copy(qgm_optim_grad(o), GRADS[t], 2);
  const float *msg = qgm_optim_local_step(o, 0.5f);
  assert_float_equal(msg[0], expect_msg[0], TOL);
  assert_float_equal(msg[1], expect_msg[1], TOL);
  float *mix = qgm_optim_mix_buffer(o);
  qgm_vec_scale_copy(mix, 0.5f, msg, 2);
  qgm_vec_axpy(mix, 0.5f, NEIGHBOUR, 2);
  qgm_optim_after_gossip(o, 0.5f);
}

static void expect_vec(const float *v, double a, double b) {
  assert_non_null(v);
  assert_float_equal(v[0], a, TOL);
  assert_float_equal(v[1], b, TOL);
}

static void test_dsgd_two_steps(void **state) {
  (void)state;
  qgm_optim_t *o = make(QGM_ALG_DSGD);
  assert_null(qgm_optim_momentum(o));
  /* g' = (0.3, 0.2); msg = x - 0.5 g' */
  step(o, 0, (const float[]){0.85f, -2.1f});
  expect_vec(qgm_optim_params(o), 0.675, -0.55);
  /* g' = (-0.0325, 0.245) */
  step(o, 1, (const float[]){0.69125f, -0.6725f});
  expect_vec(qgm_optim_params(o), 0.595625, 0.16375);
  qgm_optim_free(o);
}

static void test_dsgdm_n_two_steps(void **state) {
  (void)state;
  qgm_optim_t *o = make(QGM_ALG_DSGDM_N);
  /* m = g' = (0.3, 0.2); msg = x - 0.5 (g' + 0.9 m) */
  step(o, 0, (const float[]){0.715f, -2.19f});
  expect_vec(qgm_optim_params(o), 0.6075, -0.595);
  expect_vec(qgm_optim_momentum(o), 0.3, 0.2);
  /* g' = (-0.03925, 0.2405); m = 0.9 m + g' = (0.23075, 0.4205) */
  step(o, 1, (const float[]){0.5232875f, -0.904475f});
  expect_vec(qgm_optim_params(o), 0.51164375, 0.0477625);
  expect_vec(qgm_optim_momentum(o), 0.23075, 0.4205);
  qgm_optim_free(o);
}

static void test_qg_dsgdm_n_two_steps(void **state) {
  (void)state;
  qgm_optim_t *o = make(QGM_ALG_QG_DSGDM_N);
  /* mhat = g' = (0.3, 0.2): the first half-step equals DSGDm-N's. */
  step(o, 0, (const float[]){0.715f, -2.19f});
  expect_vec(qgm_optim_params(o), 0.6075, -0.595);
  /* d = (x_0 - x_1) / 0.5 = (0.785, -2.81); m = 0.1 d */
  expect_vec(qgm_optim_momentum(o), 0.0785, -0.281);
  /* mhat = 0.9 m + g' = (0.0314, -0.0124) */
  step(o, 1, (const float[]){0.612995f, -0.70967f});
  expect_vec(qgm_optim_params(o), 0.5564975, 0.145165);
  /* d = (0.102005, -1.48033); m = 0.9 m + 0.1 d */
  expect_vec(qgm_optim_momentum(o), 0.0808505, -0.400933);
  qgm_optim_free(o);
}

/* With W = 1 (a single node) every algorithm is its centralized optimizer:
 * QG-DSGDm-N's d is then exactly the Nesterov direction g + beta*mhat. */
static void test_qg_single_node_momentum_is_direction(void **state) {
  (void)state;
  qgm_optim_t *o = make(QGM_ALG_QG_DSGDM_N);
  qgm_vec_copy(qgm_optim_grad(o), GRADS[0], 2);
  const float *msg = qgm_optim_local_step(o, 0.5f);
  qgm_vec_copy(qgm_optim_mix_buffer(o), msg, 2);
  qgm_optim_after_gossip(o, 0.5f);
  /* d = 1.9 * (0.3, 0.2); m = 0.1 d */
  expect_vec(qgm_optim_momentum(o), 0.057, 0.038);
  qgm_optim_free(o);
}

static void test_names_round_trip(void **state) {
  (void)state;
  const char *names[] = {"dsgd", "dsgdm-n", "qg-dsgdm-n"};
  for (size_t i = 0; i < 3; i++) {
    qgm_algorithm_t alg;
    assert_int_equal(qgm_algorithm_parse(names[i], &alg), 0);
    assert_string_equal(qgm_algorithm_name(alg), names[i]);
  }
  qgm_algorithm_t alg;
  assert_int_equal(qgm_algorithm_parse("sgd", &alg), QGM_EINVAL);
  assert_int_equal(qgm_algorithm_parse(NULL, &alg), QGM_EINVAL);
}

static void test_invalid_config(void **state) {
  (void)state;
  qgm_optim_t *o = NULL;
  qgm_optim_config_t cfg = {.algorithm = QGM_ALG_DSGD, .momentum = 1.0f};
  assert_int_equal(qgm_optim_create(&cfg, 2, &o), QGM_EINVAL);
  cfg.momentum = 0.9f;
  assert_int_equal(qgm_optim_create(&cfg, 0, &o), QGM_EINVAL);
  cfg.weight_decay = -1.0f;
  assert_int_equal(qgm_optim_create(&cfg, 2, &o), QGM_EINVAL);
  cfg.weight_decay = 0.0f;
  cfg.algorithm = (qgm_algorithm_t)99;
  assert_int_equal(qgm_optim_create(&cfg, 2, &o), QGM_EINVAL);
  assert_null(o);
  qgm_optim_free(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dsgd_two_steps),
      cmocka_unit_test(test_dsgdm_n_two_steps),
      cmocka_unit_test(test_qg_dsgdm_n_two_steps),
      cmocka_unit_test(test_qg_single_node_momentum_is_direction),
      cmocka_unit_test(test_names_round_trip),
      cmocka_unit_test(test_invalid_config),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
