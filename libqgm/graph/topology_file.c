/* topology_file.c - edge-list files: the format of
 * topologies/davis-southern-women.edges.
 *
 *   # comment (also after data)
 *   nodes 32          optional; first data line; must equal the run's n
 *   0 18              undirected edge between node ids 0 <= i, j < n
 *   3 7 0.25          optional third column: the mixing weight W_ij = W_ji
 *
 * Either every edge has a weight (W_ii = 1 - row sum) or none has one (the
 * mixing rule decides). Every error names the file and the line. Lines
 * may end in LF, CR LF or CR; a UTF-8 byte order mark is skipped. Text
 * quoted from the file in a message is cut short and has its control and
 * non-ASCII bytes replaced with '?', so that it stays one readable line. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "graph/topology.h"

/* Edge files beyond this are a mistake (a 65536-node graph of degree 64). */
#define MAX_FILE_BYTES (64u << 20)

typedef struct parser {
  const char *source;
  int nodes;
  int line;
  int declared;      /* a "nodes N" line was seen */
  int weighted;      /* -1 unknown, 0 no weights, 1 weights */
  double *row_sum;   /* of file weights, per node */
  qgm__edge_t *edges;
  size_t count, cap;
  qgm_topology_error_t *error;
} parser_t;

#define FAIL(p, rc, ...)                                                      \
  qgm__topology_fail((p)->error, (rc), (p)->line, __VA_ARGS__)

/* Quoted text from the file is cut to this many bytes. */
#define SHOWN_MAX 32

/* tok as it may appear in a message: printable ASCII only, at most
 * SHOWN_MAX bytes (then "..."). */
static const char *shown(const char *tok, char out[SHOWN_MAX + 4]) {
  size_t k = 0;
  for (; k < SHOWN_MAX && tok[k]; k++)
    out[k] = tok[k] >= 0x20 && tok[k] < 0x7f ? tok[k] : '?';
  strcpy(out + k, tok[k] ? "..." : "");
  return out;
}

/* Splits a line into at most 4 whitespace-separated tokens; returns the
 * count (4 meaning "too many"). */
static int tokens(char *s, char *tok[4]) {
  int k = 0;
  for (char *save = NULL, *t = strtok_r(s, " \t\v\f", &save); t;
       t = strtok_r(NULL, " \t\v\f", &save)) {
    if (k == 4)
      return 4;
    tok[k++] = t;
  }
  return k;
}

static int parse_id(parser_t *p, const char *text, int *id) {
  char *end, buf[SHOWN_MAX + 4];
  errno = 0;
  long v = strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0')
    return FAIL(p, QGM_ESYNTAX, "%s:%d: '%s' is not a node id", p->source,
                p->line, shown(text, buf));
  if (errno == ERANGE || v < 0 || v >= p->nodes)
    return FAIL(p, QGM_EGRAPH, "%s:%d: node id %s is outside 0..%d",
                p->source, p->line, shown(text, buf), p->nodes - 1);
  *id = (int)v;
  return 0;
}

static int parse_nodes(parser_t *p, int k, char *tok[4]) {
  if (p->declared || p->count > 0)
    return FAIL(p, QGM_ESYNTAX, "%s:%d: 'nodes N' must be the first data "
                "line, and only once", p->source, p->line);
  char *end;
  errno = 0;
  long v = k == 2 ? strtol(tok[1], &end, 10) : 0;
  if (k != 2 || *end != '\0' || errno == ERANGE || v < 1)
    return FAIL(p, QGM_ESYNTAX, "%s:%d: expected 'nodes N' with N >= 1",
                p->source, p->line);
  if (v != p->nodes)
    return FAIL(p, QGM_ENODES, "%s:%d: the graph has %ld nodes, the run %d",
                p->source, p->line, v, p->nodes);
  p->declared = 1;
  return 0;
}

/* Any finite number in (0, 1]: one that underflows to 0 or overflows to
 * infinity is outside, "nan" and "0.5x" are not numbers. */
