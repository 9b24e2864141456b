/* unit_memory_limit.c - what the memory cgroups leave a process
 * (job/memory_limit.h), read from hand-written /proc/self/cgroup and
 * cgroup files: v2, v1, a parent's tighter limit, "max", a path from
 * another cgroup namespace, and none at all. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers.h"
#include "memory_limit.h"

static char root[512];

/* Writes root/rel, making its directories. */
static void put(const char *rel, const char *text) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", root, rel);
  for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
    *p = '\0';
    mkdir(path, 0755);
    *p = '/';
  }
  assert_int_equal(test_write_file(path, text, strlen(text)), 0);
}

static int fresh_root(void **state) {
  (void)state;
  test_make_tmpdir(root, sizeof root);
  return 0;
}

static int remove_root(void **state) {
  (void)state;
  test_remove_tree(root);
  return 0;
}

/* v2: the job's own level is 1 GiB with 100 MiB used; its parent has no
 * limit ("max"). */
static void test_v2_limit_less_usage(void **state) {
  (void)state;
  put("proc/self/cgroup", "0::/user.slice/job\n");
  put("sys/fs/cgroup/user.slice/memory.max", "max\n");
  put("sys/fs/cgroup/user.slice/job/memory.max", "1073741824\n");
  put("sys/fs/cgroup/user.slice/job/memory.current", "104857600\n");
  assert_true(qgmd_cgroup_memory_left(root) == 1073741824.0 - 104857600.0);
}

/* A parent's limit, less what all its children use, binds first. */
static void test_v2_parent_binds(void **state) {
  (void)state;
  put("proc/self/cgroup", "0::/a/b\n");
  put("sys/fs/cgroup/a/memory.max", "2000000\n");
  put("sys/fs/cgroup/a/memory.current", "1500000\n");
  put("sys/fs/cgroup/a/b/memory.max", "1000000\n");
  put("sys/fs/cgroup/a/b/memory.current", "100000\n");
  assert_true(qgmd_cgroup_memory_left(root) == 500000.0);
}

/* v1 (the memory controller among others on one line); its "no limit" is
 * a page-rounded LONG_MAX. The path is not under the mount (another
 * namespace's): the levels that exist still count. */
static void test_v1_and_foreign_paths(void **state) {
  (void)state;
  put("proc/self/cgroup", "5:devices:/\n4:cpuacct,memory:/docker/abc\n"
                          "0::/\n");
  put("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  put("sys/fs/cgroup/memory/docker/memory.limit_in_bytes", "3000000\n");
  put("sys/fs/cgroup/memory/docker/memory.usage_in_bytes", "1000000\n");
  assert_true(qgmd_cgroup_memory_left(root) == 2000000.0);
}

/* Usage above the limit (the kernel reclaims) leaves nothing. */
static void test_over_the_limit_is_zero(void **state) {
  (void)state;
  put("proc/self/cgroup", "0::/x\n");
  put("sys/fs/cgroup/x/memory.max", "1000\n");
  put("sys/fs/cgroup/x/memory.current", "5000\n");
  assert_true(qgmd_cgroup_memory_left(root) == 0.0);
}

/* No limit anywhere, malformed numbers, or no cgroup file: -1. */
static void test_unlimited_or_unreadable(void **state) {
  (void)state;
  assert_true(qgmd_cgroup_memory_left(root) == -1.0);
  put("proc/self/cgroup", "0::/y\nnot a line\n");
  assert_true(qgmd_cgroup_memory_left(root) == -1.0);
  put("sys/fs/cgroup/y/memory.max", "max\n");
  assert_true(qgmd_cgroup_memory_left(root) == -1.0);
  put("sys/fs/cgroup/y/memory.max", "12kB\n");
  assert_true(qgmd_cgroup_memory_left(root) == -1.0);
  put("sys/fs/cgroup/y/memory.max", "4096\n"); /* no memory.current */
  assert_true(qgmd_cgroup_memory_left(root) == 4096.0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_v2_limit_less_usage, fresh_root,
                                      remove_root),
      cmocka_unit_test_setup_teardown(test_v2_parent_binds, fresh_root,
                                      remove_root),
      cmocka_unit_test_setup_teardown(test_v1_and_foreign_paths, fresh_root,
                                      remove_root),
      cmocka_unit_test_setup_teardown(test_over_the_limit_is_zero, fresh_root,
                                      remove_root),
      cmocka_unit_test_setup_teardown(test_unlimited_or_unreadable,
                                      fresh_root, remove_root),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
