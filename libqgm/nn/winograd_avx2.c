/* winograd_avx2.c - the transforms of Winograd F(4x4, 3x3) (winograd.c
 * has the algorithm): between a chunk's padded input maps, output maps
 * and gradients and the 36 matrices V and M of their windows.
 *
 * Each transform takes the chunk's tiles eight at a time, one tile per
 * lane of an AVX2 vector, so a block may span rows of tiles and samples
 * (an 8 x 8 map has only two tiles a row). The windows and tiles are
 * turned into lanes by 8 x 8 and 4 x 4 transposes in registers; the
 * matrices V and M hold a block's eight tiles contiguously. Built with
 * -mavx2 -mfma like gemm_avx2.c; only called where the kernel plan gives
 * the convolution a kernel of its own (AVX2 or AVX-512), so the CPU has
 * AVX2 (conv.c). */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "nn/winograd.h"

enum { LANES = QGM__WINO_LANES, A = QGM__WINO_ALPHA, MT = QGM__WINO_M };

/* Where the tiles of a block lie. Tiles past the chunk (the last block's)
 * repeat its last tile, so that every lane reads real values; `count`
 * says how many are its own. */
typedef struct tile_block {
  size_t count;
  int full;          /* eight tiles of the chunk, each with all 4 x 4 pixels */
  size_t win[LANES]; /* the window in channel 0's padded planes */
  size_t pix[LANES]; /* the tile's first pixel in channel 0's maps of the
                        chunk's samples (CNHW, from sample s0) */
  size_t rows[LANES], cols[LANES]; /* its pixels inside the maps */
  size_t span; /* floats from pix[0] to the last tile's last pixel */
} tile_block_t;

static void plan_block(const qgm__conv_t *cv, const qgm__wino_geom_t *g,
                       size_t t_all, size_t t0, tile_block_t *b) {
  b->count = t0 >= t_all ? 0 : t_all - t0 < LANES ? t_all - t0 : LANES;
  b->full = b->count == LANES;
  for (size_t j = 0; j < LANES; j++) {
    size_t t = t0 + j < t_all ? t0 + j : t_all - 1;
    size_t s = t / g->tiles, r = t % g->tiles;
    size_t ty = r / g->tw, tx = r % g->tw;
    b->win[j] = s * cv->cin * g->chan + MT * ty * g->pw + MT * tx;
    b->pix[j] = s * cv->oh * cv->ow + MT * ty * cv->ow + MT * tx;
    b->rows[j] = cv->oh - MT * ty < MT ? cv->oh - MT * ty : MT;
    b->cols[j] = cv->ow - MT * tx < MT ? cv->ow - MT * tx : MT;
    b->full &= b->rows[j] == MT && b->cols[j] == MT;
  }
  const size_t last = b->count ? b->count - 1 : 0;
  b->span = b->pix[last] + (b->rows[last] - 1) * cv->ow + b->cols[last] -
            b->pix[0];
}

/* Asks for the cache lines of floats [p, p + len) ahead of their use:
 * the maps a chunk reads come from memory or L3, one plane after
 * another (CNHW), and the hardware prefetcher neither crosses a page nor
 * follows many planes read in turn. */
static inline void prefetch(const float *p, size_t len) {
  const uintptr_t end = (uintptr_t)(p + len);
  for (uintptr_t line = (uintptr_t)p & ~(uintptr_t)63; line < end; line += 64)
    _mm_prefetch((const char *)line, _MM_HINT_T0);
}

/* The plane after sample s's channel c in a chunk's order (a sample's
 * channels, then the next sample's): 1 with *s, *c moved onto it, or 0
 * past the chunk's ns samples. */
static inline int next_plane(size_t cin, size_t ns, size_t *s, size_t *c) {
  if (++*c == cin) {
    *c = 0;
    ++*s;
  }
  return *s < ns;
}

/* r[k][j] becomes r[j][k]. */
static inline void transpose8(__m256 r[8]) {
  __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]),
         t1 = _mm256_unpackhi_ps(r[0], r[1]);
  __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]),
         t3 = _mm256_unpackhi_ps(r[2], r[3]);
  __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]),
         t5 = _mm256_unpackhi_ps(r[4], r[5]);
  __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]),
         t7 = _mm256_unpackhi_ps(r[6], r[7]);
  __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44),
         s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44),
         s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44),
         s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44),
         s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
  r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
  r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
  r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
  r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
  r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
  r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
  r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* The 4 x 4 transpose within each 128-bit half: with r[k] holding (in
 * each half) element k of four tiles, r[j] then holds the four elements
 * of tile j (low half) and tile j + 4 (high half), and back. */
