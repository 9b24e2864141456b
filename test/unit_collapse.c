/* unit_collapse.c - the collapse rules of job/collapse.h against
 * hand-made evaluations: the consensus and momentum bounds at their edges,
 * the accuracy rule's streak at chance (its span in epochs and in steps, a
 * streak broken by one good evaluation, the bound itself), and the three
 * together as every mode applies them (qgmd_collapse_check: which rule
 * speaks, its line, a mode without a measure, --stop-at-chance=0). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "collapse.h"

static char why[256];

/* One evaluation at `step` into the streak s: the rule's verdict. */
static int eval_at(qgmd_chance_t *s, double acc, uint64_t step, uint64_t spe) {
  why[0] = '\0';
  return qgmd_chance_collapsed(s, acc, 10, step, spe, why, sizeof why);
}

/* Evaluations every `every` steps from `from` to `to`, all at chance:
 * the step of the first the rule stops at, or 0 if none. */
static uint64_t first_stop(qgmd_chance_t *s, uint64_t from, uint64_t to,
                           uint64_t every, uint64_t spe) {
  for (uint64_t step = from; step <= to; step += every)
    if (eval_at(s, 0.1, step, spe))
      return step;
  return 0;
}

static void test_consensus_and_momentum_bounds(void **state) {
  (void)state;
  const size_t d = 10000; /* sqrt: 100 */
  assert_int_equal(qgmd_collapsed(0.04 * d, 1, 2.0 * 100, d, why, sizeof why),
                   0);
  assert_int_equal(qgmd_collapsed(0.041 * d, 1, 0.0, d, why, sizeof why), 1);
  assert_non_null(strstr(why, "consensus distance 410"));
  assert_int_equal(qgmd_collapsed(0.0, 1, 201.0, d, why, sizeof why), 1);
  assert_non_null(strstr(why, "largest momentum norm 201"));
  /* No momentum kept: its norm is not looked at. */
  assert_int_equal(qgmd_collapsed(0.0, 0, 1e9, d, why, sizeof why), 0);
  /* A NaN measure is past its bound. */
  assert_int_equal(qgmd_collapsed(NAN, 0, 0.0, d, why, sizeof why), 1);
}

static void test_chance_for_1_9_epochs_goes_on(void **state) {
  (void)state;
  /* 200 steps an epoch, an evaluation every 20: at chance from step 20,
   * 1.9 epochs (380 steps) later it still trains; at 2 epochs it stops. */
  qgmd_chance_t s = {0};
  assert_int_equal(first_stop(&s, 20, 400, 20, 200), 0);
  assert_int_equal(eval_at(&s, 0.1, 420, 200), 1);
  assert_non_null(strstr(why, "from epoch 0.1 step 20"));
  assert_non_null(strstr(why, "at most 0.125 (chance: 1.25 / 10 classes)"));
  assert_non_null(strstr(why, "accuracy 0.1000"));
}

static void test_two_epochs_of_few_steps_go_on(void **state) {
  (void)state;
  /* 15 steps an epoch (2000 samples on 4 ranks): two epochs are 30 steps;
   * the stop waits for 200, the first evaluation 14 epochs on. */
  qgmd_chance_t s = {0};
  assert_int_equal(first_stop(&s, 15, 1500, 15, 15), 15 + 14 * 15);
  /* With one evaluation an epoch, the epochs decide when they are the
   * longer span: 117 steps an epoch, at chance from epoch 1, stopped at
   * epoch 3 (234 steps), not at epoch 2 (117). */
  qgmd_chance_t lenet = {0};
  assert_int_equal(first_stop(&lenet, 117, 117 * 20, 117, 117), 3 * 117);
}

static void test_one_good_evaluation_restarts_the_streak(void **state) {
  (void)state;
  qgmd_chance_t s = {0};
  assert_int_equal(first_stop(&s, 100, 200, 100, 100), 0);
  /* One evaluation above the bound... */
  assert_int_equal(eval_at(&s, 0.1251, 300, 100), 0);
  /* ...and the span counts from the next at chance: 400 + 200. */
  assert_int_equal(first_stop(&s, 400, 1000, 100, 100), 600);
  assert_non_null(strstr(why, "from epoch 4 step 400"));
}

