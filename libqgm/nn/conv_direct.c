/* conv_direct.c - the direct convolutions (conv_direct.h) around their
 * kernels: which vector width runs, the weights and the output gradient
 * rearranged with the output channels innermost (a few floats per
 * parameter or output pixel, against the product's cin*k*k multiply-adds
 * per output), and a zero-bordered copy of a sample where the
 * convolution pads. */
#include <string.h>

#include "nn/conv_direct.h"

typedef struct width {
  size_t lanes;
  void (*forward)(const qgm__direct_geometry_t *g, const float *in,
                  const float *wt, const float *bias, float *out,
                  size_t total);
  void (*weight_grad)(const qgm__direct_geometry_t *g, const float *in,
                      const float *dt, float *acc);
  void (*rows_forward)(const qgm__direct_geometry_t *g, size_t cout,
                       const float *in, const float *w, const float *bias,
                       float *out, size_t total);
  void (*rows_weight_grad)(const qgm__direct_geometry_t *g, size_t cout,
                           const float *in, const float *dout, size_t total,
                           float *acc);
} width_t;

static const width_t *width_of(qgm__kernel_t kernel) {
  static const width_t avx512 = {16, qgm__direct_forward_sample_avx512,
                                 qgm__direct_weight_grad_sample_avx512,
                                 qgm__direct_rows_forward_sample_avx512,
                                 qgm__direct_rows_weight_grad_sample_avx512},
                       avx2 = {8, qgm__direct_forward_sample_avx2,
                               qgm__direct_weight_grad_sample_avx2,
                               qgm__direct_rows_forward_sample_avx2,
                               qgm__direct_rows_weight_grad_sample_avx2};
  switch (kernel) {
  case QGM__KERNEL_AVX512:
    return &avx512;
  case QGM__KERNEL_AVX2:
    return &avx2;
  default:
    return NULL;
  }
}

/* Past a padded copy, for the row paths' last vector of a row. */
enum { SLACK = 16 };

/* The row paths where the output channels do not fill the lanes: a row
 * of at most 4 vectors, at least three quarters of whose lanes it uses. */
static int takes_rows(const qgm__conv_t *cv, const width_t *wd) {
  size_t vpr = (cv->ow + wd->lanes - 1) / wd->lanes;
  return cv->cout % wd->lanes != 0 && vpr <= 4 &&
         4 * cv->ow >= 3 * vpr * wd->lanes;
}

static size_t rows_of(const qgm__conv_t *cv) { return cv->cin * cv->k * cv->k; }

/* The zero-bordered copy of a sample (the row paths copy even without
 * padding, for the slack). */
static size_t padded_floats(const qgm__conv_t *cv, int rows_path) {
  if (!cv->pad && !rows_path)
    return 0;
  return cv->cin * (cv->h + 2 * cv->pad) * (cv->w + 2 * cv->pad) + SLACK;
}

/* The scratch a pass keeps for the whole call: the weights or their
 * gradient (with the channels innermost, or as partial-sum vectors on the
 * row paths), and the padded copy. */
static size_t fixed_floats(const qgm__conv_t *cv, const width_t *wd) {
  int rows_path = takes_rows(cv, wd);
  return cv->cout * rows_of(cv) * (rows_path ? wd->lanes : 1) +
         padded_floats(cv, rows_path);
}

/* The channel paths only where the output rows are short against the
 * kernel (the padded row a quarter longer than the output's): there the
 * im2col paths copy almost as much as they multiply. On wide maps those
 * run as fast (resnet20-gn's 3x3 layers, measured on Zen 4), and on
 * layers of few input channels (its first, 27 products per output) the
 * rearranging here costs more than the copies it saves. */
static int takes_channels(const qgm__conv_t *cv, const width_t *wd) {
  return cv->cout % wd->lanes == 0 && 4 * (cv->w + 2 * cv->pad) > 5 * cv->ow;
}

int qgm__direct_fits(const qgm__conv_t *cv, qgm__kernel_t kernel) {
  const width_t *wd = width_of(kernel);
  return wd && cv->stride == 1 && cv->k <= QGM__DIRECT_MAX_K &&
         (takes_channels(cv, wd) || takes_rows(cv, wd)) &&
         fixed_floats(cv, wd) + cv->cout * cv->oh * cv->ow <=
             qgm__conv_scratch_floats(cv);
}

/* Sample s's maps as the kernels read them: in place, or copied into
 * `padded` where cv pads or the row paths run. */
static const float *sample_maps(const qgm__conv_t *cv, qgm__maps_t in,
                                size_t s, float *padded,
                                qgm__direct_geometry_t *g) {
  *g = (qgm__direct_geometry_t){.cin = cv->cin, .k = cv->k, .oh = cv->oh,
                                .ow = cv->ow, .chan = in.sc, .rs = cv->w};
  if (!padded)
    return in.x + s * in.sn;
  g->rs = cv->w + 2 * cv->pad;
  g->chan = (cv->h + 2 * cv->pad) * g->rs;
  qgm__conv_pad_sample(cv, in.x, in.sn, in.sc, s, padded);
  return padded;
}