static inline void transpose4x2(__m256 r[4]) {
  __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]),
         t1 = _mm256_unpackhi_ps(r[0], r[1]);
  __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]),
         t3 = _mm256_unpackhi_ps(r[2], r[3]);
  r[0] = _mm256_shuffle_ps(t0, t2, 0x44);
  r[1] = _mm256_shuffle_ps(t0, t2, 0xEE);
  r[2] = _mm256_shuffle_ps(t1, t3, 0x44);
  r[3] = _mm256_shuffle_ps(t1, t3, 0xEE);
}

static inline __m256 k8(float c) { return _mm256_set1_ps(c); }

/* The one-dimensional transforms, lane by lane. B^T (6 x 6) takes a row
 * of a window to its transform; A^T (4 x 6) a transformed row to the
 * tile's pixels; A (6 x 4) and B (6 x 6) are their gradients. */
static inline void bt_1d(const __m256 d[A], __m256 o[A]) {
  __m256 a = _mm256_fnmadd_ps(k8(4.0f), d[2], d[4]); /* d4 - 4 d2 */
  __m256 b = _mm256_fnmadd_ps(k8(4.0f), d[1], d[3]); /* d3 - 4 d1 */
  __m256 c = _mm256_sub_ps(d[4], d[2]);
  __m256 e = _mm256_mul_ps(k8(2.0f), _mm256_sub_ps(d[3], d[1]));
  o[0] =
      _mm256_fmadd_ps(k8(4.0f), d[0], _mm256_fnmadd_ps(k8(5.0f), d[2], d[4]));
  o[1] = _mm256_add_ps(a, b);
  o[2] = _mm256_sub_ps(a, b);
  o[3] = _mm256_add_ps(c, e);
  o[4] = _mm256_sub_ps(c, e);
  o[5] =
      _mm256_fmadd_ps(k8(4.0f), d[1], _mm256_fnmadd_ps(k8(5.0f), d[3], d[5]));
}

static inline void b_1d(const __m256 v[A], __m256 o[A]) {
  __m256 a1 = _mm256_sub_ps(v[2], v[1]), a2 = _mm256_sub_ps(v[4], v[3]);
  __m256 s1 = _mm256_add_ps(v[1], v[2]), s2 = _mm256_add_ps(v[3], v[4]);
  o[0] = _mm256_mul_ps(k8(4.0f), v[0]);
  o[1] = _mm256_fmadd_ps(k8(4.0f), _mm256_add_ps(a1, v[5]),
                         _mm256_mul_ps(k8(2.0f), a2));
  o[2] = _mm256_fnmadd_ps(
      k8(5.0f), v[0],
      _mm256_fnmadd_ps(k8(4.0f), s1, _mm256_sub_ps(_mm256_setzero_ps(), s2)));
  o[3] = _mm256_fnmadd_ps(
      k8(5.0f), v[5],
      _mm256_fnmadd_ps(k8(2.0f), a2, _mm256_sub_ps(_mm256_setzero_ps(), a1)));
  o[4] = _mm256_add_ps(v[0], _mm256_add_ps(s1, s2));
  o[5] = v[5];
}

static inline void at_1d(const __m256 m[A], __m256 y[MT]) {
  __m256 p = _mm256_add_ps(m[1], m[2]), q = _mm256_sub_ps(m[1], m[2]);
  __m256 r = _mm256_add_ps(m[3], m[4]), s = _mm256_sub_ps(m[3], m[4]);
  y[0] = _mm256_add_ps(_mm256_add_ps(m[0], p), r);
  y[1] = _mm256_fmadd_ps(k8(2.0f), s, q);
  y[2] = _mm256_fmadd_ps(k8(4.0f), r, p);
  y[3] = _mm256_add_ps(_mm256_fmadd_ps(k8(8.0f), s, q), m[5]);
}

