/* selection.c - sorting a node's subset of sample indices for one-pass
 * reading (see selection.h). */
#include "data/selection.h"

#include <stdlib.h>
#include <string.h>

#include "qgm.h"

static int pick_cmp(const void *a, const void *b) {
  size_t x = ((const qgm__pick_t *)a)->index;
  size_t y = ((const qgm__pick_t *)b)->index;
  return (x > y) - (x < y);
}

int qgm__selection_init(qgm__selection_t *sel, const size_t *subset,
                       size_t len, size_t max_len) {
  memset(sel, 0, sizeof *sel);
  if (!subset)
    return 0;
  sel->len = len;
  /* A subset longer than the largest file cannot be free of repeats or
   * in range, and must not size an allocation. */
  if (len > max_len)
    return QGM_EINVAL;
  sel->picks = malloc((len ? len : 1) * sizeof *sel->picks);
  if (!sel->picks)
    return QGM_ENOMEM;
  for (size_t i = 0; i < len; i++) {
    sel->picks[i].index = subset[i];
    sel->picks[i].pos = i;
  }
  qsort(sel->picks, len, sizeof *sel->picks, pick_cmp);
  for (size_t i = 1; i < len; i++) {
    if (sel->picks[i].index == sel->picks[i - 1].index) {
      free(sel->picks);
      sel->picks = NULL;
      return QGM_EINVAL;
    }
  }
  return 0;
}
