/* exchange_global.h - the all-reduce's mean (exchange_global.c) and its
 * phases between groups (exchange_global_groups.c): the state they share. */
#ifndef QGMD_EXCHANGE_GLOBAL_H
#define QGMD_EXCHANGE_GLOBAL_H

#include "exchange_kind.h"

typedef struct qgmd_global {
  int group_size, groups; /* the groups: aligned blocks of ranks */
  int group, slot; /* this node's: rank / group_size, rank % group_size */
  float *group_parts; /* its slice of the group's messages, by slot */
  float *group_sum;   /* its slice, summed over the group, then over all
                         (or its window's slot, when the group shares) */
  float *sum;         /* the whole sum */
  /* Between groups: a sum over the groups' sums of the slice, as pairs
   * when the groups are a power of two (levels > 0), else all at once. */
  int levels, step, gathering;
  int lo, count; /* the positions this node holds of its slice's parts */
  float *parts;  /* what the other groups sent of its part(s) */
} qgmd_global_t;

/* Where this node's summed slice is (group_sum, or its window's slot). */
float *qgmd__global_sum(const qgmd_exchange_t *x);
/* The exchange's index of peer rank r (its peers are every other rank,
 * in order). */
int qgmd__global_peer(const qgmd_exchange_t *x, int r);
/* Clears the requests of a phase (peer j's receive is requests[j], the
 * send to it requests[degree + j]) and sets how many the phase posted. */
void qgmd__global_clear(qgmd_exchange_t *x);
int qgmd__global_posted(qgmd_exchange_t *x, int any);

/* Between groups (exchange_global_groups.c): the buffers; then the
 * reduction of this node's slice over the groups and the gathering of the
 * summed parts back, step by step: start posts the first step, advance
 * (once a step's requests completed) finishes it and posts the next. Each
 * returns the requests posted, 0 when the slice is summed over all. */
int qgmd__groups_init(qgmd_exchange_t *x);
int qgmd__groups_start(qgmd_exchange_t *x);
int qgmd__groups_advance(qgmd_exchange_t *x);

#endif /* QGMD_EXCHANGE_GLOBAL_H */
