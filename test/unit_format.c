/* unit_format.c - qgm_format_double: the shortest text that reads back
 * as the same double, in plain digits where they are as readable. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "qgm.h"

static void expect(double v, const char *text) {
  char buf[64];
  int n = qgm_format_double(buf, sizeof buf, v);
  assert_string_equal(buf, text);
  assert_int_equal(n, (int)strlen(text));
}

static void test_short_forms(void **state) {
  (void)state;
  expect(0.1, "0.1");
  expect(0.3, "0.3");
  expect(1e-4, "0.0001");
  expect(10, "10");
  expect(1e6, "1000000");
  expect(600, "600");
  expect(0.5, "0.5");
  expect(0, "0");
  expect(-2.5, "-2.5");
  expect(4294967295.0, "4294967295");
  expect(1e-6, "1e-06");
  expect(1e20, "1e+20");
  expect(1.0 / 3.0, "0.3333333333333333");
  expect(0.1 + 0.2, "0.30000000000000004");
  expect(5e-324, "5e-324"); /* the smallest subnormal */
}

/* Every text reads back as its double, whatever the bits. */
static void test_random_values_read_back(void **state) {
  (void)state;
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 7, 0);
  for (int i = 0; i < 20000; i++) {
    uint64_t bits = qgm_rng_u64(&rng);
    double v;
    memcpy(&v, &bits, sizeof v);
    if (!isfinite(v))
      continue;
    char buf[64];
    qgm_format_double(buf, sizeof buf, v);
    assert_true(strtod(buf, NULL) == v);
  }
}

static void test_truncates_like_snprintf(void **state) {
  (void)state;
  char buf[4];
  assert_int_equal(qgm_format_double(buf, sizeof buf, 0.125), 5);
  assert_string_equal(buf, "0.1");
}

/* The plural and the article, against the words as spoken. */
static void test_counts_and_articles(void **state) {
  (void)state;
  char buf[64];
  assert_string_equal(qgm_count_text(buf, sizeof buf, 1, "node"), "1 node");
  assert_string_equal(qgm_count_text(buf, sizeof buf, 0, "node"), "0 nodes");
  assert_string_equal(qgm_count_text(buf, sizeof buf, 7, "host"), "7 hosts");
  static const struct {
    long long n;
    const char *text;
  } sized[] = {{1, "a 1-node"},       {7, "a 7-node"},     {8, "an 8-node"},
               {11, "an 11-node"},    {18, "an 18-node"},  {80, "an 80-node"},
               {89, "an 89-node"},    {100, "a 100-node"}, {800, "an 800-node"},
               {110, "a 110-node"},   {1800, "a 1800-node"},
               {11000, "an 11000-node"}, {18500, "an 18500-node"},
               {8000000, "an 8000000-node"}, {21, "a 21-node"}};
  for (size_t i = 0; i < sizeof sized / sizeof *sized; i++)
    assert_string_equal(qgm_sized_text(buf, sizeof buf, sized[i].n, "node"),
                        sized[i].text);
  /* Cut like snprintf, terminated. */
  assert_string_equal(qgm_count_text(buf, 4, 12, "node"), "12 ");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_short_forms),
      cmocka_unit_test(test_random_values_read_back),
      cmocka_unit_test(test_truncates_like_snprintf),
      cmocka_unit_test(test_counts_and_articles),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
