/* vec.c - the memory-bound vector kernels behind the optimizers and the
 * gossip average: plain loops the compiler vectorises (the Makefile lets
 * it for this file), one multiply and one add an element as BLIS's
 * reference level-1 does; BLIS itself picks its slow generic kernels on
 * CPUs it does not know, and FMA ones (another rounding) on some it does. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "qgm.h"

float *qgm_alloc_floats(size_t n) {
  size_t bytes = qgm__mul_size(n ? n : 1, sizeof(float));
  /* No object may exceed PTRDIFF_MAX: refuse before the allocator sees an
   * absurd size (it would fail anyway, noisily under valgrind). */
  if (bytes == 0 || bytes > PTRDIFF_MAX - 64)
    return NULL;
  bytes = (bytes + 63) & ~(size_t)63;
  return aligned_alloc(64, bytes);
}

void qgm_vec_copy(float *dst, const float *src, size_t n) {
  if (dst != src)
    memcpy(dst, src, n * sizeof(float));
}

QGM__AVX2_CLONES
void qgm_vec_axpy(float *y, float a, const float *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    y[i] += a * x[i];
}

QGM__AVX2_CLONES
void qgm_vec_scale_copy(float *y, float a, const float *x, size_t n) {
  /* In place (y == x) is allowed: each element is read before written. */
  for (size_t i = 0; i < n; i++)
    y[i] = a * x[i];
}

QGM__AVX2_CLONES
void qgm_vec_chebyshev_round(float *out, const float *t, float b,
                             const float *y, float e, const float *z,
                             size_t n) {
  /* out may be t or z: each element is read before written. */
  for (size_t i = 0; i < n; i++)
    out[i] = t[i] + b * (y[i] - t[i]) + e * (z[i] - t[i]);
}

/* qgm_vec_tree_sum sums this many floats of every vector at a time, so
 * that the partial sums of a block stay in L1; the stack holds one
 * partial sum per level of the tree (k < 2^31). */
enum { TREE_BLOCK = 256, TREE_LEVELS = 32 };

QGM__AVX2_CLONES
static void add_into(float *restrict y, const float *restrict x, size_t n) {
  for (size_t i = 0; i < n; i++)
    y[i] += x[i];
}

/* The tree is built as a binary counter: each vector is pushed as a leaf,
 * two partial sums of the same level combine as soon as both exist, and
 * what remains (the blocks cut short by k) folds from the right, which is
 * the iterative definition in qgm.h. */
void qgm_vec_tree_sum(float *out, const float *const *v, int k, size_t n) {
  float part[TREE_LEVELS][TREE_BLOCK];
  int level[TREE_LEVELS];
  for (size_t at = 0; at < n; at += TREE_BLOCK) {
    const size_t len = n - at < TREE_BLOCK ? n - at : TREE_BLOCK;
    int top = 0;
    for (int i = 0; i < k; i++) {
      memcpy(part[top], v[i] + at, len * sizeof(float));
      level[top++] = 0;
      while (top >= 2 && level[top - 1] == level[top - 2]) {
        add_into(part[top - 2], part[top - 1], len);
        level[top - 2]++;
        top--;
      }
    }
    for (; top >= 2; top--)
      add_into(part[top - 2], part[top - 1], len);
    memcpy(out + at, part[0], len * sizeof(float));
  }
}

QGM__AVX2_CLONES
void qgm_vec_mix_peer(float *mix, const float *own, float w,
                      const float *peer, size_t n) {
  float *restrict m = mix;
  const float *restrict a = own, *restrict b = peer;
  for (size_t i = 0; i < n; i++)
    m[i] += w * (b[i] - a[i]);
}

/* The gossip mixes go through memory this many floats at a time, so that
 * the k + 3 blocks a block's mix reads and writes stay in L1/L2. */
enum { MIX_BLOCK = 2048 };

/* The block [at, at + len) of the mix of base, own and peers (whole
 * vectors) into mix[0, len). */
static void mix_block(float *mix, const float *base, const float *own, int k,
                      const float *const *peers, const double *weights,
                      size_t at, size_t len) {
  qgm_vec_copy(mix, base + at, len);
  for (int j = 0; j < k; j++)
    qgm_vec_mix_peer(mix, own + at, (float)weights[j], peers[j] + at, len);
}

void qgm_vec_gossip_mix(float *mix, const float *base, const float *own,
                        int k, const float *const *peers,
                        const double *weights, size_t n) {
  for (size_t at = 0; at < n; at += MIX_BLOCK) {
    const size_t len = n - at < MIX_BLOCK ? n - at : MIX_BLOCK;
    mix_block(mix + at, base, own, k, peers, weights, at, len);
  }
}

void qgm_vec_gossip_mix_chebyshev(float *out, const float *own, int k,
                                  const float *const *peers,
                                  const double *weights, float b, float e,
                                  const float *z, size_t n) {
  float t[MIX_BLOCK];
  for (size_t at = 0; at < n; at += MIX_BLOCK) {
    const size_t len = n - at < MIX_BLOCK ? n - at : MIX_BLOCK;
    mix_block(t, own, own, k, peers, weights, at, len);
    qgm_vec_chebyshev_round(out + at, t, b, own + at, e, z + at, len);
  }
}

double qgm_vec_dist2(const float *x, const float *y, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = (double)x[i] - (double)y[i];
    sum += d * d;
  }
  return sum;
}

double qgm_vec_norm2(const float *x, size_t n) {
  double sum = 0.0;
  for (size_t i = 0; i < n; i++)
    sum += (double)x[i] * (double)x[i];
  return sum;
}
