/* format.c - numbers as text that is both short and exact. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "qgm.h"

int qgm_format_double(char *buf, size_t size, double v) {
  char text[32];
  /* Plain digits read best where they are not much longer than the
   * exponent form: 10 rather than 1e+01, 0.0001 rather than 1e-04. */
  const double a = fabs(v);
  const int plain = a == 0.0 || (a >= 1e-4 && a < 1e16);
  /* 17 significant digits always read back; most values need far fewer,
   * so try the short forms first. */
  for (int digits = 1; digits < 17; digits++) {
    snprintf(text, sizeof text, "%.*g", digits, v);
    if (strtod(text, NULL) == v && (!plain || !strchr(text, 'e')))
      return snprintf(buf, size, "%s", text);
  }
  return snprintf(buf, size, "%.17g", v);
}

const char *qgm_count_text(char *buf, size_t size, long long n,
                           const char *noun) {
  snprintf(buf, size, "%lld %s%s", n, noun, n == 1 ? "" : "s");
  return buf;
}

/* Whether n, spoken, begins with a vowel: eight..., eleven, eighteen,
 * eighty... of its leading group of three digits ("eleven thousand"). */
static int spoken_with_vowel(long long n) {
  unsigned long long g = n < 0 ? 0 : (unsigned long long)n;
  while (g >= 1000)
    g /= 1000;
  if (g == 11 || g == 18)
    return 1;
  while (g >= 10)
    g /= 10;
  return g == 8;
}

const char *qgm_sized_text(char *buf, size_t size, long long n,
                           const char *noun) {
  snprintf(buf, size, "%s %lld-%s", spoken_with_vowel(n) ? "an" : "a", n,
           noun);
  return buf;
}

const char *qgm__join_names(char *buf, size_t size, size_t count,
                           const char *(*name_of)(size_t i)) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < count && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "",
                             name_of(i));
  return buf;
}