static int parse_weight(parser_t *p, const char *text, double *w) {
  char *end, buf[SHOWN_MAX + 4];
  *w = strtod(text, &end);
  if (end == text || *end != '\0' || isnan(*w))
    return FAIL(p, QGM_ESYNTAX, "%s:%d: weight '%s' is not a number",
                p->source, p->line, shown(text, buf));
  if (!(*w > 0.0 && *w <= 1.0))
    return FAIL(p, QGM_EMIXING, "%s:%d: weight %s is outside (0, 1]",
                p->source, p->line, shown(text, buf));
  return 0;
}

static int parse_edge(parser_t *p, int k, char *tok[4]) {
  if (k > 3)
    return FAIL(p, QGM_ESYNTAX, "%s:%d: expected 'i j' or 'i j weight'",
                p->source, p->line);
  if (k < 2) { /* say why the one token is wrong */
    char buf[SHOWN_MAX + 4];
    return FAIL(p, QGM_ESYNTAX, "%s:%d: '%s' is not an edge ('i j' or 'i j "
                "weight')", p->source, p->line, shown(tok[0], buf));
  }
  qgm__edge_t e = {0, 0, 0.0, p->line};
  int rc = parse_id(p, tok[0], &e.a);
  if (rc == 0)
    rc = parse_id(p, tok[1], &e.b);
  if (rc == 0 && k == 3)
    rc = parse_weight(p, tok[2], &e.w);
  if (rc != 0)
    return rc;
  if (e.a == e.b)
    return FAIL(p, QGM_EGRAPH, "%s:%d: self-loop '%d %d' (W_ii is implied)",
                p->source, p->line, e.a, e.b);
  if (p->weighted >= 0 && p->weighted != (k == 3))
    return FAIL(p, QGM_ESYNTAX, "%s:%d: %s: every edge or none must have a "
                "weight", p->source, p->line,
                k == 3 ? "weight on an unweighted graph" : "missing weight");
  p->weighted = k == 3;
  if (k == 3)
    for (int end = 0; end < 2; end++) {
      int v = end ? e.b : e.a;
      p->row_sum[v] += e.w;
      if (p->row_sum[v] > 1.0 + 1e-12)
        return FAIL(p, QGM_EMIXING, "%s:%d: node %d's weights sum to %.6g > 1 "
                    "(W would not be stochastic)", p->source, p->line, v,
                    p->row_sum[v]);
    }
  if (p->count == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 256;
    qgm__edge_t *bigger = realloc(p->edges, cap * sizeof *bigger);
    if (!bigger)
      return QGM_ENOMEM;
    p->edges = bigger;
    p->cap = cap;
  }
  if (e.a > e.b) {
    int swap = e.a;
    e.a = e.b;
    e.b = swap;
  }
  p->edges[p->count++] = e;
  return 0;
}

static int parse_line(parser_t *p, char *s) {
  char *hash = strchr(s, '#');
  if (hash)
    *hash = '\0';
  char *tok[4];
  int k = tokens(s, tok);
  if (k == 0)
    return 0;
  if (strcmp(tok[0], "nodes") == 0)
    return parse_nodes(p, k, tok);
  return parse_edge(p, k, tok);
}

static int by_pair_then_line(const void *pa, const void *pb) {
  const qgm__edge_t *a = pa, *b = pb;
  if (a->a != b->a)
    return a->a < b->a ? -1 : 1;
  if (a->b != b->b)
    return a->b < b->b ? -1 : 1;
  return (a->line > b->line) - (a->line < b->line);
}

/* The earliest line that repeats an edge read before, or 0. */
static int duplicate_line(qgm__edge_t *edges, size_t m, int *a, int *b) {
  qsort(edges, m, sizeof *edges, by_pair_then_line);
  int first = 0;
  for (size_t e = 1; e < m; e++)
    if (edges[e].a == edges[e - 1].a && edges[e].b == edges[e - 1].b &&
        (first == 0 || edges[e].line < first)) {
      first = edges[e].line;
      *a = edges[e].a;
      *b = edges[e].b;
    }
  return first;
}

