/* conv.c - 2-D convolution as im2col + qgm__gemm, forward and backward.
 *
 * The column matrix has one row per (input channel, ky, kx) and one column
 * per output pixel of the batch (sample, oy, ox). It is never built whole
 * (for a 64-image CIFAR batch it would take tens of megabytes): the
 * products run over chunks of output pixels whose columns fit in
 * QGM__CONV_COL_FLOATS. The forward pass writes the chunk straight into
 * the GEMM kernel's packed layout (one pass over the columns instead of a
 * write and a repacking); for stride 1 it works on a grid of the input's
 * planes, where every sliver row is one contiguous run, and the backward
 * pass of stride 1 or 2 reads the weight gradient's rows there in place
 * and adds the input gradient back in long runs (conv_grid.c). Where that
 * grid is much wider than the output (small maps, large kernels), both
 * passes copy the columns from k shifted copies of the input instead, in
 * runs of a sample's output pixels (forward_bands, backward_bands).
 * Otherwise the backward pass rebuilds the chunk it needs as a plain
 * matrix whose rows run along the pixels, as dout's do, so that product
 * needs no packing either, and col2im scatters it back. */
#include <stdio.h>
#include <string.h>

#include "nn/conv_direct.h"
#include "nn/conv_grid.h"
#include "nn/gemm.h"
#include "nn/kernel_plan.h"
#include "nn/layers.h"
#include "nn/winograd.h"

int qgm__conv_init(qgm__conv_t *cv) {
  if (cv->k == 0 || cv->stride == 0 || cv->cin == 0 || cv->cout == 0 ||
      cv->h + 2 * cv->pad < cv->k || cv->w + 2 * cv->pad < cv->k ||
      cv->k > QGM__CONV_MAX_K ||
      cv->cin * cv->k * cv->k > QGM__CONV_COL_FLOATS / QGM__GEMM_NR_MAX)
    return -1;
  cv->oh = (cv->h + 2 * cv->pad - cv->k) / cv->stride + 1;
  cv->ow = (cv->w + 2 * cv->pad - cv->k) / cv->stride + 1;
  return 0;
}

size_t qgm__conv_scratch_floats(const qgm__conv_t *cv) {
  /* One sample: zero-bordered for gather, or as the planes of
   * conv_grid.c with their slack. */
  size_t padded = cv->cin * (cv->h + 2 * cv->pad) * (cv->w + 2 * cv->pad);
  size_t planes = qgm__grid_planes_floats(cv);
  size_t direct = QGM__CONV_COL_FLOATS + (planes > padded ? planes : padded);
  if (!qgm__winograd_fits(cv))
    return direct;
  size_t wino = qgm__winograd_scratch_floats(cv);
  return wino > direct ? wino : direct;
}

/* The kernel plan's entry for this convolution (kernel_plan.h): Winograd
 * F(4x4, 3x3) or the direct products, and their kernel. */
static int use_winograd(const qgm__conv_t *cv) {
  return qgm__winograd_fits(cv) && qgm__kernels()->winograd;
}

static qgm__kernel_t conv_kernel(const qgm__conv_t *cv) {
  const qgm__kernel_plan_t *plan = qgm__kernels();
  return qgm__winograd_fits(cv) ? plan->conv3x3 : plan->conv;
}

/* "winograd-K", "direct-K" (conv_direct.c: no column matrix) or
 * "im2col-K" (products over columns, built or read in place), so that a
 * layer table tells the three apart; the plan's "direct" for conv3x3 only
 * says "not Winograd". */
const char *qgm__conv_path(const qgm__conv_t *cv) {
  static _Thread_local char text[24];
  const qgm__kernel_t kernel = conv_kernel(cv);
  const char *path = "im2col";
  if (use_winograd(cv))
    path = qgm__path_name(1);
  else if (qgm__direct_fits(cv, kernel))
    path = qgm__path_name(0);
  snprintf(text, sizeof text, "%s-%s", path, qgm__kernel_name(kernel));
  return text;
}

size_t qgm__conv_num_weights(const qgm__conv_t *cv) {
  return cv->cout * cv->cin * cv->k * cv->k;
}

