/* unit_convergence.c - the algorithms on problems whose answer is known,
 * gossiping in process over a ring (qgm_mix_messages, the daemon's
 * arithmetic):
 *   - DSGD's fixed-step bias on heterogeneous least squares, against D^2
 *     and gradient tracking, which reach the exact optimum;
 *   - with identical data on every node, the average model of every
 *     algorithm follows the centralized optimizer of the same kind;
 *   - under strong heterogeneity QG-DSGDm-N ends closer to consensus and
 *     with a lower loss than DSGDm-N at the same step size.
 * Measured values are printed so that a run documents them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "qgm.h"

#define MAX_NODES 16

typedef struct run {
  qgm_algorithm_t alg;
  int nodes;
  float lr, momentum, weight_decay;
  size_t batch; /* 0: full-batch gradients */
  const float *const *init; /* per-node initial models; NULL: all zero */
} run_t;

typedef struct outcome {
  double dist;      /* mean_i ||x_i - x*||^2 / ||x_0 - x*||^2 (x_0 = 0) */
  double consensus; /* mean_i ||x_i - x_bar||^2 */
  double loss_gap;  /* mean_i f(x_i) - f(x*) */
  float avg[64];    /* x_bar */
} outcome_t;

/* node i's data are problem node i % problem_nodes: a one-node problem
 * gives every node the same data. */
static outcome_t simulate(const run_t *r, const qgm_problem_t *p,
                          long steps) {
  const size_t d = qgm_problem_dim(p), rows = qgm_problem_rows(p);
  qgm_topology_t *t = NULL;
  assert_int_equal(qgm_topology_create("ring", r->nodes, &t), 0);
  qgm_optim_t *o[MAX_NODES];
  qgm_rng_t rng[MAX_NODES];
  size_t order[MAX_NODES][64];
  const float *msgs[MAX_NODES];
  float *mixes[MAX_NODES];
  qgm_optim_config_t cfg = {.algorithm = r->alg, .momentum = r->momentum,
                            .weight_decay = r->weight_decay};
  for (int i = 0; i < r->nodes; i++) {
    assert_int_equal(qgm_optim_create(&cfg, d, &o[i]), 0);
    if (r->init)
      qgm_vec_copy(qgm_optim_params(o[i]), r->init[i], d);
    qgm_rng_seed_sampler(&rng[i], 1, (uint64_t)i);
    for (size_t k = 0; k < rows; k++)
      order[i][k] = k;
  }
  for (long s = 0; s < steps; s++) {
    for (int i = 0; i < r->nodes; i++) {
      double loss;
      if (r->batch)
        qgm_rng_shuffle(&rng[i], order[i], rows);
      assert_int_equal(qgm_problem_loss_grad(
                           p, i % qgm_problem_nodes(p), qgm_optim_params(o[i]),
                           r->batch ? order[i] : NULL, r->batch,
                           qgm_optim_grad(o[i]), &loss), 0);
      msgs[i] = qgm_optim_local_step(o[i], r->lr);
      mixes[i] = qgm_optim_mix_buffer(o[i]);
    }
    assert_int_equal(qgm_mix_messages(t, (uint64_t)s, qgm_optim_combine(o[0]),
                                      msgs, mixes,
                                      qgm_optim_message_len(o[0])), 0);
    for (int i = 0; i < r->nodes; i++)
      qgm_optim_after_gossip(o[i], r->lr);
  }
  outcome_t out = {0};
  const double *opt = qgm_problem_optimum(p);
  double norm0 = 0.0;
  for (size_t j = 0; j < d; j++) {
    norm0 += opt[j] * opt[j];
    for (int i = 0; i < r->nodes; i++)
      out.avg[j] += qgm_optim_params(o[i])[j] / (float)r->nodes;
  }
  for (int i = 0; i < r->nodes; i++) {
    const float *x = qgm_optim_params(o[i]);
    out.consensus += qgm_vec_dist2(x, out.avg, d) / r->nodes;
    out.loss_gap +=
        (qgm_problem_loss(p, x) - qgm_problem_optimal_loss(p)) / r->nodes;
    for (size_t j = 0; j < d; j++)
      out.dist += (x[j] - opt[j]) * (x[j] - opt[j]) / norm0 / r->nodes;
    qgm_optim_free(o[i]);
  }
  qgm_topology_free(t);
  return out;
}

