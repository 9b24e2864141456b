/* unit_optim.c - the update rules against values computed by hand.
 *
 * Scenario: d = 2, x_0 = (1, -2), lr = 0.5, beta = 0.9, lambda = 0.1,
 * gradients g_0 = (0.2, 0.4), g_1 = (-0.1, 0.3); one neighbour whose message
 * is always (0.5, 1.0) (gradient tracking: [x, y] = (0.5, 1.0, 0.2, -0.4)),
 * W = [1/2, 1/2] (for allreduce the same two-node mean). The expected
 * numbers below were worked out from the rules of docs/ALGORITHMS.md (the
 * intermediate values are in the comments so that a failure can be
 * traced); g' = g + lambda x. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "qgm.h"

static const float X0[2] = {1.0f, -2.0f};
static const float GRADS[2][2] = {{0.2f, 0.4f}, {-0.1f, 0.3f}};
static const float NEIGHBOUR[4] = {0.5f, 1.0f, 0.2f, -0.4f};
#define TOL 1e-6

static qgm_optim_t *make(qgm_algorithm_t alg) {
  qgm_optim_config_t cfg = {.algorithm = alg, .momentum = 0.9f,
                            .weight_decay = 0.1f};
  qgm_optim_t *o = NULL;
  assert_int_equal(qgm_optim_create(&cfg, 2, &o), 0);
  qgm_vec_copy(qgm_optim_params(o), X0, 2);
  return o;
}

/* One step with gradient GRADS[t]; the message is checked against
 * expect_msg (message_len floats) unless that is NULL. */
