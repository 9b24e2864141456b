/* conv_grid.c - convolutions of stride 1 or 2 on the grid of a sample's
 * input planes (conv_grid.h).
 *
 * For stride 1 the planes are the zero-bordered maps, ph x pw each, and
 * row (c, ky, kx) of the column matrix, on a grid of pw columns per output
 * row, starts at c*ph*pw + ky*pw + kx: output pixel (oy, ox) at grid
 * column oy*pw + ox reads the padded pixel (oy + ky, ox + kx). For stride
 * 2 that pixel is (2 oy + ky, 2 ox + kx), which no plane of the padded
 * maps holds in one run; so each channel's padded maps are split into
 * their phases, plane (a, b) holding the pixels (2i + a, 2j + b), and row
 * (c, ky, kx) starts in plane (c, ky % 2, kx % 2) at row ky / 2, column
 * kx / 2: a stride-2 convolution's gradients then run on the stride-1
 * machinery, at one grid column more than its output rows have (17 for
 * 16, resnet20-gn's 32 x 32 layers), instead of gathering its columns
 * pixel by pixel and scattering their gradient back. (Its forward product
 * keeps the packed gather, which measured faster than a split and a
 * compaction: qgm__grid_forward.) */
#include "nn/conv_grid.h"

#include <string.h>

#include "nn/gemm.h"
#include "nn/isa.h"

typedef struct planes {
  size_t s;            /* the stride, 1 or 2: s * s planes a channel */
  size_t pw, ph, chan; /* a plane: ph rows of pw floats */
  size_t sample;       /* floats: cin * s * s * chan */
} planes_t;

static int planes_of(const qgm__conv_t *cv, planes_t *p) {
  /* Stride 2 with a 1 x 1 kernel reads one pixel in four: the column
   * chunks subsample it as cheaply as a split would, and their products
   * measured faster (resnet20-gn's 1 x 1 layers, docs/PERFORMANCE-LOG.md). */
  if (cv->stride > 2 || (cv->stride == 2 && cv->k == 1))
    return 0;
  p->s = cv->stride;
  p->pw = (cv->w + 2 * cv->pad + p->s - 1) / p->s;
  p->ph = (cv->h + 2 * cv->pad + p->s - 1) / p->s;
  p->chan = p->ph * p->pw;
  p->sample = cv->cin * p->s * p->s * p->chan;
  return 1;
}

size_t qgm__grid_planes_floats(const qgm__conv_t *cv) {
  planes_t p;
  /* The runs of the last rows end up to k floats past the planes. */
  return planes_of(cv, &p) ? p.sample + cv->k : 0;
}

/* Where row (c, ky, kx) of a sample's column matrix starts in its planes. */
static size_t window_at(const planes_t *p, size_t c, size_t ky, size_t kx) {
  const size_t plane = (c * p->s + ky % p->s) * p->s + kx % p->s;
  return plane * p->chan + ky / p->s * p->pw + kx / p->s;
}

static size_t window_offset(const qgm__conv_t *cv, const planes_t *p,
                            size_t r) {
  const size_t k = cv->k;
  return window_at(p, r / (k * k), r / k % k, r % k);
}

/* Where input row y of channel c goes in the planes of stride 2: its
 * padded column x + pad lies in phase (x + pad) % 2 of padded row y + pad,
 * at column (x + pad) / 2. So the row's even and odd columns each fill one
 * phase's row, from column pad / 2 or (pad + 1) / 2 on. */
typedef struct row_split {
  float *even, *odd;
} row_split_t;

static inline row_split_t row_phases(const qgm__conv_t *cv, const planes_t *p,
                                     float *planes, size_t c, size_t y) {
  const size_t py = y + cv->pad, pad = cv->pad;
  float *phase0 = planes + (2 * c + (py & 1)) * 2 * p->chan + (py >> 1) * p->pw;
  float *phase[2] = {phase0, phase0 + p->chan};
  return (row_split_t){phase[pad & 1] + (pad >> 1),
                       phase[(pad + 1) & 1] + ((pad + 1) >> 1)};
}

/* Sample s of `in` into its planes at dst, whose other floats (borders,
 * slack) the caller has zeroed. The copies are plain loops over the even
 * and odd columns, which gcc vectorises with shuffles. */
