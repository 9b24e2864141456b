/* mpi_bad_inputs.c - every file of test/bad-inputs/ (made by its
 * generate.py, each malformed in its own way) is fed to the program that
 * reads it: qgmd for flag files, edge files (under mpirun, 4 ranks, and
 * through qgm-topo for 4 nodes) and CIFAR data directories, qgm-inspect
 * for IDX files, checkpoints and manifests. Each must exit with status 2 and one line naming the file
 * (and, for an edge file, the line at fault): no crash, no core dump, no
 * hang (10 s each at most, 30 s under mpirun). A FIFO in place of each
 * kind of file must not hang a reader either, nor one in place of an
 * output (the metrics, a trace) the daemon. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"

#define CORPUS "test/bad-inputs"

static char out[65536];
static int cases; /* run so far, over all kinds */

/* The lines of text that are not mpirun's (it frames its notices in lines
 * of dashes); the first of them is copied into first. */
static size_t own_lines(const char *text, char *first, size_t size) {
  size_t n = 0;
  int framed = 0;
  first[0] = '\0';
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (strncmp(p, "-----", 5) == 0)
      framed = !framed;
    else if (!framed && len > 0 && n++ == 0)
      snprintf(first, size, "%.*s", (int)len, p);
    p += len + (nl != NULL);
  }
  return n;
}

/* Lines of text that start with prefix; the first is copied into first. */
static size_t lines_from(const char *text, const char *prefix, char *first,
                         size_t size) {
  size_t n = 0;
  first[0] = '\0';
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (strncmp(p, prefix, strlen(prefix)) == 0 && n++ == 0)
      snprintf(first, size, "%.*s", (int)len, p);
    p += len + (nl != NULL);
  }
  return n;
}

/* Runs line (a command) and requires status 2, nothing killed by a signal
 * and exactly one line of output (mpirun's framed notices aside) that
 * contains want and says (if not NULL): a clear line, of printable ASCII
 * and shorter than MAX_LINE.
 *
 * Under mpirun (mpi != 0) only the daemon's own lines are counted and a
 * signal is not looked for: once the first rank exits with status 2,
 * mpirun kills the others, and a rank that gets SIGTERM in MPI_Finalize
 * can report a segmentation fault from inside Open MPI (seen once in about
 * 200 runs at load 28). A crash of the reader itself is caught by the
 * runs without MPI, which every case also gets. */
#define MAX_LINE 400

static void expect_rejected(const char *line, int limit_s, const char *want,
                            const char *says, int mpi) {
  char cmd[2048], first[2048];
  snprintf(cmd, sizeof cmd, "ulimit -c 0; timeout -s KILL %d %s", limit_s,
           line);
  int rc = test_run(cmd, out, sizeof out);
  if (rc != 2 || (!mpi && strstr(out, "signal")))
    fail_msg("%s: exit %d (expected 2)%s:\n%s", line, rc,
             rc == 137 ? ", killed: a hang" : "", out);
  size_t n = mpi ? lines_from(out, "qgmd", first, sizeof first)
                 : own_lines(out, first, sizeof first);
  if (n != 1 || !strstr(first, want) || (says && !strstr(first, says)))
    fail_msg("%s: expected one line with '%s' and '%s', got:\n%s", line,
             want, says ? says : "", out);
  size_t len = strlen(first);
  for (size_t i = 0; i < len; i++)
    if (first[i] < 0x20 || first[i] > 0x7e)
      fail_msg("%s: byte %zu of the line is 0x%02x:\n%s", line, i,
               (unsigned char)first[i], first);
  if (len >= MAX_LINE)
    fail_msg("%s: a line of %zu bytes:\n%s", line, len, first);
}

/* Runs `command` (with %s for the file) on every file in CORPUS/kind. */
static void run_kind(const char *kind, const char *command) {
  char dir[256];
  snprintf(dir, sizeof dir, CORPUS "/%s", kind);
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  int here = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char path[512], line[1200];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    snprintf(line, sizeof line, command, path);
    expect_rejected(line, 10, path, NULL, 0);
    here++;
  }
  closedir(d);
  assert_true(here > 0);
  cases += here;
}

