/* unit_record.c - the record writer (job/record.h): the exact text of a
 * table, fields left out or null without stray commas, the tables' number
 * formats, escapes, shared rows, the snprintf-like length, and a failed
 * write. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

static void expect_record(const char *type, const qgmd_field_t *fields,
                          size_t n, const char *want) {
  char buf[1024];
  size_t len = qgmd_record_format(buf, sizeof buf, type, fields, n);
  assert_string_equal(buf, want);
  assert_int_equal(len, strlen(want));
}

static void test_every_kind_in_table_order(void **state) {
  (void)state;
  const qgmd_field_t fields[] = {
      QGMD_INT("n", -3),
      QGMD_UINT("u", UINT64_MAX),
      QGMD_DOUBLE("x", "%.3f", 1.0 / 3.0),
      QGMD_STRING("s", "a\"b\\c\n"),
      QGMD_BOOL("yes", 7),
      QGMD_BOOL("no", 0),
      QGMD_JSON("obj", "{\"a\":[1,2]}"),
  };
  expect_record("eval", QGMD_FIELDS(fields),
                "{\"type\":\"eval\",\"n\":-3,\"u\":18446744073709551615,"
                "\"x\":0.333,\"s\":\"a\\\"b\\\\c\\u000a\",\"yes\":true,"
                "\"no\":false,\"obj\":{\"a\":[1,2]}}");
}

/* The formats the records use, each as tools read it. */
static void test_number_formats(void **state) {
  (void)state;
  const qgmd_field_t fields[] = {
      QGMD_DOUBLE("g0", "%.6g", 0.0),
      QGMD_DOUBLE("g", "%.6g", 1.40655e-16),
      QGMD_DOUBLE("whole", "%.6g", 3.0),
      QGMD_DOUBLE("f6", "%.6f", 0.71),
      QGMD_DOUBLE("f3", "%.3f", 12.34567),
      QGMD_DOUBLE("f4", "%.4f", 1.0),
      QGMD_DOUBLE("bytes", "%.0f", 12211800.0),
      QGMD_DOUBLE("tenth", "%.1f", 2.46),
  };
  expect_record("summary", QGMD_FIELDS(fields),
                "{\"type\":\"summary\",\"g0\":0,\"g\":1.40655e-16,"
                "\"whole\":3,\"f6\":0.710000,\"f3\":12.346,\"f4\":1.0000,"
                "\"bytes\":12211800,\"tenth\":2.5}");
}

/* An absent row goes with its comma wherever it stands: first, in the
 * middle, last, or all of them. */
static void test_absent_rows_leave_no_comma(void **state) {
  (void)state;
  for (int mask = 0; mask < 8; mask++) {
    const qgmd_field_t fields[] = {
        QGMD_IF(mask & 1, QGMD_INT("a", 1)),
        QGMD_IF(mask & 2, QGMD_INT("b", 2)),
        QGMD_IF(mask & 4, QGMD_INT("c", 3)),
    };
    char want[64] = "{";
    const char *rows[] = {"\"a\":1", "\"b\":2", "\"c\":3"};
    for (int i = 0; i < 3; i++)
      if (mask & (1 << i))
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s",
                 strlen(want) > 1 ? "," : "", rows[i]);
    strcat(want, "}");
    expect_record(NULL, QGMD_FIELDS(fields), want);
  }
}

static void test_or_null_writes_null_when_unknown(void **state) {
  (void)state;
  const qgmd_field_t fields[] = {
      QGMD_OR_NULL(0, QGMD_DOUBLE("eta_s", "%.1f", -1.0)),
      QGMD_OR_NULL(1, QGMD_DOUBLE("elapsed_s", "%.1f", 2.0)),
      QGMD_OR_NULL(0, QGMD_JSON("last_eval", "{}")),
  };
  expect_record(NULL, QGMD_FIELDS(fields),
                "{\"eta_s\":null,\"elapsed_s\":2.0,\"last_eval\":null}");
}