static inline void a_1d(const __m256 y[MT], __m256 m[A]) {
  __m256 e = _mm256_add_ps(y[0], y[2]), o = _mm256_add_ps(y[1], y[3]);
  __m256 e4 = _mm256_fmadd_ps(k8(4.0f), y[2], y[0]);
  __m256 o8 = _mm256_fmadd_ps(k8(8.0f), y[3], _mm256_mul_ps(k8(2.0f), y[1]));
  m[0] = y[0];
  m[1] = _mm256_add_ps(e, o);
  m[2] = _mm256_sub_ps(e, o);
  m[3] = _mm256_add_ps(e4, o8);
  m[4] = _mm256_sub_ps(e4, o8);
  m[5] = y[3];
}

/* G (6 x 3): a kernel's row or column to its transform. U is computed in
 * double precision and rounded once: the transforms of F(4x4, 3x3) amplify
 * its rounding (in float, the output's error grew fourfold). */
static const double G[A][3] = {
    {1.0 / 4, 0, 0},
    {-1.0 / 6, -1.0 / 6, -1.0 / 6},
    {-1.0 / 6, 1.0 / 6, -1.0 / 6},
    {1.0 / 24, 1.0 / 12, 1.0 / 6},
    {1.0 / 24, -1.0 / 12, 1.0 / 6},
    {0, 0, 1},
};

enum { KERNELS = 4 }; /* kernels per vector of doubles */

static inline __m256d k4(double c) { return _mm256_set1_pd(c); }

/* u[i][l] = (G g G^T)[i][l] for four kernels, one per lane, from the 3 x
 * 3 values g[k] of each. */
static inline void weights_4(const __m256d g[9], __m256d u[A][A]) {
  __m256d t[A][3]; /* G g */
  for (size_t i = 0; i < A; i++)
    for (size_t j = 0; j < 3; j++)
      t[i][j] = _mm256_fmadd_pd(
          k4(G[i][0]), g[j],
          _mm256_fmadd_pd(k4(G[i][1]), g[3 + j],
                          _mm256_mul_pd(k4(G[i][2]), g[6 + j])));
  for (size_t i = 0; i < A; i++)
    for (size_t l = 0; l < A; l++)
      u[i][l] =
          _mm256_fmadd_pd(t[i][0], k4(G[l][0]),
                          _mm256_fmadd_pd(t[i][1], k4(G[l][1]),
                                          _mm256_mul_pd(t[i][2], k4(G[l][2]))));
}

/* dg = G^T du G for four kernels. */
static inline void weight_grad_4(const __m256d du[A][A], __m256d dg[9]) {
  __m256d t[3][A]; /* G^T du */
  for (size_t a = 0; a < 3; a++)
    for (size_t l = 0; l < A; l++) {
      __m256d sum = _mm256_setzero_pd();
      for (size_t i = 0; i < A; i++)
        sum = _mm256_fmadd_pd(k4(G[i][a]), du[i][l], sum);
      t[a][l] = sum;
    }
  for (size_t a = 0; a < 3; a++)
    for (size_t c = 0; c < 3; c++) {
      __m256d sum = _mm256_setzero_pd();
      for (size_t l = 0; l < A; l++)
        sum = _mm256_fmadd_pd(t[a][l], k4(G[l][c]), sum);
      dg[3 * a + c] = sum;
    }
}

/* Four floats of U or dU for lanes [0, count): whole, or through a small
 * buffer for the last group. Reading a vector back from a buffer written
 * float by float stalls on the stores, so the whole groups do not. */
static inline __m128 load_lanes(const float *p, size_t count) {
  if (count == KERNELS)
    return _mm_loadu_ps(p);
  float vals[KERNELS] = {0};
  memcpy(vals, p, count * sizeof *p);
  return _mm_loadu_ps(vals);
}

static inline void store_lanes(float *p, __m128 v, size_t count) {
  if (count == KERNELS) {
    _mm_storeu_ps(p, v);
    return;
  }
  float vals[KERNELS];
  _mm_storeu_ps(vals, v);
  memcpy(p, vals, count * sizeof *p);
}

/* The kernels come as 9 floats each, one after another: four of them,
 * from kernel p0 (fewer at the end, the other lanes zero), are turned
 * into lanes. */
