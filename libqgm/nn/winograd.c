/* winograd.c - 3x3 stride-1 convolutions as Winograd F(4x4, 3x3) (Lavin and
 * Gray, "Fast Algorithms for Convolutional Neural Networks", 2016), on the
 * interpolation points 0, 1, -1, 2, -2 and infinity.
 *
 * Every 4x4 block of output pixels ("tile") reads a 6x6 window of the
 * padded input d. With U = G g G^T (6x6 per pair of channels) and V = B^T d
 * B (6x6 per tile and input channel), the tile is Y = A^T M A with M = sum
 * over input channels of U (.) V, elementwise. Taken apart by the 36
 * positions xi of the 6x6 matrices, M[xi] = U[xi] * V[xi] is a matrix
 * product (cout x cin) * (cin x tiles): 36 products per 16 output pixels
 * and channel pair, 2.25 per pixel where the direct convolution needs 9.
 * (F(2x2, 3x3) needs 4 per pixel and moves 4 transformed values per
 * pixel and channel through memory where this moves 2.25.)
 *
 * The backward pass is the exact gradient of that computation: dM = A dY
 * A^T per tile; the weight gradient dU[xi] = dM[xi] * V[xi]^T, dg = G^T dU
 * G; the input gradient dV[xi] = U[xi]^T * dM[xi], dd = B dV B^T added
 * back onto the overlapping windows. The results differ from the direct
 * convolution's by rounding only, but more than F(2x2, 3x3)'s: the
 * transforms scale values by up to 8 and mix values of different
 * magnitude (test/unit_layers.c and test/unit_cnn.c give the tolerances).
 *
 * This file plans the chunks and runs the products with the kernel the
 * plan gives these convolutions (any but BLIS: V and U are written in the
 * kernel's packed layouts); the transforms are in winograd_avx2.c, built
 * for AVX2, which every CPU with a kernel has. */
#include "nn/winograd.h"

#include <string.h>

#include "nn/gemm.h"


/* The buffers of a chunk, carved from the scratch in this order. The
 * transforms read or write all 36 positions of a window at once: 36
 * streams one matrix apart, which for power-of-two sizes would all fall
 * into the same cache sets. So the matrices of V and M lie vs and ms
 * floats apart, two cache lines more than they take. */
typedef struct wino_bufs {
  float *u, *du;  /* 36 x cout x cin */
  float *pu;      /* U, or U^T, packed for the products (pu_floats each) */
  float *v, *dv;  /* 36 matrices of cin x t_round, vs apart */
  float *m;       /* 36 matrices of cout x t_round (M, or dM), ms apart */
  float *padded;  /* per_chunk padded planes of cin channels, and slack */
  size_t vs, ms, pu_floats;
} wino_bufs_t;

enum { XI_SKEW = 32 };   /* floats: two 64-byte lines */
enum { CHUNK_FLOATS = 1 << 18 }; /* a chunk's V, dV, M and planes */

/* A sample's share of a chunk: V, dV and M of its tiles, and its padded
 * planes. */
static size_t per_sample_floats(const qgm__conv_t *cv, size_t tiles,
                                size_t chan) {
  return QGM__WINO_XI * tiles * (2 * cv->cin + cv->cout) + cv->cin * chan;
}

