/* topology_spectral.c - how fast a topology mixes: the spectral gap
 * 1 - ||P - J/n||_2, P the product of W over one period; the smallest
 * eigenvalue of a symmetric W, which decides whether D^2 is stable; and
 * the range of its eigenvalues but the average's, which Chebyshev rounds
 * are fitted to (chebyshev.c).
 *
 * Symmetric static W: the eigenvalues of W - J/n are those of W with the
 * eigenvalue 1 (the average) replaced by 0, so the norm is |lambda_2|.
 * Otherwise (the directed one-peer graph) the norm is the square root of
 * the largest eigenvalue of M^T M. Both are symmetric eigenproblems, which
 * the cyclic Jacobi method solves to full accuracy in a few sweeps. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/topology.h"

#define MAX_SPECTRAL_NODES 2048
#define MAX_SWEEPS 64

/* Eigenvalues of the symmetric n x n matrix a (destroyed) into diagonal. */
static void jacobi_eigenvalues(double *a, int n) {
  for (int sweep = 0; sweep < MAX_SWEEPS; sweep++) {
    double off = 0.0, diag = 0.0;
    for (int p = 0; p < n; p++) {
      diag += a[(size_t)p * n + p] * a[(size_t)p * n + p];
      for (int q = p + 1; q < n; q++)
        off += a[(size_t)p * n + q] * a[(size_t)p * n + q];
    }
    if (off <= 1e-30 * (diag + off) || off < 1e-300)
      return;
    for (int p = 0; p < n - 1; p++)
      for (int q = p + 1; q < n; q++) {
        const double apq = a[(size_t)p * n + q];
        if (fabs(apq) < 1e-300)
          continue;
        /* The rotation that zeroes a_pq (Golub & Van Loan 8.5.2). */
        const double theta =
            (a[(size_t)q * n + q] - a[(size_t)p * n + p]) / (2.0 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) /
                         (fabs(theta) + sqrt(theta * theta + 1.0));
        const double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
        for (int k = 0; k < n; k++) { /* columns p and q */
          double akp = a[(size_t)k * n + p], akq = a[(size_t)k * n + q];
          a[(size_t)k * n + p] = c * akp - s * akq;
          a[(size_t)k * n + q] = s * akp + c * akq;
        }
        for (int k = 0; k < n; k++) { /* rows p and q */
          double apk = a[(size_t)p * n + k], aqk = a[(size_t)q * n + k];
          a[(size_t)p * n + k] = c * apk - s * aqk;
          a[(size_t)q * n + k] = s * apk + c * aqk;
        }
      }
  }
}

/* p = W_round * p for every round of the period, starting from identity. */
static int period_product(const qgm_topology_t *t, double *p) {
  const size_t n = (size_t)t->nodes;
  double *next = malloc(n * n * sizeof *next);
  int *peers = malloc(((size_t)t->max_degree + 1) * sizeof *peers);
  double *w = malloc(((size_t)t->max_degree + 1) * sizeof *w);
  int rc = (next && peers && w) ? 0 : QGM_ENOMEM;
  memset(p, 0, n * n * sizeof *p);
  for (size_t i = 0; i < n; i++)
    p[i * n + i] = 1.0;
  for (int r = 0; rc == 0 && r < t->period; r++) {
    for (size_t i = 0; i < n; i++) {
      double self;
      int k = qgm_topology_neighbors(t, (int)i, (uint64_t)r, peers, w, &self);
      for (size_t c = 0; c < n; c++)
        next[i * n + c] = self * p[i * n + c];
      for (int j = 0; j < k; j++)
        for (size_t c = 0; c < n; c++)
          next[i * n + c] += w[j] * p[(size_t)peers[j] * n + c];
    }
    memcpy(p, next, n * n * sizeof *p);
  }
  free(next);
  free(peers);
  free(w);
  return rc;
}

int qgm_topology_spectral_gap(const qgm_topology_t *t, double *gap) {
  if (!t || !gap || t->nodes > MAX_SPECTRAL_NODES)
    return QGM_EINVAL;
  const size_t n = (size_t)t->nodes;
  double *m = malloc(n * n * sizeof *m);
  if (!m)
    return QGM_ENOMEM;
  int rc = period_product(t, m);
  if (rc != 0) {
    free(m);
    return rc;
  }
  for (size_t k = 0; k < n * n; k++)
    m[k] -= 1.0 / (double)n;
  const int symmetric = !qgm__topology_directed(t);
  double *a = m;
  if (!symmetric) { /* a = m^T m */
    a = calloc(n * n, sizeof *a);
    if (!a) {
      free(m);
      return QGM_ENOMEM;
    }
    for (size_t k = 0; k < n; k++)
      for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
          a[i * n + j] += m[k * n + i] * m[k * n + j];
  }
  jacobi_eigenvalues(a, (int)n);
  double largest = 0.0;
  for (size_t i = 0; i < n; i++)
    if (fabs(a[i * n + i]) > largest)
      largest = fabs(a[i * n + i]);
  *gap = 1.0 - (symmetric ? largest : sqrt(largest));
  if (a != m)
    free(a);
  free(m);
  return 0;
}

/* The eigenvalues of a static symmetric W, ascending, into a new array of
 * t->nodes (the caller frees it). */
static int symmetric_eigenvalues(const qgm_topology_t *t, double **values) {
  if (t->nodes > MAX_SPECTRAL_NODES || t->period != 1 ||
      qgm__topology_directed(t))
    return QGM_EINVAL;
  const size_t n = (size_t)t->nodes;
  double *w = malloc(n * n * sizeof *w);
  double *v = malloc(n * sizeof *v);
  if (!w || !v) {
    free(w);
    free(v);
    return QGM_ENOMEM;
  }
  qgm_topology_weights(t, 0, w);
  jacobi_eigenvalues(w, (int)n);
  for (size_t i = 0; i < n; i++) { /* insertion: n is small */
    double x = w[i * n + i];
    size_t j = i;
    for (; j > 0 && v[j - 1] > x; j--)
      v[j] = v[j - 1];
    v[j] = x;
  }
  free(w);
  *values = v;
  return 0;
}

int qgm_topology_lambda_min(const qgm_topology_t *t, double *lambda_min) {
  double *v = NULL;
  int rc = t && lambda_min ? symmetric_eigenvalues(t, &v) : QGM_EINVAL;
  if (rc == 0)
    *lambda_min = v[0];
  free(v);
  return rc;
}

int qgm_topology_eigen_range(const qgm_topology_t *t, double *lo,
                             double *hi) {
  double *v = NULL;
  int rc = t && lo && hi && t->nodes >= 2 ? symmetric_eigenvalues(t, &v)
                                          : QGM_EINVAL;
  if (rc == 0) { /* the largest, 1, is the average's */
    *lo = v[0];
    *hi = v[t->nodes - 2];
  }
  free(v);
  return rc;
}