static void test_flag_files(void **state) {
  (void)state;
  run_kind("flags", "daemon/qgmd --flagfile=%s");
}

static void test_idx_label_files(void **state) {
  (void)state;
  run_kind("labels", "tools/qgm-inspect labels %s");
}

static void test_idx_image_files(void **state) {
  (void)state;
  run_kind("images", "tools/qgm-inspect images %s " CORPUS "/ok-3.labels");
}

static void test_checkpoints(void **state) {
  (void)state;
  run_kind("checkpoint", "tools/qgm-inspect checkpoint %s");
}

static void test_manifests(void **state) {
  (void)state;
  run_kind("manifest", "tools/qgm-inspect manifest %s");
}

/* Edge files, for 4 ranks: the line each must be blamed on (0: the whole
 * file, reported as "FILE: ") and what the message must say. */
static const struct {
  const char *name;
  int line;
  const char *says;
} edge_files[] = {
    {"binary.edges", 0, "not a text file"},
    {"crlf-self-loop.edges", 3, "self-loop '2 2'"},
    {"directory.edges", 0, "not a regular file"},
    {"disconnected.edges", 2, "not connected"},
    {"duplicate-edge.edges", 5, "duplicate edge 1-2"},
    {"empty.edges", 1, "no edges"},
    {"escape-codes.edges", 2, "'?[31m1' is not a node id"},
    {"garbage.edges", 1, "'hello' is not a node id"},
    {"hex-id.edges", 1, "'0x1' is not a node id"},
    {"huge-id.edges", 2, "outside 0..3"},
    {"huge-weight.edges", 1, "weight 1e400 is outside (0, 1]"},
    {"id-out-of-range.edges", 3, "node id 4 is outside 0..3"},
    {"inf-weight.edges", 1, "weight inf is outside (0, 1]"},
    {"isolated-node.edges", 4, "node 3 cannot reach node 0"},
    {"long-comment-then-bad.edges", 3, "self-loop '1 1'"},
    {"long-line.edges", 2, "weight 99999999999999999999999999999999... is outside"},
    {"many-repeats.edges", 6, "duplicate edge 1-2"},
    {"mixed-weights.edges", 2, "missing weight"},
    {"nan-weight.edges", 2, "weight 'nan' is not a number"},
    {"negative-id.edges", 2, "node id -2 is outside 0..3"},
    {"negative-weight.edges", 2, "weight -0.25 is outside (0, 1]"},
    {"no-trailing-newline.edges", 4, "self-loop '3 3'"},
    {"nodes-but-no-edges.edges", 2, "no edges"},
    {"nodes-late.edges", 2, "must be the first data line"},
    {"nodes-mismatch.edges", 2, "the graph has 5 nodes, the run 4"},
    {"nodes-not-a-number.edges", 1, "expected 'nodes N'"},
    {"nodes-twice.edges", 2, "must be the first data line, and only once"},
    {"nodes-zero.edges", 1, "expected 'nodes N' with N >= 1"},
    {"non-integer-id.edges", 2, "'2.5' is not a node id"},
    {"one-column.edges", 2, "'2' is not an edge"},
    {"only-comments.edges", 3, "no edges"},
    {"self-loop.edges", 3, "self-loop '2 2'"},
    {"too-many-columns.edges", 1, "expected 'i j' or 'i j weight'"},
    {"weight-garbage.edges", 1, "weight '0.25x' is not a number"},
    {"weights-over-one.edges", 4, "node 0's weights sum to 1.25 > 1"},
    {"weights-sum-to-one.edges", 4, "eigenvalue -1"},
    {"zero-weight.edges", 1, "weight 0 is outside (0, 1]"},
};
#define NUM_EDGE_FILES (sizeof edge_files / sizeof edge_files[0])

/* Where an edge file is to be blamed and what for; every file must be
 * listed. */
