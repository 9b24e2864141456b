/* trace.h - a Chrome trace-event timeline per rank (--trace=PATH), to load
 * in Perfetto or chrome://tracing; tools/qgm-trace-merge joins the ranks. */
#ifndef QGMD_TRACE_H
#define QGMD_TRACE_H

/* The lanes of a rank's timeline. */
enum qgmd_trace_lane {
  QGMD_TRACE_LOOP = 0,   /* the loop thread: waiting, evaluation */
  QGMD_TRACE_WORKER = 1, /* the compute worker */
  QGMD_TRACE_COMM = 2,   /* exchanges in flight */
};

typedef struct qgmd_trace qgmd_trace_t;

/* Opens the rank's file: PATH with "%r" replaced by the rank, or PATH.RANK
 * when PATH has no "%r". Times are seconds on the qgmd_now() clock, shown
 * relative to origin. Only a regular file is written (qgm_open_output).
 * Returns NULL on failure, with a qgm error code in *rc (errno set for
 * QGM_EOPEN). */
qgmd_trace_t *qgmd_trace_open(const char *path, int rank, double origin,
                              int *rc);
/* Records a span; safe from any thread; a NULL trace records nothing. */
void qgmd_trace_span(qgmd_trace_t *t, const char *name, int lane,
                     double start, double end);
/* Finishes the JSON and closes the file; returns 0 if all was written. */
int qgmd_trace_close(qgmd_trace_t *t);

#endif /* QGMD_TRACE_H */
