/* lowrank.c - see lowrank.h: the products of PowerSGD's power iteration,
 * in plain loops (the matrices are a few hundred rows, R a few columns:
 * each product is one pass over the matrix, far less than a gradient's
 * work), summed in double in a fixed order. */
#include "compress/lowrank.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* The seed of the first Q: any fixed one, the same for every node. */
#define FIRST_Q_SEED 0x5057525347440001ULL

int qgm__lowrank_init(qgm__lowrank_t *lr, size_t n, int rank,
                      const qgm_matrix_block_t *blocks, size_t nblocks) {
  memset(lr, 0, sizeof *lr);
  if (rank < 1 || rank > QGM_COMPRESS_MAX_RANK || (nblocks > 0 && !blocks))
    return QGM_EINVAL;
  size_t end = 0, widest = 0, in_blocks = 0;
  for (size_t b = 0; b < nblocks; b++) {
    const qgm_matrix_block_t *m = &blocks[b];
    const size_t size = qgm__mul_size(m->rows, m->cols);
    if (m->rows == 0 || m->cols == 0 || size == 0 || m->at < end ||
        m->at > n || size > n - m->at || (size_t)rank > m->rows ||
        (size_t)rank > m->cols)
      return QGM_EINVAL;
    end = m->at + size;
    in_blocks += size;
    lr->p_len += (size_t)rank * m->rows;
    lr->q_len += (size_t)rank * m->cols;
    if (m->cols > widest)
      widest = m->cols;
  }
  lr->n = n;
  lr->rank = rank;
  lr->nblocks = nblocks;
  lr->others = n - in_blocks;
  lr->blocks = malloc((nblocks ? nblocks : 1) * sizeof *lr->blocks);
  lr->acc = malloc(((size_t)rank * widest + 1) * sizeof *lr->acc);
  if (!lr->blocks || !lr->acc) {
    qgm__lowrank_free(lr);
    return QGM_ENOMEM;
  }
  if (nblocks > 0)
    memcpy(lr->blocks, blocks, nblocks * sizeof *blocks);
  return 0;
}

void qgm__lowrank_free(qgm__lowrank_t *lr) {
  free(lr->blocks);
  free(lr->acc);
  memset(lr, 0, sizeof *lr);
}

static void draws(uint64_t stream, float *v, size_t n) {
  qgm_rng_t rng;
  qgm_rng_seed(&rng, FIRST_Q_SEED, stream);
  for (size_t i = 0; i < n; i++)
    v[i] = (float)qgm_rng_normal(&rng);
}

void qgm__lowrank_first_q(const qgm__lowrank_t *lr, float *q) {
  draws(0, q, lr->q_len);
}

void qgm__lowrank_first_p(const qgm__lowrank_t *lr, float *p) {
  draws(1, p, lr->p_len);
}

void qgm__lowrank_times_q(qgm__lowrank_t *lr, const float *m, const float *q,
                          float *p) {
  const size_t R = (size_t)lr->rank;
  for (size_t b = 0; b < lr->nblocks; b++) {
    const size_t rows = lr->blocks[b].rows, cols = lr->blocks[b].cols;
    const float *mb = m + lr->blocks[b].at;
    for (size_t i = 0; i < rows; i++) {
      const float *row = mb + i * cols;
      for (size_t r = 0; r < R; r++) {
        const float *qr = q + r * cols;
        double sum = 0.0;
        for (size_t j = 0; j < cols; j++)
          sum += (double)row[j] * (double)qr[j];
        p[r * rows + i] = (float)sum;
      }
    }
    p += R * rows;
    q += R * cols;
  }
}

static double dot(const float *a, const float *b, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; i++)
    sum += (double)a[i] * (double)b[i];
  return sum;
}

void qgm__lowrank_orthonormalise(const qgm__lowrank_t *lr, float *p) {
  qgm__lowrank_orthonormalise_side(lr, p, 1);
}

