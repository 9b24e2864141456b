/* pool.c - 2 x 2 max pooling and global average pooling. */
#include <string.h>

#include "layers.h"

/* The index (0..3, row-major) of the largest of a window's four values,
 * the first on ties. Written as selects rather than a loop of
 * compare-and-branch: on real activations the maximum's position is
 * random, and mispredicted branches cost more than the rest of the
 * pooling. */
static int window_argmax(const float *p, size_t w) {
  float a = p[0], b = p[1], c = p[w], d = p[w + 1];
  int top = b > a, bottom = d > c ? 3 : 2;
  float mtop = top ? b : a, mbottom = d > c ? d : c;
  return mbottom > mtop ? bottom : top;
}

void qgm_maxpool2_forward(const float *x, size_t planes, size_t h, size_t w,
                          float *out) {
  const size_t oh = h / 2, ow = w / 2;
  for (size_t p = 0; p < planes; p++) {
    const float *in = x + p * h * w;
    float *o = out + p * oh * ow;
    for (size_t y = 0; y < oh; y++)
      for (size_t xo = 0; xo < ow; xo++) {
        const float *win = in + 2 * y * w + 2 * xo;
        int best = window_argmax(win, w);
        o[y * ow + xo] = win[(size_t)(best >> 1) * w + (size_t)(best & 1)];
      }
  }
}

void qgm_maxpool2_backward(const float *x, size_t planes, size_t h, size_t w,
                           const float *dout, float *dx) {
  const size_t oh = h / 2, ow = w / 2;
  memset(dx, 0, planes * h * w * sizeof *dx);
  for (size_t p = 0; p < planes; p++) {
    const float *in = x + p * h * w;
    float *d = dx + p * h * w;
    const float *g = dout + p * oh * ow;
    for (size_t y = 0; y < oh; y++)
      for (size_t xo = 0; xo < ow; xo++) {
        size_t at = 2 * y * w + 2 * xo;
        int best = window_argmax(in + at, w);
        d[at + (size_t)(best >> 1) * w + (size_t)(best & 1)] = g[y * ow + xo];
      }
  }
}

void qgm_avgpool_forward(const float *x, size_t c, size_t n, size_t hw,
                         float *rows) {
  const float scale = 1.0f / (float)hw;
  for (size_t ch = 0; ch < c; ch++)
    for (size_t s = 0; s < n; s++) {
      const float *p = x + (ch * n + s) * hw;
      float sum = 0.0f;
      for (size_t i = 0; i < hw; i++)
        sum += p[i];
      rows[s * c + ch] = sum * scale;
    }
}

void qgm_avgpool_backward(const float *drows, size_t c, size_t n, size_t hw,
                          float *dx) {
  const float scale = 1.0f / (float)hw;
  for (size_t ch = 0; ch < c; ch++)
    for (size_t s = 0; s < n; s++) {
      float g = drows[s * c + ch] * scale, *p = dx + (ch * n + s) * hw;
      for (size_t i = 0; i < hw; i++)
        p[i] = g;
    }
}
