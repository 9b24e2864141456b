/* unit_newest_slot.c - the newest-message slot of asynchronous gossip
 * (job/newest_slot.c): what a reader takes before, after and between
 * publications, and, with a writer thread publishing as fast as it can
 * against a reader copying as fast as it can, that no copy the reader
 * keeps mixes two messages (every message is its round repeated, so a
 * torn copy would hold two values) and that the rounds it keeps only
 * grow. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>

#include "newest_slot.h"

enum { LEN = 8192, ROUNDS = 20000 };

static void fill(float *msg, double round) {
  for (size_t i = 0; i < LEN; i++)
    msg[i] = (float)round;
}

static void test_take_sees_the_newest_once(void **state) {
  (void)state;
  void *block = malloc(qgmd_newest_slot_bytes(LEN));
  float *msg = malloc(LEN * sizeof *msg), *dst = malloc((LEN + 1) * sizeof *dst);
  assert_non_null(block);
  assert_non_null(msg);
  assert_non_null(dst);
  qgmd_newest_slot_init(block, LEN);
  uint64_t taken = 0;
  assert_int_equal(qgmd_newest_slot_take(block, LEN, &taken, dst), 0);
  assert_false(qgmd_newest_slot_finished(block));
  fill(msg, 7.0);
  qgmd_newest_slot_publish(block, LEN, msg, 7.0);
  assert_int_equal(qgmd_newest_slot_take(block, LEN, &taken, dst), 1);
  assert_int_equal(taken, 1);
  assert_float_equal(dst[0], 7.0f, 0.0f);
  assert_float_equal(dst[LEN - 1], 7.0f, 0.0f);
  assert_float_equal(dst[LEN], 7.0f, 0.0f);
  assert_int_equal(qgmd_newest_slot_take(block, LEN, &taken, dst), 0);
  /* Five more, more than the buffers: only the last is taken. */
  for (int r = 8; r <= 12; r++) {
    fill(msg, r);
    qgmd_newest_slot_publish(block, LEN, msg, r);
  }
  assert_int_equal(qgmd_newest_slot_take(block, LEN, &taken, dst), 1);
  assert_int_equal(taken, 6);
  assert_float_equal(dst[LEN / 2], 12.0f, 0.0f);
  assert_float_equal(dst[LEN], 12.0f, 0.0f);
  qgmd_newest_slot_finish(block);
  assert_true(qgmd_newest_slot_finished(block));
  free(block);
  free(msg);
  free(dst);
}

typedef struct race {
  void *block;
} race_t;

static void *writer(void *arg) {
  race_t *race = arg;
  float *msg = malloc(LEN * sizeof *msg);
  if (!msg)
    return NULL;
  for (int r = 1; r <= ROUNDS; r++) {
    fill(msg, r);
    qgmd_newest_slot_publish(race->block, LEN, msg, r);
  }
  qgmd_newest_slot_finish(race->block);
  free(msg);
  return race;
}

static void test_no_torn_copy_is_kept(void **state) {
  (void)state;
  race_t race = {malloc(qgmd_newest_slot_bytes(LEN))};
  float *dst = malloc((LEN + 1) * sizeof *dst);
  assert_non_null(race.block);
  assert_non_null(dst);
  qgmd_newest_slot_init(race.block, LEN);
  pthread_t thread;
  assert_int_equal(pthread_create(&thread, NULL, writer, &race), 0);
  uint64_t taken = 0;
  float last = 0.0f;
  long kept = 0;
  int done = 0;
  while (!done) {
    /* Read the flag first: once it is set, the take after it sees the
     * writer's last message. */
    done = qgmd_newest_slot_finished(race.block);
    if (qgmd_newest_slot_take(race.block, LEN, &taken, dst) != 1)
      continue;
    const float round = dst[LEN];
    assert_true(round > last);
    for (size_t i = 0; i < LEN; i++)
      if (dst[i] != round)
        fail_msg("a kept copy of round %g holds %g at %zu", (double)round,
                 (double)dst[i], i);
    last = round;
    kept++;
  }
  void *ret;
  assert_int_equal(pthread_join(thread, &ret), 0);
  assert_ptr_equal(ret, &race);
  assert_float_equal(last, (float)ROUNDS, 0.0f);
  assert_true(kept >= 1);
  free(race.block);
  free(dst);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_take_sees_the_newest_once),
      cmocka_unit_test(test_no_torn_copy_is_kept),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
