/* unit_sha256.c - qgm_sha256 against the test vectors NIST publishes for
 * FIPS 180 ("abc", the two-block message, a million 'a's), the empty
 * message, and the lengths around the padding's block boundary (digests
 * from coreutils' sha256sum). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qgm.h"

static void hex(const void *data, size_t n, char out[65]) {
  uint8_t d[QGM_SHA256_BYTES];
  qgm_sha256(data, n, d);
  for (int i = 0; i < QGM_SHA256_BYTES; i++)
    snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void expect(const void *data, size_t n, const char *digest) {
  char got[65];
  hex(data, n, got);
  assert_string_equal(got, digest);
}

static void test_fips_180_examples(void **state) {
  (void)state;
  expect("abc", 3,
         "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  expect(two, strlen(two),
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  expect("", 0,
         "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_a_million_as(void **state) {
  (void)state;
  char *a = malloc(1000000);
  assert_non_null(a);
  memset(a, 'a', 1000000);
  expect(a, 1000000,
         "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  free(a);
}

/* 55, 56 and 64 bytes: the length fits the last block, just does not,
 * and a whole block before the padding's own (sha256sum's digests). */
static void test_padding_boundaries(void **state) {
  (void)state;
  char a[64];
  memset(a, 'a', sizeof a);
  expect(a, 55,
         "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  expect(a, 56,
         "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  expect(a, 64,
         "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fips_180_examples),
      cmocka_unit_test(test_a_million_as),
      cmocka_unit_test(test_padding_boundaries),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
