/* unit_lossy.c - lost gossip messages and push-sum (libqgm/graph/lossy.c,
 * the sgp optimizer): the loss draw is a pure function of (seed, round,
 * sender, receiver) with the asked frequency; neighbour mixing leaves a
 * lost message out and gives its weight to the receiver's own; push-sum
 * keeps the sum of its weights and reaches the exact average with 30% of
 * the messages lost; without losses SGP is DSGDm-N bit for bit. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qgm.h"

#define N 8

static qgm_topology_t *make(const char *name, int n) {
  qgm_topology_t *t = NULL;
  assert_int_equal(qgm_topology_create(name, n, &t), 0);
  return t;
}

static void test_draw_is_pure_and_has_its_rate(void **state) {
  (void)state;
  const double d = qgm_rng_message_draw(7, 3, 1, 2);
  assert_true(d >= 0.0 && d < 1.0);
  assert_true(qgm_rng_message_draw(7, 3, 1, 2) == d);
  assert_true(qgm_rng_message_draw(8, 3, 1, 2) != d); /* seed */
  assert_true(qgm_rng_message_draw(7, 4, 1, 2) != d); /* round */
  assert_true(qgm_rng_message_draw(7, 3, 2, 1) != d); /* direction */
  /* 10000 rounds of 4 x 3 directed pairs at rate 0.1: 12000 expected,
   * standard deviation sqrt(120000 * 0.1 * 0.9) = 104; 5 of them. */
  const qgm_drop_t drop = {.rate = 0.1, .seed = 1};
  long lost = 0;
  for (uint64_t r = 0; r < 10000; r++)
    for (int from = 0; from < 4; from++)
      for (int to = 0; to < 4; to++)
        if (from != to)
          lost += qgm_drop_lost(&drop, r, from, to);
  assert_true(labs(lost - 12000) < 520);
  const qgm_drop_t none = {.rate = 0.0, .seed = 1};
  assert_int_equal(qgm_drop_lost(&none, 0, 0, 1), 0);
  assert_int_equal(qgm_drop_lost(NULL, 0, 0, 1), 0);
}

/* Node 0 of the 8-ring mixes its own 1 with node 1's 2 and node 7's 8 at
 * 1/3 each: 11/3 with both; with one lost, the lost third stays on its
 * own message: 1 + (2 - 1)/3 = 4/3, or 1 + (8 - 1)/3 = 10/3. */
static void test_neighbours_renormalise_over_what_arrived(void **state) {
  (void)state;
  qgm_topology_t *t = make("ring", N);
  float value[N], mixed[N];
  const float *msgs[N];
  float *mixes[N];
  for (int i = 0; i < N; i++) {
    value[i] = (float)(i + 1);
    msgs[i] = &value[i];
    mixes[i] = &mixed[i];
  }
  const qgm_drop_t drop = {.rate = 0.3, .seed = 5};
  int seen[3] = {0, 0, 0}; /* rounds with 7's lost, 1's lost, neither */
  for (uint64_t r = 0; r < 200; r++) {
    assert_int_equal(qgm_mix_messages_lossy(t, r, QGM_COMBINE_NEIGHBOURS,
                                            &drop, msgs, mixes, 1),
                     0);
    const int lost1 = qgm_drop_lost(&drop, r, 1, 0);
    const int lost7 = qgm_drop_lost(&drop, r, 7, 0);
    const double expect = 1.0 + (lost1 ? 0.0 : 1.0 / 3.0) +
                          (lost7 ? 0.0 : 7.0 / 3.0);
    assert_float_equal(mixed[0], expect, 1e-6);
    if (lost7 != lost1)
      seen[lost7 ? 0 : 1]++;
    else
      seen[2]++;
  }
  assert_true(seen[0] > 0 && seen[1] > 0 && seen[2] > 0);
  /* No rate: qgm_mix_messages's bits. */
  float plain[N];
  float *plains[N];
  for (int i = 0; i < N; i++)
    plains[i] = &plain[i];
  const qgm_drop_t zero = {.rate = 0.0, .seed = 5};
  assert_int_equal(qgm_mix_messages(t, 3, QGM_COMBINE_NEIGHBOURS, msgs,
                                    plains, 1), 0);
  assert_int_equal(qgm_mix_messages_lossy(t, 3, QGM_COMBINE_NEIGHBOURS,
                                          &zero, msgs, mixes, 1), 0);
  assert_memory_equal(plain, mixed, sizeof plain);
  assert_float_equal(mixed[0], 11.0 / 3.0, 1e-6);
  /* Lost messages cannot be had on the global mean. */
  assert_int_equal(qgm_mix_messages_lossy(t, 0, QGM_COMBINE_GLOBAL_MEAN,
                                          &drop, msgs, mixes, 1),
                   QGM_EINVAL);
  qgm_topology_free(t);
}

