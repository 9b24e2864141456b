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
 * Built with -mavx2 -mfma like gemm_avx2.c (the transforms are loops gcc
 * vectorises over the tiles of a row) and only called when the AVX2
 * kernel is the one in use (conv.c). The AVX-512 kernel keeps the direct
 * convolution. */
#include "nn/winograd.h"

#include <string.h>

#include "nn/gemm.h"

enum { XI = 16 }; /* positions of a transformed 4x4 window */

typedef struct wino_geom {
  size_t th, tw, tiles; /* tiles per sample: th x tw */
  size_t ph, pw, chan;  /* a padded plane: 2 th + 2 by 2 tw + 2 */
  size_t per_chunk;     /* samples per chunk */
} wino_geom_t;

/* The buffers of a chunk, carved from the scratch in this order. The
 * transforms read or write all sixteen positions of a window at once: 16
 * streams one matrix apart, which for power-of-two sizes would all fall
 * into the same cache sets. So the matrices of V and M lie vs and ms
 * floats apart, two cache lines more than they take. */
typedef struct wino_bufs {
  float *u, *du;  /* XI x cout x cin */
  float *v, *dv;  /* XI matrices of cin x tiles of the chunk, vs apart */
  float *m;       /* XI matrices of cout x tiles (M, or dM), ms apart */
  float *padded;  /* per_chunk padded planes of cin channels */
  size_t vs, ms;
} wino_bufs_t;

enum { XI_SKEW = 32 }; /* floats: two 64-byte lines */
enum { SLIVER_MAX = 32 }; /* the widest kernel's nr: V's rounding */

static size_t per_sample_floats(const qgm_conv_t *cv, const wino_geom_t *g) {
  return XI * g->tiles * (2 * cv->cin + cv->cout) + cv->cin * g->chan;
}

static wino_geom_t geometry(const qgm_conv_t *cv) {
  wino_geom_t g;
  g.th = (cv->oh + 1) / 2;
  g.tw = (cv->ow + 1) / 2;
  g.tiles = g.th * g.tw;
  g.ph = 2 * g.th + 2;
  g.pw = 2 * g.tw + 2;
  g.chan = g.ph * g.pw;
  size_t per = per_sample_floats(cv, &g);
  g.per_chunk = per > QGM_CONV_COL_FLOATS ? 1 : QGM_CONV_COL_FLOATS / per;
  return g;
}

int qgm_winograd_fits(const qgm_conv_t *cv) {
  /* Narrow layers (an RGB stem) leave the 16 products too short to pay
   * for the transforms. */
  return cv->k == 3 && cv->stride == 1 && cv->pad == 1 && cv->cin >= 8 &&
         cv->cout >= 8;
}

size_t qgm_winograd_scratch_floats(const qgm_conv_t *cv) {
  wino_geom_t g = geometry(cv);
  return 2 * XI * cv->cout * cv->cin + g.per_chunk * per_sample_floats(cv, &g) +
         XI * (2 * cv->cin * SLIVER_MAX + 3 * XI_SKEW);
}

static wino_bufs_t carve(const qgm_conv_t *cv, const wino_geom_t *g,
                         float *scratch) {
  const size_t t = g->per_chunk * g->tiles;
  wino_bufs_t b;
  b.u = scratch;
  b.du = b.u + XI * cv->cout * cv->cin;
  b.vs = cv->cin * ((t + SLIVER_MAX - 1) / SLIVER_MAX * SLIVER_MAX) + XI_SKEW;
  b.ms = cv->cout * t + XI_SKEW;
  b.v = b.du + XI * cv->cout * cv->cin;
  b.dv = b.v + XI * b.vs;
  b.m = b.dv + XI * b.vs;
  b.padded = b.m + XI * b.ms;
  return b;
}

/* U[xi][co][ci] = (G g G^T)[xi] for every kernel g = w[co][ci]. */
static void transform_weights(const qgm_conv_t *cv, const float *w,
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
    for (int xi = 0; xi < XI; xi++)
      u[xi * pairs + p] = r[xi / 4][xi % 4];
  }
}