static void step(qgm_optim_t *o, int t, const float *expect_msg) {
  qgm_vec_copy(qgm_optim_grad(o), GRADS[t], 2);
  const float *msg = qgm_optim_local_step(o, 0.5f);
  for (size_t i = 0; expect_msg && i < qgm_optim_message_len(o); i++)
    assert_float_equal(msg[i], expect_msg[i], TOL);
  const size_t len = qgm_optim_message_len(o);
  float *mix = qgm_optim_mix_buffer(o);
  qgm_vec_scale_copy(mix, 0.5f, msg, len);
  qgm_vec_axpy(mix, 0.5f, NEIGHBOUR, len);
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

static void test_dsgdm_two_steps(void **state) {
  (void)state;
  qgm_optim_t *o = make(QGM_ALG_DSGDM);
  /* m = g' = (0.3, 0.2); msg = x - 0.5 m */
  step(o, 0, (const float[]){0.85f, -2.1f});
  expect_vec(qgm_optim_params(o), 0.675, -0.55);
  expect_vec(qgm_optim_momentum(o), 0.3, 0.2);
  /* g' = (-0.0325, 0.245); m = 0.9 m + g' = (0.2375, 0.425) */
  step(o, 1, (const float[]){0.55625f, -0.7625f});
  expect_vec(qgm_optim_params(o), 0.528125, 0.11875);
  expect_vec(qgm_optim_momentum(o), 0.2375, 0.425);
  qgm_optim_free(o);
}

static void test_qg_dsgdm_two_steps(void **state) {
  (void)state;
  qgm_optim_t *o = make(QGM_ALG_QG_DSGDM);
  /* mhat = g' = (0.3, 0.2); msg = x - 0.5 mhat */
  step(o, 0, (const float[]){0.85f, -2.1f});
  expect_vec(qgm_optim_params(o), 0.675, -0.55);
  /* d = (x_0 - x_1) / 0.5 = (0.65, -2.9); m = 0.1 d */
  expect_vec(qgm_optim_momentum(o), 0.065, -0.29);
  /* g' = (-0.0325, 0.245); mhat = 0.9 m + g' = (0.026, -0.016) */
  step(o, 1, (const float[]){0.662f, -0.542f});
  expect_vec(qgm_optim_params(o), 0.581, 0.229);
  /* d = (0.188, -1.558); m = 0.9 m + 0.1 d */
  expect_vec(qgm_optim_momentum(o), 0.0773, -0.4168);
  qgm_optim_free(o);
}

static void test_d2_two_steps(void **state) {
  (void)state;
  qgm_optim_t *o = make(QGM_ALG_D2);
  assert_null(qgm_optim_momentum(o));
  /* First step is plain SGD: msg = x - 0.5 g' */
  step(o, 0, (const float[]){0.85f, -2.1f});
  expect_vec(qgm_optim_params(o), 0.675, -0.55);
  /* d_prev = (x_0 - x_1)/0.5 = (0.65, -2.9); g' = (-0.0325, 0.245);
   * msg = x_1 - 0.5 (d_prev + g' - g'_0) = x_1 - 0.5 (0.3175, -2.855) */
  step(o, 1, (const float[]){0.51625f, 0.8775f});
  expect_vec(qgm_optim_params(o), 0.508125, 0.93875);
  qgm_optim_free(o);
}

static void test_gt_two_steps(void **state) {
  (void)state;
  qgm_optim_t *o = make(QGM_ALG_GT);
  assert_int_equal(qgm_optim_message_len(o), 4);
  /* y_0 = g'_0 = (0.3, 0.2); m = y_0; the message is [x_0, y_0] */
  step(o, 0, (const float[]){1.0f, -2.0f, 0.3f, 0.2f});
  /* W x = (0.75, -0.5); x_1 = W x - 0.5 (y + 0.9 m) = W x - 0.5 (0.57, 0.38)
   * W y = (0.25, -0.1) */
  expect_vec(qgm_optim_params(o), 0.465, -0.69);
  expect_vec(qgm_optim_momentum(o), 0.3, 0.2);
  /* g'_1 = (-0.0535, 0.231); y_1 = W y + g'_1 - g'_0 = (-0.1035, -0.069);
   * m = 0.9 m + y_1 = (0.1665, 0.111) */
  step(o, 1, (const float[]){0.465f, -0.69f, -0.1035f, -0.069f});
  /* W x = (0.4825, 0.155); x_2 = W x - 0.5 (y_1 + 0.9 m) */
  expect_vec(qgm_optim_params(o), 0.459325, 0.13955);
  expect_vec(qgm_optim_momentum(o), 0.1665, 0.111);
  /* The tracker, mixed: W y_1 = (0.04825, -0.2345) */
  expect_vec(qgm_optim_params(o) + 2, 0.04825, -0.2345);
  qgm_optim_free(o);
}

static void test_allreduce_two_steps(void **state) {
  (void)state;
  qgm_optim_t *o = make(QGM_ALG_ALLREDUCE);
  assert_int_equal(qgm_optim_combine(o), QGM_COMBINE_GLOBAL_MEAN);
  /* The message is g' = (0.3, 0.2); gbar = mean with (0.5, 1.0) =
   * (0.4, 0.6); m = gbar; x_1 = x_0 - 0.5 (gbar + 0.9 m) */
  step(o, 0, (const float[]){0.3f, 0.2f});
  expect_vec(qgm_optim_params(o), 0.62, -2.57);
  expect_vec(qgm_optim_momentum(o), 0.4, 0.6);
  /* g' = (-0.038, 0.043); gbar = (0.231, 0.5215); m = 0.9 m + gbar */
  step(o, 1, (const float[]){-0.038f, 0.043f});
  expect_vec(qgm_optim_momentum(o), 0.591, 1.0615);
  expect_vec(qgm_optim_params(o), 0.23855, -3.308425);
  qgm_optim_free(o);
}

/* Adam with beta1 = 0.9, beta2 = 0.999, eps = 1e-8; bc_k = 1 - beta^t. */
static void test_dadam_two_steps(void **state) {
  (void)state;
  qgm_optim_t *o = make(QGM_ALG_DADAM);
  /* m = 0.1 g' = (0.03, 0.02); v = 0.001 g'^2 = (9e-5, 4e-5); with
   * bc1 = 0.1, bc2 = 0.001 the step is lr * sign(g') up to eps. */
  step(o, 0, (const float[]){0.5000000167f, -2.499999975f});
  expect_vec(qgm_optim_params(o), 0.5000000083, -0.7499999875);
  expect_vec(qgm_optim_momentum(o), 0.03, 0.02);
  /* g' = (-0.05, 0.225); m = (0.022, 0.0405); v = (9.241e-5, 9.0585e-5);
   * bc1 = 0.19, bc2 = 0.001999 */
  step(o, 1, (const float[]){0.2307312438f, -1.250667785f});
  expect_vec(qgm_optim_params(o), 0.3653656219, -0.1253338925);
  expect_vec(qgm_optim_momentum(o), 0.022, 0.0405);
  qgm_optim_free(o);
}

/* The official code's variant: mt = beta1 m + g' (no (1 - beta1)). */
static void test_qg_dadam_two_steps(void **state) {
  (void)state;
  qgm_optim_t *o = make(QGM_ALG_QG_DADAM);
  /* mt = (0.3, 0.2), vt = (9e-5, 4e-5): x - 0.5/0.1 * sign = x - 5 */
  step(o, 0, (const float[]){-3.999999833f, -6.99999975f});
  expect_vec(qgm_optim_params(o), -1.749999917, -2.999999875);
  /* u = (x_0 - x_1)/||.|| = (2.75, 1)/2.926175 = (0.93979343, 0.34174303);
   * m = 0.1 u */
  expect_vec(qgm_optim_momentum(o), 0.09397934307, 0.03417430333);
  /* g' = (-0.275, 1.25e-8); mt = (-0.19041858, 0.03075689);
   * vt = (9.579535e-4, 1.166715e-4) */
  step(o, 1, (const float[]){-1.026131023f, -3.335029124f});
  expect_vec(qgm_optim_params(o), -0.2630655117, -1.167514562);
  /* u = (-0.63009223, -0.7765203); m = 0.9 m + 0.1 u */
  expect_vec(qgm_optim_momentum(o), 0.02157218609, -0.04689515707);
  qgm_optim_state_t v;
  assert_int_equal(qgm_optim_state_get(o, 2, &v), 0);
  assert_string_equal(v.name, "v");
  expect_vec(v.data, 0.001279344695, 0.0007196552899);
  qgm_optim_free(o);
}

/* Every algorithm lists x first and then exactly its own state; the
 * listed vectors are the live ones (a checkpoint restores through them). */
static void test_state_listing(void **state) {
  (void)state;
  static const struct {
    qgm_algorithm_t alg;
    const char *names;
  } expect[] = {
      {QGM_ALG_DSGD, "x"},           {QGM_ALG_DSGDM, "x m"},
      {QGM_ALG_DSGDM_N, "x m"},      {QGM_ALG_QG_DSGDM, "x m"},
      {QGM_ALG_QG_DSGDM_N, "x m"},   {QGM_ALG_DADAM, "x m v"},
      {QGM_ALG_QG_DADAM, "x m v"},   {QGM_ALG_D2, "x e"},
      {QGM_ALG_GT, "x y m g-prev"},  {QGM_ALG_ALLREDUCE, "x m"},
  };
  for (size_t k = 0; k < sizeof expect / sizeof expect[0]; k++) {
    qgm_optim_t *o = make(expect[k].alg);
    char names[64] = "";
    size_t used = 0;
    for (size_t i = 0; i < qgm_optim_state_count(o); i++) {
      qgm_optim_state_t s;
      assert_int_equal(qgm_optim_state_get(o, i, &s), 0);
      assert_int_equal(s.len, 2);
      used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                               i ? " " : "", s.name);
    }
    assert_string_equal(names, expect[k].names);
    qgm_optim_state_t s;
    assert_int_equal(qgm_optim_state_get(o, qgm_optim_state_count(o), &s),
                     QGM_EINVAL);
    assert_int_equal(qgm_optim_state_get(o, 0, &s), 0);
    assert_ptr_equal(s.data, qgm_optim_params(o));
    qgm_optim_free(o);
  }
}

