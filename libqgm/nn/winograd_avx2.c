/* winograd_avx2.c - the transforms of Winograd F(2x2, 3x3) (winograd.c
 * has the algorithm): between a chunk's padded input maps, output maps
 * and gradients and the sixteen matrices V and M of their windows.
 *
 * Built with -mavx2 -mfma like gemm_avx2.c, because these are loops over
 * the tiles of a row that gcc vectorises, twice as wide as for SSE; only
 * called once gemm.c chose its AVX2 kernel (conv.c). */
#include <string.h>

#include "nn/winograd.h"

/* The transforms below work on a row of tiles at a time, in blocks of
 * TX_BLOCK tiles: first along the columns, over whole rows of the window
 * (contiguous, vectorised), then along the rows, where the tiles' values
 * interleave at stride 2 (which gcc vectorises as well). */
enum { TX_BLOCK = 64 };

/* The tiles of the block from tile tx0 of a row of tw. */
static size_t block_tiles(size_t tw, size_t tx0) {
  size_t left = tw - tx0;
  return left < TX_BLOCK ? left : TX_BLOCK;
}

/* V[xi] = (B^T d B)[xi] for the window of every tile t of the chunk (t =
 * sample * tiles + ty * tw + tx) and channel c, as a cin x t_all matrix
 * at v + xi * stride stored in slivers of `width` columns, as conv.c's
 * gather stores its columns: (c, t) at (t / width) * cin * width + c *
 * width + t % width. width = t_all is a plain row-major matrix; width =
 * qgm__gemm_nr() is the GEMM's packed B layout (the last sliver's columns
 * past t_all are zero). */