/* Push-sum of [x, w] from x_i = i, w_i = 1, 400 rounds with 30% of the
 * messages lost: the weights still sum to n and the numerators to 28 (to
 * float rounding), and every ratio x_i / w_i is the average 3.5. */
static void push_sum_converges(const char *graph) {
  qgm_topology_t *t = make(graph, N);
  float buf[2][N][2];
  const float *msgs[N];
  float *mixes[N];
  for (int i = 0; i < N; i++) {
    buf[0][i][0] = (float)i;
    buf[0][i][1] = 1.0f;
  }
  const qgm_drop_t drop = {.rate = 0.3, .seed = 11};
  int cur = 0;
  double least = 1.0, most = 1.0;
  for (uint64_t r = 0; r < 400; r++) {
    for (int i = 0; i < N; i++) {
      msgs[i] = buf[cur][i];
      mixes[i] = buf[1 - cur][i];
    }
    assert_int_equal(qgm_mix_messages_lossy(t, r, QGM_COMBINE_PUSH_SUM,
                                            &drop, msgs, mixes, 2),
                     0);
    cur = 1 - cur;
    double x = 0.0, w = 0.0;
    for (int i = 0; i < N; i++) {
      x += buf[cur][i][0];
      w += buf[cur][i][1];
      least = fmin(least, buf[cur][i][1]);
      most = fmax(most, buf[cur][i][1]);
    }
    assert_float_equal(w, (double)N, 1e-4);
    assert_float_equal(x, 28.0, 1e-3);
  }
  for (int i = 0; i < N; i++)
    assert_float_equal(buf[cur][i][0] / buf[cur][i][1], 3.5, 1e-4);
  assert_true(least < 0.9 || most > 1.1); /* the losses moved the weights */
  qgm_topology_free(t);
}

static void test_push_sum_keeps_mass_and_average(void **state) {
  (void)state;
  push_sum_converges("ring");
  push_sum_converges("one-peer-exp");
}

/* The count from the draws is what the mixes left out. */
static void test_drop_count_is_what_was_left_out(void **state) {
  (void)state;
  qgm_topology_t *t = make("one-peer-exp", N);
  const qgm_drop_t drop = {.rate = 0.25, .seed = 2};
  for (int node = 0; node < N; node++) {
    uint64_t left_out = 0;
    for (uint64_t r = 0; r < 50; r++) {
      int peers[N];
      double weights[N], self, extra;
      int k = qgm_topology_neighbors(t, node, r, peers, weights, &self);
      left_out += (uint64_t)(k - qgm_gossip_round(t, r, node,
                                                  QGM_COMBINE_NEIGHBOURS,
                                                  &drop, k, peers, NULL,
                                                  weights, &extra));
      assert_true(extra == 0.0);
    }
    assert_int_equal(qgm_drop_count(t, &drop, node, 50), left_out);
  }
  qgm_topology_free(t);
}

/* SGP's listing: x, its weight w (1 float, 1 at the start), m; its
 * message [w z', w]. */
