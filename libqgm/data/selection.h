/* selection.h - which samples of a file a node keeps, shared by the
 * readers that load a shard in one pass (idx.c, cifar.c); not installed. */
#ifndef QGM_SELECTION_H
#define QGM_SELECTION_H

#include <stddef.h>

/* The kept samples sorted by file index, so that one pass over the files in
 * file order can drop each into its position in the caller's order. Sorting
 * (rather than an index -> position table over the whole file) keeps the
 * memory proportional to the subset. */
typedef struct {
  size_t index; /* sample in the file */
  size_t pos;   /* row in the dataset */
} qgm__pick_t;

typedef struct {
  qgm__pick_t *picks; /* NULL: keep every sample, in file order */
  size_t len;
  size_t next; /* first pick not yet reached by the pass */
} qgm__selection_t;

/* Sorts the subset (NULL: keep all); a repeated index, or more than
 * max_len indices, is QGM_EINVAL (a shard never repeats a sample, so a
 * repeat is a caller bug, not something to paper over). Free picks. */
int qgm__selection_init(qgm__selection_t *sel, const size_t *subset,
                       size_t len, size_t max_len);

static inline void qgm__selection_rewind(qgm__selection_t *sel) {
  sel->next = 0;
}

/* Whether sample i (visited in increasing order) is kept, and where. */
static inline int qgm__selection_take(qgm__selection_t *sel, size_t i,
                                     size_t *pos) {
  if (!sel->picks) {
    *pos = i;
    return 1;
  }
  if (sel->next < sel->len && sel->picks[sel->next].index == i) {
    *pos = sel->picks[sel->next++].pos;
    return 1;
  }
  return 0;
}

/* Whether every kept index is below count (sorted: the largest is last). */
static inline int qgm__selection_fits(const qgm__selection_t *sel,
                                     size_t count) {
  return !sel->picks || sel->len == 0 || sel->picks[sel->len - 1].index < count;
}

#endif /* QGM_SELECTION_H */
