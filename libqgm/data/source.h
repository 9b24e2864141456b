/* source.h - where a data file's bytes come from, read once front to
 * back: zlib's stream over the file (gzipped or plain), or the file's
 * whole decompressed content that the caller holds in memory
 * (qgm_file_image_t: the ranks of one host inflate a dataset once and
 * share it). The readers see the same bytes, the same bounds and the same
 * errors either way. Not installed. */
#ifndef QGM_SOURCE_H
#define QGM_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include <zlib.h>

#include "qgm.h"

typedef struct qgm__source {
  gzFile gz;          /* the file, or NULL when reading an image */
  const uint8_t *mem; /* the image */
  size_t len, at;
  uint64_t size; /* of the file */
} qgm__source_t;

/* Opens path: its image among images[0..n) when one has that path, else
 * the file. */
int qgm__source_open(qgm__source_t *s, const char *path,
                     const qgm_file_image_t *images, size_t n);
/* The most bytes the content can hold: the image's length; a plain file's
 * size; deflate's best ratio of a gzipped file's size. Known once a byte
 * was read (zlib tells gzip from plain by the first bytes). */
uint64_t qgm__source_limit(const qgm__source_t *s);
/* Reads exactly n bytes (QGM_ETRUNC when the content ends first). */
int qgm__source_read(qgm__source_t *s, void *buf, size_t n);
/* The next n bytes at *bytes, as qgm__source_read: read into scratch (n
 * bytes), or, from an image in memory, left where they are. So that a
 * loader that keeps a few of many records does not copy the others. */
int qgm__source_next(qgm__source_t *s, size_t n, uint8_t *scratch,
                     const uint8_t **bytes);
/* Succeeds at a clean end of the content (QGM_ETRAILING when more
 * follows); for a gzipped file this is also where its trailer (CRC and
 * length) is checked. */
int qgm__source_end(qgm__source_t *s);
void qgm__source_close(qgm__source_t *s);

#endif /* QGM_SOURCE_H */