void qgm__winograd_weights(const qgm__conv_t *cv, const float *w, float *u) {
  const size_t pairs = cv->cout * cv->cin;
  for (size_t p0 = 0; p0 < pairs; p0 += KERNELS) {
    size_t count = pairs - p0;
    if (count > KERNELS)
      count = KERNELS;
    const float *g0 = w + 9 * p0;
    __m256d g[9], out[A][A];
    for (size_t k = 0; k < 9; k++) /* lanes set one by one, no buffer */
      g[k] = _mm256_setr_pd(g0[k], count > 1 ? g0[9 + k] : 0.0,
                            count > 2 ? g0[18 + k] : 0.0,
                            count > 3 ? g0[27 + k] : 0.0);
    weights_4(g, out);
    for (size_t xi = 0; xi < QGM__WINO_XI; xi++)
      store_lanes(u + xi * pairs + p0, _mm256_cvtpd_ps(out[xi / A][xi % A]),
                  count);
  }
}

void qgm__winograd_weight_grad(const qgm__conv_t *cv, const float *du,
                               float *dw) {
  const size_t pairs = cv->cout * cv->cin;
  for (size_t p0 = 0; p0 < pairs; p0 += KERNELS) {
    size_t count = pairs - p0;
    if (count > KERNELS)
      count = KERNELS;
    __m256d d[A][A], dg[9];
    for (size_t xi = 0; xi < QGM__WINO_XI; xi++)
      d[xi / A][xi % A] =
          _mm256_cvtps_pd(load_lanes(du + xi * pairs + p0, count));
    weight_grad_4(d, dg);
    double lanes[9][KERNELS];
    for (size_t k = 0; k < 9; k++)
      _mm256_storeu_pd(lanes[k], dg[k]);
    for (size_t j = 0; j < count; j++)
      for (size_t k = 0; k < 9; k++)
        dw[9 * (p0 + j) + k] = (float)lanes[k][j];
  }
}

/* A row of a map, in vectors and a masked tail: a libc call per row of 8
 * to 32 floats costs more than the copy (the Makefile keeps gcc from
 * turning the loop back into that call). */