static void test_members_are_spliced_in_place(void **state) {
  (void)state;
  const qgmd_field_t fields[] = {
      QGMD_MEMBERS("\"version\":\"1\",\"hosts\":{\"h\":2}"),
      QGMD_INT("nodes", 2),
      QGMD_MEMBERS(""), /* none: no comma either */
      QGMD_JSON("flags", "{}"),
  };
  expect_record("config", QGMD_FIELDS(fields),
                "{\"type\":\"config\",\"version\":\"1\",\"hosts\":{\"h\":2},"
                "\"nodes\":2,\"flags\":{}}");
}

/* Shared rows stand where the table names them, and go as one. */
static void test_shared_rows_are_written_in_place(void **state) {
  (void)state;
  const qgmd_field_t shared[] = {
      QGMD_UINT("steps", 30),
      QGMD_IF(0, QGMD_INT("hidden", 1)),
      QGMD_BOOL("stopped_early", 0),
  };
  const qgmd_field_t none[] = {QGMD_IF(0, QGMD_INT("gone", 1))};
  const qgmd_field_t fields[] = {
      QGMD_ROWS(none),
      QGMD_DOUBLE("epochs", "%.6g", 2.0),
      QGMD_ROWS(shared),
      QGMD_IF(0, QGMD_ROWS(shared)),
      QGMD_ROWS(none),
      QGMD_DOUBLE("wait_s", "%.3f", 0.5),
  };
  expect_record("summary", QGMD_FIELDS(fields),
                "{\"type\":\"summary\",\"epochs\":2,\"steps\":30,"
                "\"stopped_early\":false,\"wait_s\":0.500}");
}

/* Cut at any size, the text is terminated and is the start of the
 * whole; the length is the whole's. */
static void test_short_buffers_are_cut_like_snprintf(void **state) {
  (void)state;
  const qgmd_field_t fields[] = {QGMD_STRING("name", "ring"),
                                 QGMD_DOUBLE("lr", "%.6g", 0.1)};
  const char *whole = "{\"type\":\"t\",\"name\":\"ring\",\"lr\":0.1}";
  assert_int_equal(qgmd_record_format(NULL, 0, "t", QGMD_FIELDS(fields)),
                   strlen(whole));
  for (size_t size = 1; size <= strlen(whole) + 1; size++) {
    char buf[64];
    memset(buf, 'x', sizeof buf);
    assert_int_equal(qgmd_record_format(buf, size, "t", QGMD_FIELDS(fields)),
                     strlen(whole));
    assert_int_equal(strlen(buf), size - 1);
    assert_memory_equal(buf, whole, size - 1);
    assert_int_equal(buf[size], 'x'); /* nothing past size */
  }
  char *json = qgmd_record_json("t", QGMD_FIELDS(fields));
  assert_non_null(json);
  assert_string_equal(json, whole);
  free(json);
}

static void test_write_appends_a_line_or_says_it_failed(void **state) {
  (void)state;
  const qgmd_field_t fields[] = {QGMD_UINT("step", 4)};
  FILE *f = tmpfile();
  assert_non_null(f);
  assert_int_equal(qgmd_record_write(f, "eval", QGMD_FIELDS(fields)), 0);
  assert_int_equal(qgmd_record_write(f, "eval", QGMD_FIELDS(fields)), 0);
  rewind(f);
  char text[128] = "";
  size_t got = fread(text, 1, sizeof text - 1, f);
  text[got] = '\0';
  assert_string_equal(text, "{\"type\":\"eval\",\"step\":4}\n"
                            "{\"type\":\"eval\",\"step\":4}\n");
  fclose(f);
  /* A full disk: the flush fails and the caller hears of it. */
  FILE *full = fopen("/dev/full", "w");
  if (full) {
    assert_int_equal(qgmd_record_write(full, "eval", QGMD_FIELDS(fields)),
                     -1);
    fclose(full);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_kind_in_table_order),
      cmocka_unit_test(test_number_formats),
      cmocka_unit_test(test_absent_rows_leave_no_comma),
      cmocka_unit_test(test_or_null_writes_null_when_unknown),
      cmocka_unit_test(test_members_are_spliced_in_place),
      cmocka_unit_test(test_shared_rows_are_written_in_place),
      cmocka_unit_test(test_short_buffers_are_cut_like_snprintf),
      cmocka_unit_test(test_write_appends_a_line_or_says_it_failed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
