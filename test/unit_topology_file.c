/* unit_topology_file.c - edge-list files: good ones (with and without
 * weights) give the W they describe; each kind of bad one gives its error
 * code and the line at fault, from libqgm and as exit status 2 with
 * "file:line:" from tools/qgm-topo. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers.h"
#include "qgm.h"


static const char *write_edges(const char *name, const char *text) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", test_tmpdir, name);
  assert_int_equal(test_write_file(path, text, strlen(text)), 0);
  return path;
}

static int load(const char *path, int nodes, qgm_topology_t **t,
                qgm_topology_error_t *err) {
  char name[600];
  snprintf(name, sizeof name, "file:%s", path);
  qgm_topology_spec_t spec = {.name = name, .nodes = nodes};
  return qgm_topology_create_ex(&spec, t, err);
}

typedef struct bad_file {
  const char *name, *text;
  int nodes, code, line;
  const char *says;
} bad_file_t;

static const bad_file_t bad_files[] = {
    {"selfloop.edges", "# a triangle\nnodes 3\n0 1\n1 1\n1 2\n", 3,
     QGM_EGRAPH, 4, "self-loop"},
    {"duplicate.edges", "0 1\n1 2\n\n2 0\n1 0   # again, reversed\n", 3,
     QGM_EGRAPH, 5, "duplicate edge 0-1"},
    {"range.edges", "nodes 4\n0 1\n1 2\n2 4\n", 4, QGM_EGRAPH, 4,
     "node id 4 is outside 0..3"},
    {"disconnected.edges", "0 1\n2 3\n", 4, QGM_EGRAPH, 2, "not connected"},
    {"text.edges", "0 1\n1 two\n", 3, QGM_ESYNTAX, 2, "'two'"},
    {"empty.edges", "", 3, QGM_EGRAPH, 1, "no edges"},
    {"comments.edges", "# nothing\n\n# but comments\n", 3, QGM_EGRAPH, 3,
     "no edges"},
    {"negative.edges", "0 1 0.5\n1 2 -0.25\n", 3, QGM_EMIXING, 2,
     "outside (0, 1]"},
    {"heavy.edges", "0 1 0.5\n1 2 0.5\n0 2 0.75\n", 3, QGM_EMIXING, 3,
     "sum to 1.25 > 1"},
    {"mixed.edges", "0 1 0.5\n1 2\n", 3, QGM_ESYNTAX, 2, "missing weight"},
    {"count.edges", "# header\nnodes 32\n0 1\n", 8, QGM_ENODES, 2,
     "the graph has 32 nodes, the run 8"},
    {"late-header.edges", "0 1\nnodes 2\n", 2, QGM_ESYNTAX, 2,
     "first data line"},
    {"columns.edges", "0 1 0.5 7\n", 2, QGM_ESYNTAX, 1, "'i j weight'"},
    /* Bytes of the file reach the message only as printable ASCII. */
    {"escape.edges", "0 1\n\x1b[31m1 2\n", 3, QGM_ESYNTAX, 2,
     "'?[31m1' is not a node id"},
    {"huge-id.edges", "0 1\n1 99999999999999999999999\n", 3, QGM_EGRAPH, 2,
     "node id 99999999999999999999999 is outside 0..2"},
    {"nan.edges", "0 1 nan\n", 2, QGM_ESYNTAX, 1, "'nan' is not a number"},
    {"inf.edges", "0 1 1e400\n", 2, QGM_EMIXING, 1, "outside (0, 1]"},
    {"underflow.edges", "0 1 1e-400\n", 2, QGM_EMIXING, 1, "outside (0, 1]"},
    /* Weights that leave W_ii = 0 on a bipartite graph (a 4-ring): the
     * two sides would swap models for ever. */
    {"swap.edges", "0 1 0.5\n1 2 0.5\n2 3 0.5\n3 0 0.5\n", 4, QGM_EMIXING, 4,
     "eigenvalue -1"},
    /* Weights that are positive but vanish: W is the identity to within
     * rounding, and its spectral gap (about -2e-16) is not positive. */
    {"tiny.edges", "0 1 1e-30\n1 2 1e-30\n2 3 1e-30\n3 0 1e-30\n", 4,
     QGM_EMIXING, 4, "node 0's weights to its peers sum to 2e-30"},
    {"float-zero.edges", "0 1 1e-46\n1 2 1e-46\n2 3 1e-46\n3 0 1e-46\n", 4,
     QGM_EMIXING, 4, "never averages"},
    {"subnormal.edges", "0 1 1e-310\n1 2 1e-310\n", 3, QGM_EMIXING, 2,
     "spectral gap is at most"},
    /* Two halves that mix well, joined by a bridge that carries nothing:
     * every node has weight to its peers, but the gap is about 1e-20. */
    {"bridge.edges", "0 1 0.5\n2 3 0.5\n1 2 1e-20\n", 4, QGM_EMIXING, 3,
     "the spectral gap of W is"},
    /* Line endings: CR LF and a lone CR both end a line. */
    {"crlf.edges", "0 1\r\n1 1\r\n", 2, QGM_EGRAPH, 2, "self-loop '1 1'"},
    {"cr.edges", "0 1\r1 2\r2 2\r", 3, QGM_EGRAPH, 3, "self-loop '2 2'"},
};

