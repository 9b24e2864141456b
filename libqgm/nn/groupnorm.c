/* groupnorm.c - GroupNorm over CNHW maps, forward and backward.
 *
 * Statistics are per (sample, group); every reduction over a plane of
 * h x w values uses sixteen partial float sums (vectorisable, and each
 * partial adds up only a few dozen values) and adds the planes in
 * double. The backward pass needs two sums per plane, sum(dy) and
 * sum(dy * x), from which the group means of dxhat and dxhat * xhat
 * follow, so dx is one more elementwise pass. */
#include <math.h>

#include "nn/layers.h"

#define GN_EPS 1e-5

/* sum of (p[i] - shift) * (q[i] - qshift). Inlined into the callers, so
 * that it is built in their AVX2 clones too. */
static inline __attribute__((always_inline)) double
plane_dot(const float *p, float shift, const float *q, float qshift,
          size_t len) {
  float part[16] = {0};
  size_t i = 0;
  for (; i + 16 <= len; i += 16)
    for (size_t t = 0; t < 16; t++)
      part[t] += (p[i + t] - shift) * (q[i + t] - qshift);
  double s = 0.0;
  for (; i < len; i++)
    s += ((double)p[i] - shift) * ((double)q[i] - qshift);
  for (size_t t = 0; t < 16; t++)
    s += part[t];
  return s;
}

/* The output is x * a + b per channel: gamma (x - mean) rstd + beta with
 * the normalisation folded in. The backward pass finds the ReLU's mask
 * from the same floats, so both take them from here. */
static inline void affine(float gamma, float beta, float mean, float rstd,
                          float *a, float *b) {
  *a = gamma * rstd;
  *b = beta - mean * *a;
}

QGM__AVX2_CLONES
void qgm__groupnorm_forward(const float *x, size_t c, size_t n, size_t hw,
                           size_t groups, const float *gamma,
                           const float *beta, int relu, float *y,
                           float *stats) {
  const size_t per = c / groups;
  const double count = (double)(per * hw);
  for (size_t s = 0; s < n; s++) {
    for (size_t g = 0; g < groups; g++) {
      double sum = 0.0;
      for (size_t ch = g * per; ch < (g + 1) * per; ch++)
        sum += qgm__sum(x + (ch * n + s) * hw, hw);
      float mean = (float)(sum / count);
      /* Two passes: the variance from deviations, not E[x^2] - E[x]^2,
       * which cancels badly when the mean is large. */
      double ss = 0.0;
      for (size_t ch = g * per; ch < (g + 1) * per; ch++) {
        const float *p = x + (ch * n + s) * hw;
        ss += plane_dot(p, mean, p, mean, hw);
      }
      float rstd = (float)(1.0 / sqrt(ss / count + GN_EPS));
      stats[2 * (s * groups + g)] = mean;
      stats[2 * (s * groups + g) + 1] = rstd;
      for (size_t ch = g * per; ch < (g + 1) * per; ch++) {
        const float *p = x + (ch * n + s) * hw;
        float *o = y + (ch * n + s) * hw;
        float a, b;
        affine(gamma[ch], beta[ch], mean, rstd, &a, &b);
        if (relu)
          for (size_t i = 0; i < hw; i++) {
            float v = p[i] * a + b;
            o[i] = v > 0.0f ? v : 0.0f;
          }
        else
          for (size_t i = 0; i < hw; i++)
            o[i] = p[i] * a + b;
      }
    }
  }
}

QGM__AVX2_CLONES
void qgm__groupnorm_backward(const float *x, size_t c, size_t n, size_t hw,
                            size_t groups, const float *gamma,
                            const float *beta, const float *stats, int relu,
                            const float *dy, float *dx, float *dgamma,
                            float *dbeta) {
  const size_t per = c / groups;
  const double count = (double)(per * hw);
  for (size_t ch = 0; ch < c; ch++)
    dgamma[ch] = dbeta[ch] = 0.0f;
  for (size_t s = 0; s < n; s++) {
    for (size_t g = 0; g < groups; g++) {
      float mean = stats[2 * (s * groups + g)];
      float rstd = stats[2 * (s * groups + g) + 1];
      /* mean_dxhat = sum(gamma dy) / count; mean_dxhat_xhat likewise with
       * xhat = (x - mean) rstd. */
      double a = 0.0, b = 0.0;
      const float *d = dy;
      if (relu) {
        /* The ReLU's gradient first, into dx, plane by plane, so the sums
         * below read it from the cache rather than in a pass of its own.
         * Its mask is recomputed from x, which those sums read anyway:
         * reading the forward pass's output for it instead was a fourth
         * stream from memory (a pass bound by memory bandwidth). */
        for (size_t ch = g * per; ch < (g + 1) * per; ch++) {
          const size_t at = (ch * n + s) * hw;
          float ca, cb;
          affine(gamma[ch], beta[ch], mean, rstd, &ca, &cb);
          for (size_t i = 0; i < hw; i++) {
            float v = x[at + i] * ca + cb;
            dx[at + i] = v > 0.0f ? dy[at + i] : 0.0f;
          }
        }
        d = dx;
      }
      for (size_t ch = g * per; ch < (g + 1) * per; ch++) {
        const size_t at = (ch * n + s) * hw;
        double sdy = qgm__sum(d + at, hw);
        double sdyx = rstd * plane_dot(d + at, 0.0f, x + at, mean, hw);
        dgamma[ch] += (float)sdyx;
        dbeta[ch] += (float)sdy;
        a += gamma[ch] * sdy;
        b += gamma[ch] * sdyx;
      }
      a /= count;
      b /= count;
      /* dx = rstd (gamma dy - a - xhat b), as  u dy + v x + w. */
      for (size_t ch = g * per; ch < (g + 1) * per; ch++) {
        const size_t at = (ch * n + s) * hw;
        float u = rstd * gamma[ch];
        float v = (float)(-(double)rstd * rstd * b);
        float w = (float)(-(double)rstd * a - v * (double)mean);
        for (size_t i = 0; i < hw; i++)
          dx[at + i] = u * d[at + i] + v * x[at + i] + w;
      }
    }
  }
}
