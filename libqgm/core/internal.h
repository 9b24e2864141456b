/* internal.h - helpers shared by libqgm's own files; not installed. */
#ifndef QGM_INTERNAL_H
#define QGM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "qgm.h"

/* Marks a memory-bound kernel's definition (the layers' elementwise
 * kernels, the optimizers' rules, the vector kernels): it is built in two
 * versions, for AVX2 and for the baseline, and the loader picks one by
 * the CPU (an ifunc). Twice the width for the same arithmetic, without
 * FMA contraction, so both give the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define QGM__AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define QGM__AVX2_CLONES
#endif

/* Size of n elements of `size` bytes, or 0 if that overflows. */
static inline size_t qgm__mul_size(size_t n, size_t size) {
  return (size != 0 && n > ((size_t)-1) / size) ? 0 : n * size;
}

/* "a, b, c": the count names of a table (name_of(i) is the i-th) into buf,
 * for the qgm_*_names() lists, so that a table is the only list of its
 * names. Returns buf. */
const char *qgm__join_names(char *buf, size_t size, size_t count,
                           const char *(*name_of)(size_t i));

/* Carves a model's buffers out of its one arena. The layout code runs
 * twice: with base NULL it only adds up the size (every pointer is NULL),
 * then again over the allocated arena. Each buffer starts on a 64-byte
 * line. */
typedef struct qgm_carver {
  float *base;
  size_t used; /* floats */
} qgm__carver_t;

static inline float *qgm__carve(qgm__carver_t *c, size_t floats) {
  float *p = c->base ? c->base + c->used : NULL;
  c->used += (floats + 15) & ~(size_t)15;
  return p;
}

/* Sizes an arena by running layout(owner, carver) over a NULL base,
 * allocates it (on huge pages where it spans some: arena.c), and runs
 * layout again over it so that every pointer is set. Returns the arena
 * (release with free()) or NULL. */
float *qgm__arena_build(void *owner, void (*layout)(void *, qgm__carver_t *));

/* Opens a file a user named, for reading (file.c). Anything but a regular
 * file (a directory, a FIFO, a device) is QGM_ENOTFILE, found without
 * blocking; a file that cannot be opened is QGM_EOPEN with errno set.
 * *size gets the file's size. Close the descriptor (or the FILE) when
 * done. */
int qgm__open_input(const char *path, int *fd, uint64_t *size);
int qgm__fopen_input(const char *path, FILE **out, uint64_t *size);
/* Closes fd leaving errno as it was: the caller reports the failure that
 * made it give up, not the close. */
void qgm__close_keeping_errno(int fd);

#endif /* QGM_INTERNAL_H */
