/* qgm-topo - inspects a topology before anyone trains on it: its size, its
 * degrees, its mixing matrix and how fast it mixes (the spectral gap), or
 * a Graphviz drawing. Uses only the public libqgm API. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qgm.h"

#define MAX_PRINTED_MATRIX 16

typedef struct options {
  const char *name;
  int nodes;
  qgm_mixing_t mixing;
  int rows, cols;
  int tree_arity;
  int dot;
  const char *png;
} options_t;

static void usage(FILE *out) {
  fprintf(out,
          "usage: qgm-topo TOPOLOGY N [--mixing=M] [--torus=RxC] "
          "[--tree-arity=K]\n                [--dot] [--png FILE]\n"
          "       qgm-topo --help | --version\n\n"
          "Prints the nodes, edges, degree range, the mixing matrix W (N <= "
          "%d), the\nspectral gap 1 - |lambda_2(W)| and the smallest "
          "eigenvalue lambda_min(W)\nof a topology of N nodes.\n"
          "  TOPOLOGY      %s\n"
          "  --mixing=M    default, uniform, metropolis or lazy\n"
          "  --torus=RxC   the torus's shape (default: the most square)\n"
          "  --tree-arity=K  children per node of topology tree (default 2)\n"
          "  --dot         write the graph in Graphviz's dot language instead\n"
          "  --png FILE    render it to FILE with Graphviz's dot (if "
          "installed)\n",
          MAX_PRINTED_MATRIX, qgm_topology_names());
}

static int bad_usage(const char *what, const char *arg) {
  fprintf(stderr, "qgm-topo: %s '%s' (see --help)\n", what, arg);
  return 2;
}

static int parse_args(int argc, char **argv, options_t *o) {
  int positional = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 1;
    } else if (strcmp(a, "--version") == 0) {
      printf("qgm-topo %s\n", qgm_version());
      return 1;
    } else if (strncmp(a, "--mixing=", 9) == 0) {
      if (qgm_mixing_parse(a + 9, &o->mixing) != 0)
        return bad_usage("--mixing: not default, uniform, metropolis or lazy:", a);
    } else if (strncmp(a, "--torus=", 8) == 0) {
      if (qgm_torus_parse(a + 8, &o->rows, &o->cols) != 0)
        return bad_usage("--torus: expected RxC, got", a);
    } else if (strncmp(a, "--tree-arity=", 13) == 0) {
      char *end;
      long k = strtol(a + 13, &end, 10);
      if (*end != '\0' || end == a + 13 || k < 1 || k > 65536)
        return bad_usage("--tree-arity: expected 1 to 65536, got", a);
      o->tree_arity = (int)k;
    } else if (strcmp(a, "--dot") == 0) {
      o->dot = 1;
    } else if (strcmp(a, "--png") == 0) {
      if (++i == argc)
        return bad_usage("--png needs a file name after", a);
      o->png = argv[i];
    } else if (a[0] == '-' && a[1] == '-') {
      return bad_usage("unknown option", a);
    } else if (positional == 0) {
      o->name = a;
      positional++;
    } else if (positional == 1) {
      char *end;
      errno = 0;
      long n = strtol(a, &end, 10);
      if (*end != '\0' || end == a || errno || n < 1 || n > 1000000)
        return bad_usage("N must be a node count in [1, 1000000], not", a);
      o->nodes = (int)n;
      positional++;
    } else {
      return bad_usage("unexpected argument", a);
    }
  }
  if (positional != 2) {
    usage(stderr);
    return 2;
  }
  return 0;
}

/* Graphviz: undirected for static graphs; for time-varying ones every
 * round's directed edges, labelled with the round. */
static void write_dot(const qgm_topology_t *t, FILE *out) {
  const int n = qgm_topology_nodes(t), period = qgm_topology_period(t);
  const int k_max = qgm_topology_max_degree(t) + 1;
  int *peers = malloc((size_t)k_max * sizeof *peers);
  double *w = malloc((size_t)k_max * sizeof *w);
  if (!peers || !w) {
    free(peers);
    free(w);
    return;
  }
  fprintf(out, "%s qgm {\n  node [shape=circle];\n",
          period > 1 ? "digraph" : "graph");
  for (int i = 0; i < n; i++)
    fprintf(out, "  %d;\n", i);
  for (int r = 0; r < period; r++)
    for (int i = 0; i < n; i++) {
      double self;
      int k = qgm_topology_neighbors(t, i, (uint64_t)r, peers, w, &self);
      for (int j = 0; j < k; j++) {
        if (period > 1)
          fprintf(out, "  %d -> %d [label=\"t%d\"];\n", peers[j], i, r);
        else if (peers[j] > i)
          fprintf(out, "  %d -- %d [label=\"%.3g\"];\n", i, peers[j], w[j]);
      }
    }
  fprintf(out, "}\n");
  free(peers);
  free(w);
}

