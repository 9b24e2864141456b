/* powergossip.c - PowerGossip, one node's half and the in-process exchange
 * (qgm.h has the rule; Vogels, Karimireddy, Jaggi, NeurIPS 2020). Both
 * ends of an edge compute the same bits from the same warm start and the
 * two messages, so the edge's difference is approximated alike on both,
 * and the daemon and the simulator agree. */
#include <stdlib.h>
#include <string.h>

#include "compress/lowrank.h"
#include "core/internal.h"
#include "qgm.h"

struct qgm_powergossip {
  qgm__lowrank_t lr;
  int peers;
  double gamma; /* scales every W_ij */
  float *warm;          /* per peer: U (p_len), then V (q_len) */
  float *first_u, *first_v; /* the first draws, for columns gone to 0 */
  float *diff;          /* scratch: the edge's A or B, scaled */
};

static size_t warm_len(const qgm_powergossip_t *g) {
  return g->lr.p_len + g->lr.q_len;
}

int qgm_powergossip_create(size_t n, int rank,
                           const qgm_matrix_block_t *matrices,
                           size_t nmatrices, int peers, double gamma,
                           qgm_powergossip_t **out) {
  if (!out || n == 0 || peers < 0 || !(gamma > 0.0 && gamma <= 1.0))
    return QGM_EINVAL;
  qgm_powergossip_t *g = calloc(1, sizeof *g);
  if (!g)
    return QGM_ENOMEM;
  g->peers = peers;
  g->gamma = gamma;
  int rc = qgm__lowrank_init(&g->lr, n, rank, matrices, nmatrices);
  const size_t w = g->lr.p_len + g->lr.q_len;
  if (rc == 0 &&
      (!(g->warm = qgm_alloc_floats((size_t)peers * w + 1)) ||
       !(g->first_u = qgm_alloc_floats(g->lr.p_len + 1)) ||
       !(g->first_v = qgm_alloc_floats(g->lr.q_len + 1)) ||
       !(g->diff = qgm_alloc_floats(qgm_powergossip_max_len(g) + 1))))
    rc = QGM_ENOMEM;
  if (rc != 0) {
    qgm_powergossip_free(g);
    return rc;
  }
  qgm__lowrank_first_p(&g->lr, g->first_u);
  qgm__lowrank_first_q(&g->lr, g->first_v);
  for (int j = 0; j < peers; j++) {
    memcpy(g->warm + (size_t)j * w, g->first_u, g->lr.p_len * sizeof(float));
    memcpy(g->warm + (size_t)j * w + g->lr.p_len, g->first_v,
           g->lr.q_len * sizeof(float));
  }
  *out = g;
  return 0;
}

void qgm_powergossip_free(qgm_powergossip_t *g) {
  if (!g)
    return;
  qgm__lowrank_free(&g->lr);
  free(g->warm);
  free(g->first_u);
  free(g->first_v);
  free(g->diff);
  free(g);
}

static size_t side_len(const qgm_powergossip_t *g, uint64_t round) {
  return round % 2 == 0 ? g->lr.p_len : g->lr.q_len;
}

size_t qgm_powergossip_len(const qgm_powergossip_t *g, uint64_t round) {
  return side_len(g, round) + g->lr.others;
}

size_t qgm_powergossip_max_len(const qgm_powergossip_t *g) {
  const size_t most = g->lr.p_len > g->lr.q_len ? g->lr.p_len : g->lr.q_len;
  return most + g->lr.others;
}

int qgm_powergossip_peers(const qgm_powergossip_t *g) { return g->peers; }

float *qgm_powergossip_warm(qgm_powergossip_t *g, int j, size_t *len) {
  *len = warm_len(g);
  return g->warm + (size_t)j * warm_len(g);
}

/* The columns of a warm start that are all 0 (the edge's difference had
 * nothing there) take the first draws' again; `side` is R columns of rows
 * (or of cols) per block. */
static void refill(const qgm_powergossip_t *g, float *side, const float *first,
                   int rows) {
  const size_t R = (size_t)g->lr.rank;
  for (size_t b = 0; b < g->lr.nblocks; b++) {
    const size_t h = rows ? g->lr.blocks[b].rows : g->lr.blocks[b].cols;
    for (size_t r = 0; r < R; r++) {
      float *col = side + r * h;
      size_t i = 0;
      while (i < h && col[i] == 0.0f)
        i++;
      if (i == h)
        memcpy(col, first + r * h, h * sizeof *col);
    }
    side += R * h;
    first += R * h;
  }
}

/* Edge j's side of round, made orthonormal: V on even rounds, U on odd
 * ones (in place: both ends do it once, from the same bits). */
