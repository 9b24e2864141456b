/* problem.c - synthetic decentralized problems whose optimum is known, so
 * that an optimizer's error can be measured instead of guessed: least
 * squares (closed form) and L2-regularised logistic regression (Newton's
 * method to machine precision). All arithmetic is in double; the models
 * the optimizers hold are float. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "qgm.h"

typedef enum { LEAST_SQUARES, LOGISTIC } problem_kind_t;

struct qgm_problem {
  problem_kind_t kind;
  int nodes;
  size_t dim, rows;
  double l2;
  double *a;   /* nodes x rows x dim features */
  double *b;   /* nodes x rows targets (logistic: +-1) */
  double *opt; /* dim */
  double opt_loss;
};

const char *qgm_problem_names(void) { return "least-squares, logistic"; }

/* log(1 + exp(-z)) without overflow. */
static double softplus_neg(double z) {
  return z > 0.0 ? log1p(exp(-z)) : -z + log1p(exp(z));
}

static double dot(const double *a, const double *x, size_t n) {
  double s = 0.0;
  for (size_t j = 0; j < n; j++)
    s += a[j] * x[j];
  return s;
}

/* The loss of one sample at x and the derivative of that loss with respect
 * to the prediction z = a.x. */
static double sample_loss(const qgm_problem_t *p, double z, double b,
                          double *dz) {
  if (p->kind == LEAST_SQUARES) {
    *dz = z - b;
    return 0.5 * (z - b) * (z - b);
  }
  double bz = b * z;
  /* d/dz log(1 + exp(-b z)) = -b sigmoid(-b z) */
  *dz = -b / (1.0 + exp(bz));
  return softplus_neg(bz);
}

/* Mean loss over samples rows[0..n) (NULL: all) of node at x (double),
 * with the gradient accumulated into grad (dim doubles) when not NULL. */
static double node_loss(const qgm_problem_t *p, int node, const double *x,
                        const size_t *rows, size_t n, double *grad) {
  const size_t d = p->dim;
  const double *a0 = p->a + (size_t)node * p->rows * d;
  const double *b0 = p->b + (size_t)node * p->rows;
  double total = 0.0;
  if (grad)
    memset(grad, 0, d * sizeof *grad);
  for (size_t k = 0; k < n; k++) {
    size_t r = rows ? rows[k] : k;
    const double *a = a0 + r * d;
    double dz;
    total += sample_loss(p, dot(a, x, d), b0[r], &dz);
    if (grad)
      for (size_t j = 0; j < d; j++)
        grad[j] += dz * a[j];
  }
  double reg = 0.5 * p->l2 * dot(x, x, d);
  if (grad)
    for (size_t j = 0; j < d; j++)
      grad[j] = grad[j] / (double)n + p->l2 * x[j];
  return total / (double)n + reg;
}

/* Solves H z = r in place (r becomes z) for symmetric positive definite H,
 * which is overwritten by its Cholesky factor. */
static int cholesky_solve(double *h, double *r, size_t n) {
  for (size_t j = 0; j < n; j++) {
    double s = h[j * n + j];
    for (size_t k = 0; k < j; k++)
      s -= h[j * n + k] * h[j * n + k];
    if (!(s > 0.0))
      return QGM_EINVAL;
    h[j * n + j] = sqrt(s);
    for (size_t i = j + 1; i < n; i++) {
      double t = h[i * n + j];
      for (size_t k = 0; k < j; k++)
        t -= h[i * n + k] * h[j * n + k];
      h[i * n + j] = t / h[j * n + j];
    }
  }
  for (size_t i = 0; i < n; i++) { /* L z' = r */
    for (size_t k = 0; k < i; k++)
      r[i] -= h[i * n + k] * r[k];
    r[i] /= h[i * n + i];
  }
  for (size_t i = n; i-- > 0;) { /* L^T z = z' */
    for (size_t k = i + 1; k < n; k++)
      r[i] -= h[k * n + i] * r[k];
    r[i] /= h[i * n + i];
  }
  return 0;
}

/* f = mean over all samples (rows per node are equal) of the loss, with
 * gradient and Hessian (dim x dim) at x. */
