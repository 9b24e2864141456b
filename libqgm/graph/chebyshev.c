/* chebyshev.c - the coefficients of Chebyshev-accelerated gossip rounds
 * (qgm_chebyshev_rounds in qgm.h). With z(x) = alpha x + beta mapping
 * [lo, hi] onto [-1, 1] and c_k = T_k(gamma), gamma = z(1) > 1, the
 * three-term recurrence T_{k+1} = 2 z T_k - T_{k-1} of the Chebyshev
 * polynomials, divided by c_{k+1}, gives y_k = T_k(z(W)) y_0 / c_k:
 *   y_{k+1} = (2 c_k / c_{k+1}) (alpha W + beta) y_k - (c_{k-1} / c_{k+1}) y_{k-1},
 * whose weights sum to 1 (c_{k+1} = 2 gamma c_k - c_{k-1}), written around
 * t = W y_k (Golub & Varga's semi-iterative method; Scaman et al. 2017
 * accelerate gossip with it). T_R swings between -1 and 1 on [lo, hi];
 * (1 + T_R) / (1 + c_R) stays in [0, 2 / (1 + c_R)], which the mix
 * y_R + (y_0 - y_R) / (1 + c_R) applies. c_k grows like
 * (gamma + sqrt(gamma^2 - 1))^k, past a double for a well-connected
 * graph, so only the ratios rho_k = c_k / c_{k+1} = 1 / (2 gamma -
 * rho_{k-1}) are kept, and 1 / c_R is their product. */
#include "qgm.h"

int qgm_chebyshev_rounds(double lo, double hi, int rounds, float *b,
                         float *e, float *w, double *contraction) {
  if (!(lo >= -1.0 && lo <= hi && hi < 1.0) || rounds < 1 || !b || !e || !w)
    return QGM_EINVAL;
  if (hi - lo < 1e-12) {
    /* One eigenvalue besides 1: (W - lo) / (1 - lo) averages exactly in
     * one round, and the rounds after keep the average. */
    for (int k = 0; k < rounds; k++) {
      b[k] = (float)(lo / (lo - 1.0));
      e[k] = 0.0f;
    }
    *w = 0.0f;
    if (contraction)
      *contraction = 0.0;
    return 0;
  }
  const double alpha = 2.0 / (hi - lo), beta = -(hi + lo) / (hi - lo);
  const double gamma = alpha + beta;
  /* Round 0: y_1 = z(W) y_0 / gamma = t + (beta / gamma) (y_0 - t). */
  double rho = 1.0 / gamma, inverse = rho; /* 1 / c_k */
  b[0] = (float)(beta * rho);
  e[0] = 0.0f;
  for (int k = 1; k < rounds; k++) {
    const double next = 1.0 / (2.0 * gamma - rho);
    b[k] = (float)(2.0 * beta * next);
    e[k] = (float)(-rho * next);
    rho = next;
    inverse *= rho;
  }
  const double share = inverse / (1.0 + inverse); /* 1 / (1 + c_R) */
  *w = (float)share;
  if (contraction)
    *contraction = 2.0 * share;
  return 0;
}
