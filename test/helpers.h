/* helpers.h - small utilities shared by the tests: processes and files,
 * and the random operands and packing buffer of the kernel tests. */
#ifndef QGM_TEST_HELPERS_H
#define QGM_TEST_HELPERS_H

#include <math.h>
#include <stddef.h>

#include "qgm.h"

/* cmocka's assert_float_equal works in float; this one compares doubles
 * and says both values when it fails. Use after including cmocka.h. */
#define assert_near(actual, expected, tol)                                    \
  do {                                                                        \
    double actual_ = (actual), expected_ = (expected);                        \
    if (!(fabs(actual_ - expected_) <= (tol)))                                \
      fail_msg("%s = %.17g, expected %.17g (tolerance %g)", #actual, actual_, \
               expected_, (double)(tol));                                     \
  } while (0)

/* A fresh directory under $TMPDIR (or /tmp); the path is static storage
 * of the caller's choosing: buf must hold at least 64 bytes. */
void test_make_tmpdir(char *buf, size_t size);
/* Removes a directory made by test_make_tmpdir and everything in it. */
void test_remove_tree(const char *path);
/* Kills (SIGKILL) every mpirun and qgmd whose command line mentions dir,
 * which a failed test may leave running, then removes dir. */
void test_end_jobs_and_remove(const char *dir);
/* A scratch directory for a whole test group: pass these to
 * cmocka_run_group_tests; the tests find it in test_tmpdir. */
extern char test_tmpdir[256];
int test_tmpdir_setup(void **state);
int test_tmpdir_teardown(void **state);
/* Writes n bytes to path (truncating); returns 0 on success. */
int test_write_file(const char *path, const void *data, size_t n);
/* Runs a shell command; its stdout+stderr is stored (NUL-terminated, cut
 * at size-1 bytes) in out when out != NULL. Returns the exit status, or
 * 128+signal when it died of a signal. */
int test_run(const char *command, char *out, size_t size);
/* Starts a shell command in the background, its output appended to
 * log_path; returns its pid. */
int test_spawn(const char *command, const char *log_path);
/* Waits for a spawned command; returns its exit status as test_run does. */
int test_wait(int pid);
/* Polls (every 10 ms, up to timeout_s) until the file at path contains
 * needle; returns 0 when it does. A condition to wait on, not a delay. */
int test_wait_for_text(const char *path, const char *needle,
                       double timeout_s);
/* The pid of MPI rank `rank` among the qgmd processes whose command line
 * mentions tag, or -1 (read from each process's environment). */
int test_rank_pid(const char *tag, int rank);
/* Polls (every 10 ms, up to timeout_s) until `command` exits with status
 * 0; returns 0 when it did. A condition to wait on, not a delay. */
int test_wait_for_command(const char *command, double timeout_s);
/* Number of newline-terminated lines in s. */
size_t test_count_lines(const char *s);

/* The number after "key": in a one-line JSON object; 0 if found. */
int test_json_number(const char *line, const char *key, double *out);
/* Reads the whole file into a malloc'd NUL-terminated string (NULL on
 * failure). */
char *test_read_file(const char *path);
/* The n-th (0-based) line of text whose "type" is `type`, copied into
 * out; 0 if found. */
int test_jsonl_record(const char *text, const char *type, int n, char *out,
                      size_t size);

/* The launcher for MPI tests: mpirun with the flags the Makefile sets up. */
#define TEST_MPIRUN "mpirun --bind-to none"

/* The GEMM packing buffer of the kernel tests (QGM__GEMM_PACK_FLOATS):
 * test_pack_setup allocates it; test_pack_teardown frees it and puts the
 * CPU's best GEMM kernel back. For cmocka_run_group_tests. */
extern float *test_pack;
int test_pack_setup(void **state);
int test_pack_teardown(void **state);

/* x[0..n) uniform in [-1, 1) from rng. */
void test_fill_uniform(float *x, size_t n, qgm_rng_t *rng);
/* The same into a new 64-byte aligned array (free()); exits if memory is
 * exhausted. */
float *test_uniform(size_t n, qgm_rng_t *rng);
/* A double copy of x[0..n) (free()); exits if memory is exhausted. */
double *test_widen(const float *x, size_t n);

#endif
