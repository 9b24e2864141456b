/* format.c - numbers as text that is both short and exact. */
#include <stdio.h>
#include <stdlib.h>

#include "qgm.h"

int qgm_format_double(char *buf, size_t size, double v) {
  char text[32];
  /* 17 significant digits always read back; most values need far fewer,
   * so try the short forms first. */
  for (int digits = 1; digits < 17; digits++) {
    snprintf(text, sizeof text, "%.*g", digits, v);
    if (strtod(text, NULL) == v)
      return snprintf(buf, size, "%s", text);
  }
  return snprintf(buf, size, "%.17g", v);
}