/* Output pixels per chunk: as many columns as fit the scratch, a multiple
 * of every kernel's tile width, so that only the last chunk has a partial
 * sliver; qgm__conv_init guarantees room for one tile. */
static size_t chunk_cols(size_t rows) {
  return QGM__CONV_COL_FLOATS / rows / QGM__GEMM_NR_MAX * QGM__GEMM_NR_MAX;
}

/* The output columns [lo, hi) whose input column ox*stride - pad + kx
 * lies inside the image. */
static void valid_cols(const qgm__conv_t *cv, size_t kx, size_t *lo,
                       size_t *hi) {
  size_t s = cv->stride;
  *lo = cv->pad > kx ? (cv->pad - kx + s - 1) / s : 0;
  size_t end = cv->w + cv->pad - kx; /* ix < w  <=>  ox*s < end */
  *hi = (end + s - 1) / s;
  if (*hi > cv->ow)
    *hi = cv->ow;
  if (*lo > *hi)
    *lo = *hi;
}

/* The next run of output pixels from j: along one output row of one sample
 * and inside one sliver of `width` columns (j0 the chunk's first). */
typedef struct run {
  size_t sample, oy, ox0, len;
  size_t offset; /* of the run's first column in the chunk's layout */
} run_t;

static run_t next_run(const qgm__conv_t *cv, size_t j0, size_t j1, size_t j,
                      size_t width, size_t rows) {
  const size_t ow = cv->ow, ohw = cv->oh * ow;
  run_t r = {.sample = j / ohw, .oy = j % ohw / ow, .ox0 = j % ohw % ow};
  size_t at = (j - j0) % width;
  r.len = ow - r.ox0;
  if (r.len > j1 - j)
    r.len = j1 - j;
  if (r.len > width - at)
    r.len = width - at;
  r.offset = (j - j0) / width * rows * width + at;
  return r;
}

void qgm__conv_pad_sample(const qgm__conv_t *cv, const float *x, size_t sn,
                         size_t sc, size_t s, float *dst) {
  const size_t pw = cv->w + 2 * cv->pad, chan = (cv->h + 2 * cv->pad) * pw;
  for (size_t c = 0; c < cv->cin; c++)
    for (size_t y = 0; y < cv->h; y++)
      memcpy(dst + c * chan + (y + cv->pad) * pw + cv->pad,
             x + s * sn + c * sc + y * cv->w, cv->w * sizeof *dst);
}

/* The column matrix of output pixels [j0, j1), stored as slivers of
 * `width` columns (matrix row r, column j at col[(j / width) * rows *
 * width + r * width + j % width], j counted from j0; width = j1 - j0 is a
 * plain row-major matrix). Padding is handled once per sample by copying
 * the sample's maps into a zero-bordered buffer (`padded`), so that every
 * copy below is a plain strided read, without per-pixel bounds. */
static void gather(const qgm__conv_t *cv, const float *x, size_t sn,
                   size_t sc, size_t j0, size_t j1, float *col, size_t width,
                   float *padded) {
  const size_t k = cv->k, s = cv->stride, rows = cv->cin * k * k;
  const size_t pw = cv->w + 2 * cv->pad, ph = cv->h + 2 * cv->pad;
  size_t have = (size_t)-1; /* the sample in `padded` */
  const float *plane = x;
  size_t chan = sc, rs = cv->w;
  if (cv->pad) {
    chan = ph * pw;
    rs = pw;
    memset(padded, 0, cv->cin * chan * sizeof *padded);
  }
  for (size_t j = j0; j < j1;) {
    run_t r = next_run(cv, j0, j1, j, width, rows);
    if (!cv->pad) {
      plane = x + r.sample * sn;
    } else if (r.sample != have) {
      have = r.sample;
      qgm__conv_pad_sample(cv, x, sn, sc, r.sample, padded);
      plane = padded;
    }
    float *dst = col + r.offset;
    for (size_t c = 0; c < cv->cin; c++)
      for (size_t ky = 0; ky < k; ky++) {
        const float *src =
            plane + c * chan + (r.oy * s + ky) * rs + r.ox0 * s;
        for (size_t kx = 0; kx < k; kx++, dst += width) {
          /* Runs are a row of output pixels (10-32 floats): an inline
           * loop beats a memcpy call at that length. Stride 2 (ResNet's
           * downsampling) has a loop of its own: a constant stride
           * vectorises, a variable one does not. */
          if (s == 1)
            for (size_t i = 0; i < r.len; i++)
              dst[i] = src[kx + i];
          else if (s == 2)
            for (size_t i = 0; i < r.len; i++)
              dst[i] = src[kx + 2 * i];
          else
            for (size_t i = 0; i < r.len; i++)
              dst[i] = src[kx + i * s];
        }
      }
    j += r.len;
  }
  /* Columns past j1 in the last sliver: read by the kernel, so defined. */
  size_t tail = (j1 - j0) % width;
  if (tail)
    for (size_t r = 0; r < rows; r++)
      memset(col + (j1 - j0) / width * rows * width + r * width + tail, 0,
             (width - tail) * sizeof *col);
}