static int edge_line(const char *name, const char **says) {
  for (size_t k = 0; k < NUM_EDGE_FILES; k++)
    if (strcmp(edge_files[k].name, name) == 0) {
      *says = edge_files[k].says;
      return edge_files[k].line;
    }
  fail_msg("%s: not in edge_files[]: add it with its line", name);
  return -1;
}

static void test_edge_files(void **state) {
  (void)state;
  DIR *d = opendir(CORPUS "/topology");
  assert_non_null(d);
  struct dirent *e;
  size_t here = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    const char *says = "";
    int at = edge_line(e->d_name, &says);
    char path[512], line[1024], want[600];
    snprintf(path, sizeof path, CORPUS "/topology/%s", e->d_name);
    if (at > 0)
      snprintf(want, sizeof want, "%s:%d: ", path, at);
    else
      snprintf(want, sizeof want, "%s: ", path);
    snprintf(line, sizeof line, "tools/qgm-topo file:%s 4", path);
    expect_rejected(line, 10, want, says, 0);
    snprintf(line, sizeof line,
             TEST_MPIRUN " -np 4 daemon/qgmd --topology=file:%s", path);
    expect_rejected(line, 30, want, says, 1);
    here++;
  }
  closedir(d);
  assert_int_equal(here, NUM_EDGE_FILES);
  /* A file that is not there, through the daemon without mpirun. */
  expect_rejected("daemon/qgmd --topology=file:" CORPUS "/topology/no-such",
                  10, CORPUS "/topology/no-such: cannot open the edge file: "
                      "No such file or directory", NULL, 0);
  cases += (int)here + 1;
}

/* CIFAR data directories: each names the one file at fault. */
#define SIZE "empty, or not a whole number of"
#define LABEL "label out of range"
#define OPEN "cannot open file"
#define NOTFILE "not a regular file"

static const struct {
  const char *dataset, *dir, *file, *says;
} cifar_dirs[] = {
    {"cifar10", "cifar100-records", "data_batch_1.bin", SIZE},
    {"cifar10", "data-dir-is-a-file", "data_batch_1.bin", OPEN},
    {"cifar10", "directory-batch", "data_batch_1.bin", NOTFILE},
    {"cifar10", "empty-batch", "data_batch_3.bin", SIZE},
    {"cifar10", "extra-byte", "test_batch.bin", SIZE},
    {"cifar10", "half-record", "data_batch_5.bin", SIZE},
    {"cifar10", "label-10", "data_batch_4.bin", LABEL},
    {"cifar10", "label-255", "test_batch.bin", LABEL},
    {"cifar10", "missing-batch", "data_batch_5.bin", OPEN},
    {"cifar10", "missing-test", "test_batch.bin", OPEN},
    {"cifar10", "no-data-files", "data_batch_1.bin", OPEN},
    {"cifar10", "text-file", "data_batch_2.bin", SIZE},
    {"cifar10", "truncated-record", "data_batch_2.bin", SIZE},
    {"cifar100", "cifar10-records", "train.bin", SIZE},
    {"cifar100", "coarse-20", "train.bin", LABEL},
    {"cifar100", "coarse-255", "train.bin", LABEL},
    {"cifar100", "directory-train", "train.bin", NOTFILE},
    {"cifar100", "empty-train", "train.bin", SIZE},
    {"cifar100", "fine-100", "test.bin", LABEL},
    {"cifar100", "missing-test", "test.bin", OPEN},
    {"cifar100", "truncated-test", "test.bin", SIZE},
};
#define NUM_CIFAR_DIRS (sizeof cifar_dirs / sizeof cifar_dirs[0])

/* The file a CIFAR case directory is to be blamed for, and what for;
 * every case must be listed. */
static const char *cifar_file(const char *dataset, const char *dir,
                              const char **says) {
  for (size_t k = 0; k < NUM_CIFAR_DIRS; k++)
    if (strcmp(cifar_dirs[k].dataset, dataset) == 0 &&
        strcmp(cifar_dirs[k].dir, dir) == 0) {
      *says = cifar_dirs[k].says;
      return cifar_dirs[k].file;
    }
  fail_msg("%s/%s: not in cifar_dirs[]", dataset, dir);
  return "";
}

