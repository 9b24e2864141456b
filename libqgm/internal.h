/* internal.h - helpers shared by libqgm's own files; not installed. */
#ifndef QGM_INTERNAL_H
#define QGM_INTERNAL_H

#include <stddef.h>

/* Size of n elements of `size` bytes, or 0 if that overflows. */
static inline size_t qgm_mul_size(size_t n, size_t size) {
  return (size != 0 && n > ((size_t)-1) / size) ? 0 : n * size;
}

/* 64-byte aligned allocation for vectors the kernels stream through;
 * release with free(). Returns NULL on overflow or exhaustion. */
float *qgm_alloc_floats(size_t n);

#endif /* QGM_INTERNAL_H */
