/* unit_problem.c - the synthetic problems: gradients against finite
 * differences, the optimum against the optimality conditions, determinism
 * and argument checks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "helpers.h"
#include "qgm.h"

static qgm_problem_t *make(const char *name, int nodes, double het,
                           uint64_t seed) {
  qgm_problem_spec_t spec = {.name = name, .nodes = nodes, .dim = 6,
                             .rows = 12, .heterogeneity = het, .noise = 0.1,
                             .l2 = 0.05, .seed = seed};
  qgm_problem_t *p = NULL;
  assert_int_equal(qgm_problem_create(&spec, &p), 0);
  return p;
}

/* Central differences on each coordinate; quadratic and logistic losses
 * are smooth, so the O(h^2) error at h = 1e-2 is far below 1e-4. */
static void check_gradient(const char *name) {
  qgm_problem_t *p = make(name, 3, 1.0, 7);
  float x[6] = {0.3f, -0.2f, 0.5f, 0.1f, -0.4f, 0.25f}, grad[6];
  const size_t rows[3] = {4, 0, 9};
  double loss;
  for (int node = 0; node < 3; node++) {
    assert_int_equal(qgm_problem_loss_grad(p, node, x, rows, 3, grad, &loss),
                     0);
    for (int j = 0; j < 6; j++) {
      float xp[6], xm[6];
      for (int k = 0; k < 6; k++)
        xp[k] = xm[k] = x[k];
      xp[j] += 1e-2f;
      xm[j] -= 1e-2f;
      double lp, lm;
      qgm_problem_loss_grad(p, node, xp, rows, 3, NULL, &lp);
      qgm_problem_loss_grad(p, node, xm, rows, 3, NULL, &lm);
      assert_near(grad[j], (lp - lm) / ((double)xp[j] - (double)xm[j]), 1e-4);
    }
  }
  qgm_problem_free(p);
}

static void test_least_squares_gradient(void **state) {
  (void)state;
  check_gradient("least-squares");
}

static void test_logistic_gradient(void **state) {
  (void)state;
  check_gradient("logistic");
}

/* At x* the mean of the nodes' full gradients vanishes (up to rounding x*
 * to float), every coordinate move raises f, and f(x*) is the reported
 * optimal loss. The local optima differ, so single nodes' gradients do
 * not vanish there: that is the heterogeneity. */
static void check_optimum(const char *name) {
  qgm_problem_t *p = make(name, 4, 2.0, 3);
  const double *opt = qgm_problem_optimum(p);
  float x[6], grad[6];
  double mean[6] = {0}, loss, local_norm = 0.0;
  for (int j = 0; j < 6; j++)
    x[j] = (float)opt[j];
  for (int node = 0; node < 4; node++) {
    qgm_problem_loss_grad(p, node, x, NULL, 0, grad, &loss);
    for (int j = 0; j < 6; j++) {
      mean[j] += grad[j] / 4.0;
      local_norm += (double)grad[j] * grad[j];
    }
  }
  for (int j = 0; j < 6; j++)
    assert_near(mean[j], 0.0, 1e-5);
  assert_true(local_norm > 1e-2);
  double f = qgm_problem_loss(p, x);
  assert_near(f, qgm_problem_optimal_loss(p), 1e-6);
  for (int j = 0; j < 6; j++) {
    float y[6];
    for (int k = 0; k < 6; k++)
      y[k] = x[k];
    y[j] += 0.01f;
    assert_true(qgm_problem_loss(p, y) > f);
    y[j] -= 0.02f;
    assert_true(qgm_problem_loss(p, y) > f);
  }
  qgm_problem_free(p);
}

static void test_least_squares_optimum(void **state) {
  (void)state;
  check_optimum("least-squares");
}

static void test_logistic_optimum(void **state) {
  (void)state;
  check_optimum("logistic");
  qgm_problem_t *p = make("logistic", 4, 0.0, 3);
  float x[6];
  for (int j = 0; j < 6; j++)
    x[j] = (float)qgm_problem_optimum(p)[j];
  /* Labels are drawn from a logistic model with |weights| ~ 1 per
   * coordinate: the fitted model classifies far better than chance. */
  assert_true(qgm_problem_accuracy(p, x) > 0.75);
  qgm_problem_free(p);
  p = make("least-squares", 2, 0.0, 3);
  assert_near(qgm_problem_accuracy(p, x), -1.0, 0);
  qgm_problem_free(p);
}

static void test_seed_fixes_the_data(void **state) {
  (void)state;
  qgm_problem_t *a = make("least-squares", 3, 1.0, 5);
  qgm_problem_t *b = make("least-squares", 3, 1.0, 5);
  qgm_problem_t *c = make("least-squares", 3, 1.0, 6);
  float x[6] = {1, 2, 3, 4, 5, 6};
  assert_true(qgm_problem_loss(a, x) == qgm_problem_loss(b, x));
  assert_true(qgm_problem_loss(a, x) != qgm_problem_loss(c, x));
  qgm_problem_free(a);
  qgm_problem_free(b);
  qgm_problem_free(c);
}

static void test_bad_specs(void **state) {
  (void)state;
  qgm_problem_t *p = NULL;
  qgm_problem_spec_t spec = {.name = "least-squares", .nodes = 2, .dim = 3,
                             .rows = 4};
  spec.name = "svm";
  assert_int_equal(qgm_problem_create(&spec, &p), QGM_EINVAL);
  spec.name = "logistic"; /* needs l2 > 0 for a unique optimum */
  assert_int_equal(qgm_problem_create(&spec, &p), QGM_EINVAL);
  spec.name = "least-squares";
  spec.nodes = 0;
  assert_int_equal(qgm_problem_create(&spec, &p), QGM_EINVAL);
  spec.nodes = 2;
  spec.heterogeneity = -1;
  assert_int_equal(qgm_problem_create(&spec, &p), QGM_EINVAL);
  assert_null(p);
  spec.heterogeneity = 0;
  assert_int_equal(qgm_problem_create(&spec, &p), 0);
  float x[3] = {0}, g[3];
  double loss;
  const size_t bad_row = 4;
  assert_int_equal(qgm_problem_loss_grad(p, 2, x, NULL, 0, g, &loss),
                   QGM_EINVAL);
  assert_int_equal(qgm_problem_loss_grad(p, 0, x, &bad_row, 1, g, &loss),
                   QGM_EINVAL);
  qgm_problem_free(p);
  qgm_problem_free(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_least_squares_gradient),
      cmocka_unit_test(test_logistic_gradient),
      cmocka_unit_test(test_least_squares_optimum),
      cmocka_unit_test(test_logistic_optimum),
      cmocka_unit_test(test_seed_fixes_the_data),
      cmocka_unit_test(test_bad_specs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
