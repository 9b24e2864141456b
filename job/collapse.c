/* collapse.c - the bounds of collapse.h, checked. */
#include "collapse.h"

#include <stdio.h>

int qgmd_collapsed(double consensus, int has_momentum, double momentum_max,
                   char *why, size_t len) {
  /* "!(x <= bound)": a NaN measure counts as past it */
  if (!(consensus <= QGMD_COLLAPSE_CONSENSUS)) {
    snprintf(why, len, "consensus distance %.4g is above %g",
             consensus, QGMD_COLLAPSE_CONSENSUS);
    return 1;
  }
  if (has_momentum && !(momentum_max <= QGMD_COLLAPSE_MOMENTUM_NORM)) {
    snprintf(why, len, "largest momentum norm %.4g is above %g",
             momentum_max, QGMD_COLLAPSE_MOMENTUM_NORM);
    return 1;
  }
  return 0;
}