int qgm__topology_parse_edges(const char *text, const char *source, int nodes,
                             qgm_mixing_t mixing, qgm_topology_t **out,
                             qgm_topology_error_t *error) {
  parser_t p = {.source = source, .nodes = nodes, .weighted = -1,
                .error = error};
  p.row_sum = calloc((size_t)nodes, sizeof *p.row_sum);
  if (strncmp(text, "\xef\xbb\xbf", 3) == 0)
    text += 3; /* a UTF-8 byte order mark, as some editors write */
  char *copy = strdup(text);
  int rc = (p.row_sum && copy) ? 0 : QGM_ENOMEM;
  /* More edges than pairs of nodes must repeat one: stop there, so that a
   * large file of repeats cannot make the edge list large. */
  const size_t pairs = (size_t)nodes * (size_t)(nodes - 1) / 2;
  for (char *save = copy, *line = copy; rc == 0 && line && p.count <= pairs;
       line = save) {
    char *nl = strpbrk(line, "\r\n");
    save = nl ? nl + 1 + (nl[0] == '\r' && nl[1] == '\n') : NULL;
    if (nl)
      *nl = '\0';
    if (!nl && *line == '\0')
      break; /* the newline that ends the last line */
    p.line++;
    rc = parse_line(&p, line);
  }
  int a = 0, b = 0, dup;
  if (rc == 0 && p.count == 0) {
    p.line = p.line > 0 ? p.line : 1; /* an empty file still has line 1 */
    rc = FAIL(&p, QGM_EGRAPH, "%s:%d: no edges", source, p.line);
  }
  if (rc == 0 && (dup = duplicate_line(p.edges, p.count, &a, &b)) != 0) {
    p.line = dup;
    rc = FAIL(&p, QGM_EGRAPH, "%s:%d: duplicate edge %d-%d", source, dup, a,
              b);
  }
  if (rc == 0) {
    qgm_topology_error_t inner;
    rc = qgm__topology_from_edges(nodes, p.edges, p.count, mixing, out,
                                 &inner);
    if (rc != 0 && error) /* name the file: a whole-graph fault shows at
                             its end, like a compiler's end-of-file error */
      qgm__topology_fail(error, rc, p.line, "%s:%d: %s", source, p.line,
                        inner.text);
  }
  free(copy);
  free(p.row_sum);
  free(p.edges);
  return rc;
}

int qgm__topology_load_file(const char *path, int nodes, qgm_mixing_t mixing,
                           qgm_topology_t **out, qgm_topology_error_t *error) {
  FILE *f;
  uint64_t size;
  int rc = qgm__fopen_input(path, &f, &size);
  if (rc == QGM_EOPEN)
    return qgm__topology_fail(error, rc, 0, "%s: cannot open the edge file: "
                             "%s", path, strerror(errno));
  if (rc != 0)
    return qgm__topology_fail(error, rc, 0, "%s: %s", path, qgm_strerror(rc));
  if (size > MAX_FILE_BYTES) {
    fclose(f);
    return qgm__topology_fail(error, QGM_EGRAPH, 0, "%s: larger than %u MiB",
                             path, MAX_FILE_BYTES >> 20);
  }
  char *text = malloc((size_t)size + 1);
  if (!text) {
    fclose(f);
    return QGM_ENOMEM;
  }
  size_t got = fread(text, 1, (size_t)size, f);
  int bad = ferror(f);
  fclose(f);
  if (bad)
    rc = qgm__topology_fail(error, QGM_EIO, 0, "%s: read error", path);
  else if (memchr(text, '\0', got))
    rc = qgm__topology_fail(error, QGM_ESYNTAX, 0, "%s: not a text file",
                           path);
  if (rc == 0) {
    text[got] = '\0';
    rc = qgm__topology_parse_edges(text, path, nodes, mixing, out, error);
  }
  free(text);
  return rc;
}