static double global_newton_terms(const qgm_problem_t *p, const double *x,
                                  double *grad, double *hess) {
  const size_t d = p->dim, total = (size_t)p->nodes * p->rows;
  double loss = 0.0;
  memset(grad, 0, d * sizeof *grad);
  memset(hess, 0, d * d * sizeof *hess);
  for (size_t s = 0; s < total; s++) {
    const double *a = p->a + s * d;
    double z = dot(a, x, d), dz;
    loss += sample_loss(p, z, p->b[s], &dz);
    /* The second derivative in z: 1 for squares, s(1-s) for logistic. */
    double sig = 1.0 / (1.0 + exp(-z));
    double curv = p->kind == LEAST_SQUARES ? 1.0 : sig * (1.0 - sig);
    for (size_t i = 0; i < d; i++) {
      grad[i] += dz * a[i];
      for (size_t j = 0; j <= i; j++)
        hess[i * d + j] += curv * a[i] * a[j];
    }
  }
  for (size_t i = 0; i < d; i++) {
    grad[i] = grad[i] / (double)total + p->l2 * x[i];
    for (size_t j = 0; j <= i; j++) {
      hess[i * d + j] /= (double)total;
      hess[j * d + i] = hess[i * d + j];
    }
    hess[i * d + i] += p->l2;
  }
  return loss / (double)total + 0.5 * p->l2 * dot(x, x, d);
}

/* Newton's method from 0; for least squares the first step is exact (the
 * normal equations), for logistic regression it converges quadratically. */
static int solve_optimum(qgm_problem_t *p) {
  const size_t d = p->dim;
  double *grad = malloc(d * sizeof *grad);
  double *hess = malloc(qgm__mul_size(d * d, sizeof *hess));
  int rc = grad && hess ? 0 : QGM_ENOMEM;
  memset(p->opt, 0, d * sizeof *p->opt);
  for (int it = 0; rc == 0 && it < 100; it++) {
    global_newton_terms(p, p->opt, grad, hess);
    double gnorm = sqrt(dot(grad, grad, d));
    if (gnorm < 1e-13 || (p->kind == LEAST_SQUARES && it == 2))
      break;
    rc = cholesky_solve(hess, grad, d);
    for (size_t j = 0; rc == 0 && j < d; j++)
      p->opt[j] -= grad[j];
  }
  if (rc == 0)
    p->opt_loss = global_newton_terms(p, p->opt, grad, hess);
  free(grad);
  free(hess);
  return rc;
}

/* Node i's data follow its own model and its own feature shift, both at
 * distance `heterogeneity` (in standard deviations) from the shared ones. */
static int generate(qgm_problem_t *p, const qgm_problem_spec_t *spec) {
  const size_t d = p->dim;
  double *shared = p->opt; /* scratch until the optimum is solved for */
  double *local = malloc(2 * d * sizeof *local);
  if (!local)
    return QGM_ENOMEM;
  qgm_rng_t rng;
  qgm_rng_seed(&rng, spec->seed, 0);
  for (size_t j = 0; j < d; j++)
    shared[j] = qgm_rng_normal(&rng);
  for (int i = 0; i < p->nodes; i++) {
    double *model = local, *shift = local + d;
    qgm_rng_seed(&rng, spec->seed, 1 + (uint64_t)i);
    for (size_t j = 0; j < d; j++) {
      model[j] = shared[j] + spec->heterogeneity * qgm_rng_normal(&rng);
      shift[j] = spec->heterogeneity * qgm_rng_normal(&rng);
    }
    for (size_t r = 0; r < p->rows; r++) {
      size_t s = (size_t)i * p->rows + r;
      double *a = p->a + s * d;
      for (size_t j = 0; j < d; j++)
        a[j] = shift[j] + qgm_rng_normal(&rng);
      double z = dot(a, model, d);
      if (p->kind == LEAST_SQUARES)
        p->b[s] = z + spec->noise * qgm_rng_normal(&rng);
      else
        p->b[s] = qgm_rng_uniform(&rng) < 1.0 / (1.0 + exp(-z)) ? 1.0 : -1.0;
    }
  }
  free(local);
  return 0;
}