QGM__AVX2_CLONES
static void split_sample(const qgm__conv_t *cv, const planes_t *p,
                         qgm__maps_t in, size_t s, float *dst) {
  if (p->s == 1) {
    qgm__conv_pad_sample(cv, in.x, in.sn, in.sc, s, dst);
    return;
  }
  const size_t w = cv->w, pairs = w / 2;
  for (size_t c = 0; c < cv->cin; c++)
    for (size_t y = 0; y < cv->h; y++) {
      const row_split_t r = row_phases(cv, p, dst, c, y);
      const float *restrict row = in.x + s * in.sn + c * in.sc + y * w;
      float *restrict even = r.even, *restrict odd = r.odd;
      for (size_t i = 0; i < pairs; i++) {
        even[i] = row[2 * i];
        odd[i] = row[2 * i + 1];
      }
      if (w % 2)
        even[pairs] = row[w - 1];
    }
}

/* The inverse: a sample's input gradient (channel c at dx + c*sc) from the
 * gradient on its planes. */
QGM__AVX2_CLONES
static void merge_sample(const qgm__conv_t *cv, const planes_t *p,
                         float *planes, float *dx, size_t sc) {
  const size_t w = cv->w, pairs = w / 2;
  for (size_t c = 0; c < cv->cin; c++)
    for (size_t y = 0; y < cv->h; y++) {
      float *restrict to = dx + c * sc + y * w;
      if (p->s == 1) {
        memcpy(to, planes + window_at(p, c, 0, 0) + (y + cv->pad) * p->pw +
                       cv->pad, w * sizeof *to);
        continue;
      }
      const row_split_t r = row_phases(cv, p, planes, c, y);
      const float *restrict even = r.even, *restrict odd = r.odd;
      for (size_t i = 0; i < pairs; i++) {
        to[2 * i] = even[i];
        to[2 * i + 1] = odd[i];
      }
      if (w % 2)
        to[w - 1] = even[pairs];
    }
}

/* The packed slivers of the forward product: cols grid columns of samples
 * whose planes lie `maps` floats apart, `len` columns a sample. Compiled
 * for AVX2 too, where a sliver row is two to four vector copies instead
 * of four to eight. */
QGM__AVX2_CLONES
static void pack_grid(const qgm__conv_t *cv, const planes_t *p,
                      const float *planes, size_t maps, size_t len,
                      size_t cols, size_t nr, float *dst) {
  const size_t k = cv->k;
  for (size_t g = 0; g < cols; g += nr) {
    const float *from = planes + g / len * maps + g % len;
    for (size_t c = 0; c < cv->cin; c++)
      for (size_t ky = 0; ky < k; ky++)
        for (size_t kx = 0; kx < k; kx++, dst += nr)
          qgm__gemm_copy_sliver_row(dst, from + window_at(p, c, ky, kx), nr);
  }
}

/* Each sample's grid rounded up to whole slivers: every row of a packed
 * sliver is then one contiguous run of the sample's planes, nr floats
 * copied at once instead of output rows of 10-32 pixels cut at sliver
 * edges. The product over the grid is then compacted into out. */
int qgm__grid_forward(const qgm__conv_t *cv, const float *w, qgm__maps_t in,
                      size_t n, float *out, float *col, float *pack) {
  planes_t p;
  const size_t nr = qgm__gemm_nr(), k = cv->k, rows = cv->cin * k * k;
  const size_t ohw = cv->oh * cv->ow, total = n * ohw;
  /* Stride 2 gathers its packed columns faster than it splits the input
   * and compacts the grid's products (resnet20-gn's 16 > 32 layer: 1.9
   * against 2.3 ms). */
  if (cv->stride != 1 || !planes_of(cv, &p) || nr == 0)
    return 0;
  const size_t len = (cv->oh * p.pw + nr - 1) / nr * nr; /* a sample's grid */
  const size_t maps = p.sample + k + nr; /* the reads' reach */
  const size_t per_sample = (rows + cv->cout) * len + maps;
  if (4 * len > 5 * ohw || per_sample > QGM__CONV_COL_FLOATS)
    return 0;
  const size_t per_chunk = QGM__CONV_COL_FLOATS / per_sample;
  for (size_t s0 = 0; s0 < n; s0 += per_chunk) {
    size_t ns = n - s0 < per_chunk ? n - s0 : per_chunk, cols = ns * len;
    float *packed = col, *grid = packed + rows * cols;
    float *planes = grid + cv->cout * cols;
    memset(planes, 0, ns * maps * sizeof *planes);
    for (size_t s = 0; s < ns; s++)
      split_sample(cv, &p, in, s0 + s, planes + s * maps);
    pack_grid(cv, &p, planes, maps, len, cols, nr, packed);
    qgm__gemm_packed_b(cv->cout, cols, rows, w, (ptrdiff_t)rows, 1, packed,
                      QGM__GEMM_SET, grid, cols, pack);
    for (size_t co = 0; co < cv->cout; co++)
      for (size_t s = 0; s < ns; s++)
        for (size_t oy = 0; oy < cv->oh; oy++)
          memcpy(out + co * total + (s0 + s) * ohw + oy * cv->ow,
                 grid + co * cols + s * len + oy * p.pw,
                 cv->ow * sizeof *out);
  }
  return 1;
}

