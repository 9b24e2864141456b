/* checkpoint.c - the per-rank checkpoint file: named, typed sections of a
 * node's state, zlib-compressed behind a fixed header.
 *
 * Layout (every integer little-endian, whatever the host):
 *
 *   0  magic "QGMCKPT" 0x1a       8 bytes
 *   8  format version              u32
 *  12  number of sections          u32
 *  16  hash of the configuration   u64 (flags and topology; the caller's)
 *  24  body size, uncompressed     u64
 *  32  body size, compressed       u64
 *  40  CRC-32 of bytes [0, 40) and of the compressed body
 *  44  CRC-32 of the uncompressed body
 *  48  the compressed body: per section a name length (u8, 1..63), the
 *      name, a type (u8), an element count (u64) and the elements.
 *
 * The outer CRC is checked before anything is inflated, so a damaged file
 * is rejected for what it is (QGM_ECRC) rather than for whatever zlib
 * makes of it. Every size in the header is bounded by the file's real size
 * before it sizes an allocation. A write goes to a temporary file that is
 * fsynced and renamed over the target, and the directory is fsynced, so a
 * crash leaves either the old file or the new one, never half of one. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "core/internal.h"
#include "qgm.h"

#define CKPT_MAGIC "QGMCKPT\x1a"
#define CKPT_VERSION 1u
#define CKPT_HEADER 48u
/* deflate cannot shrink data by more than ~1032:1; a header claiming more
 * is lying, and must not make the reader allocate for it. */
#define CKPT_MAX_RATIO 1100u

/* A fuzzer cannot forge CRCs: its builds skip the check so that mutations
 * reach the inflater and the section parser behind it. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define SKIP_CRC 1
#else
#define SKIP_CRC 0
#endif

typedef struct section {
  char name[QGM_CHECKPOINT_NAME_MAX + 1];
  qgm_checkpoint_type_t type;
  uint64_t count;
  unsigned char *data; /* count elements, little-endian */
} section_t;

struct qgm_checkpoint {
  uint64_t config_hash;
  size_t count;
  section_t sections[QGM_CHECKPOINT_MAX_SECTIONS];
};

static size_t type_size(qgm_checkpoint_type_t type) {
  switch (type) {
  case QGM_CHECKPOINT_BYTES:
    return 1;
  case QGM_CHECKPOINT_F32:
    return 4;
  case QGM_CHECKPOINT_U64:
  case QGM_CHECKPOINT_F64:
    return 8;
  }
  return 0;
}

/* ----------------------------------------------------- little-endian */

static void put_le(unsigned char *out, uint64_t v, size_t bytes) {
  for (size_t k = 0; k < bytes; k++)
    out[k] = (unsigned char)(v >> (8 * k));
}

static uint64_t get_le(const unsigned char *in, size_t bytes) {
  uint64_t v = 0;
  for (size_t k = 0; k < bytes; k++)
    v |= (uint64_t)in[k] << (8 * k);
  return v;
}

/* Host values -> the file's byte order, element by element. */
static void encode(unsigned char *out, const void *in, size_t count,
                   size_t size) {
  const unsigned char *src = in;
  for (size_t i = 0; i < count; i++) {
    uint64_t v = 0;
    if (size == 4) {
      uint32_t u;
      memcpy(&u, src + 4 * i, 4);
      v = u;
    } else if (size == 8) {
      memcpy(&v, src + 8 * i, 8);
    } else {
      v = src[i];
    }
    put_le(out + size * i, v, size);
  }
}

static void decode(void *out, const unsigned char *in, size_t count,
                   size_t size) {
  unsigned char *dst = out;
  for (size_t i = 0; i < count; i++) {
    uint64_t v = get_le(in + size * i, size);
    if (size == 4) {
      uint32_t u = (uint32_t)v;
      memcpy(dst + 4 * i, &u, 4);
    } else if (size == 8) {
      memcpy(dst + 8 * i, &v, 8);
    } else {
      dst[i] = (unsigned char)v;
    }
  }
}

/* ------------------------------------------------------------ building */