int qgm_problem_create(const qgm_problem_spec_t *spec, qgm_problem_t **out) {
  if (!spec || !spec->name || !out || spec->nodes < 1 || spec->dim < 1 ||
      spec->rows < 1 || spec->dim > 4096 || !(spec->heterogeneity >= 0.0) ||
      !(spec->noise >= 0.0) || !(spec->l2 >= 0.0))
    return QGM_EINVAL;
  problem_kind_t kind;
  if (strcmp(spec->name, "least-squares") == 0)
    kind = LEAST_SQUARES;
  else if (strcmp(spec->name, "logistic") == 0 && spec->l2 > 0.0)
    kind = LOGISTIC;
  else
    return QGM_EINVAL;
  size_t samples = qgm__mul_size((size_t)spec->nodes, spec->rows);
  size_t values = qgm__mul_size(samples, spec->dim);
  if (samples == 0 || values == 0 || qgm__mul_size(values, sizeof(double)) == 0)
    return QGM_EINVAL;
  qgm_problem_t *p = calloc(1, sizeof *p);
  if (!p)
    return QGM_ENOMEM;
  *p = (qgm_problem_t){.kind = kind, .nodes = spec->nodes, .dim = spec->dim,
                       .rows = spec->rows, .l2 = spec->l2};
  p->a = malloc(values * sizeof *p->a);
  p->b = malloc(samples * sizeof *p->b);
  p->opt = malloc(spec->dim * sizeof *p->opt);
  int rc = p->a && p->b && p->opt ? 0 : QGM_ENOMEM;
  if (rc == 0)
    rc = generate(p, spec);
  if (rc == 0)
    rc = solve_optimum(p);
  if (rc != 0) {
    qgm_problem_free(p);
    return rc;
  }
  *out = p;
  return 0;
}

void qgm_problem_free(qgm_problem_t *p) {
  if (!p)
    return;
  free(p->a);
  free(p->b);
  free(p->opt);
  free(p);
}

size_t qgm_problem_dim(const qgm_problem_t *p) { return p->dim; }
size_t qgm_problem_rows(const qgm_problem_t *p) { return p->rows; }
int qgm_problem_nodes(const qgm_problem_t *p) { return p->nodes; }
const double *qgm_problem_optimum(const qgm_problem_t *p) { return p->opt; }
double qgm_problem_optimal_loss(const qgm_problem_t *p) { return p->opt_loss; }

/* The float model widened once, so the sums run in double. */
static double *widen(const float *x, size_t n) {
  double *w = malloc(n * sizeof *w);
  if (!w)
    return NULL;
  for (size_t j = 0; j < n; j++)
    w[j] = x[j];
  return w;
}

int qgm_problem_loss_grad(const qgm_problem_t *p, int node, const float *x,
                          const size_t *rows, size_t n, float *grad,
                          double *loss) {
  if (!p || !x || !loss || node < 0 || node >= p->nodes ||
      (rows && n == 0))
    return QGM_EINVAL;
  if (!rows)
    n = p->rows;
  for (size_t k = 0; rows && k < n; k++)
    if (rows[k] >= p->rows)
      return QGM_EINVAL;
  double *xd = widen(x, p->dim);
  double *gd = grad ? malloc(p->dim * sizeof *gd) : NULL;
  if (!xd || (grad && !gd)) {
    free(xd);
    free(gd);
    return QGM_ENOMEM;
  }
  *loss = node_loss(p, node, xd, rows, n, gd);
  for (size_t j = 0; grad && j < p->dim; j++)
    grad[j] = (float)gd[j];
  free(xd);
  free(gd);
  return 0;
}

double qgm_problem_loss(const qgm_problem_t *p, const float *x) {
  double *xd = widen(x, p->dim);
  if (!xd)
    return NAN;
  double sum = 0.0;
  for (int i = 0; i < p->nodes; i++)
    sum += node_loss(p, i, xd, NULL, p->rows, NULL);
  free(xd);
  return sum / p->nodes;
}

double qgm_problem_accuracy(const qgm_problem_t *p, const float *x) {
  if (p->kind == LEAST_SQUARES)
    return -1.0;
  double *xd = widen(x, p->dim);
  if (!xd)
    return NAN;
  size_t total = (size_t)p->nodes * p->rows, hits = 0;
  for (size_t s = 0; s < total; s++)
    hits += (dot(p->a + s * p->dim, xd, p->dim) >= 0.0) == (p->b[s] > 0.0);
  free(xd);
  return (double)hits / (double)total;
}
