/* act.c - the elementwise kernels between the matrix products: bias, ReLU
 * and their gradients. They are memory-bound and branch-free (a ReLU mask
 * on real activations is a coin flip per element, so a branch would
 * mispredict half the time); restrict lets the compiler vectorise them. */
#include "nn/layers.h"

void qgm__rows_add_bias(float *restrict x, const float *restrict bias,
                       size_t rows, size_t cols, int relu) {
  for (size_t i = 0; i < rows; i++) {
    float *restrict row = x + i * cols;
    if (relu) {
      for (size_t j = 0; j < cols; j++) {
        float v = row[j] + bias[j];
        row[j] = v > 0.0f ? v : 0.0f;
      }
    } else {
      for (size_t j = 0; j < cols; j++)
        row[j] += bias[j];
    }
  }
}

void qgm__rows_sum(float *restrict out, const float *restrict x, size_t rows,
                  size_t cols) {
  for (size_t j = 0; j < cols; j++)
    out[j] = 0.0f;
  for (size_t i = 0; i < rows; i++) {
    const float *restrict row = x + i * cols;
    for (size_t j = 0; j < cols; j++)
      out[j] += row[j];
  }
}

/* Sixteen partial sums: one dependent chain of float additions would run
 * at one add per latency, and the compiler may not reorder it itself. */
QGM__AVX2_CLONES
double qgm__sum(const float *restrict x, size_t n) {
  float part[16] = {0};
  size_t j = 0;
  for (; j + 16 <= n; j += 16)
    for (size_t t = 0; t < 16; t++)
      part[t] += x[j + t];
  double s = 0.0;
  for (; j < n; j++)
    s += x[j];
  for (size_t t = 0; t < 16; t++)
    s += part[t];
  return s;
}

void qgm__cols_sum(float *restrict out, const float *restrict x, size_t rows,
                  size_t cols) {
  for (size_t i = 0; i < rows; i++)
    out[i] = (float)qgm__sum(x + i * cols, cols);
}

void qgm__relu(float *restrict x, size_t n) {
  for (size_t i = 0; i < n; i++)
    x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

QGM__AVX2_CLONES
void qgm__add_relu(float *restrict out, const float *restrict a,
                  const float *restrict b, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float v = a[i] + b[i];
    out[i] = v > 0.0f ? v : 0.0f;
  }
}

QGM__AVX2_CLONES
void qgm__relu_backward(float *restrict d, const float *restrict y, size_t n) {
  for (size_t i = 0; i < n; i++)
    d[i] = y[i] > 0.0f ? d[i] : 0.0f;
}

void qgm__cnhw_to_rows(float *restrict rows, const float *restrict x,
                      size_t c, size_t n, size_t hw) {
  for (size_t ch = 0; ch < c; ch++)
    for (size_t s = 0; s < n; s++)
      for (size_t i = 0; i < hw; i++)
        rows[s * c * hw + ch * hw + i] = x[(ch * n + s) * hw + i];
}

void qgm__rows_to_cnhw(float *restrict x, const float *restrict rows,
                      size_t c, size_t n, size_t hw) {
  for (size_t ch = 0; ch < c; ch++)
    for (size_t s = 0; s < n; s++)
      for (size_t i = 0; i < hw; i++)
        x[(ch * n + s) * hw + i] = rows[s * c * hw + ch * hw + i];
}