/* The gradient of gather (into a row-major chunk): adds each column back
 * onto the pixel of dx it was read from (sample s, channel c at dx + s*sn
 * + c*sc), skipping padding. The taps kx of one run add into the same
 * pixels shifted by one: done back to back, every load would overlap the
 * stores just made and wait for them (a store-forwarding stall per
 * vector, most of this function's time). So the runs are taken in
 * batches, and each tap is added for the whole batch before the next. */
enum { SCATTER_BATCH = 128 };

static void scatter(const qgm__conv_t *cv, float *dx, size_t sn, size_t sc,
                    size_t j0, size_t j1, const float *col) {
  const size_t k = cv->k, s = cv->stride, cols = j1 - j0;
  const size_t rows = cv->cin * k * k;
  size_t lo[QGM__CONV_MAX_K], hi[QGM__CONV_MAX_K];
  for (size_t kx = 0; kx < k; kx++)
    valid_cols(cv, kx, &lo[kx], &hi[kx]);
  run_t runs[SCATTER_BATCH];
  for (size_t j = j0; j < j1;) {
    size_t n = 0;
    for (; n < SCATTER_BATCH && j < j1; n++) {
      runs[n] = next_run(cv, j0, j1, j, cols, rows);
      j += runs[n].len;
    }
    for (size_t c = 0; c < cv->cin; c++)
      for (size_t ky = 0; ky < k; ky++)
        for (size_t kx = 0; kx < k; kx++)
          for (size_t i = 0; i < n; i++) {
            const run_t *r = &runs[i];
            size_t iy = r->oy * s + ky; /* + pad, to stay unsigned */
            if (iy < cv->pad || iy - cv->pad >= cv->h)
              continue;
            size_t a = lo[kx] > r->ox0 ? lo[kx] : r->ox0;
            size_t b = hi[kx] < r->ox0 + r->len ? hi[kx] : r->ox0 + r->len;
            /* Pixel ox of the run came from column ox*s + kx - pad. */
            float *restrict d = dx + r->sample * sn + c * sc +
                                (iy - cv->pad) * cv->w + a * s + kx - cv->pad;
            const float *restrict g =
                col + r->offset + ((c * k + ky) * k + kx) * cols + (a - r->ox0);
            if (s == 1)
              for (size_t t = 0; a + t < b; t++)
                d[t] += g[t];
            else if (s == 2) /* a constant stride, as in gather */
              for (size_t t = 0; a + t < b; t++)
                d[2 * t] += g[t];
            else
              for (size_t t = 0; a + t < b; t++)
                d[t * s] += g[t];
          }
  }
}

/* Column bands: the columns of a stride-1 convolution without a grid.
 * Band (c, kx) of a sample is its padded map c shifted left by kx and cut
 * to the output's width: ph rows of ow floats, band[y * ow + ox] =
 * padded[c][y][ox + kx]. Row (c, ky, kx) of the sample's column matrix is
 * then the band's run of oh * ow floats from ky * ow on: one contiguous
 * run per sample and matrix row, and exact, where the grid of the in-place
 * paths adds pw - ow columns to every output row (40% more products for
 * LeNet's second convolution, whose 10-pixel output rows the chunks'
 * gather copied one at a time). The bands take k times the input. */