static float *basis(qgm_powergossip_t *g, uint64_t round, int j) {
  float *w = g->warm + (size_t)j * warm_len(g);
  float *side = round % 2 == 0 ? w + g->lr.p_len : w;
  refill(g, side, round % 2 == 0 ? g->first_v : g->first_u, round % 2);
  qgm__lowrank_orthonormalise_side(&g->lr, side, round % 2);
  return side;
}

void qgm_powergossip_message(qgm_powergossip_t *g, uint64_t round, int j,
                             const float *x, float *out) {
  const float *side = basis(g, round, j);
  if (round % 2 == 0)
    qgm__lowrank_times_q(&g->lr, x, side, out); /* X V */
  else
    qgm__lowrank_times_p(&g->lr, x, side, out); /* X^T U */
  qgm__lowrank_gather(&g->lr, x, out + side_len(g, round));
}

void qgm_powergossip_mix(qgm_powergossip_t *g, uint64_t round,
                         const float *x, const float *const *mine,
                         const float *const *theirs, const double *weights,
                         const int *lower, float *mix) {
  const size_t n = g->lr.n, len = side_len(g, round), others = g->lr.others;
  const size_t wl = warm_len(g);
  memcpy(mix, x, n * sizeof *mix);
  for (int j = 0; j < g->peers; j++) {
    float *w = g->warm + (size_t)j * wl;
    const float *lo = lower[j] ? mine[j] : theirs[j];
    const float *hi = lower[j] ? theirs[j] : mine[j];
    /* The edge's D V (even) or D^T U (odd), D = X_lo - X_hi: the next
     * round's warm start of the other side. */
    float *next = round % 2 == 0 ? w : w + g->lr.p_len;
    for (size_t k = 0; k < len; k++)
      next[k] = lo[k] - hi[k];
    /* This node moves by -w (lo) or +w (hi) times the approximation. */
    const double wij = g->gamma * weights[j];
    const float step = (float)(lower[j] ? -wij : wij);
    for (size_t k = 0; k < len; k++)
      g->diff[k] = step * next[k];
    if (round % 2 == 0)
      qgm__lowrank_add(&g->lr, g->diff, w + g->lr.p_len, mix); /* A V^T */
    else
      qgm__lowrank_add(&g->lr, w, g->diff, mix); /* U B^T */
  }
  /* The other coordinates: x + sum_j W_ij (x_j - x), in peer order. */
  float *own = g->diff;
  qgm__lowrank_gather(&g->lr, mix, own);
  for (size_t k = 0; k < others; k++) {
    const float xi = own[k];
    float v = xi;
    for (int j = 0; j < g->peers; j++)
      v += (float)(g->gamma * weights[j]) * (theirs[j][len + k] - xi);
    own[k] = v;
  }
  qgm__lowrank_scatter(&g->lr, own, mix);
}

int qgm_powergossip_exchange(const qgm_topology_t *t, uint64_t round,
                             qgm_powergossip_t *const *states,
                             const float *const *x, float *const *mixes) {
  if (!t || qgm_topology_period(t) != 1 || qgm_topology_hosts(t) > 0)
    return QGM_EINVAL;
  const int n = qgm_topology_nodes(t);
  const int most = qgm_topology_max_degree(t) > 0 ? qgm_topology_max_degree(t)
                                                  : 1;
  const size_t len = qgm_powergossip_max_len(states[0]);
  float *box = malloc((size_t)n * (size_t)most * len * sizeof *box + 1);
  int *peers = malloc((size_t)n * (size_t)most * sizeof *peers);
  double *weights = malloc((size_t)n * (size_t)most * sizeof *weights);
  int *degree = malloc((size_t)n * sizeof *degree);
  int rc = box && peers && weights && degree ? 0 : QGM_ENOMEM;
  /* Every node's message to each of its peers, then every node's mix. */
  for (int i = 0; rc == 0 && i < n; i++) {
    double self;
    degree[i] = qgm_topology_neighbors(t, i, round, peers + i * most,
                                       weights + i * most, &self);
    for (int k = 0; k < degree[i]; k++)
      qgm_powergossip_message(states[i], round, k, x[i],
                              box + ((size_t)i * most + k) * len);
  }
  for (int i = 0; rc == 0 && i < n; i++) {
    const float *mine[most], *theirs[most];
    int lower[most];
    for (int k = 0; k < degree[i]; k++) {
      const int j = peers[i * most + k];
      int back = 0; /* i's place among j's peers */
      while (back < degree[j] && peers[j * most + back] != i)
        back++;
      if (back == degree[j]) {
        rc = QGM_EINVAL; /* not symmetric */
        break;
      }
      mine[k] = box + ((size_t)i * most + k) * len;
      theirs[k] = box + ((size_t)j * most + back) * len;
      lower[k] = i < j;
    }
    if (rc == 0)
      qgm_powergossip_mix(states[i], round, x[i], mine, theirs,
                          weights + i * most, lower, mixes[i]);
  }
  free(box);
  free(peers);
  free(weights);
  free(degree);
  return rc;
}