static void test_cifar_dirs(void **state) {
  (void)state;
  size_t here = 0;
  for (int fine = 0; fine <= 1; fine++) {
    const char *dataset = fine ? "cifar100" : "cifar10";
    char dir[256];
    snprintf(dir, sizeof dir, CORPUS "/%s", dataset);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
      if (e->d_name[0] == '.')
        continue;
      const char *says = "";
      const char *file = cifar_file(dataset, e->d_name, &says);
      char line[1024], want[600];
      snprintf(line, sizeof line, "daemon/qgmd --dataset=%s --data-dir=%s/%s",
               dataset, dir, e->d_name);
      snprintf(want, sizeof want, "%s/%s/%s: ", dir, e->d_name, file);
      expect_rejected(line, 10, want, says, 0);
      here++;
    }
    closedir(d);
  }
  assert_int_equal(here, NUM_CIFAR_DIRS);
  cases += (int)here;
}

/* A FIFO where each kind of file should be: opening one for reading waits
 * for a writer, which never comes; every reader must refuse it at once. */
static void test_fifos(void **state) {
  (void)state;
  char dir[256], fifo[512], line[2048], want[600];
  test_make_tmpdir(dir, sizeof dir);
  snprintf(fifo, sizeof fifo, "%s/fifo", dir);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  snprintf(want, sizeof want, "'%s' is not a regular file", fifo);
  snprintf(line, sizeof line, "daemon/qgmd --flagfile=%s", fifo);
  expect_rejected(line, 10, want, NULL, 0);
  snprintf(want, sizeof want, "%s: not a regular file", fifo);
  static const char *const inspect[] = {"labels %s", "checkpoint %s",
                                        "manifest %s",
                                        "images %s " CORPUS "/ok-3.labels"};
  for (size_t i = 0; i < sizeof inspect / sizeof *inspect; i++) {
    char args[1024];
    snprintf(args, sizeof args, inspect[i], fifo);
    snprintf(line, sizeof line, "tools/qgm-inspect %s", args);
    expect_rejected(line, 10, want, NULL, 0);
  }
  snprintf(line, sizeof line, "daemon/qgmd --topology=file:%s", fifo);
  expect_rejected(line, 10, want, NULL, 0);
  /* The valid CIFAR-10 files, with a FIFO for the test batch. */
  static const char *const names[] = {"data_batch_1.bin", "data_batch_2.bin",
                                      "data_batch_3.bin", "data_batch_4.bin",
                                      "data_batch_5.bin"};
  for (size_t i = 0; i < 5; i++) {
    char from[512], to[512];
    snprintf(from, sizeof from, CORPUS "/ok-cifar10/%s", names[i]);
    snprintf(to, sizeof to, "%s/%s", dir, names[i]);
    char *data = test_read_file(from);
    assert_non_null(data);
    assert_int_equal(test_write_file(to, data, 2 * 3073), 0);
    free(data);
  }
  char test_batch[512];
  snprintf(test_batch, sizeof test_batch, "%s/test_batch.bin", dir);
  assert_int_equal(rename(fifo, test_batch), 0);
  snprintf(line, sizeof line, "daemon/qgmd --dataset=cifar10 --data-dir=%s",
           dir);
  snprintf(want, sizeof want, "%s: not a regular file", test_batch);
  expect_rejected(line, 10, want, NULL, 0);
  cases += 7;

  /* Outputs: opening a FIFO for writing waits for a reader, and with one
   * a run would write its records into someone's pipe. Both refused. */
  char out_fifo[600], trace_fifo[600];
  snprintf(out_fifo, sizeof out_fifo, "%s/out", dir);
  snprintf(trace_fifo, sizeof trace_fifo, "%s/trace.0", dir);
  assert_int_equal(mkfifo(out_fifo, 0600), 0);
  assert_int_equal(mkfifo(trace_fifo, 0600), 0);
  static const char *const outputs[] = {"--metrics=%s/out",
                                        "--trace=%s/trace"};
  for (int reader = 0; reader < 2; reader++) {
    int fd = reader ? open(out_fifo, O_RDONLY | O_NONBLOCK) : -1;
    int fd_trace = reader ? open(trace_fifo, O_RDONLY | O_NONBLOCK) : -1;
    assert_true(!reader || (fd >= 0 && fd_trace >= 0));
    for (size_t i = 0; i < 2; i++) {
      char flag[700];
      snprintf(flag, sizeof flag, outputs[i], dir);
      snprintf(line, sizeof line, "daemon/qgmd --train-limit=200 "
               "--test-limit=100 --epochs=1 --control=none "
               "--log-level=error %s", flag);
      expect_rejected(line, 10, flag, "not a regular file", 0);
    }
    if (reader) {
      close(fd);
      close(fd_trace);
    }
  }
  test_remove_tree(dir);
  cases += 4;
}