static size_t band_floats(const qgm__conv_t *cv) {
  return cv->cin * cv->k * (cv->h + 2 * cv->pad) * cv->ow;
}

/* Where row r = (c, ky, kx) of a sample's column matrix starts in its
 * bands. */
static size_t band_offset(const qgm__conv_t *cv, size_t r) {
  const size_t k = cv->k, ph = cv->h + 2 * cv->pad;
  return (r / (k * k) * k + r % k) * ph * cv->ow + r / k % k * cv->ow;
}

/* Copies and clears of runs of a few floats (band rows are output rows,
 * 10 floats in LeNet), eight at a time, the last eight overlapping the
 * previous ones: a libc call per run would cost more than the run. */
static inline void copy_run(float *restrict dst, const float *restrict src,
                            size_t n) {
  if (n < 8) {
    for (size_t i = 0; i < n; i++)
      dst[i] = src[i];
    return;
  }
  for (size_t i = 0; i + 8 < n; i += 8)
    memcpy(dst + i, src + i, 8 * sizeof *dst);
  memcpy(dst + n - 8, src + n - 8, 8 * sizeof *dst);
}

static inline void zero_run(float *dst, size_t n) {
  static const float zeros[8];
  if (n < 8) {
    for (size_t i = 0; i < n; i++)
      dst[i] = 0.0f;
    return;
  }
  for (size_t i = 0; i + 8 < n; i += 8)
    memcpy(dst + i, zeros, sizeof zeros);
  memcpy(dst + n - 8, zeros, sizeof zeros);
}

/* Sample s's bands (of the input at x + s*sn + c*sc) into band. */
QGM__AVX2_CLONES
static void build_bands(const qgm__conv_t *cv, const float *x, size_t sn,
                        size_t sc, size_t s, float *band) {
  const size_t ow = cv->ow, pad = cv->pad;
  for (size_t c = 0; c < cv->cin; c++)
    for (size_t kx = 0; kx < cv->k; kx++) {
      size_t lo, hi; /* the columns read from inside the image */
      valid_cols(cv, kx, &lo, &hi);
      for (size_t y = 0; y < cv->h + 2 * pad; y++, band += ow) {
        if (y < pad || y - pad >= cv->h || lo == hi) {
          zero_run(band, ow);
          continue;
        }
        const float *src = x + s * sn + c * sc + (y - pad) * cv->w;
        zero_run(band, lo);
        copy_run(band + lo, src + lo + kx - pad, hi - lo);
        zero_run(band + hi, ow - hi);
      }
    }
}

/* The pieces of one sliver of nr columns [g0, g0 + nr) of a chunk's
 * column matrix (g counted from the chunk's first pixel): each lies in one
 * sample, whose bands start `per` floats after the previous one's. */
typedef struct sliver_piece {
  size_t at, src, len; /* column in the sliver, offset in the bands */
} sliver_piece_t;

static size_t sliver_pieces(size_t g0, size_t g1, size_t ohw, size_t per,
                            sliver_piece_t *piece) {
  size_t np = 0;
  for (size_t g = g0; g < g1; np++) {
    size_t q = g % ohw, len = ohw - q < g1 - g ? ohw - q : g1 - g;
    piece[np] = (sliver_piece_t){g - g0, g / ohw * per + q, len};
    g += len;
  }
  return np;
}

/* The packed slivers of a chunk's cols columns from its bands: each row
 * of a sliver in one run, or a few where the sliver crosses from one
 * sample to the next. For AVX2 too, as pack_grid. */