void qgm__lowrank_orthonormalise_side(const qgm__lowrank_t *lr, float *p,
                                      int by_rows) {
  const size_t R = (size_t)lr->rank;
  for (size_t b = 0; b < lr->nblocks; b++) {
    const size_t rows = by_rows ? lr->blocks[b].rows : lr->blocks[b].cols;
    for (size_t r = 0; r < R; r++) {
      float *col = p + r * rows;
      /* Twice: one pass leaves what rounding kept of the earlier columns,
       * which is as large as what is left when col nearly lies in their
       * span; the second removes it ("twice is enough"). */
      for (int pass = 0; pass < 2; pass++)
        for (size_t s = 0; s < r; s++) {
          const float *done = p + s * rows;
          const double d = dot(done, col, rows);
          for (size_t i = 0; i < rows; i++)
            col[i] = (float)((double)col[i] - d * (double)done[i]);
        }
      const double norm = sqrt(dot(col, col, rows));
      for (size_t i = 0; i < rows; i++)
        col[i] = norm > 0.0 ? (float)((double)col[i] / norm) : 0.0f;
    }
    p += R * rows;
  }
}

void qgm__lowrank_times_p(qgm__lowrank_t *lr, const float *m, const float *p,
                          float *q) {
  const size_t R = (size_t)lr->rank;
  for (size_t b = 0; b < lr->nblocks; b++) {
    const size_t rows = lr->blocks[b].rows, cols = lr->blocks[b].cols;
    const float *mb = m + lr->blocks[b].at;
    double *acc = lr->acc;
    memset(acc, 0, R * cols * sizeof *acc);
    for (size_t i = 0; i < rows; i++) {
      const float *row = mb + i * cols;
      for (size_t r = 0; r < R; r++) {
        const double pr = (double)p[r * rows + i];
        double *ar = acc + r * cols;
        for (size_t j = 0; j < cols; j++)
          ar[j] += (double)row[j] * pr;
      }
    }
    for (size_t k = 0; k < R * cols; k++)
      q[k] = (float)acc[k];
    p += R * rows;
    q += R * cols;
  }
}

void qgm__lowrank_add(const qgm__lowrank_t *lr, const float *p,
                      const float *q, float *out) {
  const size_t R = (size_t)lr->rank;
  for (size_t b = 0; b < lr->nblocks; b++) {
    const size_t rows = lr->blocks[b].rows, cols = lr->blocks[b].cols;
    float *ob = out + lr->blocks[b].at;
    double *acc = lr->acc;
    for (size_t i = 0; i < rows; i++) {
      memset(acc, 0, cols * sizeof *acc);
      for (size_t r = 0; r < R; r++) {
        const double pr = (double)p[r * rows + i];
        const float *qr = q + r * cols;
        for (size_t j = 0; j < cols; j++)
          acc[j] += pr * (double)qr[j];
      }
      float *row = ob + i * cols;
      for (size_t j = 0; j < cols; j++)
        row[j] = (float)((double)row[j] + acc[j]);
    }
    p += R * rows;
    q += R * cols;
  }
}

/* Run b (0 .. nblocks) of the coordinates outside the blocks: those
 * before block b, or after the last one. */
static void run(const qgm__lowrank_t *lr, size_t b, size_t *at,
                size_t *len) {
  const qgm_matrix_block_t *before = b > 0 ? &lr->blocks[b - 1] : NULL;
  const size_t start = before ? before->at + before->rows * before->cols : 0;
  *at = start;
  *len = (b < lr->nblocks ? lr->blocks[b].at : lr->n) - start;
}

void qgm__lowrank_gather(const qgm__lowrank_t *lr, const float *v,
                         float *out) {
  for (size_t b = 0, k = 0; b <= lr->nblocks; b++) {
    size_t at, len;
    run(lr, b, &at, &len);
    memcpy(out + k, v + at, len * sizeof *v);
    k += len;
  }
}

void qgm__lowrank_scatter(const qgm__lowrank_t *lr, const float *in,
                          float *v) {
  for (size_t b = 0, k = 0; b <= lr->nblocks; b++) {
    size_t at, len;
    run(lr, b, &at, &len);
    memcpy(v + at, in + k, len * sizeof *v);
    k += len;
  }
}