static void test_bad_files_name_their_line(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof bad_files / sizeof *bad_files; i++) {
    const bad_file_t *b = &bad_files[i];
    const char *path = write_edges(b->name, b->text);
    qgm_topology_t *t = NULL;
    qgm_topology_error_t err;
    int rc = load(path, b->nodes, &t, &err);
    char where[600];
    snprintf(where, sizeof where, "%s:%d: ", path, b->line);
    if (rc != b->code || err.line != b->line || !strstr(err.text, where) ||
        !strstr(err.text, b->says))
      fail_msg("%s: rc %d (want %d), line %d (want %d): %s", b->name, rc,
               b->code, err.line, b->line, err.text);
    assert_null(t);
  }
  qgm_topology_t *t = NULL;
  qgm_topology_error_t err;
  assert_int_equal(load("/nonexistent/g.edges", 3, &t, &err), QGM_EOPEN);
  assert_non_null(strstr(err.text, "/nonexistent/g.edges"));
}

/* A token of 5000 bytes is cut short in the message. */
static void test_long_text_is_cut_short(void **state) {
  (void)state;
  static char text[6000];
  memset(text, 'x', 5000);
  memcpy(text, "0 1 ", 4);
  strcpy(text + 5000, "\n");
  const char *path = write_edges("long.edges", text);
  qgm_topology_t *t = NULL;
  qgm_topology_error_t err;
  assert_int_equal(load(path, 2, &t, &err), QGM_ESYNTAX);
  if (!strstr(err.text, ":1: weight 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' "
                        "is not a number"))
    fail_msg("%s", err.text);
}

/* A triangle, then one of its edges 200,000 times and a bad last line:
 * the reader stops once it has more edges than pairs of nodes (its memory
 * stays that of 4 edges), so the first repeat is what it reports. */
static void test_many_repeats_stop_early(void **state) {
  (void)state;
  size_t n = 200000;
  char *text = malloc(4 * n + 32);
  assert_non_null(text);
  strcpy(text, "0 1\n1 2\n2 0\n");
  for (size_t i = 0; i < n; i++)
    memcpy(text + 12 + 4 * i, "2 1\n", 4);
  strcpy(text + 12 + 4 * n, "x y\n");
  const char *path = write_edges("repeats.edges", text);
  free(text);
  qgm_topology_t *t = NULL;
  qgm_topology_error_t err;
  assert_int_equal(load(path, 3, &t, &err), QGM_EGRAPH);
  assert_int_equal(err.line, 4);
  assert_non_null(strstr(err.text, ":4: duplicate edge 1-2"));
}

/* What editors write: a byte order mark, form feeds, vertical tabs. */
static void test_editor_quirks_are_accepted(void **state) {
  (void)state;
  const char *path =
      write_edges("bom.edges", "\xef\xbb\xbfnodes 3\n0 1\n\f\n1\v2\n");
  qgm_topology_t *t = NULL;
  qgm_topology_error_t err;
  if (load(path, 3, &t, &err) != 0)
    fail_msg("%s", err.text);
  assert_int_equal(qgm_topology_edges(t), 2);
  qgm_topology_free(t);
}

/* Not a regular file: a directory, and a FIFO that nobody writes to
 * (opening it must not wait for a writer). */
