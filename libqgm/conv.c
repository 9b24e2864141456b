/* conv.c - 2-D convolution as im2col + qgm_gemm, forward and backward.
 *
 * The column matrix has one row per (input channel, ky, kx) and one column
 * per output pixel of the batch (sample, oy, ox). It is never built whole
 * (for a 64-image CIFAR batch it would take tens of megabytes): the
 * products run over chunks of output pixels whose columns fit in
 * QGM_CONV_COL_FLOATS, and the backward pass rebuilds the chunk it needs
 * rather than keeping the forward's. */
#include <string.h>

#include "gemm.h"
#include "layers.h"

int qgm_conv_init(qgm_conv_t *cv) {
  if (cv->k == 0 || cv->stride == 0 || cv->cin == 0 || cv->cout == 0 ||
      cv->h + 2 * cv->pad < cv->k || cv->w + 2 * cv->pad < cv->k ||
      cv->k > QGM_CONV_MAX_K ||
      cv->cin * cv->k * cv->k > QGM_CONV_COL_FLOATS / 32)
    return -1;
  cv->oh = (cv->h + 2 * cv->pad - cv->k) / cv->stride + 1;
  cv->ow = (cv->w + 2 * cv->pad - cv->k) / cv->stride + 1;
  return 0;
}

size_t qgm_conv_num_weights(const qgm_conv_t *cv) {
  return cv->cout * cv->cin * cv->k * cv->k;
}

/* Output pixels per chunk: as many columns as fit the scratch, a multiple
 * of 32 (every kernel's tile width, so that only the last chunk has a
 * partial sliver); qgm_conv_init guarantees room for 32. */
static size_t chunk_cols(size_t rows) {
  return QGM_CONV_COL_FLOATS / rows & ~(size_t)31;
}

/* The output columns [lo, hi) whose input column ox*stride - pad + kx
 * lies inside the image. */
