/* collapse.c - the bounds of collapse.h, checked. */
#include "collapse.h"

#include <math.h>
#include <stdio.h>

int qgmd_collapsed(double consensus, int has_momentum, double momentum_max,
                   size_t dim, char *why, size_t len) {
  const double d = dim > 0 ? (double)dim : 1.0;
  const double per = consensus / d, rms = momentum_max / sqrt(d);
  /* "!(x <= bound)": a NaN measure counts as past it */
  if (!(per <= QGMD_COLLAPSE_CONSENSUS)) {
    snprintf(why, len, "consensus distance %.4g (%.3g per parameter) is "
             "above %g per parameter", consensus, per,
             QGMD_COLLAPSE_CONSENSUS);
    return 1;
  }
  if (has_momentum && !(rms <= QGMD_COLLAPSE_MOMENTUM_RMS)) {
    snprintf(why, len, "largest momentum norm %.4g (%.3g per parameter, "
             "root mean square) is above %g", momentum_max, rms,
             QGMD_COLLAPSE_MOMENTUM_RMS);
    return 1;
  }
  return 0;
}
