/* source.c - see source.h. */
#include "data/source.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/internal.h"

/* No deflate stream expands more than this (RFC 1951: a 258-byte match
 * in as little as 2 bits, every other bit a bit of a byte too). */
#define DEFLATE_MAX_RATIO 1032u
/* gzread takes an unsigned length but returns an int. */
#define MAX_READ ((size_t)1 << 30)

/* Turns the state of a stream that stopped short into an error code. */
static int gz_failure(gzFile gz) {
  int errnum = Z_OK;
  (void)gzerror(gz, &errnum);
  switch (errnum) {
  case Z_OK:
  case Z_BUF_ERROR: /* zlib's "unexpected end of file" inside a gzip member */
    return QGM_ETRUNC;
  case Z_ERRNO:
    return QGM_EIO;
  case Z_MEM_ERROR:
    return QGM_ENOMEM;
  default:
    return QGM_EGZIP;
  }
}

int qgm__source_open(qgm__source_t *s, const char *path,
                     const qgm_file_image_t *images, size_t n) {
  memset(s, 0, sizeof *s);
  for (size_t i = 0; images && i < n; i++)
    if (strcmp(images[i].path, path) == 0) {
      s->mem = images[i].bytes;
      s->len = images[i].len;
      return 0;
    }
  int fd;
  uint64_t size;
  int rc = qgm__open_input(path, &fd, &size);
  if (rc != 0)
    return rc;
  gzFile gz = gzdopen(fd, "rb");
  if (!gz) {
    close(fd);
    return QGM_ENOMEM;
  }
  /* Fewer, larger reads of the underlying file than zlib's 8 KiB default. */
  (void)gzbuffer(gz, 128u * 1024u);
  s->gz = gz;
  s->size = size;
  return 0;
}

uint64_t qgm__source_limit(const qgm__source_t *s) {
  if (!s->gz)
    return s->len;
  if (gzdirect(s->gz))
    return s->size;
  return s->size > UINT64_MAX / DEFLATE_MAX_RATIO
             ? UINT64_MAX
             : s->size * DEFLATE_MAX_RATIO;
}

int qgm__source_read(qgm__source_t *s, void *buf, size_t n) {
  if (!s->gz) {
    if (n > s->len - s->at)
      return QGM_ETRUNC;
    memcpy(buf, s->mem + s->at, n);
    s->at += n;
    return 0;
  }
  unsigned char *p = buf;
  while (n > 0) {
    size_t want = n < MAX_READ ? n : MAX_READ;
    int got = gzread(s->gz, p, (unsigned)want);
    if (got <= 0)
      return gz_failure(s->gz);
    p += got;
    n -= (size_t)got;
  }
  return 0;
}

int qgm__source_next(qgm__source_t *s, size_t n, uint8_t *scratch,
                     const uint8_t **bytes) {
  if (s->gz) {
    *bytes = scratch;
    return qgm__source_read(s, scratch, n);
  }
  if (n > s->len - s->at)
    return QGM_ETRUNC;
  *bytes = s->mem + s->at;
  s->at += n;
  return 0;
}

int qgm__source_end(qgm__source_t *s) {
  if (!s->gz)
    return s->at == s->len ? 0 : QGM_ETRAILING;
  unsigned char extra;
  int got = gzread(s->gz, &extra, 1);
  if (got > 0)
    return QGM_ETRAILING;
  int errnum = Z_OK;
  (void)gzerror(s->gz, &errnum);
  return errnum == Z_OK ? 0 : gz_failure(s->gz);
}

void qgm__source_close(qgm__source_t *s) {
  if (s->gz)
    gzclose(s->gz);
  memset(s, 0, sizeof *s);
}

int qgm_file_inflate(const char *path, uint8_t **bytes, size_t *len) {
  if (!path || !bytes || !len)
    return QGM_EINVAL;
  qgm__source_t s;
  int rc = qgm__source_open(&s, path, NULL, 0);
  if (rc != 0)
    return rc;
  size_t cap = 1u << 20, used = 0;
  uint8_t *buf = malloc(cap);
  if (!buf)
    rc = QGM_ENOMEM;
  while (rc == 0) {
    if (used == cap) {
      /* The buffer grows to one byte past the bound at most, which the
       * content cannot reach: a file growing while it is read fails here
       * instead of eating memory. */
      const uint64_t limit = qgm__source_limit(&s);
      if (cap > limit || cap > SIZE_MAX / 2) {
        rc = QGM_EIO;
        break;
      }
      size_t grown = 2 * cap <= limit ? 2 * cap : (size_t)limit + 1;
      uint8_t *more = realloc(buf, grown);
      if (!more) {
        rc = QGM_ENOMEM;
        break;
      }
      buf = more;
      cap = grown;
    }
    size_t want = cap - used < MAX_READ ? cap - used : MAX_READ;
    int got = gzread(s.gz, buf + used, (unsigned)want);
    if (got < 0)
      rc = gz_failure(s.gz);
    else if (got == 0)
      break;
    else
      used += (size_t)got;
  }
  if (rc == 0)
    rc = qgm__source_end(&s);
  qgm__source_close(&s);
  if (rc != 0) {
    free(buf);
    return rc;
  }
  *bytes = buf;
  *len = used;
  return 0;
}