/* dw[co][ci] = G^T dU G: the gradient of transform_weights. */
static void untransform_weight_grad(const qgm_conv_t *cv, const float *du,
                                    float *dw) {
  const size_t pairs = cv->cout * cv->cin;
  for (size_t p = 0; p < pairs; p++) {
    float d[4][4], t[3][4];
    for (int xi = 0; xi < XI; xi++)
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
static void pad_chunk(const qgm_conv_t *cv, const wino_geom_t *g,
                      qgm_maps_t in, size_t s0, size_t ns, float *padded) {
  memset(padded, 0, ns * cv->cin * g->chan * sizeof *padded);
  for (size_t s = 0; s < ns; s++)
    for (size_t c = 0; c < cv->cin; c++)
      for (size_t y = 0; y < cv->h; y++)
        memcpy(padded + (s * cv->cin + c) * g->chan + (y + 1) * g->pw + 1,
               in.x + (s0 + s) * in.sn + c * in.sc + y * cv->w,
               cv->w * sizeof *padded);
}

/* V[xi] = (B^T d B)[xi] for the window of every tile t of the chunk (t =
 * sample * tiles + ty * tw + tx) and channel c, as a cin x t_all matrix
 * at v + xi * stride stored in slivers of `width` columns, as conv.c's
 * gather stores its columns: (c, t) at (t / width) * cin * width + c *
 * width + t % width. width = t_all is a plain row-major matrix; width =
 * qgm_gemm_nr() is the GEMM's packed B layout (the last sliver's columns
 * past t_all are zero). */
static void transform_input(const qgm_conv_t *cv, const wino_geom_t *g,
                            size_t ns, const float *padded, float *v,
                            size_t stride, size_t width) {
  const size_t t_all = ns * g->tiles, cin = cv->cin;
  for (size_t s = 0; s < ns; s++)
    for (size_t c = 0; c < cin; c++) {
      const float *plane = padded + (s * cin + c) * g->chan;
      size_t t = s * g->tiles, q = t / width, r = t % width;
      for (size_t ty = 0; ty < g->th; ty++) {
        const float *d0 = plane + 2 * ty * g->pw, *d1 = d0 + g->pw,
                    *d2 = d1 + g->pw, *d3 = d2 + g->pw;
        for (size_t tx = 0; tx < g->tw; tx++) {
          float t4[4][4];
          for (int j = 0; j < 4; j++) {
            size_t x = 2 * tx + (size_t)j;
            t4[0][j] = d0[x] - d2[x];
            t4[1][j] = d1[x] + d2[x];
            t4[2][j] = d2[x] - d1[x];
            t4[3][j] = d1[x] - d3[x];
          }
          float *vt = v + q * cin * width + c * width + r;
          for (int i = 0; i < 4; i++) {
            vt[(4 * i + 0) * stride] = t4[i][0] - t4[i][2];
            vt[(4 * i + 1) * stride] = t4[i][1] + t4[i][2];
            vt[(4 * i + 2) * stride] = t4[i][2] - t4[i][1];
            vt[(4 * i + 3) * stride] = t4[i][1] - t4[i][3];
          }
          if (++r == width) {
            r = 0;
            q++;
          }
        }
      }
    }
  size_t tail = t_all % width;
  if (tail)
    for (size_t xi = 0; xi < XI; xi++)
      for (size_t c = 0; c < cin; c++)
        memset(v + xi * stride + t_all / width * cin * width + c * width + tail,
               0, (width - tail) * sizeof *v);
}

/* out (CNHW) = A^T M A for every tile and output channel, inside the
 * output maps. */
static void transform_output(const qgm_conv_t *cv, const wino_geom_t *g,
                             size_t n, size_t s0, size_t ns, const float *m,
                             size_t stride, float *out) {
  const size_t t_all = ns * g->tiles;
  const size_t ohw = cv->oh * cv->ow;
  for (size_t co = 0; co < cv->cout; co++)
    for (size_t s = 0; s < ns; s++) {
      float *o = out + (co * n + s0 + s) * ohw;
      const float *mc = m + co * t_all + s * g->tiles;
      for (size_t ty = 0; ty < g->th; ty++)
        for (size_t tx = 0; tx < g->tw; tx++) {
          const float *mt = mc + ty * g->tw + tx;
          float r[2][4], y[2][2];
          for (int j = 0; j < 4; j++) {
            float m0 = mt[j * stride], m1 = mt[(4 + j) * stride],
                  m2 = mt[(8 + j) * stride], m3 = mt[(12 + j) * stride];
            r[0][j] = m0 + m1 + m2;
            r[1][j] = m1 - m2 - m3;
          }
          for (int a = 0; a < 2; a++) {
            y[a][0] = r[a][0] + r[a][1] + r[a][2];
            y[a][1] = r[a][1] - r[a][2] - r[a][3];
          }
          for (size_t a = 0; a < 2 && 2 * ty + a < cv->oh; a++)
            for (size_t b = 0; b < 2 && 2 * tx + b < cv->ow; b++)
              o[(2 * ty + a) * cv->ow + 2 * tx + b] = y[a][b];
        }
    }
}

/* dM = A dY A^T per tile: the gradient of transform_output (pixels past
 * the output maps have no gradient). */
static void transform_output_grad(const qgm_conv_t *cv, const wino_geom_t *g,
                                  size_t n, size_t s0, size_t ns,
                                  const float *dout, float *dm,
                                  size_t stride) {
  const size_t t_all = ns * g->tiles;
  const size_t ohw = cv->oh * cv->ow;
  for (size_t co = 0; co < cv->cout; co++)
    for (size_t s = 0; s < ns; s++) {
      const float *d = dout + (co * n + s0 + s) * ohw;
      float *mc = dm + co * t_all + s * g->tiles;
      for (size_t ty = 0; ty < g->th; ty++)
        for (size_t tx = 0; tx < g->tw; tx++) {
          float y[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}}, e[4][2];
          for (size_t a = 0; a < 2 && 2 * ty + a < cv->oh; a++)
            for (size_t b = 0; b < 2 && 2 * tx + b < cv->ow; b++)
              y[a][b] = d[(2 * ty + a) * cv->ow + 2 * tx + b];
          for (int b = 0; b < 2; b++) {
            e[0][b] = y[0][b];
            e[1][b] = y[0][b] + y[1][b];
            e[2][b] = y[0][b] - y[1][b];
            e[3][b] = -y[1][b];
          }
          float *mt = mc + ty * g->tw + tx;
          for (int i = 0; i < 4; i++) {
            mt[(4 * i + 0) * stride] = e[i][0];
            mt[(4 * i + 1) * stride] = e[i][0] + e[i][1];
            mt[(4 * i + 2) * stride] = e[i][0] - e[i][1];
            mt[(4 * i + 3) * stride] = -e[i][1];
          }
        }
    }
}

/* dd = B dV B^T per tile and channel, added onto the window's place in
 * the zeroed padded planes; their interiors are then dx (CNHW). */
static void transform_input_grad(const qgm_conv_t *cv, const wino_geom_t *g,
                                 size_t n, size_t s0, size_t ns,
                                 const float *dv, size_t stride,
                                 float *padded, float *dx) {
  const size_t t_all = ns * g->tiles;
  const size_t hw = cv->h * cv->w;
  memset(padded, 0, ns * cv->cin * g->chan * sizeof *padded);
  for (size_t s = 0; s < ns; s++)
    for (size_t c = 0; c < cv->cin; c++) {
      float *plane = padded + (s * cv->cin + c) * g->chan;
      const float *vc = dv + c * t_all + s * g->tiles;
      for (size_t ty = 0; ty < g->th; ty++)
        for (size_t tx = 0; tx < g->tw; tx++) {
          const float *vt = vc + ty * g->tw + tx;
          float r[4][4];
          for (int j = 0; j < 4; j++) {
            float v0 = vt[j * stride], v1 = vt[(4 + j) * stride],
                  v2 = vt[(8 + j) * stride], v3 = vt[(12 + j) * stride];
            r[0][j] = v0;
            r[1][j] = v1 - v2 + v3;
            r[2][j] = v1 + v2 - v0;
            r[3][j] = -v3;
          }
          float *d = plane + 2 * ty * g->pw + 2 * tx;
          for (int i = 0; i < 4; i++, d += g->pw) {
            d[0] += r[i][0];
            d[1] += r[i][1] - r[i][2] + r[i][3];
            d[2] += r[i][1] + r[i][2] - r[i][0];
            d[3] -= r[i][3];
          }
        }
      for (size_t y = 0; y < cv->h; y++)
        memcpy(dx + (c * n + s0 + s) * hw + y * cv->w,
               plane + (y + 1) * g->pw + 1, cv->w * sizeof *dx);
    }
}

void qgm_winograd_forward(const qgm_conv_t *cv, const float *w,
                          qgm_maps_t in, size_t n, float *out, float *scratch,
                          float *pack) {
  const wino_geom_t g = geometry(cv);
  const wino_bufs_t b = carve(cv, &g, scratch);
  const size_t nr = qgm_gemm_nr(); /* not 0: the AVX2 kernel is in use */
  transform_weights(cv, w, b.u);
  for (size_t s0 = 0; s0 < n; s0 += g.per_chunk) {
    size_t ns = n - s0 < g.per_chunk ? n - s0 : g.per_chunk;
    size_t t = ns * g.tiles;
    pad_chunk(cv, &g, in, s0, ns, b.padded);
    /* Straight into the kernel's packed layout: the products pack only
     * the small U. */
    transform_input(cv, &g, ns, b.padded, b.v, b.vs, nr);
    for (size_t xi = 0; xi < XI; xi++)
      qgm_gemm_packed_b(cv->cout, t, cv->cin, b.u + xi * cv->cout * cv->cin,
                        (ptrdiff_t)cv->cin, 1, b.v + xi * b.vs, QGM_GEMM_SET,
                        b.m + xi * b.ms, t, pack);
    transform_output(cv, &g, n, s0, ns, b.m, b.ms, out);
  }
}

void qgm_winograd_backward(const qgm_conv_t *cv, const float *w,
                           qgm_maps_t in, size_t n, const float *dout,
                           float *dw, float *dx, float *scratch, float *pack) {
  const wino_geom_t g = geometry(cv);
  const wino_bufs_t b = carve(cv, &g, scratch);
  const size_t pairs = cv->cout * cv->cin;
  transform_weights(cv, w, b.u);
  for (size_t s0 = 0; s0 < n; s0 += g.per_chunk) {
    size_t ns = n - s0 < g.per_chunk ? n - s0 : g.per_chunk;
    size_t t = ns * g.tiles;
    pad_chunk(cv, &g, in, s0, ns, b.padded);
    transform_input(cv, &g, ns, b.padded, b.v, b.vs, t);
    transform_output_grad(cv, &g, n, s0, ns, dout, b.m, b.ms);
    for (size_t xi = 0; xi < XI; xi++) {
      const float *dm = b.m + xi * b.ms;
      /* dU[xi] (+)= dM[xi] * V[xi]^T: both rows run along the tiles. */
      qgm_gemm_nt(cv->cout, cv->cin, t, dm, t, b.v + xi * b.vs, t,
                  s0 == 0 ? QGM_GEMM_SET : QGM_GEMM_ADD, b.du + xi * pairs,
                  cv->cin);
      if (dx)
        qgm_gemm(cv->cin, t, cv->cout, b.u + xi * pairs, 1,
                 (ptrdiff_t)cv->cin, dm, (ptrdiff_t)t, 1, QGM_GEMM_SET,
                 b.dv + xi * b.vs, t, pack);
    }
    if (dx)
      transform_input_grad(cv, &g, n, s0, ns, b.dv, b.vs, b.padded, dx);
  }
  untransform_weight_grad(cv, b.du, dw);
}