static qgm__wino_geom_t geometry(const qgm__conv_t *cv) {
  qgm__wino_geom_t g;
  g.th = (cv->oh + QGM__WINO_M - 1) / QGM__WINO_M;
  g.tw = (cv->ow + QGM__WINO_M - 1) / QGM__WINO_M;
  g.tiles = g.th * g.tw;
  g.ph = QGM__WINO_M * g.th + 2;
  g.pw = QGM__WINO_M * g.tw + 2;
  g.chan = g.ph * g.pw;
  size_t per = per_sample_floats(cv, g.tiles, g.chan);
  g.per_chunk = per > CHUNK_FLOATS ? 1 : CHUNK_FLOATS / per;
  /* The products compute every column up to t_round and drop those past
   * the tiles: 4 of 32 for 7 samples of 4 tiles, and a batch of 64 then
   * ends on a chunk of one sample, 28 columns of 32 dropped. So the chunk
   * grows to a whole number of slivers where a third more samples do. */
  size_t step = 1; /* the fewest samples whose tiles fill whole slivers */
  while (step * g.tiles % QGM__WINO_ROUND != 0)
    step++;
  size_t whole = (g.per_chunk + step - 1) / step * step;
  if (3 * whole <= 4 * g.per_chunk)
    g.per_chunk = whole;
  g.t_round = qgm__winograd_round(g.per_chunk * g.tiles);
  return g;
}

int qgm__winograd_fits(const qgm__conv_t *cv) {
  /* Narrow layers (an RGB stem) leave the 36 products too short to pay
   * for the transforms. */
  return cv->k == 3 && cv->stride == 1 && cv->pad == 1 && cv->cin >= 8 &&
         cv->cout >= 8;
}

/* A packed U[xi] or U[xi]^T: its rows rounded up to any kernel's mr. */
static size_t packed_u_floats(const qgm__conv_t *cv) {
  size_t a = (cv->cout + QGM__GEMM_MR_MAX) * cv->cin,
         b = (cv->cin + QGM__GEMM_MR_MAX) * cv->cout;
  return a > b ? a : b;
}

size_t qgm__winograd_scratch_floats(const qgm__conv_t *cv) {
  qgm__wino_geom_t g = geometry(cv);
  return 2 * QGM__WINO_XI * cv->cout * cv->cin +
         QGM__WINO_XI * packed_u_floats(cv) +
         QGM__WINO_XI * (g.t_round * (2 * cv->cin + cv->cout) + 3 * XI_SKEW) +
         g.per_chunk * cv->cin * g.chan + QGM__WINO_PAD_SLACK;
}

static wino_bufs_t carve(const qgm__conv_t *cv, const qgm__wino_geom_t *g,
                         float *scratch) {
  wino_bufs_t b;
  b.u = scratch;
  b.du = b.u + QGM__WINO_XI * cv->cout * cv->cin;
  b.vs = cv->cin * g->t_round + XI_SKEW;
  b.ms = cv->cout * g->t_round + XI_SKEW;
  b.pu_floats = packed_u_floats(cv);
  b.pu = b.du + QGM__WINO_XI * cv->cout * cv->cin;
  b.v = b.pu + QGM__WINO_XI * b.pu_floats;
  b.dv = b.v + QGM__WINO_XI * b.vs;
  b.m = b.dv + QGM__WINO_XI * b.vs;
  b.padded = b.m + QGM__WINO_XI * b.ms;
  return b;
}

void qgm__winograd_forward(const qgm__conv_t *cv, const float *w,
                          qgm__maps_t in, size_t n, float *out, float *scratch,
                          float *pack) {
  const qgm__wino_geom_t g = geometry(cv);
  const wino_bufs_t b = carve(cv, &g, scratch);
  const size_t pairs = cv->cout * cv->cin;
  qgm__winograd_weights(cv, w, b.u);
  for (size_t xi = 0; xi < QGM__WINO_XI; xi++)
    qgm__gemm_pack_a(cv->cout, cv->cin, b.u + xi * pairs, (ptrdiff_t)cv->cin,
                    1, qgm__gemm_mr(), b.pu + xi * b.pu_floats);
  for (size_t s0 = 0; s0 < n; s0 += g.per_chunk) {
    size_t ns = n - s0 < g.per_chunk ? n - s0 : g.per_chunk;
    size_t t = ns * g.tiles;
    qgm__winograd_pad(cv, &g, in, s0, ns, b.padded);
    /* Both operands straight into the kernel's packed layouts: U once per
     * call, V by the transform. */
    qgm__winograd_input(cv, &g, ns, b.padded, b.v, b.vs, qgm__gemm_nr());
    for (size_t xi = 0; xi < QGM__WINO_XI; xi++)
      qgm__gemm_packed_a(cv->cout, t, cv->cin, b.pu + xi * b.pu_floats, NULL,
                        0, 0, b.v + xi * b.vs, QGM__GEMM_SET, b.m + xi * b.ms,
                        g.t_round, pack);
    qgm__winograd_output(cv, &g, n, s0, ns, b.m, b.ms, out);
  }
}