static inline void copy_row(float *restrict dst, const float *restrict src,
                            size_t len) {
  size_t x = 0;
  for (; x + LANES <= len; x += LANES)
    _mm256_storeu_ps(dst + x, _mm256_loadu_ps(src + x));
  if (x < len) {
    const int left = (int)(len - x);
    const __m256i mask = _mm256_cmpgt_epi32(
        _mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(dst + x, mask, _mm256_maskload_ps(src + x, mask));
  }
}

void qgm__winograd_pad(const qgm__conv_t *cv, const qgm__wino_geom_t *g,
                       qgm__maps_t in, size_t s0, size_t ns, float *padded) {
  memset(padded, 0,
         (ns * cv->cin * g->chan + QGM__WINO_PAD_SLACK) * sizeof *padded);
  for (size_t s = 0; s < ns; s++)
    for (size_t c = 0; c < cv->cin; c++) {
      /* The next plane, row by row while this one is copied. */
      size_t sn = s, cn = c;
      const int more = next_plane(cv->cin, ns, &sn, &cn);
      const float *src = in.x + (s0 + s) * in.sn + c * in.sc,
                  *next = in.x + (s0 + sn) * in.sn + cn * in.sc;
      for (size_t y = 0; y < cv->h; y++) {
        if (more)
          prefetch(next + y * cv->w, cv->w);
        copy_row(padded + (s * cv->cin + c) * g->chan + (y + 1) * g->pw + 1,
                 src + y * cv->w, cv->w);
      }
    }
}

/* The offset of the block's eight columns of row `row` of matrix xi, in
 * matrices `stride` apart stored in slivers of `width` columns (width a
 * multiple of LANES; t0 a multiple of LANES). */
static inline size_t block_at(size_t xi, size_t stride, size_t rows,
                              size_t width, size_t row, size_t t0) {
  return xi * stride + t0 / width * rows * width + row * width + t0 % width;
}

void qgm__winograd_input(const qgm__conv_t *cv, const qgm__wino_geom_t *g,
                         size_t ns, const float *padded, float *v,
                         size_t stride, size_t width) {
  const size_t t_all = ns * g->tiles, t_end = qgm__winograd_round(t_all);
  for (size_t t0 = 0; t0 < t_end; t0 += LANES) {
    tile_block_t b;
    plan_block(cv, g, t_all, t0, &b);
    for (size_t c = 0; c < cv->cin; c++) {
      const float *plane = padded + c * g->chan;
      __m256 e[A][A]; /* e[row][l]: the rows' transforms, d B */
      for (size_t r = 0; r < A; r++) {
        __m256 x[LANES];
        for (size_t j = 0; j < LANES; j++)
          x[j] = _mm256_loadu_ps(plane + b.win[j] + r * g->pw);
        transpose8(x);
        bt_1d(x, e[r]);
      }
      for (size_t l = 0; l < A; l++) {
        __m256 col[A], o[A];
        for (size_t r = 0; r < A; r++)
          col[r] = e[r][l];
        bt_1d(col, o);
        for (size_t i = 0; i < A; i++)
          _mm256_storeu_ps(
              v + block_at(A * i + l, stride, cv->cin, width, c, t0), o[i]);
      }
    }
  }
}

void qgm__winograd_output(const qgm__conv_t *cv, const qgm__wino_geom_t *g,
                          size_t n, size_t s0, size_t ns, const float *m,
                          size_t stride, float *out) {
  const size_t t_all = ns * g->tiles, width = g->t_round;
  tile_block_t next; /* the block whose pixels are prefetched */
  plan_block(cv, g, t_all, 0, &next);
  for (size_t t0 = 0; t0 < t_all; t0 += LANES) {
    const tile_block_t b = next;
    plan_block(cv, g, t_all, t0 + LANES, &next);
    for (size_t co = 0; co < cv->cout; co++) {
      float *maps = out + (co * n + s0) * cv->oh * cv->ow;
      if (next.count)
        prefetch(maps + next.pix[0], next.span);
      __m256 r[A][MT]; /* r[i][b]: M A per row */
      for (size_t i = 0; i < A; i++) {
        __m256 row[A];
        for (size_t l = 0; l < A; l++)
          row[l] = _mm256_loadu_ps(
              m + block_at(A * i + l, stride, cv->cout, width, co, t0));
        at_1d(row, r[i]);
      }
      for (size_t bcol = 0; bcol < MT; bcol++) {
        __m256 col[A], y[MT];
        for (size_t i = 0; i < A; i++)
          col[i] = r[i][bcol];
        at_1d(col, y);
        for (size_t a = 0; a < MT; a++)
          r[a][bcol] = y[a]; /* r[a] now holds pixel row a of the tiles */
      }
      for (size_t a = 0; a < MT; a++) {
        __m256 y[MT] = {r[a][0], r[a][1], r[a][2], r[a][3]};
        transpose4x2(y);
        if (b.full) { /* tiles j and j + 4 straight from the halves */
          for (size_t j = 0; j < 4; j++)
            _mm256_storeu2_m128(maps + b.pix[j + 4] + a * cv->ow,
                                maps + b.pix[j] + a * cv->ow, y[j]);
          continue;
        }
        for (size_t j = 0; j < b.count; j++) {
          __m128 px = j < 4 ? _mm256_castps256_ps128(y[j])
                            : _mm256_extractf128_ps(y[j - 4], 1);
          if (a >= b.rows[j])
            continue;
          float *o = maps + b.pix[j] + a * cv->ow;
          if (b.cols[j] == MT) {
            _mm_storeu_ps(o, px);
          } else {
            float tmp[MT];
            _mm_storeu_ps(tmp, px);
            memcpy(o, tmp, b.cols[j] * sizeof *o);
          }
        }
      }
    }
  }
}

void qgm__winograd_output_grad(const qgm__conv_t *cv, const qgm__wino_geom_t *g,
                               size_t n, size_t s0, size_t ns,
                               const float *dout, float *dm, size_t stride) {
  const size_t t_all = ns * g->tiles, width = g->t_round;
  tile_block_t next; /* the block whose pixels are prefetched */
  plan_block(cv, g, t_all, 0, &next);
  for (size_t t0 = 0; t0 < t_all; t0 += LANES) {
    const tile_block_t b = next;
    plan_block(cv, g, t_all, t0 + LANES, &next);
    for (size_t co = 0; co < cv->cout; co++) {
      const float *maps = dout + (co * n + s0) * cv->oh * cv->ow;
      if (next.count)
        prefetch(maps + next.pix[0], next.span);
      __m256 y[MT][MT]; /* y[a][bcol]: the tiles' gradients */
      for (size_t a = 0; a < MT; a++) {
        /* Tile j's row a into the low half of y[a][j], tile j + 4's into
         * the high half, loaded in place (through a buffer, the halves'
         * stores would stall the vector's load). */
        const float *src[LANES];
        float part[LANES][MT];
        for (size_t j = 0; j < LANES; j++) {
          src[j] = maps + b.pix[j] + a * cv->ow;
          if (b.full || (j < b.count && a < b.rows[j] && b.cols[j] == MT))
            continue;
          /* Pixels past the maps, and lanes past the chunk, have no
           * gradient. */
          memset(part[j], 0, sizeof part[j]);
          if (j < b.count && a < b.rows[j])
            memcpy(part[j], src[j], b.cols[j] * sizeof *part[j]);
          src[j] = part[j];
        }
        for (size_t j = 0; j < 4; j++)
          y[a][j] = _mm256_loadu2_m128(src[j + 4], src[j]);
        transpose4x2(y[a]);
      }
      __m256 e[A][MT]; /* e[i][bcol] = (A dY)[i][bcol] */
      for (size_t bcol = 0; bcol < MT; bcol++) {
        __m256 col[MT] = {y[0][bcol], y[1][bcol], y[2][bcol], y[3][bcol]};
        __m256 o[A];
        a_1d(col, o);
        for (size_t i = 0; i < A; i++)
          e[i][bcol] = o[i];
      }
      for (size_t i = 0; i < A; i++) {
        __m256 o[A];
        a_1d(e[i], o);
        for (size_t l = 0; l < A; l++)
          _mm256_storeu_ps(
              dm + block_at(A * i + l, stride, cv->cout, width, co, t0), o[l]);
      }
    }
  }
}

void qgm__winograd_input_grad(const qgm__conv_t *cv, const qgm__wino_geom_t *g,
                              size_t n, size_t s0, size_t ns, const float *dv,
                              size_t stride, float *padded, float *dx) {
  const size_t t_all = ns * g->tiles, width = g->t_round, hw = cv->h * cv->w;
  memset(padded, 0,
         (ns * cv->cin * g->chan + QGM__WINO_PAD_SLACK) * sizeof *padded);
  for (size_t t0 = 0; t0 < t_all; t0 += LANES) {
    tile_block_t b;
    plan_block(cv, g, t_all, t0, &b);
    for (size_t c = 0; c < cv->cin; c++) {
      float *plane = padded + c * g->chan;
      __m256 f[A][A]; /* f[row][l] = (B dV)[row][l] */
      for (size_t l = 0; l < A; l++) {
        __m256 col[A], o[A];
        for (size_t i = 0; i < A; i++)
          col[i] = _mm256_loadu_ps(
              dv + block_at(A * i + l, stride, cv->cin, width, c, t0));
        b_1d(col, o);
        for (size_t r = 0; r < A; r++)
          f[r][l] = o[r];
      }
      __m256 rows[A][LANES]; /* rows[r][j]: row r of tile j's window */
      for (size_t r = 0; r < A; r++) {
        b_1d(f[r], rows[r]);
        rows[r][6] = rows[r][7] = _mm256_setzero_ps();
        transpose8(rows[r]);
      }
      /* Neighbouring windows overlap by two columns: adding the even
       * tiles first and then the odd ones keeps a load from waiting on
       * the store just before it. The two zero lanes add nothing past
       * a window. */
      for (size_t parity = 0; parity < 2; parity++)
        for (size_t j = parity; j < b.count; j += 2)
          for (size_t r = 0; r < A; r++) {
            float *p = plane + b.win[j] + r * g->pw;
            _mm256_storeu_ps(p, _mm256_add_ps(_mm256_loadu_ps(p), rows[r][j]));
          }
    }
  }
  for (size_t s = 0; s < ns; s++)
    for (size_t c = 0; c < cv->cin; c++) {
      const float *plane = padded + (s * cv->cin + c) * g->chan;
      float *dst = dx + (c * n + s0 + s) * hw;
      size_t sn = s, cn = c;
      const int more = next_plane(cv->cin, ns, &sn, &cn);
      for (size_t y = 0; y < cv->h; y++) {
        if (more) /* as in qgm__winograd_pad: the next plane's lines */
          prefetch(dx + (cn * n + s0 + sn) * hw + y * cv->w, cv->w);
        copy_row(dst + y * cv->w, plane + (y + 1) * g->pw + 1, cv->w);
      }
    }
}
