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

/* The transforms below work on a row of tiles at a time, in blocks of
 * TX_BLOCK tiles: first along the columns, over whole rows of the window
 * (contiguous, vectorised), then along the rows, where the tiles' values
 * interleave at stride 2 (which gcc vectorises as well). */
enum { TX_BLOCK = 64 };

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
  float rows[4][2 * TX_BLOCK + 2];
  for (size_t s = 0; s < ns; s++)
    for (size_t c = 0; c < cin; c++)
      for (size_t ty = 0; ty < g->th; ty++)
        for (size_t tx0 = 0; tx0 < g->tw; tx0 += TX_BLOCK) {
          size_t nb = g->tw - tx0 < TX_BLOCK ? g->tw - tx0 : TX_BLOCK;
          const float *d0 = padded + (s * cin + c) * g->chan +
                            2 * ty * g->pw + 2 * tx0;
          const float *d1 = d0 + g->pw, *d2 = d1 + g->pw, *d3 = d2 + g->pw;
          for (size_t x = 0; x < 2 * nb + 2; x++) {
            rows[0][x] = d0[x] - d2[x];
            rows[1][x] = d1[x] + d2[x];
            rows[2][x] = d2[x] - d1[x];
            rows[3][x] = d1[x] - d3[x];
          }
          /* Tiles k.. of the block, cut where a sliver ends. */
          for (size_t k = 0; k < nb;) {
            size_t t = s * g->tiles + ty * g->tw + tx0 + k;
            size_t r = t % width, seg = width - r < nb - k ? width - r : nb - k;
            float *vt = v + t / width * cin * width + c * width + r;
            for (int i = 0; i < 4; i++) {
              const float *ri = rows[i] + 2 * k;
              float *restrict o0 = vt + (size_t)(4 * i) * stride;
              float *restrict o1 = o0 + stride, *restrict o2 = o1 + stride,
                              *restrict o3 = o2 + stride;
              for (size_t j = 0; j < seg; j++) {
                float a = ri[2 * j], b = ri[2 * j + 1], e = ri[2 * j + 2],
                      f = ri[2 * j + 3];
                o0[j] = a - e;
                o1[j] = b + e;
                o2[j] = e - b;
                o3[j] = b - f;
              }
            }
            k += seg;
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
  const size_t t_all = ns * g->tiles, ohw = cv->oh * cv->ow;
  float y[2][2][TX_BLOCK];
  for (size_t co = 0; co < cv->cout; co++)
    for (size_t s = 0; s < ns; s++)
      for (size_t ty = 0; ty < g->th; ty++)
        for (size_t tx0 = 0; tx0 < g->tw; tx0 += TX_BLOCK) {
          size_t nb = g->tw - tx0 < TX_BLOCK ? g->tw - tx0 : TX_BLOCK;
          const float *mt = m + co * t_all + s * g->tiles + ty * g->tw + tx0;
          for (size_t j = 0; j < nb; j++) {
            float r[2][4];
            for (int i = 0; i < 4; i++) {
              float m0 = mt[(size_t)i * stride + j],
                    m1 = mt[(size_t)(4 + i) * stride + j],
                    m2 = mt[(size_t)(8 + i) * stride + j],
                    m3 = mt[(size_t)(12 + i) * stride + j];
              r[0][i] = m0 + m1 + m2;
              r[1][i] = m1 - m2 - m3;
            }
            for (int a = 0; a < 2; a++) {
              y[a][0][j] = r[a][0] + r[a][1] + r[a][2];
              y[a][1][j] = r[a][1] - r[a][2] - r[a][3];
            }
          }
          /* Pixel columns 2 (tx0 + j) + b; an odd width's last tile
           * has only b = 0. */
          size_t full = cv->ow / 2 - tx0 < nb ? cv->ow / 2 - tx0 : nb;
          for (size_t a = 0; a < 2 && 2 * ty + a < cv->oh; a++) {
            float *restrict o =
                out + (co * n + s0 + s) * ohw + (2 * ty + a) * cv->ow + 2 * tx0;
            for (size_t j = 0; j < full; j++) {
              o[2 * j] = y[a][0][j];
              o[2 * j + 1] = y[a][1][j];
            }
            if (full < nb)
              o[2 * full] = y[a][0][full];
          }
        }
}

/* dM = A dY A^T per tile: the gradient of transform_output (pixels past
 * the output maps have no gradient). */
static void transform_output_grad(const qgm_conv_t *cv, const wino_geom_t *g,
                                  size_t n, size_t s0, size_t ns,
                                  const float *dout, float *dm,
                                  size_t stride) {
  const size_t t_all = ns * g->tiles, ohw = cv->oh * cv->ow;
  float y[2][2][TX_BLOCK];
  for (size_t co = 0; co < cv->cout; co++)
    for (size_t s = 0; s < ns; s++)
      for (size_t ty = 0; ty < g->th; ty++)
        for (size_t tx0 = 0; tx0 < g->tw; tx0 += TX_BLOCK) {
          size_t nb = g->tw - tx0 < TX_BLOCK ? g->tw - tx0 : TX_BLOCK;
          size_t full = cv->ow / 2 - tx0 < nb ? cv->ow / 2 - tx0 : nb;
          for (size_t a = 0; a < 2; a++) {
            if (2 * ty + a >= cv->oh) {
              memset(y[a], 0, sizeof y[a]);
              continue;
            }
            const float *restrict d = dout + (co * n + s0 + s) * ohw +
                                      (2 * ty + a) * cv->ow + 2 * tx0;
            for (size_t j = 0; j < full; j++) {
              y[a][0][j] = d[2 * j];
              y[a][1][j] = d[2 * j + 1];
            }
            if (full < nb) {
              y[a][0][full] = d[2 * full];
              y[a][1][full] = 0.0f;
            }
          }
          float *mt = dm + co * t_all + s * g->tiles + ty * g->tw + tx0;
          for (size_t j = 0; j < nb; j++) {
            float e[4][2];
            for (int b = 0; b < 2; b++) {
              e[0][b] = y[0][b][j];
              e[1][b] = y[0][b][j] + y[1][b][j];
              e[2][b] = y[0][b][j] - y[1][b][j];
              e[3][b] = -y[1][b][j];
            }
            for (int i = 0; i < 4; i++) {
              mt[(size_t)(4 * i + 0) * stride + j] = e[i][0];
              mt[(size_t)(4 * i + 1) * stride + j] = e[i][0] + e[i][1];
              mt[(size_t)(4 * i + 2) * stride + j] = e[i][0] - e[i][1];
              mt[(size_t)(4 * i + 3) * stride + j] = -e[i][1];
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
  const size_t t_all = ns * g->tiles, hw = cv->h * cv->w;
  float dd[4][4][TX_BLOCK];
  memset(padded, 0, ns * cv->cin * g->chan * sizeof *padded);
  for (size_t s = 0; s < ns; s++)
    for (size_t c = 0; c < cv->cin; c++) {
      float *plane = padded + (s * cv->cin + c) * g->chan;
      for (size_t ty = 0; ty < g->th; ty++)
        for (size_t tx0 = 0; tx0 < g->tw; tx0 += TX_BLOCK) {
          size_t nb = g->tw - tx0 < TX_BLOCK ? g->tw - tx0 : TX_BLOCK;
          const float *vt = dv + c * t_all + s * g->tiles + ty * g->tw + tx0;
          for (size_t j = 0; j < nb; j++) {
            float r[4][4];
            for (int i = 0; i < 4; i++) {
              float v0 = vt[(size_t)i * stride + j],
                    v1 = vt[(size_t)(4 + i) * stride + j],
                    v2 = vt[(size_t)(8 + i) * stride + j],
                    v3 = vt[(size_t)(12 + i) * stride + j];
              r[0][i] = v0;
              r[1][i] = v1 - v2 + v3;
              r[2][i] = v1 + v2 - v0;
              r[3][i] = -v3;
            }
            for (int k = 0; k < 4; k++) {
              dd[k][0][j] = r[k][0];
              dd[k][1][j] = r[k][1] - r[k][2] + r[k][3];
              dd[k][2][j] = r[k][1] + r[k][2] - r[k][0];
              dd[k][3][j] = -r[k][3];
            }
          }
          /* Neighbouring windows overlap by two columns: columns 0-1 and
           * 2-3 of the tiles go on in two passes, each without overlap. */
          for (size_t k = 0; k < 4; k++) {
            float *restrict p = plane + (2 * ty + k) * g->pw + 2 * tx0;
            for (size_t j = 0; j < nb; j++) {
              p[2 * j] += dd[k][0][j];
              p[2 * j + 1] += dd[k][1][j];
            }
            for (size_t j = 0; j < nb; j++) {
              p[2 * j + 2] += dd[k][2][j];
              p[2 * j + 3] += dd[k][3][j];
            }
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