/* The product reads the rows of the column matrix in place, the grid's
 * last pw - ow columns of each output row with zero gradient: pw / ow
 * more products than the exact width, and no columns built, which took as
 * long as the product. `grid` holds dout on one sample's grid. */
int qgm__grid_weight_grad(const qgm__conv_t *cv, qgm__maps_t in, size_t n,
                          const float *dout, float *dw, float *grid,
                          float *planes) {
  enum { ROWS_PER_CALL = 256 };
  planes_t p;
  const size_t rows = cv->cin * cv->k * cv->k;
  const size_t ohw = cv->oh * cv->ow, total = n * ohw;
  if (!planes_of(cv, &p))
    return 0;
  const size_t len = cv->oh * p.pw;
  /* Short grids (small maps) would spend the product in the tiles' final
   * reductions: there the column chunks, long along the pixels, win. */
  if (len < 256 || cv->cout * len > QGM__CONV_COL_FLOATS)
    return 0;
  memset(grid, 0, cv->cout * len * sizeof *grid);
  memset(planes, 0, (p.sample + cv->k) * sizeof *planes);
  size_t offsets[ROWS_PER_CALL];
  for (size_t s = 0; s < n; s++) {
    split_sample(cv, &p, in, s, planes);
    for (size_t co = 0; co < cv->cout; co++)
      for (size_t oy = 0; oy < cv->oh; oy++)
        memcpy(grid + co * len + oy * p.pw, dout + co * total + s * ohw +
               oy * cv->ow, cv->ow * sizeof *grid);
    for (size_t r0 = 0; r0 < rows; r0 += ROWS_PER_CALL) {
      size_t count = 0;
      for (size_t r = r0; r < rows && count < ROWS_PER_CALL; r++)
        offsets[count++] = window_offset(cv, &p, r);
      qgm__gemm_nt_offsets(cv->cout, count, len, grid, len, planes, offsets,
                          s == 0 ? QGM__GEMM_SET : QGM__GEMM_ADD, dw + r0,
                          rows);
    }
  }
  return 1;
}

/* dcol = w^T * dout for a few samples at a time over their grids; row
 * (c, ky, kx) of it is added, as one contiguous run, onto the sample's
 * planes where the forward product read it, and the planes then give dx.
 * Long runs instead of col2im's short ones, which spent their time on
 * loop overhead and store-forwarding stalls. */
int qgm__grid_input_grad(const qgm__conv_t *cv, const float *w, size_t n,
                         const float *dout, float *dx, float *col,
                         float *planes, float *pack) {
  planes_t p;
  const size_t rows = cv->cin * cv->k * cv->k;
  const size_t ohw = cv->oh * cv->ow, total = n * ohw, hw = cv->h * cv->w;
  if (!planes_of(cv, &p))
    return 0;
  const size_t len = cv->oh * p.pw;
  if ((cv->cout + rows) * len > QGM__CONV_COL_FLOATS)
    return 0;
  const size_t per_chunk = QGM__CONV_COL_FLOATS / ((cv->cout + rows) * len);
  for (size_t s0 = 0; s0 < n; s0 += per_chunk) {
    size_t ns = n - s0 < per_chunk ? n - s0 : per_chunk, cols = ns * len;
    float *grid = col, *dcol = col + cv->cout * cols;
    memset(grid, 0, cv->cout * cols * sizeof *grid);
    for (size_t co = 0; co < cv->cout; co++)
      for (size_t s = 0; s < ns; s++)
        for (size_t oy = 0; oy < cv->oh; oy++)
          memcpy(grid + co * cols + s * len + oy * p.pw,
                 dout + co * total + (s0 + s) * ohw + oy * cv->ow,
                 cv->ow * sizeof *grid);
    qgm__gemm(rows, cols, cv->cout, w, 1, (ptrdiff_t)rows, grid,
             (ptrdiff_t)cols, 1, QGM__GEMM_SET, dcol, cols, pack);
    for (size_t s = 0; s < ns; s++) {
      memset(planes, 0, (p.sample + cv->k) * sizeof *planes);
      for (size_t r = 0; r < rows; r++) {
        float *restrict to = planes + window_offset(cv, &p, r);
        const float *restrict from = dcol + r * cols + s * len;
        for (size_t g = 0; g < len; g++)
          to[g] += from[g];
      }
      merge_sample(cv, &p, planes, dx + (s0 + s) * hw, n * hw);
    }
  }
  return 1;
}