void qgm__direct_forward(const qgm__conv_t *cv, qgm__kernel_t kernel,
                        const float *w, const float *bias, qgm__maps_t in,
                        size_t n, float *out, float *scratch) {
  const width_t *wd = width_of(kernel);
  const size_t lanes = wd->lanes, rows = rows_of(cv), blocks = cv->cout / lanes;
  const size_t ohw = cv->oh * cv->ow, total = n * ohw;
  const int rows_path = takes_rows(cv, wd);
  float *wt = scratch, *padded = rows_path ? scratch : wt + cv->cout * rows;
  size_t copy = padded_floats(cv, rows_path);
  if (copy)
    memset(padded, 0, copy * sizeof *padded);
  else
    padded = NULL;
  for (size_t co = 0; co < cv->cout && !rows_path; co++)
    for (size_t r = 0; r < rows; r++)
      wt[(co / lanes * rows + r) * lanes + co % lanes] = w[co * rows + r];
  for (size_t s = 0; s < n; s++) {
    qgm__direct_geometry_t g;
    const float *maps = sample_maps(cv, in, s, padded, &g);
    if (rows_path) {
      wd->rows_forward(&g, cv->cout, maps, w, bias, out + s * ohw, total);
      continue;
    }
    for (size_t b = 0; b < blocks; b++)
      wd->forward(&g, maps, wt + b * rows * lanes,
                  bias ? bias + b * lanes : NULL,
                  out + b * lanes * total + s * ohw, total);
  }
}

/* The row paths' weight gradient: per sample, onto partial-sum vectors,
 * which are added up at the end. */
static void rows_weight_grad(const qgm__conv_t *cv, const width_t *wd,
                             qgm__maps_t in, size_t n, const float *dout,
                             float *dw, float *scratch) {
  const size_t lanes = wd->lanes, count = cv->cout * rows_of(cv);
  const size_t total = n * cv->oh * cv->ow;
  float *acc = scratch, *padded = acc + count * lanes;
  memset(scratch, 0, fixed_floats(cv, wd) * sizeof *scratch);
  for (size_t s = 0; s < n; s++) {
    qgm__direct_geometry_t g;
    const float *maps = sample_maps(cv, in, s, padded, &g);
    wd->rows_weight_grad(&g, cv->cout, maps, dout + s * cv->oh * cv->ow,
                         total, acc);
  }
  for (size_t i = 0; i < count; i++) {
    float sum = 0.0f;
    for (size_t l = 0; l < lanes; l++)
      sum += acc[i * lanes + l];
    dw[i] = sum;
  }
}

void qgm__direct_weight_grad(const qgm__conv_t *cv, qgm__kernel_t kernel,
                            qgm__maps_t in, size_t n, const float *dout,
                            float *dw, float *scratch) {
  const width_t *wd = width_of(kernel);
  if (takes_rows(cv, wd)) {
    rows_weight_grad(cv, wd, in, n, dout, dw, scratch);
    return;
  }
  const size_t lanes = wd->lanes, rows = rows_of(cv), blocks = cv->cout / lanes;
  const size_t ohw = cv->oh * cv->ow, total = n * ohw;
  float *acc = scratch, *padded = acc + cv->cout * rows;
  float *dt = padded + padded_floats(cv, 0);
  const size_t per_chunk =
      (qgm__conv_scratch_floats(cv) - fixed_floats(cv, wd)) / (cv->cout * ohw);
  memset(scratch, 0, fixed_floats(cv, wd) * sizeof *scratch);
  if (!cv->pad)
    padded = NULL;
  for (size_t s0 = 0; s0 < n; s0 += per_chunk) {
    size_t ns = n - s0 < per_chunk ? n - s0 : per_chunk;
    /* dt: block b, sample s, pixel p, lane at ((b*ns + s)*ohw + p)*lanes. */
    for (size_t co = 0; co < cv->cout; co++)
      for (size_t s = 0; s < ns; s++) {
        const float *from = dout + co * total + (s0 + s) * ohw;
        float *to = dt + (co / lanes * ns + s) * ohw * lanes + co % lanes;
        for (size_t p = 0; p < ohw; p++)
          to[p * lanes] = from[p];
      }
    for (size_t s = 0; s < ns; s++) {
      qgm__direct_geometry_t g;
      const float *maps = sample_maps(cv, in, s0 + s, padded, &g);
      for (size_t b = 0; b < blocks; b++)
        wd->weight_grad(&g, maps, dt + (b * ns + s) * ohw * lanes,
                        acc + b * rows * lanes);
    }
  }
  for (size_t co = 0; co < cv->cout; co++)
    for (size_t r = 0; r < rows; r++)
      dw[co * rows + r] = acc[(co / lanes * rows + r) * lanes + co % lanes];
}