/* Pipes the dot text into `dot -Tpng -o path`; no shell, so any file name
 * is safe. */
static int render_png(const qgm_topology_t *t, const char *path) {
  int fds[2];
  if (pipe(fds) != 0)
    return 1;
  pid_t pid = fork();
  if (pid < 0)
    return 1;
  if (pid == 0) {
    dup2(fds[0], 0);
    close(fds[0]);
    close(fds[1]);
    execlp("dot", "dot", "-Tpng", "-o", path, (char *)NULL);
    _exit(127);
  }
  close(fds[0]);
  /* When dot is missing the child exits at once; writing to the pipe
   * must then fail with EPIPE, not kill us before we can say why. */
  signal(SIGPIPE, SIG_IGN);
  FILE *to = fdopen(fds[1], "w");
  if (to) {
    write_dot(t, to);
    fclose(to);
  } else {
    close(fds[1]);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    fprintf(stderr, "qgm-topo: --png needs Graphviz's dot "
                    "(apt-get install graphviz)\n");
    return 1;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "qgm-topo: dot could not write %s\n", path);
    return 1;
  }
  printf("wrote %s\n", path);
  return 0;
}

static void degree_range(const qgm_topology_t *t, int *lo, int *hi) {
  const int n = qgm_topology_nodes(t), k_max = qgm_topology_max_degree(t);
  int *peers = malloc(((size_t)k_max + 1) * sizeof *peers);
  *lo = k_max;
  *hi = 0;
  for (int r = 0; peers && r < qgm_topology_period(t); r++)
    for (int i = 0; i < n; i++) {
      int k = qgm_topology_send_peers(t, i, (uint64_t)r, peers);
      *lo = k < *lo ? k : *lo;
      *hi = k > *hi ? k : *hi;
    }
  free(peers);
}

static int print_summary(const qgm_topology_t *t, const options_t *o) {
  const int n = qgm_topology_nodes(t), period = qgm_topology_period(t);
  int lo, hi;
  degree_range(t, &lo, &hi);
  printf("topology      %s\n", o->name);
  printf("nodes         %d\n", n);
  printf("edges         %zu\n", qgm_topology_edges(t));
  printf("degree        %d..%d%s\n", lo, hi,
         period > 1 ? " per round" : "");
  printf("mixing        %s\n", qgm_mixing_name(qgm_topology_mixing(t)));
  if (period > 1)
    printf("period        %d rounds (a different W each round)\n", period);
  double gap;
  int rc = qgm_topology_spectral_gap(t, &gap);
  if (rc != 0)
    printf("spectral gap  not computed (%s)\n", qgm_strerror(rc));
  else if (period > 1)
    printf("spectral gap  %.6f over one period (1 - ||W_%d...W_0 - J/n||_2)"
           "\n", gap, period - 1);
  else
    printf("spectral gap  %.6f (1 - |lambda_2(W)|)\n", gap);
  double least;
  if (qgm_topology_lambda_min(t, &least) == 0)
    printf("lambda_min    %.6f (the smallest eigenvalue of W)\n", least);
  if (n > MAX_PRINTED_MATRIX)
    return 0;
  double *w = malloc((size_t)n * (size_t)n * sizeof *w);
  if (!w)
    return 1;
  for (int r = 0; r < period; r++) {
    printf(period > 1 ? "W (round %d)\n" : "W\n", r);
    qgm_topology_weights(t, (uint64_t)r, w);
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++)
        printf(" %6.4f", w[i * n + j]);
      printf("\n");
    }
  }
  free(w);
  return 0;
}

int main(int argc, char **argv) {
  options_t o = {0};
  int rc = parse_args(argc, argv, &o);
  if (rc != 0)
    return rc == 1 ? 0 : rc;
  qgm_topology_spec_t spec = {.name = o.name,
                              .nodes = o.nodes,
                              .mixing = o.mixing,
                              .torus_rows = o.rows,
                              .torus_cols = o.cols,
                              .tree_arity = o.tree_arity};
  qgm_topology_t *t = NULL;
  qgm_topology_error_t error;
  rc = qgm_topology_create_ex(&spec, &t, &error);
  if (rc != 0) {
    fprintf(stderr, "qgm-topo: %s\n",
            error.text[0] ? error.text : qgm_strerror(rc));
    return rc == QGM_ENOMEM ? 1 : 2;
  }
  if (o.png)
    rc = render_png(t, o.png);
  else if (o.dot)
    write_dot(t, stdout);
  else
    rc = print_summary(t, &o);
  qgm_topology_free(t);
  return rc;
}
