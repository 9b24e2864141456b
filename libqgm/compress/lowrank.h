/* lowrank.h - the rank-R arithmetic PowerSGD's two forms share (its
 * all-reduce, powersgd.c, and PowerGossip, powergossip.c); not
 * installed.
 *
 * A vector of n floats holds weight matrices (blocks, row-major) and
 * other coordinates. For each block b of rows x cols and rank R, P_b is
 * R columns of rows floats and Q_b R columns of cols floats, one after the
 * other; the P (Q) of all blocks lie back to back in block order, p_len
 * (q_len) floats in all. Every product sums in double, in a fixed order,
 * so one input gives the same bits everywhere. */
#ifndef QGM_LOWRANK_H
#define QGM_LOWRANK_H

#include <stddef.h>

#include "qgm.h"

typedef struct qgm__lowrank {
  size_t n;
  int rank;
  size_t nblocks;
  qgm_matrix_block_t *blocks;
  size_t p_len, q_len;
  size_t others; /* coordinates outside every block */
  double *acc;   /* scratch: R x (the widest block's cols) */
} qgm__lowrank_t;

/* QGM_EINVAL unless the blocks rise, are disjoint, lie inside n and
 * each has rank <= min(rows, cols). */
int qgm__lowrank_init(qgm__lowrank_t *lr, size_t n, int rank,
                      const qgm_matrix_block_t *blocks, size_t nblocks);
void qgm__lowrank_free(qgm__lowrank_t *lr);
/* The same warm start on every holder: q_len (first_p: p_len) normal
 * draws of a fixed seed. */
void qgm__lowrank_first_q(const qgm__lowrank_t *lr, float *q);
void qgm__lowrank_first_p(const qgm__lowrank_t *lr, float *p);
/* p = M_b q_b for every block of m. */
void qgm__lowrank_times_q(qgm__lowrank_t *lr, const float *m, const float *q,
                          float *p);
/* Each block's R columns of p made orthonormal by Gram-Schmidt, in order
 * (a column with nothing left after the ones before it becomes 0). */
void qgm__lowrank_orthonormalise(const qgm__lowrank_t *lr, float *p);
/* The same for a P-shaped side (rows: R columns of rows per block) or a
 * Q-shaped one (R columns of cols). */
void qgm__lowrank_orthonormalise_side(const qgm__lowrank_t *lr, float *v,
                                      int rows);
/* q = M_b^T p_b for every block of m. */
void qgm__lowrank_times_p(qgm__lowrank_t *lr, const float *m, const float *p,
                          float *q);
/* out_b += P_b Q_b^T on every block (out's other coordinates untouched). */
void qgm__lowrank_add(const qgm__lowrank_t *lr, const float *p,
                      const float *q, float *out);
/* Copies the coordinates outside the blocks, in rising order, from v to
 * out (gather) or from in to v (scatter). */
void qgm__lowrank_gather(const qgm__lowrank_t *lr, const float *v,
                         float *out);
void qgm__lowrank_scatter(const qgm__lowrank_t *lr, const float *in,
                          float *v);

#endif /* QGM_LOWRANK_H */