int qgm_checkpoint_create(uint64_t config_hash, qgm_checkpoint_t **out) {
  if (!out)
    return QGM_EINVAL;
  qgm_checkpoint_t *c = calloc(1, sizeof *c);
  if (!c)
    return QGM_ENOMEM;
  c->config_hash = config_hash;
  *out = c;
  return 0;
}

void qgm_checkpoint_free(qgm_checkpoint_t *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->count; i++)
    free(c->sections[i].data);
  free(c);
}

uint64_t qgm_checkpoint_config_hash(const qgm_checkpoint_t *c) {
  return c->config_hash;
}

static section_t *find(const qgm_checkpoint_t *c, const char *name) {
  for (size_t i = 0; i < c->count; i++)
    if (strcmp(c->sections[i].name, name) == 0)
      return (section_t *)&c->sections[i];
  return NULL;
}

static int valid_name(const char *name) {
  size_t len = name ? strlen(name) : 0;
  return len >= 1 && len <= QGM_CHECKPOINT_NAME_MAX;
}

int qgm_checkpoint_put(qgm_checkpoint_t *c, const char *name,
                       qgm_checkpoint_type_t type, const void *data,
                       size_t count) {
  size_t size = type_size(type);
  if (!c || !valid_name(name) || size == 0 || (!data && count > 0) ||
      find(c, name))
    return QGM_EINVAL;
  if (c->count == QGM_CHECKPOINT_MAX_SECTIONS)
    return QGM_EINVAL;
  size_t bytes = qgm__mul_size(count, size);
  if (bytes == 0 && count > 0)
    return QGM_ENOMEM;
  section_t *s = &c->sections[c->count];
  s->data = malloc(bytes ? bytes : 1);
  if (!s->data)
    return QGM_ENOMEM;
  snprintf(s->name, sizeof s->name, "%s", name);
  s->type = type;
  s->count = count;
  encode(s->data, data, count, size);
  c->count++;
  return 0;
}

int qgm_checkpoint_get(const qgm_checkpoint_t *c, const char *name,
                       qgm_checkpoint_type_t type, void *data, size_t count) {
  if (!c || !name || (!data && count > 0))
    return QGM_EINVAL;
  const section_t *s = find(c, name);
  if (!s || s->type != type || s->count != count)
    return QGM_ESECTION;
  decode(data, s->data, count, type_size(type));
  return 0;
}

size_t qgm_checkpoint_num_sections(const qgm_checkpoint_t *c) {
  return c->count;
}

int qgm_checkpoint_section(const qgm_checkpoint_t *c, size_t i,
                           const char **name, qgm_checkpoint_type_t *type,
                           size_t *count) {
  if (!c || i >= c->count)
    return QGM_EINVAL;
  if (name)
    *name = c->sections[i].name;
  if (type)
    *type = c->sections[i].type;
  if (count)
    *count = (size_t)c->sections[i].count;
  return 0;
}

/* --------------------------------------------------------- serialising */

static size_t body_size(const qgm_checkpoint_t *c) {
  size_t n = 0;
  for (size_t i = 0; i < c->count; i++)
    n += 1 + strlen(c->sections[i].name) + 1 + 8 +
         (size_t)c->sections[i].count * type_size(c->sections[i].type);
  return n;
}

static void write_body(const qgm_checkpoint_t *c, unsigned char *p) {
  for (size_t i = 0; i < c->count; i++) {
    const section_t *s = &c->sections[i];
    size_t len = strlen(s->name);
    size_t bytes = (size_t)s->count * type_size(s->type);
    *p++ = (unsigned char)len;
    memcpy(p, s->name, len);
    p += len;
    *p++ = (unsigned char)s->type;
    put_le(p, s->count, 8);
    p += 8;
    memcpy(p, s->data, bytes);
    p += bytes;
  }
}