/* The CIFAR directories every case is a variation of are good. */
static void test_cifar_controls_are_valid(void **state) {
  (void)state;
  static const char *const cmds[] = {
      "daemon/qgmd --dataset=cifar10 --data-dir=" CORPUS "/ok-cifar10 "
      "--epochs=1 --batch-size=2",
      "daemon/qgmd --dataset=cifar100 --data-dir=" CORPUS "/ok-cifar100 "
      "--epochs=1 --batch-size=2"};
  for (size_t i = 0; i < 2; i++) {
    int rc = test_run(cmds[i], out, sizeof out);
    if (rc != 0)
      fail_msg("%s: exit %d:\n%s", cmds[i], rc, out);
    assert_non_null(strstr(out, "done:"));
  }
}

/* The pairing file itself is good: the image cases fail for their own
 * reasons. */
static void test_corpus_is_large_and_its_control_is_valid(void **state) {
  (void)state;
  assert_int_equal(test_run("tools/qgm-inspect labels " CORPUS
                            "/ok-3.labels", out, sizeof out), 0);
  assert_non_null(strstr(out, "3 labels"));
  assert_true(cases >= 30);
  print_message("%d bad inputs rejected cleanly\n", cases);
}

/* Algorithms that refuse a graph before training: D^2 where
 * lambda_min(W) <= -1/3 (the 4-ring's uniform W: exactly -1/3), RelaySGD
 * off trees, and RelaySGD with what it does not support. */
static void test_algorithm_refusals(void **state) {
  (void)state;
  expect_rejected(TEST_MPIRUN " -np 4 daemon/qgmd --algorithm=d2 "
                  "--topology=ring", 30, "--algorithm=d2", "--mixing=lazy", 1);
  expect_rejected(TEST_MPIRUN " -np 4 daemon/qgmd --algorithm=relaysgd "
                  "--topology=ring", 30, "--algorithm=relaysgd", "tree", 1);
  expect_rejected("daemon/qgmd --algorithm=relaysgd --compress=sign", 10,
                  "--compress=sign", "relaysgd", 0);
  expect_rejected("daemon/qgmd --topology=tree --tree-arity=0", 10,
                  "--tree-arity", NULL, 0);
}

/* PowerSGD's refusals: a rank that is no whole number in [1, 64], more
 * than the smallest weight matrix allows (the default MLP's 10 x 256
 * output layer: 10), a model without listed matrices, gossip on the
 * host-aware topology (which cuts the model into slices) and an algorithm
 * CHOCO refuses anyway. */
