/* winograd.c - 3x3 stride-1 convolutions as Winograd F(2x2, 3x3) (Lavin and
 * Gray, "Fast Algorithms for Convolutional Neural Networks", 2016).
 *
 * Every 2x2 block of output pixels ("tile") reads a 4x4 window of the
 * padded input d. With U = G g G^T (4x4 per pair of channels) and V = B^T d
 * B (4x4 per tile and input channel), the tile is Y = A^T M A with M =
 * sum over input channels of U (.) V, elementwise. Taken apart by the
 * sixteen positions xi of the 4x4 matrices, M[xi] = U[xi] * V[xi] is a
 * matrix product (cout x cin) * (cin x tiles): 16 products of 4 multiplies
 * per output pixel and channel pair, where the direct convolution needs 9,
 * a 2.25-fold saving for 32 adds per window in the transforms.
 *
 * The backward pass is the exact gradient of that computation: dM = A dY
 * A^T per tile; the weight gradient dU[xi] = dM[xi] * V[xi]^T, dg = G^T dU
 * G; the input gradient dV[xi] = U[xi]^T * dM[xi], dd = B dV B^T added
 * back onto the overlapping windows. The results differ from the direct
 * convolution's by rounding only (the transforms mix values of different
 * magnitude: see test/unit_layers.c for the tolerance).
 *
 * This file plans the chunks and runs the products; the transforms, loops
 * gcc vectorises, are in winograd_avx2.c, built for AVX2. Both are only
 * called when the AVX2 kernel is the one in use (conv.c); the AVX-512
 * kernel keeps the direct convolution. */
#include "nn/winograd.h"

#include <string.h>

#include "nn/gemm.h"


/* The buffers of a chunk, carved from the scratch in this order. The
 * transforms read or write all sixteen positions of a window at once: 16
 * streams one matrix apart, which for power-of-two sizes would all fall
 * into the same cache sets. So the matrices of V and M lie vs and ms
 * floats apart, two cache lines more than they take. */
typedef struct wino_bufs {
  float *u, *du;  /* 16 x cout x cin */
  float *v, *dv;  /* 16 matrices of cin x tiles of the chunk, vs apart */
  float *m;       /* 16 matrices of cout x tiles (M, or dM), ms apart */
  float *padded;  /* per_chunk padded planes of cin channels */
  size_t vs, ms;
} wino_bufs_t;

enum { XI_SKEW = 32 }; /* floats: two 64-byte lines */
enum { SLIVER_MAX = 32 }; /* the widest kernel's nr: V's rounding */

/* A sample's share of a chunk: V, dV and M of its tiles, and its padded
 * planes. */
static size_t per_sample_floats(const qgm__conv_t *cv, size_t tiles,
                                size_t chan) {
  return QGM__WINO_XI * tiles * (2 * cv->cin + cv->cout) + cv->cin * chan;
}

static qgm__wino_geom_t geometry(const qgm__conv_t *cv) {
  qgm__wino_geom_t g;
  g.th = (cv->oh + 1) / 2;
  g.tw = (cv->ow + 1) / 2;
  g.tiles = g.th * g.tw;
  g.ph = 2 * g.th + 2;
  g.pw = 2 * g.tw + 2;
  g.chan = g.ph * g.pw;
  size_t per = per_sample_floats(cv, g.tiles, g.chan);
  g.per_chunk = per > QGM__CONV_COL_FLOATS ? 1 : QGM__CONV_COL_FLOATS / per;
  return g;
}

int qgm__winograd_fits(const qgm__conv_t *cv) {
  /* Narrow layers (an RGB stem) leave the 16 products too short to pay
   * for the transforms. */
  return cv->k == 3 && cv->stride == 1 && cv->pad == 1 && cv->cin >= 8 &&
         cv->cout >= 8;
}

size_t qgm__winograd_scratch_floats(const qgm__conv_t *cv) {
  qgm__wino_geom_t g = geometry(cv);
  return 2 * QGM__WINO_XI * cv->cout * cv->cin +
         g.per_chunk * per_sample_floats(cv, g.tiles, g.chan) +
         QGM__WINO_XI * (2 * cv->cin * SLIVER_MAX + 3 * XI_SKEW);
}

static wino_bufs_t carve(const qgm__conv_t *cv, const qgm__wino_geom_t *g,
                         float *scratch) {
  const size_t t = g->per_chunk * g->tiles;
  wino_bufs_t b;
  b.u = scratch;
  b.du = b.u + QGM__WINO_XI * cv->cout * cv->cin;
  b.vs = cv->cin * ((t + SLIVER_MAX - 1) / SLIVER_MAX * SLIVER_MAX) + XI_SKEW;
  b.ms = cv->cout * t + XI_SKEW;
  b.v = b.du + QGM__WINO_XI * cv->cout * cv->cin;
  b.dv = b.v + QGM__WINO_XI * b.vs;
  b.m = b.dv + QGM__WINO_XI * b.vs;
  b.padded = b.m + QGM__WINO_XI * b.ms;
  return b;
}

/* U[xi][co][ci] = (G g G^T)[xi] for every kernel g = w[co][ci]. */
static void transform_weights(const qgm__conv_t *cv, const float *w,
                              float *u) {
  const size_t pairs = cv->cout * cv->cin;
  for (size_t p = 0; p < pairs; p++) {
    const float *g = w + 9 * p;
    float t[4][3], r[4][4];
    for (int j = 0; j < 3; j++) {
      t[0][j] = g[j];
      t[1][j] = 0.5f * (g[j] + g[3 + j] + g[6 + j]);
      t[2][j] = 0.5f * (g[j] - g[3 + j] + g[6 + j]);
      t[3][j] = g[6 + j];
    }
    for (int i = 0; i < 4; i++) {
      r[i][0] = t[i][0];
      r[i][1] = 0.5f * (t[i][0] + t[i][1] + t[i][2]);
      r[i][2] = 0.5f * (t[i][0] - t[i][1] + t[i][2]);
      r[i][3] = t[i][2];
    }
    for (int xi = 0; xi < QGM__WINO_XI; xi++)
      u[xi * pairs + p] = r[xi / 4][xi % 4];
  }
}