QGM__AVX2_CLONES
static void pack_bands(const qgm__conv_t *cv, const float *bands, size_t cols,
                       size_t nr, float *dst) {
  const size_t rows = cv->cin * cv->k * cv->k, ohw = cv->oh * cv->ow;
  sliver_piece_t piece[QGM__GEMM_NR_MAX + 2];
  for (size_t g0 = 0; g0 < cols; g0 += nr) {
    size_t g1 = cols - g0 < nr ? cols : g0 + nr;
    size_t np = sliver_pieces(g0, g1, ohw, band_floats(cv), piece);
    for (size_t r = 0; r < rows; r++, dst += nr) {
      const float *from = bands + band_offset(cv, r);
      if (np == 1 && g1 - g0 == nr) {
        qgm__gemm_copy_sliver_row(dst, from + piece[0].src, nr);
        continue;
      }
      for (size_t i = 0; i < np; i++)
        copy_run(dst + piece[i].at, from + piece[i].src, piece[i].len);
      /* Columns past the last pixel: read by the kernel, so defined. */
      zero_run(dst + (g1 - g0), nr - (g1 - g0));
    }
  }
}

/* The forward product of a stride-1 convolution from bands: the packed
 * slivers' rows are copied from the bands in one or two runs (a sliver
 * crossing from one sample to the next), a chunk of samples at a time. */
static int forward_bands(const qgm__conv_t *cv, const float *w,
                         qgm__maps_t in, size_t n, float *out, float *col,
                         float *pack) {
  const size_t nr = qgm__gemm_nr(), rows = cv->cin * cv->k * cv->k;
  const size_t ohw = cv->oh * cv->ow, total = n * ohw, per = band_floats(cv);
  if (cv->stride != 1 || nr == 0 || rows * (ohw + nr) + per >
                                        QGM__CONV_COL_FLOATS)
    return 0;
  /* A chunk's packed columns (rounded up to whole slivers) and bands. */
  const size_t per_chunk = (QGM__CONV_COL_FLOATS - rows * nr) / (rows * ohw + per);
  for (size_t s0 = 0; s0 < n; s0 += per_chunk) {
    size_t ns = n - s0 < per_chunk ? n - s0 : per_chunk, cols = ns * ohw;
    float *packed = col, *bands = col + (cols + nr - 1) / nr * nr * rows;
    for (size_t s = 0; s < ns; s++)
      build_bands(cv, in.x, in.sn, in.sc, s0 + s, bands + s * per);
    pack_bands(cv, bands, cols, nr, packed);
    qgm__gemm_packed_b(cv->cout, cols, rows, w, (ptrdiff_t)rows, 1, packed,
                      QGM__GEMM_SET, out + s0 * ohw, total, pack);
  }
  return 1;
}

/* The input gradient of one sample from the gradient of its column matrix
 * (row r at dcol + r * ld): summed into the gradients of its bands
 * (dband, band_floats(cv)), then those onto dx (channel c at dx + c*sc).
 * Each pass is ordered so that the runs added back to back never overlap:
 * a run added where the previous one had just stored would wait for those
 * stores (a store-forwarding stall per vector, as in scatter). */
QGM__AVX2_CLONES
static void fold_bands(const qgm__conv_t *cv, const float *dcol, size_t ld,
                       float *dband, float *dx, size_t sc) {
  const size_t k = cv->k, pad = cv->pad, ow = cv->ow;
  const size_t band = (cv->h + 2 * pad) * ow, ohw = cv->oh * ow;
  memset(dband, 0, band_floats(cv) * sizeof *dband);
  for (size_t ky = 0; ky < k; ky++)
    for (size_t c = 0; c < cv->cin; c++)
      for (size_t kx = 0; kx < k; kx++) {
        float *restrict to = dband + (c * k + kx) * band + ky * ow;
        const float *restrict from = dcol + ((c * k + ky) * k + kx) * ld;
        for (size_t i = 0; i < ohw; i++)
          to[i] += from[i];
      }
  for (size_t c = 0; c < cv->cin; c++)
    memset(dx + c * sc, 0, cv->h * cv->w * sizeof *dx);
  for (size_t kx = 0; kx < k; kx++) {
    size_t lo, hi;
    valid_cols(cv, kx, &lo, &hi);
    for (size_t c = 0; c < cv->cin; c++)
      for (size_t iy = 0; iy < cv->h; iy++) {
        /* Band column ox came from input column ox + kx - pad. */
        float *restrict to = dx + c * sc + iy * cv->w + (lo + kx - pad);
        const float *restrict from =
            dband + (c * k + kx) * band + (iy + pad) * ow + lo;
        for (size_t i = 0; i < hi - lo; i++)
          to[i] += from[i];
      }
  }
}