static void test_the_bounds_are_exact_at_their_edges(void **state) {
  (void)state;
  /* 1.25 / 10 is at chance; the next double above is not. */
  qgmd_chance_t s = {0};
  assert_int_equal(eval_at(&s, 0.125, 0, 100), 0);
  assert_int_equal(eval_at(&s, 0.125, 199, 100), 0);
  assert_int_equal(eval_at(&s, 0.125, 200, 100), 1);
  s = (qgmd_chance_t){0};
  assert_int_equal(eval_at(&s, 0.125, 0, 100), 0);
  assert_int_equal(eval_at(&s, nextafter(0.125, 1.0), 200, 100), 0);
  /* Steps and epochs both exactly at their bounds (100 steps an epoch). */
  s = (qgmd_chance_t){0};
  assert_int_equal(eval_at(&s, 0.0, 25, 100), 0);
  assert_int_equal(eval_at(&s, 0.0, 224, 100), 0);
  assert_int_equal(eval_at(&s, 0.0, 225, 100), 1);
  /* An epoch of 150 steps: 200 steps are not yet the 2 epochs (300). */
  s = (qgmd_chance_t){0};
  assert_int_equal(eval_at(&s, 0.0, 150, 150), 0);
  assert_int_equal(eval_at(&s, 0.0, 350, 150), 0);
  assert_int_equal(eval_at(&s, 0.0, 449, 150), 0);
  assert_int_equal(eval_at(&s, 0.0, 450, 150), 1);
}

static void test_the_bound_follows_the_classes(void **state) {
  (void)state;
  /* 100 classes: chance is 1%, the bound 1.25%. */
  qgmd_chance_t s = {0};
  assert_int_equal(qgmd_chance_collapsed(&s, 0.02, 100, 100, 100, why,
                                         sizeof why), 0);
  assert_int_equal(qgmd_chance_collapsed(&s, 0.02, 100, 400, 100, why,
                                         sizeof why), 0);
  assert_int_equal(qgmd_chance_collapsed(&s, 0.0125, 100, 500, 100, why,
                                         sizeof why), 0);
  assert_int_equal(qgmd_chance_collapsed(&s, 0.0125, 100, 700, 100, why,
                                         sizeof why), 1);
  assert_non_null(strstr(why, "1.25 / 100 classes"));
  /* One class: every model is right, never at chance. */
  s = (qgmd_chance_t){0};
  assert_int_equal(qgmd_chance_collapsed(&s, 1.0, 1, 100, 100, why,
                                         sizeof why), 0);
  assert_int_equal(qgmd_chance_collapsed(&s, 1.0, 1, 10000, 100, why,
                                         sizeof why), 0);
}

/* An evaluation of the MLP (203530 parameters, 10 classes, 15 steps an
 * epoch) at `step`, healthy but for what the test changes. */
static qgmd_collapse_eval_t healthy(uint64_t step) {
  return (qgmd_collapse_eval_t){.epoch = (double)step / 15.0,
                                .step = step,
                                .steps_per_epoch = 15,
                                .dim = 203530,
                                .consensus = 0.5,
                                .has_momentum = 1,
                                .momentum_max = 20.0,
                                .accuracy = 0.8,
                                .classes = 10};
}