/* Overwriting the listed state of a fresh optimizer (and its step count)
 * reproduces the original's next step exactly: the listing is complete. */
static void test_state_restore_continues_exactly(void **state) {
  (void)state;
  for (int alg = 0; alg <= QGM_ALG_ALLREDUCE; alg++) {
    qgm_optim_t *a = make((qgm_algorithm_t)alg);
    qgm_optim_t *b = make((qgm_algorithm_t)alg);
    step(a, 0, NULL);
    for (size_t i = 0; i < qgm_optim_state_count(a); i++) {
      qgm_optim_state_t sa, sb;
      qgm_optim_state_get(a, i, &sa);
      qgm_optim_state_get(b, i, &sb);
      qgm_vec_copy(sb.data, sa.data, sa.len);
    }
    qgm_optim_set_steps(b, qgm_optim_steps(a));
    qgm_vec_copy(qgm_optim_grad(a), GRADS[1], 2);
    qgm_vec_copy(qgm_optim_grad(b), GRADS[1], 2);
    const float *ma = qgm_optim_local_step(a, 0.5f);
    const float *mb = qgm_optim_local_step(b, 0.5f);
    for (size_t i = 0; i < qgm_optim_message_len(a); i++)
      assert_true(ma[i] == mb[i]);
    qgm_optim_free(a);
    qgm_optim_free(b);
  }
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

/* The one-pass gossip mix: hand values (with base = own, the overlap-off
 * step, and base != own, the overlapped one), and bit-for-bit agreement
 * with a copy and one qgm_vec_mix_peer pass per neighbour over a length
 * that spans several blocks and ends in a partial one. */
static void test_gossip_mix(void **state) {
  (void)state;
  const float own[2] = {1, 2}, p0[2] = {3, 4}, p1[2] = {5, 0}, base[2] = {10, 10};
  const float *peers[2] = {p0, p1};
  const double w[2] = {0.25, 0.5};
  float mix[2];
  qgm_vec_gossip_mix(mix, own, own, 2, peers, w, 2);
  assert_float_equal(mix[0], 3.5f, 0.0); /* 1 + .25 * 2 + .5 * 4 */
  assert_float_equal(mix[1], 1.5f, 0.0); /* 2 + .25 * 2 - .5 * 2 */
  qgm_vec_gossip_mix(mix, base, own, 2, peers, w, 2);
  assert_float_equal(mix[0], 12.5f, 0.0);
  assert_float_equal(mix[1], 9.5f, 0.0);

  enum { N = 5000, K = 3 };
  float *x = malloc(N * sizeof *x), *got = malloc(N * sizeof *got);
  float *want = malloc(N * sizeof *want), *q[K];
  const double wk[K] = {0.2, 1.0 / 3.0, 0.1};
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 7, 0);
  for (size_t i = 0; i < N; i++)
    x[i] = (float)qgm_rng_normal(&rng);
  for (int j = 0; j < K; j++) {
    q[j] = malloc(N * sizeof *q[j]);
    for (size_t i = 0; i < N; i++)
      q[j][i] = (float)qgm_rng_normal(&rng);
  }
  qgm_vec_gossip_mix(got, x, x, K, (const float *const *)q, wk, N);
  qgm_vec_copy(want, x, N);
  for (int j = 0; j < K; j++)
    qgm_vec_mix_peer(want, x, (float)wk[j], q[j], N);
  assert_memory_equal(got, want, N * sizeof *got);
  for (int j = 0; j < K; j++)
    free(q[j]);
  free(x);
  free(got);
  free(want);
}

