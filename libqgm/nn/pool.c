/* pool.c - 2 x 2 max pooling and global average pooling. */
#include <string.h>

#include "nn/layers.h"

/* A window's values are a b (upper row) and c d (lower row); its maximum
 * is the first of the four in that order on ties, and the backward pass
 * sends the gradient to that one. Both passes compute it with selects on
 * values, never with a branch or an index: on real activations the
 * maximum's position is random, and the select form vectorises. */
static inline float window_max(float a, float b, float c, float d) {
  float top = b > a ? b : a, bottom = d > c ? d : c;
  return bottom > top ? bottom : top;
}

/* With relu, the pooling of ReLU(x), ReLU(max) being the maximum of the
 * ReLUs: the pass over the maps a separate ReLU would take is saved. */
void qgm__maxpool2_forward(const float *x, size_t planes, size_t h, size_t w,
                          int relu, float *out) {
  const size_t oh = h / 2, ow = w / 2;
  for (size_t p = 0; p < planes; p++)
    for (size_t y = 0; y < oh; y++) {
      const float *restrict upper = x + (p * h + 2 * y) * w;
      const float *restrict lower = upper + w;
      float *restrict o = out + (p * oh + y) * ow;
      if (relu)
        for (size_t i = 0; i < ow; i++) {
          float m = window_max(upper[2 * i], upper[2 * i + 1], lower[2 * i],
                               lower[2 * i + 1]);
          o[i] = m > 0.0f ? m : 0.0f;
        }
      else
        for (size_t i = 0; i < ow; i++)
          o[i] = window_max(upper[2 * i], upper[2 * i + 1], lower[2 * i],
                            lower[2 * i + 1]);
    }
}

void qgm__maxpool2_backward(const float *x, size_t planes, size_t h, size_t w,
                           const float *dout, float *dx) {
  const size_t oh = h / 2, ow = w / 2;
  for (size_t p = 0; p < planes; p++) {
    for (size_t y = 0; y < oh; y++) {
      const float *restrict upper = x + (p * h + 2 * y) * w;
      const float *restrict lower = upper + w;
      const float *restrict g = dout + (p * oh + y) * ow;
      float *restrict du = dx + (p * h + 2 * y) * w, *restrict dl = du + w;
      for (size_t i = 0; i < ow; i++) {
        float a = upper[2 * i], b = upper[2 * i + 1];
        float c = lower[2 * i], d = lower[2 * i + 1];
        float m = window_max(a, b, c, d);
        /* Exactly one position takes the gradient: the first maximum.
         * `rest` is the gradient not yet placed. */
        float rest = g[i];
        du[2 * i] = a == m ? rest : 0.0f;
        rest = a == m ? 0.0f : rest;
        du[2 * i + 1] = b == m ? rest : 0.0f;
        rest = b == m ? 0.0f : rest;
        dl[2 * i] = c == m ? rest : 0.0f;
        dl[2 * i + 1] = c == m ? 0.0f : rest;
      }
    }
    /* An odd last row or column is not pooled: its gradient is zero. */
    for (size_t y = 0; y < h; y++)
      for (size_t i = 2 * ow; i < w; i++)
        dx[(p * h + y) * w + i] = 0.0f;
    if (h % 2)
      memset(dx + (p * h + h - 1) * w, 0, w * sizeof *dx);
  }
}

void qgm__avgpool_forward(const float *x, size_t c, size_t n, size_t hw,
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

void qgm__avgpool_backward(const float *drows, size_t c, size_t n, size_t hw,
                          float *dx) {
  const float scale = 1.0f / (float)hw;
  for (size_t ch = 0; ch < c; ch++)
    for (size_t s = 0; s < n; s++) {
      float g = drows[s * c + ch] * scale, *p = dx + (ch * n + s) * hw;
      for (size_t i = 0; i < hw; i++)
        p[i] = g;
    }
}