static void test_sgp_state_and_message(void **state) {
  (void)state;
  qgm_optim_config_t cfg = {.algorithm = QGM_ALG_SGP, .momentum = 0.9f};
  qgm_optim_t *o = NULL;
  assert_int_equal(qgm_optim_create(&cfg, 3, &o), 0);
  assert_int_equal(qgm_optim_message_len(o), 4);
  assert_int_equal(qgm_optim_combine(o), QGM_COMBINE_PUSH_SUM);
  assert_int_equal(qgm_optim_state_count(o), 3);
  const char *names[] = {"x", "w", "m"};
  const size_t lens[] = {3, 1, 3};
  for (size_t i = 0; i < 3; i++) {
    qgm_optim_state_t s;
    assert_int_equal(qgm_optim_state_get(o, i, &s), 0);
    assert_string_equal(s.name, names[i]);
    assert_int_equal(s.len, lens[i]);
  }
  assert_true(qgm_optim_push_sum_weight(o) == 1.0);
  size_t message = 0;
  assert_int_equal(qgm_optim_footprint(QGM_ALG_SGP, 3, &message),
                   5 * 3 + 3);
  assert_int_equal(message, 4);
  /* z = (1, 2, 3) with w = 0.5 and a zero gradient, lr 0.1: the message
   * is the numerator [0.5, 1, 1.5, 0.5]; mixed alone (its own message
   * back) it de-biases to z again. */
  float *z = qgm_optim_params(o);
  z[0] = 1.0f, z[1] = 2.0f, z[2] = 3.0f, z[3] = 0.5f;
  memset(qgm_optim_grad(o), 0, 3 * sizeof(float));
  const float *msg = qgm_optim_local_step(o, 0.1f);
  const float expect[4] = {0.5f, 1.0f, 1.5f, 0.5f};
  assert_memory_equal(msg, expect, sizeof expect);
  memcpy(qgm_optim_mix_buffer(o), msg, sizeof expect);
  qgm_optim_after_gossip(o, 0.1f);
  z = qgm_optim_params(o);
  assert_float_equal(z[0], 1.0, 0.0);
  assert_float_equal(z[2], 3.0, 0.0);
  assert_true(qgm_optim_push_sum_weight(o) == 0.5);
  /* With a gradient g = (1, 0, -2) and m = 0: m = g, u = g + 0.9 m =
   * 1.9 g, and the message is w (z - lr u) = 0.5 (z - 0.19 g) = [0.405,
   * 1, 1.69, 0.5]; mixed alone, z moves by lr u = 0.19 g whatever w is
   * (the paper's w z - lr u would move it by 0.38 g). */
  float *g = qgm_optim_grad(o);
  g[0] = 1.0f, g[1] = 0.0f, g[2] = -2.0f;
  msg = qgm_optim_local_step(o, 0.1f);
  const float expect_step[4] = {0.405f, 1.0f, 1.69f, 0.5f};
  for (size_t i = 0; i < 4; i++)
    assert_float_equal(msg[i], expect_step[i], 1e-6);
  memcpy(qgm_optim_mix_buffer(o), msg, sizeof expect_step);
  qgm_optim_after_gossip(o, 0.1f);
  z = qgm_optim_params(o);
  assert_float_equal(z[0], 0.81, 1e-6);
  assert_float_equal(z[1], 2.0, 1e-6);
  assert_float_equal(z[2], 3.38, 1e-6);
  qgm_optim_free(o);
}

/* On the ring without losses every weight stays 1 and a push-sum rule's
 * models are those of its rule without weights, bit for bit, over 30 steps
 * of noisy gradients: SGP's DSGDm-N's, QG-SGP's QG-DSGDm-N's. */
static void without_loss_is(qgm_algorithm_t push_sum, qgm_algorithm_t plain) {
  enum { DIM = 5, STEPS = 30 };
  qgm_topology_t *t = make("ring", N);
  qgm_optim_t *sgp[N], *ref[N];
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 9, 0);
  for (int i = 0; i < N; i++) {
    qgm_optim_config_t a = {.algorithm = push_sum, .momentum = 0.9f,
                            .weight_decay = 0.01f};
    qgm_optim_config_t b = a;
    b.algorithm = plain;
    assert_int_equal(qgm_optim_create(&a, DIM, &sgp[i]), 0);
    assert_int_equal(qgm_optim_create(&b, DIM, &ref[i]), 0);
    for (int d = 0; d < DIM; d++)
      qgm_optim_params(sgp[i])[d] = qgm_optim_params(ref[i])[d] =
          (float)qgm_rng_normal(&rng);
  }
  const qgm_drop_t none = {.rate = 0.0, .seed = 1};
  for (uint64_t s = 0; s < STEPS; s++) {
    const float *ms[N], *mr[N];
    float *xs[N], *xr[N];
    for (int i = 0; i < N; i++) {
      for (int d = 0; d < DIM; d++)
        qgm_optim_grad(sgp[i])[d] = qgm_optim_grad(ref[i])[d] =
            (float)qgm_rng_normal(&rng);
      ms[i] = qgm_optim_local_step(sgp[i], 0.05f);
      mr[i] = qgm_optim_local_step(ref[i], 0.05f);
      xs[i] = qgm_optim_mix_buffer(sgp[i]);
      xr[i] = qgm_optim_mix_buffer(ref[i]);
    }
    assert_int_equal(qgm_mix_messages_lossy(t, s, QGM_COMBINE_PUSH_SUM,
                                            &none, ms, xs, DIM + 1), 0);
    assert_int_equal(qgm_mix_messages(t, s, QGM_COMBINE_NEIGHBOURS, mr, xr,
                                      DIM), 0);
    for (int i = 0; i < N; i++) {
      qgm_optim_after_gossip(sgp[i], 0.05f);
      qgm_optim_after_gossip(ref[i], 0.05f);
      assert_memory_equal(qgm_optim_params(sgp[i]), qgm_optim_params(ref[i]),
                          DIM * sizeof(float));
      assert_true(qgm_optim_push_sum_weight(sgp[i]) == 1.0);
    }
  }
  for (int i = 0; i < N; i++) {
    qgm_optim_free(sgp[i]);
    qgm_optim_free(ref[i]);
  }
  qgm_topology_free(t);
}

