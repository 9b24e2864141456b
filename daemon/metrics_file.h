/* metrics_file.h - rank 0's --metrics file: one JSON record a line, made
 * new by a fresh run and continued by a resumed one. */
#ifndef QGMD_METRICS_FILE_H
#define QGMD_METRICS_FILE_H

#include <stdint.h>
#include <stdio.h>

/* Opens path for the run's records. resumed_step 0: a fresh run, the file
 * is emptied. Otherwise the run resumes a checkpoint of that step: the
 * records up to it are kept and the file is cut before the first record
 * of a later step (steps the resumed run repeats) or the first line the
 * kill cut short, so that the file stays one whole record a line, each
 * step's once. Lost records after the cut (why the run before ended) are
 * kept, after the head.
 * *resumed_wall is then the wall time of the last record kept (0 when
 * none), from which the resumed run's clock continues. A device or this
 * process's own output is written as it is (qgm_open_stream). Returns 0
 * or a qgm error code, *out NULL. */
int qgmd_metrics_open(const char *path, uint64_t resumed_step, FILE **out,
                      double *resumed_wall);

#endif /* QGMD_METRICS_FILE_H */