/* dw[co][ci] = G^T dU G: the gradient of transform_weights. */
static void untransform_weight_grad(const qgm__conv_t *cv, const float *du,
                                    float *dw) {
  const size_t pairs = cv->cout * cv->cin;
  for (size_t p = 0; p < pairs; p++) {
    float d[4][4], t[3][4];
    for (int xi = 0; xi < QGM__WINO_XI; xi++)
      d[xi / 4][xi % 4] = du[xi * pairs + p];
    for (int j = 0; j < 4; j++) {
      t[0][j] = d[0][j] + 0.5f * (d[1][j] + d[2][j]);
      t[1][j] = 0.5f * (d[1][j] - d[2][j]);
      t[2][j] = 0.5f * (d[1][j] + d[2][j]) + d[3][j];
    }
    float *g = dw + 9 * p;
    for (int i = 0; i < 3; i++) {
      g[3 * i] = t[i][0] + 0.5f * (t[i][1] + t[i][2]);
      g[3 * i + 1] = 0.5f * (t[i][1] - t[i][2]);
      g[3 * i + 2] = 0.5f * (t[i][1] + t[i][2]) + t[i][3];
    }
  }
}

/* Samples [s0, s0 + ns) into zero-bordered planes of ph x pw, the image at
 * row 1, column 1 (the rows and columns past it, for odd sizes, stay 0). */
static void pad_chunk(const qgm__conv_t *cv, const qgm__wino_geom_t *g,
                      qgm__maps_t in, size_t s0, size_t ns, float *padded) {
  memset(padded, 0, ns * cv->cin * g->chan * sizeof *padded);
  for (size_t s = 0; s < ns; s++)
    for (size_t c = 0; c < cv->cin; c++)
      for (size_t y = 0; y < cv->h; y++)
        memcpy(padded + (s * cv->cin + c) * g->chan + (y + 1) * g->pw + 1,
               in.x + (s0 + s) * in.sn + c * in.sc + y * cv->w,
               cv->w * sizeof *padded);
}

void qgm__winograd_forward(const qgm__conv_t *cv, const float *w,
                          qgm__maps_t in, size_t n, float *out, float *scratch,
                          float *pack) {
  const qgm__wino_geom_t g = geometry(cv);
  const wino_bufs_t b = carve(cv, &g, scratch);
  const size_t nr = qgm__gemm_nr(); /* not 0: the AVX2 kernel is in use */
  transform_weights(cv, w, b.u);
  for (size_t s0 = 0; s0 < n; s0 += g.per_chunk) {
    size_t ns = n - s0 < g.per_chunk ? n - s0 : g.per_chunk;
    size_t t = ns * g.tiles;
    pad_chunk(cv, &g, in, s0, ns, b.padded);
    /* Straight into the kernel's packed layout: the products pack only
     * the small U. */
    qgm__winograd_input(cv, &g, ns, b.padded, b.v, b.vs, nr);
    for (size_t xi = 0; xi < QGM__WINO_XI; xi++)
      qgm__gemm_packed_b(cv->cout, t, cv->cin, b.u + xi * cv->cout * cv->cin,
                        (ptrdiff_t)cv->cin, 1, b.v + xi * b.vs, QGM__GEMM_SET,
                        b.m + xi * b.ms, t, pack);
    qgm__winograd_output(cv, &g, n, s0, ns, b.m, b.ms, out);
  }
}

void qgm__winograd_backward(const qgm__conv_t *cv, const float *w,
                           qgm__maps_t in, size_t n, const float *dout,
                           float *dw, float *dx, float *scratch, float *pack) {
  const qgm__wino_geom_t g = geometry(cv);
  const wino_bufs_t b = carve(cv, &g, scratch);
  const size_t pairs = cv->cout * cv->cin;
  transform_weights(cv, w, b.u);
  for (size_t s0 = 0; s0 < n; s0 += g.per_chunk) {
    size_t ns = n - s0 < g.per_chunk ? n - s0 : g.per_chunk;
    size_t t = ns * g.tiles;
    pad_chunk(cv, &g, in, s0, ns, b.padded);
    qgm__winograd_input(cv, &g, ns, b.padded, b.v, b.vs, t);
    qgm__winograd_output_grad(cv, &g, n, s0, ns, dout, b.m, b.ms);
    for (size_t xi = 0; xi < QGM__WINO_XI; xi++) {
      const float *dm = b.m + xi * b.ms;
      /* dU[xi] (+)= dM[xi] * V[xi]^T, k = the chunk's tiles. */
      qgm__gemm(cv->cout, cv->cin, t, dm, (ptrdiff_t)t, 1, b.v + xi * b.vs, 1,
               (ptrdiff_t)t, s0 == 0 ? QGM__GEMM_SET : QGM__GEMM_ADD,
               b.du + xi * pairs, cv->cin, pack);
      if (dx)
        qgm__gemm(cv->cin, t, cv->cout, b.u + xi * pairs, 1,
                 (ptrdiff_t)cv->cin, dm, (ptrdiff_t)t, 1, QGM__GEMM_SET,
                 b.dv + xi * b.vs, t, pack);
    }
    if (dx)
      qgm__winograd_input_grad(cv, &g, n, s0, ns, b.dv, b.vs, b.padded, dx);
  }
  untransform_weight_grad(cv, b.du, dw);
}