static void valid_cols(const qgm_conv_t *cv, size_t kx, size_t *lo,
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

/* One run of output pixels [ox0, ox1) along a row of the column matrix:
 * pixel ox reads src[(ox - a) * s] for ox in [a, b) and padding (0)
 * elsewhere. The stride-1 loops are separate so that they vectorise. */
static void gather_run(float *restrict dst, const float *restrict src,
                       size_t s, size_t ox0, size_t a, size_t b, size_t ox1) {
  for (size_t ox = ox0; ox < a; ox++)
    dst[ox - ox0] = 0.0f;
  dst += a - ox0;
  if (s == 1)
    for (size_t i = 0; i < b - a; i++)
      dst[i] = src[i];
  else
    for (size_t i = 0; i < b - a; i++)
      dst[i] = src[i * s];
  dst += b - a;
  for (size_t ox = b; ox < ox1; ox++)
    dst[ox - b] = 0.0f;
}

static void scatter_run(const float *restrict dst, float *restrict src,
                        size_t s, size_t ox0, size_t a, size_t b) {
  dst += a - ox0;
  if (s == 1)
    for (size_t i = 0; i < b - a; i++)
      src[i] += dst[i];
  else
    for (size_t i = 0; i < b - a; i++)
      src[i * s] += dst[i];
}

/* Moves data between the images and the column matrix of output pixels
 * [j0, j1), stored as slivers of `width` columns (matrix row r, column j
 * at col[(j / width) * rows * width + r * width + j % width], j counted
 * from j0; width = j1 - j0 is a plain row-major matrix): gathers into col
 * (padding reads as 0), or, when to_image, adds col back into the images
 * (the gradient of the gather). The outer loop walks runs along one output
 * row of one sample inside one sliver, so the index arithmetic is paid
 * once per run and not once per matrix element. */
static void columns(const qgm_conv_t *cv, float *x, size_t sn, size_t sc,
                    size_t j0, size_t j1, float *col, size_t width,
                    int to_image) {
  const size_t k = cv->k, s = cv->stride, ow = cv->ow, ohw = cv->oh * ow;
  const size_t rows = cv->cin * k * k;
  size_t lo[QGM_CONV_MAX_K], hi[QGM_CONV_MAX_K];
  for (size_t kx = 0; kx < k; kx++)
    valid_cols(cv, kx, &lo[kx], &hi[kx]);
  for (size_t j = j0; j < j1;) {
    size_t sample = j / ohw, rem = j % ohw, oy = rem / ow, ox0 = rem % ow;
    size_t at = (j - j0) % width, len = ow - ox0;
    if (len > j1 - j)
      len = j1 - j;
    if (len > width - at)
      len = width - at;
    size_t ox1 = ox0 + len;
    float *sliver = col + (j - j0) / width * rows * width + at;
    for (size_t c = 0; c < cv->cin; c++) {
      for (size_t ky = 0; ky < k; ky++) {
        size_t iy = oy * s + ky; /* + pad, to stay unsigned */
        int row_ok = iy >= cv->pad && iy - cv->pad < cv->h;
        /* Signed: the offsets of padding pixels may be negative, but only
         * those of pixels inside the image are ever dereferenced. */
        ptrdiff_t row = (ptrdiff_t)(sample * sn + c * sc) +
                        ((ptrdiff_t)iy - (ptrdiff_t)cv->pad) *
                            (ptrdiff_t)cv->w;
        for (size_t kx = 0; kx < k; kx++) {
          float *dst = sliver + ((c * k + ky) * k + kx) * width;
          size_t a = row_ok ? (lo[kx] > ox0 ? lo[kx] : ox0) : ox1;
          size_t b = row_ok ? (hi[kx] < ox1 ? hi[kx] : ox1) : ox1;
          if (b < a)
            b = a;
          /* Pixel ox of the run is x[row + kx - pad + ox*s]. */
          float *r = x + row + (ptrdiff_t)kx - (ptrdiff_t)cv->pad +
                     (ptrdiff_t)(a * s);
          if (to_image)
            scatter_run(dst, r, s, ox0, a, b);
          else
            gather_run(dst, r, s, ox0, a, b, ox1);
        }
      }
    }
    j += len;
  }
  /* Columns past j1 in the last sliver: read by the kernel, so defined. */
  size_t tail = (j1 - j0) % width;
  if (!to_image && tail)
    for (size_t r = 0; r < rows; r++)
      memset(col + (j1 - j0) / width * rows * width + r * width + tail, 0,
             (width - tail) * sizeof *col);
}

void qgm_conv_forward(const qgm_conv_t *cv, const float *w, const float *bias,
                      qgm_maps_t in, size_t n, float *out, float *col,
                      float *pack) {
  const size_t rows = cv->cin * cv->k * cv->k, total = n * cv->oh * cv->ow;
  const size_t step = chunk_cols(rows), nr = qgm_gemm_nr();
  /* The gather only reads x; the cast lets it share code with the
   * scatter that writes. */
  float *x = (float *)in.x;
  for (size_t j0 = 0; j0 < total; j0 += step) {
    size_t j1 = total - j0 < step ? total : j0 + step, cols = j1 - j0;
    /* Straight into the kernel's packed layout when it has one. */
    columns(cv, x, in.sn, in.sc, j0, j1, col, nr ? nr : cols, 0);
    if (nr)
      qgm_gemm_packed_b(cv->cout, cols, rows, w, (ptrdiff_t)rows, 1, col,
                        QGM_GEMM_SET, out + j0, total, pack);
    else
      qgm_gemm(cv->cout, cols, rows, w, (ptrdiff_t)rows, 1, col,
               (ptrdiff_t)cols, 1, QGM_GEMM_SET, out + j0, total, pack);
  }
  if (bias)
    for (size_t c = 0; c < cv->cout; c++) {
      float *o = out + c * total, b = bias[c];
      for (size_t j = 0; j < total; j++)
        o[j] += b;
    }
}

void qgm_conv_backward(const qgm_conv_t *cv, const float *w, qgm_maps_t in,
                       size_t n, const float *dout, float *dw, float *dbias,
                       float *dx, float *col, float *pack) {
  const size_t rows = cv->cin * cv->k * cv->k, total = n * cv->oh * cv->ow;
  const size_t step = chunk_cols(rows);
  float *x = (float *)in.x; /* read only, see qgm_conv_forward */
  if (dbias)
    qgm_cols_sum(dbias, dout, cv->cout, total);
  if (dx)
    memset(dx, 0, cv->cin * n * cv->h * cv->w * sizeof *dx);
  for (size_t j0 = 0; j0 < total; j0 += step) {
    size_t j1 = total - j0 < step ? total : j0 + step, cols = j1 - j0;
    columns(cv, x, in.sn, in.sc, j0, j1, col, cols, 0);
    /* dw (+)= dout[:, chunk] * col^T: rows of both run along the pixels. */
    qgm_gemm_nt(cv->cout, rows, cols, dout + j0, total, col, cols,
                j0 == 0 ? QGM_GEMM_SET : QGM_GEMM_ADD, dw, rows);
    if (dx) {
      /* dcol = w^T * dout[:, chunk], then back onto the image grid. */
      qgm_gemm(rows, cols, cv->cout, w, 1, (ptrdiff_t)rows, dout + j0,
               (ptrdiff_t)total, 1, QGM_GEMM_SET, col, cols, pack);
      columns(cv, dx, cv->h * cv->w, n * cv->h * cv->w, j0, j1, col, cols,
              1);
    }
  }
}