static void test_sgp_without_loss_is_dsgdm_n(void **state) {
  (void)state;
  without_loss_is(QGM_ALG_SGP, QGM_ALG_DSGDM_N);
}

static void test_qg_sgp_without_loss_is_qg_dsgdm_n(void **state) {
  (void)state;
  without_loss_is(QGM_ALG_QG_SGP, QGM_ALG_QG_DSGDM_N);
}

/* QG-SGP's step by hand: z = (1, 2, 3), w = 0.5, m = 0, g = (1, 0, -2),
 * beta 0.9, lr 0.1: mhat = g, the message is w (z - lr (g + beta mhat)) =
 * 0.5 (z - 0.19 g) = [0.405, 1, 1.69, 0.5]. Mixed with a neighbour's
 * share [0.3, 0.3, 0.3, 0.5] (a model of 0.6 everywhere at weight 0.5):
 * x' = [0.705, 1.3, 1.99], w' = 1, so z' = x' and d = (z - z') / lr =
 * (2.95, 7, 10.1); m = (1 - beta) d = (0.295, 0.7, 1.01). */
static void test_qg_sgp_step(void **state) {
  (void)state;
  qgm_optim_config_t cfg = {.algorithm = QGM_ALG_QG_SGP, .momentum = 0.9f};
  qgm_optim_t *o = NULL;
  assert_int_equal(qgm_optim_create(&cfg, 3, &o), 0);
  assert_int_equal(qgm_optim_combine(o), QGM_COMBINE_PUSH_SUM);
  assert_int_equal(qgm_algorithm_combine(QGM_ALG_QG_SGP),
                   QGM_COMBINE_PUSH_SUM);
  float *z = qgm_optim_params(o);
  z[0] = 1.0f, z[1] = 2.0f, z[2] = 3.0f, z[3] = 0.5f;
  float *g = qgm_optim_grad(o);
  g[0] = 1.0f, g[1] = 0.0f, g[2] = -2.0f;
  const float *msg = qgm_optim_local_step(o, 0.1f);
  const float expect[4] = {0.405f, 1.0f, 1.69f, 0.5f};
  for (size_t i = 0; i < 4; i++)
    assert_float_equal(msg[i], expect[i], 1e-6);
  float *mix = qgm_optim_mix_buffer(o);
  for (size_t i = 0; i < 3; i++)
    mix[i] = msg[i] + 0.3f;
  mix[3] = 1.0f;
  qgm_optim_after_gossip(o, 0.1f);
  z = qgm_optim_params(o);
  const float *m = qgm_optim_momentum(o);
  const float zs[3] = {0.705f, 1.3f, 1.99f}, ms[3] = {0.295f, 0.7f, 1.01f};
  for (size_t i = 0; i < 3; i++) {
    assert_float_equal(z[i], zs[i], 1e-6);
    assert_float_equal(m[i], ms[i], 1e-5);
  }
  assert_true(qgm_optim_push_sum_weight(o) == 1.0);
  qgm_optim_free(o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_draw_is_pure_and_has_its_rate),
      cmocka_unit_test(test_neighbours_renormalise_over_what_arrived),
      cmocka_unit_test(test_push_sum_keeps_mass_and_average),
      cmocka_unit_test(test_drop_count_is_what_was_left_out),
      cmocka_unit_test(test_sgp_state_and_message),
      cmocka_unit_test(test_sgp_without_loss_is_dsgdm_n),
      cmocka_unit_test(test_qg_sgp_without_loss_is_qg_dsgdm_n),
      cmocka_unit_test(test_qg_sgp_step),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