static uint32_t crc(uint32_t seed, const unsigned char *p, size_t n) {
  uLong v = seed;
  /* crc32 takes a uInt length. */
  while (n > 0) {
    uInt chunk = n > (1u << 30) ? (1u << 30) : (uInt)n;
    v = crc32(v, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return (uint32_t)v;
}

/* The whole file in memory: header and compressed body. */
static int serialise(const qgm_checkpoint_t *c, unsigned char **out,
                     size_t *out_len) {
  size_t raw_len = body_size(c);
  unsigned char *raw = malloc(raw_len ? raw_len : 1);
  uLong bound = compressBound((uLong)raw_len);
  unsigned char *file = malloc(CKPT_HEADER + bound);
  if (!raw || !file) {
    free(raw);
    free(file);
    return QGM_ENOMEM;
  }
  write_body(c, raw);
  uLongf zlen = bound;
  /* Level 1: parameters are nearly incompressible floats, and a rank that
   * checkpoints should not hold up its neighbours for a few percent. */
  int z = compress2(file + CKPT_HEADER, &zlen, raw, (uLong)raw_len, 1);
  uint32_t raw_crc = crc(0, raw, raw_len);
  free(raw);
  if (z != Z_OK) {
    free(file);
    return z == Z_MEM_ERROR ? QGM_ENOMEM : QGM_EGZIP;
  }
  memcpy(file, CKPT_MAGIC, 8);
  put_le(file + 8, CKPT_VERSION, 4);
  put_le(file + 12, c->count, 4);
  put_le(file + 16, c->config_hash, 8);
  put_le(file + 24, raw_len, 8);
  put_le(file + 32, zlen, 8);
  put_le(file + 40, crc(crc(0, file, 40), file + CKPT_HEADER, zlen), 4);
  put_le(file + 44, raw_crc, 4);
  *out = file;
  *out_len = CKPT_HEADER + zlen;
  return 0;
}

static int write_all(int fd, const unsigned char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      if (w == 0)
        errno = ENOSPC; /* a write that makes no progress: the disk is full */
      return QGM_EWRITE;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* fsync of the directory makes the rename itself durable. */
static int sync_parent(const char *path) {
  char dir[4096];
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else if (slash == path)
    snprintf(dir, sizeof dir, "/");
  else
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd < 0)
    return QGM_EWRITE;
  int rc = fsync(fd) == 0 || errno == EINVAL ? 0 : QGM_EWRITE;
  qgm__close_keeping_errno(fd);
  return rc;
}

int qgm_write_file_atomic(const char *path, const void *data, size_t len) {
  char tmp[4096];
  if (!path || (!data && len > 0) ||
      snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
    return QGM_EINVAL;
  int fd;
  int rc = qgm_open_output(tmp, O_TRUNC, &fd);
  if (rc != 0)
    return rc;
  rc = write_all(fd, data, len);
  if (rc == 0 && fsync(fd) != 0)
    rc = QGM_EWRITE;
  if (rc != 0)
    qgm__close_keeping_errno(fd);
  else if (close(fd) != 0)
    rc = QGM_EWRITE;
  if (rc == 0 && rename(tmp, path) != 0)
    rc = QGM_EWRITE;
  if (rc != 0) {
    int saved = errno;
    unlink(tmp);
    errno = saved;
    return rc;
  }
  return sync_parent(path);
}

int qgm_checkpoint_write(const qgm_checkpoint_t *c, const char *path) {
  if (!c || !path)
    return QGM_EINVAL;
  unsigned char *file;
  size_t len;
  int rc = serialise(c, &file, &len);
  if (rc != 0)
    return rc;
  rc = qgm_write_file_atomic(path, file, len);
  free(file);
  return rc;
}

/* ------------------------------------------------------------- reading */

/* Walks the inflated body; every length is checked against what is left
 * before it is used. */
static int parse_body(qgm_checkpoint_t *c, const unsigned char *p,
                      size_t len, uint32_t nsections) {
  size_t at = 0;
  for (uint32_t i = 0; i < nsections; i++) {
    if (c->count == QGM_CHECKPOINT_MAX_SECTIONS || len - at < 1)
      return QGM_ESECTION;
    size_t name_len = p[at++];
    if (name_len < 1 || name_len > QGM_CHECKPOINT_NAME_MAX ||
        len - at < name_len + 9)
      return QGM_ESECTION;
    char name[QGM_CHECKPOINT_NAME_MAX + 1];
    memcpy(name, p + at, name_len);
    name[name_len] = '\0';
    at += name_len;
    qgm_checkpoint_type_t type = p[at++];
    uint64_t count = get_le(p + at, 8);
    at += 8;
    size_t size = type_size(type);
    if (size == 0 || strlen(name) != name_len || find(c, name) ||
        count > (len - at) / size)
      return QGM_ESECTION;
    section_t *s = &c->sections[c->count];
    size_t bytes = (size_t)count * size;
    if (!(s->data = malloc(bytes ? bytes : 1)))
      return QGM_ENOMEM;
    memcpy(s->data, p + at, bytes);
    at += bytes;
    memcpy(s->name, name, name_len + 1);
    s->type = type;
    s->count = count;
    c->count++;
  }
  return at == len ? 0 : QGM_ESECTION;
}

int qgm_checkpoint_parse(const void *data, size_t len,
                         qgm_checkpoint_t **out) {
  const unsigned char *file = data;
  if (!out || (!data && len > 0))
    return QGM_EINVAL;
  if (len < 8 || memcmp(file, CKPT_MAGIC, 8) != 0)
    return QGM_ENOTCKPT;
  if (len < CKPT_HEADER)
    return QGM_ETRUNC;
  if (get_le(file + 8, 4) != CKPT_VERSION)
    return QGM_EVERSION;
  uint64_t raw_len = get_le(file + 24, 8), zlen = get_le(file + 32, 8);
  if (zlen > len - CKPT_HEADER)
    return QGM_ETRUNC;
  if (zlen < len - CKPT_HEADER)
    return QGM_ETRAILING;
  if (crc(crc(0, file, 40), file + CKPT_HEADER, zlen) !=
          (uint32_t)get_le(file + 40, 4) &&
      !SKIP_CRC)
    return QGM_ECRC;
  uint32_t nsections = (uint32_t)get_le(file + 12, 4);
  if (nsections > QGM_CHECKPOINT_MAX_SECTIONS ||
      raw_len > zlen * CKPT_MAX_RATIO + 64 ||
      raw_len > QGM_CHECKPOINT_MAX_BYTES)
    return QGM_ESECTION;
  unsigned char *raw = malloc(raw_len ? raw_len : 1);
  qgm_checkpoint_t *c = calloc(1, sizeof *c);
  if (!raw || !c) {
    free(raw);
    free(c);
    return QGM_ENOMEM;
  }
  uLongf got = (uLongf)raw_len;
  int z = uncompress(raw, &got, file + CKPT_HEADER, (uLong)zlen);
  int rc = 0;
  if (z == Z_MEM_ERROR)
    rc = QGM_ENOMEM;
  else if (z != Z_OK || got != raw_len)
    rc = QGM_EGZIP;
  else if (crc(0, raw, raw_len) != (uint32_t)get_le(file + 44, 4) &&
           !SKIP_CRC)
    rc = QGM_ECRC;
  else
    rc = parse_body(c, raw, raw_len, nsections);
  free(raw);
  if (rc != 0) {
    qgm_checkpoint_free(c);
    return rc;
  }
  c->config_hash = get_le(file + 16, 8);
  *out = c;
  return 0;
}

int qgm_checkpoint_read(const char *path, qgm_checkpoint_t **out) {
  if (!path || !out)
    return QGM_EINVAL;
  FILE *f;
  uint64_t size;
  int rc = qgm__fopen_input(path, &f, &size);
  if (rc != 0)
    return rc;
  /* The file's real size, not a header's claim, bounds the buffer. */
  if (size > QGM_CHECKPOINT_MAX_BYTES + CKPT_HEADER) {
    fclose(f);
    return QGM_ESECTION;
  }
  size_t len = (size_t)size;
  unsigned char *buf = malloc(len ? len : 1);
  if (!buf) {
    fclose(f);
    return QGM_ENOMEM;
  }
  size_t got = fread(buf, 1, len, f);
  rc = ferror(f) ? QGM_EIO : 0;
  fclose(f);
  if (rc == 0)
    rc = qgm_checkpoint_parse(buf, got, out);
  free(buf);
  return rc;
}