/* Both gradients of a stride-1 convolution from bands, a chunk of samples
 * at a time: the column matrix rebuilt from the bands in runs of a
 * sample's output pixels, for dw (if not NULL); dcol = w^T * dout folded
 * back through the bands, for dx (if not NULL). */
static int backward_bands(const qgm__conv_t *cv, const float *w,
                          qgm__maps_t in, size_t n, const float *dout,
                          float *dw, float *dx, float *col, float *pack) {
  const size_t rows = cv->cin * cv->k * cv->k, ohw = cv->oh * cv->ow;
  const size_t total = n * ohw, per = band_floats(cv), hw = cv->h * cv->w;
  if (cv->stride != 1 || rows * ohw + 2 * per > QGM__CONV_COL_FLOATS)
    return 0;
  const size_t per_chunk = (QGM__CONV_COL_FLOATS - per) / (rows * ohw + per);
  for (size_t s0 = 0; s0 < n; s0 += per_chunk) {
    size_t ns = n - s0 < per_chunk ? n - s0 : per_chunk, cols = ns * ohw;
    float *bands = col, *cm = bands + ns * per, *dband = cm + rows * cols;
    if (dw) {
      for (size_t s = 0; s < ns; s++)
        build_bands(cv, in.x, in.sn, in.sc, s0 + s, bands + s * per);
      for (size_t r = 0; r < rows; r++)
        for (size_t s = 0; s < ns; s++)
          copy_run(cm + r * cols + s * ohw,
                   bands + s * per + band_offset(cv, r), ohw);
      /* dw (+)= dout[:, chunk] * cm^T: dot products of rows as long as
       * the chunk, read in place (packing would transpose both). */
      qgm__gemm_nt(cv->cout, rows, cols, dout + s0 * ohw, total, cm, cols,
                  s0 == 0 ? QGM__GEMM_SET : QGM__GEMM_ADD, dw, rows);
    }
    if (!dx)
      continue;
    qgm__gemm(rows, cols, cv->cout, w, 1, (ptrdiff_t)rows, dout + s0 * ohw,
             (ptrdiff_t)total, 1, QGM__GEMM_SET, cm, cols, pack);
    for (size_t s = 0; s < ns; s++)
      fold_bands(cv, cm + s * ohw, cols, dband, dx + (s0 + s) * hw, n * hw);
  }
  return 1;
}

/* The general forward product: column chunks gathered straight into the
 * kernel's packed layout when it has one. */
static void forward_chunks(const qgm__conv_t *cv, const float *w,
                           qgm__maps_t in, size_t n, float *out, float *col,
                           float *pack) {
  const size_t rows = cv->cin * cv->k * cv->k, total = n * cv->oh * cv->ow;
  const size_t step = chunk_cols(rows), nr = qgm__gemm_nr();
  float *padded = col + QGM__CONV_COL_FLOATS;
  for (size_t j0 = 0; j0 < total; j0 += step) {
    size_t j1 = total - j0 < step ? total : j0 + step, cols = j1 - j0;
    gather(cv, in.x, in.sn, in.sc, j0, j1, col, nr ? nr : cols, padded);
    if (nr)
      qgm__gemm_packed_b(cv->cout, cols, rows, w, (ptrdiff_t)rows, 1, col,
                        QGM__GEMM_SET, out + j0, total, pack);
    else
      qgm__gemm(cv->cout, cols, rows, w, (ptrdiff_t)rows, 1, col,
               (ptrdiff_t)cols, 1, QGM__GEMM_SET, out + j0, total, pack);
  }
}