static void test_every_rule_in_one_check(void **state) {
  (void)state;
  char line[512];
  qgmd_chance_t s = {0};
  qgmd_collapse_eval_t e = healthy(15);
  assert_int_equal(qgmd_collapse_check(&e, &s, 1, line, sizeof line), 0);
  /* The consensus bound, in its line, whatever --stop-at-chance says. */
  e.consensus = 1e12;
  for (int chance_rule = 0; chance_rule <= 1; chance_rule++) {
    line[0] = '\0';
    assert_int_equal(
        qgmd_collapse_check(&e, &s, chance_rule, line, sizeof line), 1);
    assert_string_equal(line,
                        "consensus distance 1e+12 (4.91e+06 per parameter) "
                        "is above 0.04 per parameter at epoch 1 step 15: "
                        "training collapsed (try a smaller --lr); the last "
                        "complete checkpoint, if any, is kept");
  }
  /* The momentum bound: 2 sqrt(203530) = 902.3. */
  e = healthy(30);
  e.momentum_max = 903.0;
  assert_int_equal(qgmd_collapse_check(&e, &s, 0, line, sizeof line), 1);
  assert_non_null(strstr(line, "largest momentum norm 903 (2 per parameter, "
                               "root mean square) is above 2 at epoch 2 "
                               "step 30: training collapsed (try a smaller "
                               "--lr); the last"));
  /* Both past their bounds: the consensus distance is named. */
  e.consensus = 1e12;
  assert_int_equal(qgmd_collapse_check(&e, &s, 1, line, sizeof line), 1);
  assert_non_null(strstr(line, "consensus distance 1e+12"));
  /* No evaluation so far added to the streak. */
  assert_int_equal(s.on, 0);
}

static void test_a_model_at_chance_in_one_check(void **state) {
  (void)state;
  char line[512];
  /* At chance from step 15 on: stopped at step 200 (200 steps, and more
   * than 2 epochs), "to" the stop's epoch and step. */
  qgmd_chance_t s = {0};
  qgmd_collapse_eval_t e = healthy(15);
  e.accuracy = 0.1;
  uint64_t stop = 0;
  for (uint64_t step = 15; step <= 300 && !stop; step += 5) {
    e.step = step;
    e.epoch = (double)step / 15.0;
    if (qgmd_collapse_check(&e, &s, 1, line, sizeof line))
      stop = step;
  }
  assert_int_equal(stop, 215);
  assert_non_null(strstr(line, "averaged-model test accuracy 0.1000 is at "
                               "most 0.125 (chance: 1.25 / 10 classes) at "
                               "every evaluation from epoch 1 step 15 to "
                               "epoch 14.33 step 215: training collapsed (try "
                               "a smaller --lr, or --stop-at-chance=0 to "
                               "train on); the last complete checkpoint, if "
                               "any, is kept"));
  /* --stop-at-chance=0: never. */
  qgmd_chance_t off = {0};
  for (uint64_t step = 15; step <= 3000; step += 15) {
    e.step = step;
    assert_int_equal(qgmd_collapse_check(&e, &off, 0, line, sizeof line), 0);
  }
}

static void test_a_mode_without_a_measure(void **state) {
  (void)state;
  char line[512];
  /* The parameter server's evaluation: one model (consensus 0) and no
   * momentum norm measured, whatever the field holds: neither bound can
   * stop it, the accuracy rule still can. */
  qgmd_chance_t s = {0};
  qgmd_collapse_eval_t e = healthy(40);
  e.consensus = 0.0;
  e.has_momentum = 0;
  e.momentum_max = NAN;
  assert_int_equal(qgmd_collapse_check(&e, &s, 1, line, sizeof line), 0);
  e.accuracy = 0.1;
  assert_int_equal(qgmd_collapse_check(&e, &s, 1, line, sizeof line), 0);
  e.step = 240;
  assert_int_equal(qgmd_collapse_check(&e, &s, 1, line, sizeof line), 1);
  assert_non_null(strstr(line, "averaged-model test accuracy"));
  /* One node of asynchronous gossip: consensus 0, its momentum kept. */
  e = healthy(10);
  e.consensus = 0.0;
  e.momentum_max = 4.676e4;
  assert_int_equal(qgmd_collapse_check(&e, &s, 1, line, sizeof line), 1);
  assert_non_null(strstr(line, "largest momentum norm 4.676e+04"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_consensus_and_momentum_bounds),
      cmocka_unit_test(test_chance_for_1_9_epochs_goes_on),
      cmocka_unit_test(test_two_epochs_of_few_steps_go_on),
      cmocka_unit_test(test_one_good_evaluation_restarts_the_streak),
      cmocka_unit_test(test_the_bounds_are_exact_at_their_edges),
      cmocka_unit_test(test_the_bound_follows_the_classes),
      cmocka_unit_test(test_every_rule_in_one_check),
      cmocka_unit_test(test_a_model_at_chance_in_one_check),
      cmocka_unit_test(test_a_mode_without_a_measure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