void qgm__winograd_input(const qgm__conv_t *cv, const qgm__wino_geom_t *g,
                        size_t ns, const float *padded, float *v,
                        size_t stride, size_t width) {
  const size_t t_all = ns * g->tiles, cin = cv->cin;
  float rows[4][2 * TX_BLOCK + 2];
  for (size_t s = 0; s < ns; s++)
    for (size_t c = 0; c < cin; c++)
      for (size_t ty = 0; ty < g->th; ty++)
        for (size_t tx0 = 0; tx0 < g->tw; tx0 += TX_BLOCK) {
          size_t nb = block_tiles(g->tw, tx0);
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
    for (size_t xi = 0; xi < QGM__WINO_XI; xi++)
      for (size_t c = 0; c < cin; c++)
        memset(v + xi * stride + t_all / width * cin * width + c * width + tail,
               0, (width - tail) * sizeof *v);
}

/* out (CNHW) = A^T M A for every tile and output channel, inside the
 * output maps. */
void qgm__winograd_output(const qgm__conv_t *cv, const qgm__wino_geom_t *g,
                         size_t n, size_t s0, size_t ns, const float *m,
                         size_t stride, float *out) {
  const size_t t_all = ns * g->tiles, ohw = cv->oh * cv->ow;
  float y[2][2][TX_BLOCK];
  for (size_t co = 0; co < cv->cout; co++)
    for (size_t s = 0; s < ns; s++)
      for (size_t ty = 0; ty < g->th; ty++)
        for (size_t tx0 = 0; tx0 < g->tw; tx0 += TX_BLOCK) {
          size_t nb = block_tiles(g->tw, tx0);
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
void qgm__winograd_output_grad(const qgm__conv_t *cv, const qgm__wino_geom_t *g,
                              size_t n, size_t s0, size_t ns,
                              const float *dout, float *dm,
                              size_t stride) {
  const size_t t_all = ns * g->tiles, ohw = cv->oh * cv->ow;
  float y[2][2][TX_BLOCK];
  for (size_t co = 0; co < cv->cout; co++)
    for (size_t s = 0; s < ns; s++)
      for (size_t ty = 0; ty < g->th; ty++)
        for (size_t tx0 = 0; tx0 < g->tw; tx0 += TX_BLOCK) {
          size_t nb = block_tiles(g->tw, tx0);
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
          /* Row i of E = A dY is e_i = (ca y0 + cb y1) per column, and
           * the four positions of row i of dM are e_i0, e_i0 + e_i1,
           * e_i0 - e_i1, -e_i1: one loop per row of four restrict
           * streams, which gcc vectorises (sixteen in one loop it does
           * not). */
          float *mt = dm + co * t_all + s * g->tiles + ty * g->tw + tx0;
#define DM_ROW(i, e0, e1)                                                     \
  do {                                                                        \
    float *restrict o0 = mt + (size_t)(4 * (i)) * stride;                     \
    float *restrict o1 = o0 + stride, *restrict o2 = o1 + stride,             \
                    *restrict o3 = o2 + stride;                               \
    for (size_t j = 0; j < nb; j++) {                                         \
      float y00 = y[0][0][j], y01 = y[0][1][j], y10 = y[1][0][j],             \
            y11 = y[1][1][j];                                                 \
      float p = (e0), q = (e1);                                               \
      o0[j] = p;                                                              \
      o1[j] = p + q;                                                          \
      o2[j] = p - q;                                                          \
      o3[j] = -q;                                                             \
      (void)y00, (void)y01, (void)y10, (void)y11;                             \
    }                                                                         \
  } while (0)
          DM_ROW(0, y00, y01);
          DM_ROW(1, y00 + y10, y01 + y11);
          DM_ROW(2, y00 - y10, y01 - y11);
          DM_ROW(3, -y10, -y11);
#undef DM_ROW
        }
}

/* dd = B dV B^T per tile and channel, added onto the window's place in
 * the zeroed padded planes; their interiors are then dx (CNHW). */
void qgm__winograd_input_grad(const qgm__conv_t *cv, const qgm__wino_geom_t *g,
                             size_t n, size_t s0, size_t ns,
                             const float *dv, size_t stride,
                             float *padded, float *dx) {
  const size_t t_all = ns * g->tiles, hw = cv->h * cv->w;
  float dd[4][4][TX_BLOCK + 1];
  memset(padded, 0, ns * cv->cin * g->chan * sizeof *padded);
  for (size_t s = 0; s < ns; s++)
    for (size_t c = 0; c < cv->cin; c++) {
      float *plane = padded + (s * cv->cin + c) * g->chan;
      for (size_t ty = 0; ty < g->th; ty++)
        for (size_t tx0 = 0; tx0 < g->tw; tx0 += TX_BLOCK) {
          size_t nb = block_tiles(g->tw, tx0);
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
            /* Columns 2-3 of a window are columns 0-1 of the next
             * one's: they are stored one tile on, so that each padded
             * column pair below is one sum, added in one pass (adding
             * the overlapping halves in turn made every load wait for
             * the stores just before it). */
            for (int k = 0; k < 4; k++) {
              dd[k][0][j] = r[k][0];
              dd[k][1][j] = r[k][1] - r[k][2] + r[k][3];
              dd[k][2][j + 1] = r[k][1] + r[k][2] - r[k][0];
              dd[k][3][j + 1] = -r[k][3];
            }
          }
          for (int k = 0; k < 4; k++) {
            dd[k][0][nb] = dd[k][1][nb] = 0.0f;
            dd[k][2][0] = dd[k][3][0] = 0.0f;
          }
          for (size_t k = 0; k < 4; k++) {
            float *restrict p = plane + (2 * ty + k) * g->pw + 2 * tx0;
            for (size_t j = 0; j <= nb; j++) {
              p[2 * j] += dd[k][0][j] + dd[k][2][j];
              p[2 * j + 1] += dd[k][1][j] + dd[k][3][j];
            }
          }
        }
      for (size_t y = 0; y < cv->h; y++)
        memcpy(dx + (c * n + s0 + s) * hw + y * cv->w,
               plane + (y + 1) * g->pw + 1, cv->w * sizeof *dx);
    }
}
