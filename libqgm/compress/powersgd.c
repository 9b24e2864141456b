/* powersgd.c - PowerSGD's all-reduce, one node's half (qgm.h has the
 * rule; Vogels, Karimireddy, Jaggi, "PowerSGD: Practical Low-Rank Gradient
 * Compression for Distributed Optimization", NeurIPS 2019, Alg. 1 and 2):
 * the transport sums the two messages over the nodes, everything else is
 * here, so the daemon and the simulator compute the same bits. */
#include <stdlib.h>
#include <string.h>

#include "compress/lowrank.h"
#include "core/internal.h"
#include "qgm.h"

struct qgm_powersgd {
  qgm__lowrank_t lr;
  float *m;     /* n: this step's g + e */
  float *error; /* n: e, 0 outside the matrices */
  float *p;     /* first_len: the mean P (orthonormal), then the others'
                   mean */
  float *warm;  /* q_len: the last mean Q */
};

size_t qgm_matrices_max_rank(const qgm_matrix_block_t *m, size_t count) {
  size_t most = 0;
  for (size_t b = 0; b < count; b++) {
    const size_t side = m[b].rows < m[b].cols ? m[b].rows : m[b].cols;
    if (b == 0 || side < most)
      most = side;
  }
  return most;
}

int qgm_powersgd_create(size_t n, int rank,
                        const qgm_matrix_block_t *matrices, size_t nmatrices,
                        qgm_powersgd_t **out) {
  if (!out || n == 0)
    return QGM_EINVAL;
  qgm_powersgd_t *s = calloc(1, sizeof *s);
  if (!s)
    return QGM_ENOMEM;
  int rc = qgm__lowrank_init(&s->lr, n, rank, matrices, nmatrices);
  if (rc == 0 && (!(s->m = qgm_alloc_floats(n)) ||
                  !(s->error = qgm_alloc_floats(n)) ||
                  !(s->p = qgm_alloc_floats(qgm_powersgd_first_len(s) + 1)) ||
                  !(s->warm = qgm_alloc_floats(s->lr.q_len + 1))))
    rc = QGM_ENOMEM;
  if (rc != 0) {
    qgm_powersgd_free(s);
    return rc;
  }
  memset(s->error, 0, n * sizeof *s->error);
  qgm__lowrank_first_q(&s->lr, s->warm);
  *out = s;
  return 0;
}

void qgm_powersgd_free(qgm_powersgd_t *s) {
  if (!s)
    return;
  qgm__lowrank_free(&s->lr);
  free(s->m);
  free(s->error);
  free(s->p);
  free(s->warm);
  free(s);
}

size_t qgm_powersgd_first_len(const qgm_powersgd_t *s) {
  return s->lr.p_len + s->lr.others;
}

size_t qgm_powersgd_second_len(const qgm_powersgd_t *s) {
  return s->lr.q_len;
}

void qgm_powersgd_first(qgm_powersgd_t *s, const float *g, float *msg) {
  const size_t n = s->lr.n;
  for (size_t i = 0; i < n; i++)
    s->m[i] = g[i] + s->error[i];
  qgm__lowrank_times_q(&s->lr, s->m, s->warm, msg);
  qgm__lowrank_gather(&s->lr, s->m, msg + s->lr.p_len);
}

void qgm_powersgd_second(qgm_powersgd_t *s, const float *sum, float scale,
                         float *msg) {
  qgm_vec_scale_copy(s->p, scale, sum, qgm_powersgd_first_len(s));
  qgm__lowrank_orthonormalise(&s->lr, s->p);
  qgm__lowrank_times_p(&s->lr, s->m, s->p, msg);
}

void qgm_powersgd_decode(qgm_powersgd_t *s, const float *sum, float scale,
                         float *out) {
  const size_t n = s->lr.n;
  qgm_vec_scale_copy(s->warm, scale, sum, s->lr.q_len);
  memset(out, 0, n * sizeof *out);
  qgm__lowrank_add(&s->lr, s->p, s->warm, out);
  /* e = M - P Q^T on the matrices; the other coordinates travel exactly,
   * so they leave no error behind. */
  for (size_t i = 0; i < n; i++)
    s->error[i] = s->m[i] - out[i];
  qgm__lowrank_scatter(&s->lr, s->p + s->lr.p_len, out);
  memset(s->m, 0, s->lr.others * sizeof *s->m); /* spent: scratch now */
  qgm__lowrank_scatter(&s->lr, s->m, s->error);
}

float *qgm_powersgd_error(qgm_powersgd_t *s, size_t *len) {
  *len = s->lr.n;
  return s->error;
}

float *qgm_powersgd_warm(qgm_powersgd_t *s, size_t *len) {
  *len = s->lr.q_len;
  return s->warm;
}