/* n normal draws into v. */
static void fill_normal(float *v, size_t n, qgm_rng_t *rng) {
  for (size_t i = 0; i < n; i++)
    v[i] = (float)qgm_rng_normal(rng);
}

/* The state vectors of a and b, bit for bit. */
static void assert_same_state(qgm_optim_t *a, qgm_optim_t *b) {
  assert_int_equal(qgm_optim_state_count(a), qgm_optim_state_count(b));
  for (size_t i = 0; i < qgm_optim_state_count(a); i++) {
    qgm_optim_state_t sa, sb;
    assert_int_equal(qgm_optim_state_get(a, i, &sa), 0);
    assert_int_equal(qgm_optim_state_get(b, i, &sb), 0);
    assert_string_equal(sa.name, sb.name);
    assert_memory_equal(sa.data, sb.data, sa.len * sizeof *sa.data);
  }
}

/* qgm_optim_gossip_step against the mix into the mix buffer followed by
 * qgm_optim_after_gossip, for every neighbour-mixing algorithm (the
 * quasi-global ones take the one pass, the others the two calls): the same
 * bits after each of four steps, with 1, 2 and 3 peers (the one pass takes
 * up to two), in both of the daemon's forms (base = own = the message;
 * own = x, the overlapped round, which the one pass leaves to the two
 * calls), and with lr = 0 in the last step (m then stays as it was). */
