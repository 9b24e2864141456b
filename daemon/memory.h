/* memory.h - whether a job fits in memory, checked before its model's
 * buffers are allocated: a job too large is refused with one line, where
 * it used to be ended by the kernel's OOM killer mid-allocation (and
 * mpirun then hung in its abort). */
#ifndef QGMD_MEMORY_H
#define QGMD_MEMORY_H

#include <stddef.h>

/* Whether `bytes` more per rank fit: the ranks_here ranks' bytes in the
 * host's available memory (MemAvailable, or what the memory cgroup's limit
 * leaves when that is less: qgmd_cgroup_memory_left), and each rank's in what its
 * address-space limit (ulimit -v) leaves it. 0, or 2 with one line in err
 * that starts with `what` (the flags that decide the size). */
int qgmd_memory_check(double bytes, int ranks_here, const char *what,
                      char *err, size_t errlen);

#endif /* QGMD_MEMORY_H */