static void test_powersgd_refusals(void **state) {
  (void)state;
  expect_rejected("daemon/qgmd --compress=powersgd:0", 10, "--compress",
                  "R an integer", 0);
  expect_rejected("daemon/qgmd --compress=powersgd:abc", 10, "--compress",
                  "R an integer", 0);
  /* These three are told once the model and the topology are built, after
   * the start-up lines of the default log level. */
  expect_rejected("daemon/qgmd --log-level=error --compress=powersgd:11 "
                  "--algorithm=allreduce", 20, "--compress=powersgd:11",
                  "(10,", 0);
  expect_rejected("daemon/qgmd --log-level=error --compress=powersgd:2 "
                  "--model=lenet", 20, "--compress=powersgd:2",
                  "no weight matrices", 0);
  expect_rejected("daemon/qgmd --compress=powersgd:2 --algorithm=gt", 10,
                  "--compress=powersgd:2", "gradient tracking", 0);
  expect_rejected("daemon/qgmd --compress=topk:0.01 --algorithm=gut", 10,
                  "--compress=topk:0.01", "GUT", 0);
  expect_rejected("daemon/qgmd --compress=sign --algorithm=mt", 10,
                  "--compress=sign", "Momentum Tracking", 0);
  expect_rejected("daemon/qgmd --gut-scaling=0.5", 10, "--gut-scaling=0.5",
                  "qg-gutm", 0);
  expect_rejected("daemon/qgmd --algorithm=gut --gut-scaling=1.5", 10,
                  "--gut-scaling", "outside", 0);
  expect_rejected(TEST_MPIRUN " -np 4 daemon/qgmd --log-level=error "
                  "--compress=powersgd:2 --topology=hier --hosts=2", 30,
                  "--compress=powersgd:2", "whole weight matrices", 1);
}

/* Lost messages where they cannot be had, and push-sum with what it does
 * not support, each refused with its reason; a rate outside [0, 0.99]. */
static void test_drop_and_sgp_refusals(void **state) {
  (void)state;
  expect_rejected("daemon/qgmd --drop-rate=1.5", 10, "--drop-rate",
                  "outside", 0);
  expect_rejected("daemon/qgmd --drop-rate=-0.1", 10, "--drop-rate",
                  "outside", 0);
  expect_rejected("daemon/qgmd --drop-rate=0.1 --algorithm=d2", 10,
                  "--drop-rate=0.1", "D^2", 0);
  expect_rejected("daemon/qgmd --drop-rate=0.1 --algorithm=gt", 10,
                  "--drop-rate=0.1", "tracker", 0);
  expect_rejected("daemon/qgmd --drop-rate=0.1 --algorithm=qg-gutm", 10,
                  "--drop-rate=0.1", "GUT", 0);
  expect_rejected("daemon/qgmd --drop-rate=0.1 --algorithm=mt", 10,
                  "--drop-rate=0.1", "tracker", 0);
  expect_rejected("daemon/qgmd --drop-rate=0.1 --algorithm=allreduce", 10,
                  "--drop-rate=0.1", "allreduce", 0);
  expect_rejected("daemon/qgmd --drop-rate=0.1 --algorithm=relaysgd "
                  "--topology=tree", 10, "--drop-rate=0.1", "RelaySum", 0);
  expect_rejected("daemon/qgmd --drop-rate=0.1 --compress=sign", 10,
                  "--drop-rate=0.1", "--compress", 0);
  expect_rejected("daemon/qgmd --drop-rate=0.1 --topology=hier", 10,
                  "--drop-rate=0.1", "hier", 0);
  expect_rejected("daemon/qgmd --drop-rate=0.1 --algorithm=asgd", 10,
                  "--drop-rate=0.1", "server", 0);
  expect_rejected("daemon/qgmd --algorithm=sgp --mixing=lazy", 10,
                  "--mixing=lazy", "sgp", 0);
  expect_rejected("daemon/qgmd --algorithm=sgp --compress=sign", 10,
                  "--compress=sign", "push-sum", 0);
  expect_rejected("daemon/qgmd --algorithm=sgp --overlap=on --log-level=error", 10,
                  "--overlap=on", "sgp", 0);
  expect_rejected(TEST_MPIRUN " -np 4 daemon/qgmd --algorithm=sgp "
                  "--topology=hier --hosts=2", 30, "--algorithm=sgp",
                  "push-sum", 1);
  /* The push-sum rules are refused alike, by their combination. */
  expect_rejected("daemon/qgmd --algorithm=qg-sgp --mixing=lazy", 10,
                  "--mixing=lazy", "qg-sgp", 0);
  expect_rejected("daemon/qgmd --algorithm=qg-sgp --compress=sign", 10,
                  "--compress=sign", "push-sum", 0);
}