static void test_directory_and_fifo(void **state) {
  (void)state;
  qgm_topology_t *t = NULL;
  qgm_topology_error_t err;
  assert_int_equal(load(test_tmpdir, 3, &t, &err), QGM_ENOTFILE);
  assert_non_null(strstr(err.text, "not a regular file"));
  char fifo[512];
  snprintf(fifo, sizeof fifo, "%s/fifo.edges", test_tmpdir);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  assert_int_equal(load(fifo, 3, &t, &err), QGM_ENOTFILE);
  assert_non_null(strstr(err.text, fifo));
  assert_null(t);
  remove(fifo);
}

/* The same faults through the tool: status 2, one line, file:line. */
static void test_tool_reports_bad_files(void **state) {
  (void)state;
  char out[4096], cmd[1024], where[600];
  for (size_t i = 0; i < sizeof bad_files / sizeof *bad_files; i++) {
    const bad_file_t *b = &bad_files[i];
    const char *path = write_edges(b->name, b->text);
    snprintf(cmd, sizeof cmd, "tools/qgm-topo file:%s %d", path, b->nodes);
    assert_int_equal(test_run(cmd, out, sizeof out), 2);
    assert_int_equal(test_count_lines(out), 1);
    snprintf(where, sizeof where, "%s:%d: ", path, b->line);
    if (!strstr(out, where))
      fail_msg("'%s' not in: %s", where, out);
  }
}

/* A weighted path 0-1-2: W_01 = 0.5, W_12 = 0.25, so W_11 = 0.25. */
static void test_weights_from_the_file(void **state) {
  (void)state;
  const char *path = write_edges("weighted.edges",
                                 "nodes 3 # a path\n0 1 0.5\n2 1 0.25");
  qgm_topology_t *t = NULL;
  qgm_topology_error_t err;
  assert_int_equal(load(path, 3, &t, &err), 0);
  double w[9];
  qgm_topology_weights(t, 0, w);
  const double want[9] = {0.5, 0.5, 0, 0.5, 0.25, 0.25, 0, 0.25, 0.75};
  for (int i = 0; i < 9; i++)
    assert_near(w[i], want[i], 1e-15);
  qgm_topology_free(t);

  /* Unweighted, with the mixing rule: the same path, Metropolis. */
  path = write_edges("path.edges", "0 1\n1 2\n");
  assert_int_equal(load(path, 3, &t, &err), 0);
  qgm_topology_weights(t, 0, w);
  assert_near(w[0 * 3 + 1], 1.0 / 3.0, 1e-15);
  assert_near(w[0 * 3 + 0], 2.0 / 3.0, 1e-15);
  assert_near(w[1 * 3 + 1], 1.0 / 3.0, 1e-15);
  qgm_topology_free(t);
}

/* qgm-topo on a small graph: counts, W and the gap. */
static void test_tool_summary_and_dot(void **state) {
  (void)state;
  char out[16384];
  assert_int_equal(test_run("tools/qgm-topo ring 8", out, sizeof out), 0);
  assert_non_null(strstr(out, "edges         8\n"));
  assert_non_null(strstr(out, "degree        2..2\n"));
  /* 1 - (1 + 2 cos(pi/4))/3 = 0.195262 */
  assert_non_null(strstr(out, "spectral gap  0.195262"));
  assert_non_null(strstr(out, " 0.3333 0.3333 0.0000"));
  assert_int_equal(test_run("tools/qgm-topo star 4 --dot", out, sizeof out),
                   0);
  assert_non_null(strstr(out, "graph qgm {"));
  assert_non_null(strstr(out, "0 -- 3 [label=\"0.25\"]"));
  assert_null(strstr(out, "3 -- 0"));
  assert_int_equal(test_run("tools/qgm-topo torus 12 --torus=3x5", out,
                            sizeof out), 2);
  assert_non_null(strstr(out, "3x5 torus has 15 nodes"));
  assert_int_equal(test_run("tools/qgm-topo ring", out, sizeof out), 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_files_name_their_line),
      cmocka_unit_test(test_long_text_is_cut_short),
      cmocka_unit_test(test_many_repeats_stop_early),
      cmocka_unit_test(test_editor_quirks_are_accepted),
      cmocka_unit_test(test_directory_and_fifo),
      cmocka_unit_test(test_tool_reports_bad_files),
      cmocka_unit_test(test_weights_from_the_file),
      cmocka_unit_test(test_tool_summary_and_dot),
  };
  return cmocka_run_group_tests(tests, test_tmpdir_setup,
                                test_tmpdir_teardown);
}
