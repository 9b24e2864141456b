/* widths.c - parsing a list of layer widths, shared by every program that
 * takes an MLP's shape on its command line. */
#include <errno.h>
#include <stdlib.h>

#include "qgm.h"

int qgm_model_parse_widths(const char *text, size_t *widths, size_t max,
                           size_t *count) {
  if (!text || !widths || !count)
    return QGM_EINVAL;
  *count = 0;
  const char *s = text;
  while (*s) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || v < 1 || v > 65536 || errno || *count == max)
      return QGM_EINVAL;
    widths[(*count)++] = (size_t)v;
    if (*end == ',' && end[1] != '\0')
      end++;
    else if (*end != '\0')
      return QGM_EINVAL;
    s = end;
  }
  return *count ? 0 : QGM_EINVAL;
}