/* Several gossip rounds a step where they do not compose, each refused
 * with the flag at fault; a count outside [1, 64]; Chebyshev rounds
 * without rounds to combine. */
static void test_gossip_rounds_refusals(void **state) {
  (void)state;
  expect_rejected("daemon/qgmd --gossip-rounds=0", 10, "--gossip-rounds",
                  "outside", 0);
  expect_rejected("daemon/qgmd --gossip-rounds=2 --algorithm=sgp", 10,
                  "--gossip-rounds=2", "--algorithm=sgp", 0);
  expect_rejected("daemon/qgmd --gossip-rounds=2 --algorithm=relaysgd "
                  "--topology=tree", 10, "--gossip-rounds=2", "RelaySum", 0);
  expect_rejected("daemon/qgmd --gossip-rounds=2 --topology=one-peer-exp", 10,
                  "--gossip-rounds=2", "--topology=one-peer-exp", 0);
  expect_rejected("daemon/qgmd --gossip-rounds=2 --compress=sign", 10,
                  "--gossip-rounds=2", "--compress=sign", 0);
  expect_rejected("daemon/qgmd --gossip-rounds=2 --sync=async "
                  "--max-staleness=2", 10, "--gossip-rounds=2", "--sync=async",
                  0);
  expect_rejected("daemon/qgmd --gossip-rounds=2 --overlap=on", 10,
                  "--gossip-rounds=2", "--overlap=on", 0);
  expect_rejected("daemon/qgmd --gossip-rounds=2 --drop-rate=0.1", 10,
                  "--gossip-rounds=2", "--drop-rate=0.1", 0);
  expect_rejected("daemon/qgmd --gossip-acceleration=chebyshev", 10,
                  "--gossip-acceleration=chebyshev", "--gossip-rounds=2", 0);
}

/* Asynchronous gossip's flags, and what it does not support. */
static void test_sync_refusals(void **state) {
  (void)state;
  expect_rejected("daemon/qgmd --sync=bogus", 10, "--sync", "async nor sync",
                  0);
  expect_rejected("daemon/qgmd --sync=async --max-staleness=-1", 10,
                  "--max-staleness", "outside", 0);
  expect_rejected("daemon/qgmd --max-staleness=3", 10, "--max-staleness=3",
                  "--sync=async", 0);
  expect_rejected("daemon/qgmd --sync=async --max-staleness=3 "
                  "--algorithm=d2", 10, "--sync=async", "correction", 0);
  expect_rejected("daemon/qgmd --sync=async --max-staleness=3 "
                  "--algorithm=gut", 10, "--sync=async", "correction", 0);
  expect_rejected("daemon/qgmd --sync=async --max-staleness=3 "
                  "--algorithm=allreduce", 10, "--sync=async", "allreduce",
                  0);
  expect_rejected("daemon/qgmd --sync=async --max-staleness=3 "
                  "--algorithm=asgd", 10, "--sync=async", "parameter-server",
                  0);
  expect_rejected("daemon/qgmd --sync=async --max-staleness=3 "
                  "--topology=one-peer-exp", 10, "--sync=async", "static",
                  0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flag_files),
      cmocka_unit_test(test_idx_label_files),
      cmocka_unit_test(test_idx_image_files),
      cmocka_unit_test(test_checkpoints),
      cmocka_unit_test(test_manifests),
      cmocka_unit_test(test_edge_files),
      cmocka_unit_test(test_cifar_dirs),
      cmocka_unit_test(test_fifos),
      cmocka_unit_test(test_algorithm_refusals),
      cmocka_unit_test(test_powersgd_refusals),
      cmocka_unit_test(test_drop_and_sgp_refusals),
      cmocka_unit_test(test_sync_refusals),
      cmocka_unit_test(test_gossip_rounds_refusals),
      cmocka_unit_test(test_cifar_controls_are_valid),
      cmocka_unit_test(test_corpus_is_large_and_its_control_is_valid),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