static qgm_problem_t *least_squares(int nodes, double heterogeneity) {
  qgm_problem_spec_t spec = {.name = "least-squares", .nodes = nodes,
                             .dim = 10, .rows = 20,
                             .heterogeneity = heterogeneity, .noise = 0.1,
                             .seed = 1};
  qgm_problem_t *p = NULL;
  assert_int_equal(qgm_problem_create(&spec, &p), 0);
  return p;
}

/* 7 nodes: D^2 needs the smallest eigenvalue of W above -1/3, which an
 * even ring with weights 1/3 only reaches (-1/3 exactly). */
static void test_dsgd_stalls_d2_and_gt_reach_the_optimum(void **state) {
  (void)state;
  qgm_problem_t *p = least_squares(7, 1.0);
  run_t r = {.alg = QGM_ALG_DSGD, .nodes = 7, .lr = 0.02f};
  outcome_t a = simulate(&r, p, 2000), b = simulate(&r, p, 4000);
  print_message("dsgd: ||x - x*||^2/||x0 - x*||^2 = %.4e after 2000 steps, "
                "%.4e after 4000\n", a.dist, b.dist);
  /* A bias, not slow progress: it is large and twice the steps leave it
   * where it was. */
  assert_true(a.dist > 1e-3);
  assert_near(b.dist / a.dist, 1.0, 1e-3);

  const qgm_algorithm_t exact[] = {QGM_ALG_D2, QGM_ALG_GT};
  const float momenta[] = {0.0f, 0.9f};
  for (size_t k = 0; k < 2; k++)
    for (size_t m = 0; m < 2; m++) {
      if (exact[k] == QGM_ALG_D2 && m == 1)
        continue; /* D^2 has no momentum */
      r.alg = exact[k];
      r.momentum = momenta[m];
      r.lr = m ? 0.01f : 0.02f;
      outcome_t e = simulate(&r, p, 4000);
      print_message("%s (momentum %.1f): relative distance %.4e\n",
                    qgm_algorithm_name(r.alg), momenta[m], sqrt(e.dist));
      /* Distance below 1e-4 of the initial one. */
      assert_true(sqrt(e.dist) < 1e-4);
    }
  qgm_problem_free(p);
}

/* The centralized optimizers the decentralized ones reduce to, in double,
 * written out independently of libqgm's kernels. */
typedef enum { SGD, HEAVY_BALL, NESTEROV, QG_HEAVY_BALL, QG_NESTEROV } kind_t;

static void centralized(kind_t kind, const qgm_problem_t *p, const float *x0,
                        float lr, float beta, float wd, long steps,
                        double *x) {
  const size_t d = qgm_problem_dim(p);
  double m[64] = {0};
  float xf[64], g[64];
  for (size_t j = 0; j < d; j++)
    x[j] = x0[j];
  for (long s = 0; s < steps; s++) {
    double loss;
    for (size_t j = 0; j < d; j++)
      xf[j] = (float)x[j];
    qgm_problem_loss_grad(p, 0, xf, NULL, 0, g, &loss);
    for (size_t j = 0; j < d; j++) {
      double gj = g[j] + wd * x[j], mhat = beta * m[j] + gj, dir;
      switch (kind) {
      case SGD: dir = gj; break;
      case HEAVY_BALL: dir = m[j] = mhat; break;
      case NESTEROV: m[j] = mhat; dir = gj + beta * mhat; break;
      case QG_HEAVY_BALL: dir = mhat; break;
      default: dir = gj + beta * mhat; break;
      }
      /* With one node the model change over a step is lr * dir. */
      if (kind == QG_HEAVY_BALL || kind == QG_NESTEROV)
        m[j] = beta * m[j] + (1.0 - beta) * dir;
      x[j] -= lr * dir;
    }
  }
}

/* Different starting models on 5 nodes with identical least-squares data:
 * the gradient is affine and W keeps the mean, so x_bar follows the
 * centralized optimizer started from x_bar_0 exactly (up to float
 * rounding, tolerance 1e-5 relative after 20 steps, before the runs near
 * the optimum where every method would agree). */