static void test_gossip_step_is_mix_then_after(void **state) {
  (void)state;
  static const qgm_algorithm_t algs[] = {
      QGM_ALG_DSGD,     QGM_ALG_DSGDM_N, QGM_ALG_QG_DSGDM_N, QGM_ALG_DSGDM,
      QGM_ALG_QG_DSGDM, QGM_ALG_DADAM,   QGM_ALG_QG_DADAM,   QGM_ALG_D2,
      QGM_ALG_GT};
  enum { DIM = 5000, K = 3 };
  const double w[K] = {1.0 / 3.0, 0.25, 0.125};
  for (size_t a = 0; a < sizeof algs / sizeof *algs; a++)
    for (int k = 1; k <= K; k++)
      for (int overlapped = 0; overlapped < 2; overlapped++) {
        qgm_optim_config_t cfg = {.algorithm = algs[a], .momentum = 0.9f,
                                  .weight_decay = 1e-4f};
        qgm_optim_t *ref = NULL, *fused = NULL;
        assert_int_equal(qgm_optim_create(&cfg, DIM, &ref), 0);
        assert_int_equal(qgm_optim_create(&cfg, DIM, &fused), 0);
        const size_t len = qgm_optim_message_len(ref);
        qgm_rng_t rng;
        qgm_rng_seed(&rng, 11, (uint64_t)a);
        fill_normal(qgm_optim_params(ref), len, &rng);
        qgm_vec_copy(qgm_optim_params(fused), qgm_optim_params(ref), len);
        float *p[K];
        for (int j = 0; j < K; j++)
          assert_non_null(p[j] = malloc(len * sizeof *p[j]));
        const float *const *peers = (const float *const *)p;
        for (int t = 0; t < 4; t++) {
          const float lr = t == 3 ? 0.0f : 0.1f;
          fill_normal(qgm_optim_grad(ref), DIM, &rng);
          qgm_vec_copy(qgm_optim_grad(fused), qgm_optim_grad(ref), DIM);
          for (int j = 0; j < K; j++)
            fill_normal(p[j], len, &rng);
          const float *x_ref = qgm_optim_params(ref);
          const float *x_fused = qgm_optim_params(fused);
          const float *msg_ref = qgm_optim_local_step(ref, lr);
          const float *msg_fused = qgm_optim_local_step(fused, lr);
          assert_memory_equal(msg_ref, msg_fused, len * sizeof *msg_ref);
          qgm_vec_gossip_mix(qgm_optim_mix_buffer(ref), msg_ref,
                             overlapped ? x_ref : msg_ref, k, peers, w, len);
          qgm_optim_after_gossip(ref, lr);
          qgm_optim_gossip_step(fused, lr, msg_fused,
                                overlapped ? x_fused : msg_fused, k, peers,
                                w);
          assert_same_state(ref, fused);
          assert_int_equal(qgm_optim_steps(ref), qgm_optim_steps(fused));
        }
        for (int j = 0; j < K; j++)
          free(p[j]);
        qgm_optim_free(ref);
        qgm_optim_free(fused);
      }
}

/* A message buffer of the caller's: the local step writes the message
 * there (and the same message as into its own), until NULL gives the
 * optimizer's own back; gradient tracking, whose message is the model
 * buffer, refuses one. */