void qgm__conv_forward(const qgm__conv_t *cv, const float *w, const float *bias,
                      qgm__maps_t in, size_t n, float *out, float *col,
                      float *pack) {
  qgm__kernel_t kernel = conv_kernel(cv);
  qgm__kernel_t previous = qgm__gemm_select(kernel);
  if (use_winograd(cv)) {
    qgm__winograd_forward(cv, w, in, n, out, col, pack);
  } else if (qgm__direct_fits(cv, kernel)) {
    qgm__direct_forward(cv, kernel, w, bias, in, n, out, col);
    bias = NULL; /* added by the kernels */
  } else if (!qgm__grid_forward(cv, w, in, n, out, col, pack) &&
             !forward_bands(cv, w, in, n, out, col, pack)) {
    forward_chunks(cv, w, in, n, out, col, pack);
  }
  if (bias) {
    const size_t total = n * cv->oh * cv->ow;
    for (size_t c = 0; c < cv->cout; c++) {
      float *o = out + c * total, b = bias[c];
      for (size_t j = 0; j < total; j++)
        o[j] += b;
    }
  }
  qgm__gemm_select(previous);
}

static void conv_backward(const qgm__conv_t *cv, const float *w,
                          qgm__maps_t in, size_t n, const float *dout,
                          float *dw, float *dbias, float *dx, float *col,
                          float *pack) {
  const size_t rows = cv->cin * cv->k * cv->k, total = n * cv->oh * cv->ow;
  const size_t step = chunk_cols(rows);
  float *padded = col + QGM__CONV_COL_FLOATS;
  if (dbias)
    qgm__cols_sum(dbias, dout, cv->cout, total);
  if (use_winograd(cv)) {
    qgm__winograd_backward(cv, w, in, n, dout, dw, dx, col, pack);
    return;
  }
  /* The direct paths have no input gradient: the one below is found
   * without dw. */
  qgm__kernel_t kernel = conv_kernel(cv);
  if (qgm__direct_fits(cv, kernel)) {
    qgm__direct_weight_grad(cv, kernel, in, n, dout, dw, col);
    if (!dx)
      return;
    dw = NULL;
  }
  /* Bands where the grid of the in-place paths is a quarter wider than
   * the output (small maps, large kernels). */
  const size_t pw = cv->w + 2 * cv->pad;
  if (4 * pw > 5 * cv->ow &&
      backward_bands(cv, w, in, n, dout, dw, dx, col, pack))
    return;
  int dw_done = !dw || qgm__grid_weight_grad(cv, in, n, dout, dw, col, padded);
  int dx_done = !dx || qgm__grid_input_grad(cv, w, n, dout, dx, col, padded,
                                            pack);
  if (dw_done && dx_done)
    return;
  if (!dx_done)
    memset(dx, 0, cv->cin * n * cv->h * cv->w * sizeof *dx);
  for (size_t j0 = 0; j0 < total; j0 += step) {
    size_t j1 = total - j0 < step ? total : j0 + step, cols = j1 - j0;
    if (!dw_done) {
      gather(cv, in.x, in.sn, in.sc, j0, j1, col, cols, padded);
      /* dw (+)= dout[:, chunk] * col^T, k = the chunk's pixels. */
      qgm__gemm(cv->cout, rows, cols, dout + j0, (ptrdiff_t)total, 1, col, 1,
               (ptrdiff_t)cols, j0 == 0 ? QGM__GEMM_SET : QGM__GEMM_ADD, dw,
               rows, pack);
    }
    if (!dx_done) {
      /* dcol = w^T * dout[:, chunk], then back onto the image grid. */
      qgm__gemm(rows, cols, cv->cout, w, 1, (ptrdiff_t)rows, dout + j0,
               (ptrdiff_t)total, 1, QGM__GEMM_SET, col, cols, pack);
      scatter(cv, dx, cv->h * cv->w, n * cv->h * cv->w, j0, j1, col);
    }
  }
}

void qgm__conv_backward(const qgm__conv_t *cv, const float *w, qgm__maps_t in,
                       size_t n, const float *dout, float *dw, float *dbias,
                       float *dx, float *col, float *pack) {
  qgm__kernel_t previous = qgm__gemm_select(conv_kernel(cv));
  conv_backward(cv, w, in, n, dout, dw, dbias, dx, col, pack);
  qgm__gemm_select(previous);
}