static void test_identical_data_average_follows_centralized(void **state) {
  (void)state;
  qgm_problem_t *p = least_squares(1, 0.0);
  float starts[5][10];
  const float *init[5];
  float mean0[10] = {0};
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 9, 0);
  for (int i = 0; i < 5; i++) {
    for (int j = 0; j < 10; j++) {
      starts[i][j] = (float)qgm_rng_normal(&rng);
      mean0[j] += starts[i][j] / 5.0f;
    }
    init[i] = starts[i];
  }
  static const struct {
    qgm_algorithm_t alg;
    kind_t kind;
  } pairs[] = {
      {QGM_ALG_DSGD, SGD},          {QGM_ALG_D2, SGD},
      {QGM_ALG_DSGDM, HEAVY_BALL},  {QGM_ALG_DSGDM_N, NESTEROV},
      {QGM_ALG_GT, NESTEROV},       {QGM_ALG_ALLREDUCE, NESTEROV},
      {QGM_ALG_QG_DSGDM, QG_HEAVY_BALL},
      {QGM_ALG_QG_DSGDM_N, QG_NESTEROV},
  };
  for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
    run_t r = {.alg = pairs[k].alg, .nodes = 5, .lr = 0.02f,
               .momentum = 0.9f, .weight_decay = 1e-2f, .init = init};
    outcome_t o = simulate(&r, p, 20);
    double ref[10], err = 0.0, norm = 0.0;
    centralized(pairs[k].kind, p, mean0, r.lr, r.momentum, r.weight_decay,
                20, ref);
    for (int j = 0; j < 10; j++) {
      err += (o.avg[j] - ref[j]) * (o.avg[j] - ref[j]);
      norm += ref[j] * ref[j];
    }
    if (!(sqrt(err / norm) < 1e-5))
      fail_msg("%s: average model is %.3g (relative) from the centralized "
               "run", qgm_algorithm_name(r.alg), sqrt(err / norm));
  }
  qgm_problem_free(p);
}

/* Adam is not linear, so its nodes start from one model: with identical
 * data the gossip must then leave every node on the centralized (one-node)
 * trajectory. */
static void test_identical_data_adam_follows_centralized(void **state) {
  (void)state;
  qgm_problem_t *p = least_squares(1, 0.0);
  const qgm_algorithm_t algs[] = {QGM_ALG_DADAM, QGM_ALG_QG_DADAM};
  for (size_t k = 0; k < 2; k++) {
    run_t many = {.alg = algs[k], .nodes = 5, .lr = 0.01f, .momentum = 0.9f,
                  .weight_decay = 1e-2f};
    run_t one = many;
    one.nodes = 1;
    outcome_t a = simulate(&many, p, 150), b = simulate(&one, p, 150);
    assert_true(a.consensus < 1e-10);
    for (int j = 0; j < 10; j++)
      assert_near(a.avg[j], b.avg[j], 1e-5);
    /* and it did train: the loss fell well below f(0) - f(x*) */
    assert_true(a.loss_gap < 0.5 * (qgm_problem_loss(p, (float[10]){0}) -
                                    qgm_problem_optimal_loss(p)));
  }
  qgm_problem_free(p);
}

/* Strong heterogeneity: local models and features three standard
 * deviations apart, 16 nodes, minibatches of 5, beta = 0.9, same lr. */
static void test_qg_beats_dsgdm_n_under_heterogeneity(void **state) {
  (void)state;
  qgm_problem_t *p = least_squares(16, 3.0);
  run_t r = {.alg = QGM_ALG_DSGDM_N, .nodes = 16, .lr = 0.01f,
             .momentum = 0.9f, .batch = 5};
  outcome_t base = simulate(&r, p, 1000);
  r.alg = QGM_ALG_QG_DSGDM_N;
  outcome_t qg = simulate(&r, p, 1000);
  print_message("dsgdm-n: consensus %.4g, loss gap %.4g; qg-dsgdm-n: "
                "consensus %.4g, loss gap %.4g\n", base.consensus,
                base.loss_gap, qg.consensus, qg.loss_gap);
  assert_true(qg.consensus < base.consensus);
  assert_true(qg.loss_gap < base.loss_gap);
  qgm_problem_free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dsgd_stalls_d2_and_gt_reach_the_optimum),
      cmocka_unit_test(test_identical_data_average_follows_centralized),
      cmocka_unit_test(test_identical_data_adam_follows_centralized),
      cmocka_unit_test(test_qg_beats_dsgdm_n_under_heterogeneity),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