static void test_message_buffer(void **state) {
  (void)state;
  qgm_optim_t *o = make(QGM_ALG_QG_DSGDM_N);
  float outside[2] = {0, 0};
  const float *own = qgm_optim_local_step(o, 0.5f); /* g = 0 */
  const float first[2] = {own[0], own[1]};
  assert_int_equal(qgm_optim_set_message_buffer(o, outside), 0);
  assert_ptr_equal(qgm_optim_local_step(o, 0.5f), outside);
  assert_memory_equal(outside, first, sizeof first);
  assert_int_equal(qgm_optim_set_message_buffer(o, NULL), 0);
  assert_ptr_equal(qgm_optim_local_step(o, 0.5f), own);
  qgm_optim_free(o);
  o = make(QGM_ALG_GT);
  assert_int_equal(qgm_optim_set_message_buffer(o, outside), QGM_EINVAL);
  qgm_optim_free(o);
}

static void test_names_round_trip(void **state) {
  (void)state;
  const char *names[] = {"dsgd",  "dsgdm-n",  "qg-dsgdm-n", "dsgdm",
                         "qg-dsgdm", "dadam", "qg-dadam",   "d2",
                         "gt",    "allreduce"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    qgm_algorithm_t alg;
    assert_int_equal(qgm_algorithm_parse(names[i], &alg), 0);
    assert_string_equal(qgm_algorithm_name(alg), names[i]);
    assert_int_equal(alg, (qgm_algorithm_t)i); /* stable values */
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

/* The memory check's count of floats is what qgm_optim_create allocates:
 * x and mix (one per message part), g, msg (for a one-part message) and
 * each state vector past the message's parts. */
static void test_footprint(void **state) {
  (void)state;
  const size_t dim = 10;
  for (int a = QGM_ALG_DSGD; a <= QGM_ALG_ALLREDUCE; a++) {
    qgm_optim_config_t cfg = {.algorithm = (qgm_algorithm_t)a,
                              .momentum = 0.9f};
    qgm_optim_t *o = NULL;
    assert_int_equal(qgm_optim_create(&cfg, dim, &o), 0);
    size_t message = 0;
    size_t floats = qgm_optim_footprint(cfg.algorithm, dim, &message);
    size_t parts = qgm_optim_message_len(o) / dim;
    size_t states = qgm_optim_state_count(o) - parts;
    assert_int_equal(message, qgm_optim_message_len(o));
    assert_int_equal(floats,
                     dim * (2 * parts + 1 + (parts == 1) + states));
    qgm_optim_free(o);
  }
  /* D-SGD: x, g, mix and msg, no state. */
  assert_int_equal(qgm_optim_footprint(QGM_ALG_DSGD, dim, NULL), 4 * dim);
  assert_int_equal(qgm_optim_footprint((qgm_algorithm_t)99, dim, NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_footprint),
      cmocka_unit_test(test_dsgd_two_steps),
      cmocka_unit_test(test_dsgdm_n_two_steps),
      cmocka_unit_test(test_qg_dsgdm_n_two_steps),
      cmocka_unit_test(test_dsgdm_two_steps),
      cmocka_unit_test(test_qg_dsgdm_two_steps),
      cmocka_unit_test(test_d2_two_steps),
      cmocka_unit_test(test_gt_two_steps),
      cmocka_unit_test(test_allreduce_two_steps),
      cmocka_unit_test(test_dadam_two_steps),
      cmocka_unit_test(test_qg_dadam_two_steps),
      cmocka_unit_test(test_state_listing),
      cmocka_unit_test(test_state_restore_continues_exactly),
      cmocka_unit_test(test_qg_single_node_momentum_is_direction),
      cmocka_unit_test(test_gossip_mix),
      cmocka_unit_test(test_gossip_step_is_mix_then_after),
      cmocka_unit_test(test_message_buffer),
      cmocka_unit_test(test_names_round_trip),
      cmocka_unit_test(test_invalid_config),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