/* dU[xi] (+)= dM[xi] * V[xi]^T, k = the chunk's tiles (ld apart in both).
 * The packed kernel transposes both operands into its slivers, which pays
 * where the result fills them; a result narrower than the kernel's sliver
 * (16 input channels on the 32-wide AVX-512 tile) would be half discarded
 * columns, so there the dot-product tiles read the rows in place instead
 * (resnet20-gn's 16-channel layers: their backward pass 33 -> 27 ms a
 * step on the Intel Xeon, docs/PERFORMANCE-LOG.md). */
static void weight_grad_product(const qgm__conv_t *cv, size_t t,
                                const float *dm, const float *v, size_t ld,
                                qgm__gemm_mode_t mode, float *du,
                                float *pack) {
  if (cv->cin < qgm__gemm_nr())
    qgm__gemm_nt(cv->cout, cv->cin, t, dm, ld, v, ld, mode, du, cv->cin);
  else
    qgm__gemm(cv->cout, cv->cin, t, dm, (ptrdiff_t)ld, 1, v, 1, (ptrdiff_t)ld,
             mode, du, cv->cin, pack);
}

void qgm__winograd_backward(const qgm__conv_t *cv, const float *w,
                           qgm__maps_t in, size_t n, const float *dout,
                           float *dw, float *dx, float *scratch, float *pack) {
  const qgm__wino_geom_t g = geometry(cv);
  const wino_bufs_t b = carve(cv, &g, scratch);
  const size_t pairs = cv->cout * cv->cin;
  const ptrdiff_t ld = (ptrdiff_t)g.t_round; /* of dM's rows */
  qgm__winograd_weights(cv, w, b.u);
  if (dx)
    for (size_t xi = 0; xi < QGM__WINO_XI; xi++)
      qgm__gemm_pack_a(cv->cin, cv->cout, b.u + xi * pairs, 1,
                      (ptrdiff_t)cv->cin, qgm__gemm_mr(),
                      b.pu + xi * b.pu_floats);
  for (size_t s0 = 0; s0 < n; s0 += g.per_chunk) {
    size_t ns = n - s0 < g.per_chunk ? n - s0 : g.per_chunk;
    size_t t = ns * g.tiles;
    qgm__winograd_pad(cv, &g, in, s0, ns, b.padded);
    qgm__winograd_input(cv, &g, ns, b.padded, b.v, b.vs, g.t_round);
    qgm__winograd_output_grad(cv, &g, n, s0, ns, dout, b.m, b.ms);
    for (size_t xi = 0; xi < QGM__WINO_XI; xi++) {
      const float *dm = b.m + xi * b.ms;
      weight_grad_product(cv, t, dm, b.v + xi * b.vs, g.t_round,
                          s0 == 0 ? QGM__GEMM_SET : QGM__GEMM_ADD,
                          b.du + xi * pairs, pack);
      if (dx) /* dV[xi] = U[xi]^T * dM[xi] */
        qgm__gemm_packed_a(cv->cin, t, cv->cout, b.pu + xi * b.pu_floats, dm,
                          ld, 1, NULL, QGM__GEMM_SET, b.dv + xi * b.vs,
                          g.t_round, pack);
    }
    if (dx)
      qgm__winograd_input_grad(cv, &g, n, s0, ns, b.dv, b.vs, b.padded, dx);
  }
  qgm__winograd_weight_grad(cv, b.du, dw);
}
