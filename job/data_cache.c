/* data_cache.c - see data_cache.h.
 *
 * Whoever can write the cache directory decides what a job trains on, and
 * a job run as root that writes where another user can plant a symlink
 * overwrites what the link names. So the directory is opened once and
 * checked (this user's, writable by nobody else), everything in it is
 * reached through that descriptor (a directory renamed or swapped after
 * the check is not followed), entries are created with O_EXCL|O_NOFOLLOW
 * under names no one else made, and opened with O_NOFOLLOW|O_NONBLOCK and
 * checked to be regular files of this user's before they are read: a FIFO
 * planted at an entry's name is a miss, not a start-up that hangs. */
#include "data_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "qgm.h"

/* An entry ends with the SHA-256 of the inflated bytes before it, then
 * MAGIC: the digest is recorded when the entry is written, and an entry
 * whose bytes no longer hash to it is rebuilt. */
static const char MAGIC[8] = {'Q', 'G', 'M', 'D', 'S', 'H', 'A', '2'};
enum { TRAILER = QGM_SHA256_BYTES + (int)sizeof MAGIC };

static int gzipped(const char *path) {
  size_t n = strlen(path);
  return n > 3 && strcmp(path + n - 3, ".gz") == 0;
}

/* What the gzip trailer (its last 8 bytes) records of the inflated data:
 * its CRC-32 and its length mod 2^32. */
typedef struct trailer {
  uint32_t crc, isize;
} trailer_t;

static uint32_t le32(const uint8_t *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
         (uint32_t)b[3] << 24;
}

/* STEM-HASH, the entry's name in the cache, for the gzipped file at path,
 * and its trailer. The source is opened without blocking (a FIFO there is
 * no gzip file) and must be a regular file. */
static int entry_for(const char *dir, const char *path, char *name,
                     size_t size, trailer_t *tr) {
  if (!dir[0] || !gzipped(path))
    return -1;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  uint8_t t[8];
  ssize_t got = -1;
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      st.st_size >= 18)
    got = pread(fd, t, 8, st.st_size - 8);
  if (fd >= 0)
    close(fd);
  if (got != 8)
    return -1;
  tr->crc = le32(t);
  tr->isize = le32(t + 4);
  const int64_t id[5] = {(int64_t)st.st_dev, (int64_t)st.st_ino,
                         (int64_t)st.st_size, (int64_t)st.st_mtim.tv_sec,
                         (int64_t)st.st_mtim.tv_nsec};
  const uint64_t h = qgm_hash64(id, sizeof id, QGM_HASH_INIT);
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  int n = snprintf(name, size, "%.*s-%016llx", (int)(strlen(base) - 3), base,
                   (unsigned long long)h);
  return n > 0 && (size_t)n < size ? 0 : -1;
}

void qgmd_data_cache_dir(const char *flag, char *out, size_t size) {
  out[0] = '\0';
  if (strcmp(flag, "none") == 0)
    return;
  if (strcmp(flag, "auto") != 0) {
    snprintf(out, size, "%s", flag);
    return;
  }
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (xdg && xdg[0] == '/')
    snprintf(out, size, "%s/qgmd", xdg);
  else if (home && home[0] == '/')
    snprintf(out, size, "%s/.cache/qgmd", home);
}

/* Whether st is this user's and writable by no one else. */
static int private_to_us(const struct stat *st) {
  return st->st_uid == geteuid() && (st->st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

/* The cache directory, opened, if it is one this user alone can write: a
 * directory another user owns, or one that group or others may write
 * (sticky or not: they could still plant entries under names to come), is
 * not used, which is said once per process. -1 when missing or refused. */
static int open_dir(const char *dir) {
  static int warned;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st;
  memset(&st, 0, sizeof st);
  if (fd < 0)
    return -1;
  if (fstat(fd, &st) == 0 && private_to_us(&st))
    return fd;
  close(fd);
  if (!warned++) {
    if (st.st_uid != geteuid())
      fprintf(stderr, "--data-cache=%s: owned by uid %ld, not by this user "
              "(uid %ld); the cache is not used\n", dir, (long)st.st_uid,
              (long)geteuid());
    else
      fprintf(stderr, "--data-cache=%s: group or others may write it (mode "
              "%04o); the cache is not used (chmod go-w, or another "
              "directory)\n", dir, (unsigned)(st.st_mode & 07777));
  }
  return -1;
}

int qgmd_data_cache_map(const char *dir, const char *path, int verify,
                        const uint8_t **bytes, size_t *len) {
  char name[NAME_MAX + 1];
  trailer_t tr;
  if (entry_for(dir, path, name, sizeof name, &tr) != 0)
    return -1;
  int dfd = open_dir(dir);
  if (dfd < 0)
    return -1;
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  close(dfd);
  struct stat st;
  if (fd < 0)
    return -1;
  void *map = MAP_FAILED;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && private_to_us(&st) &&
      st.st_size > TRAILER && (uint32_t)(st.st_size - TRAILER) == tr.isize)
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED)
    return -1;
  const size_t n = (size_t)st.st_size - TRAILER;
  const uint8_t *end = (const uint8_t *)map + n;
  int ok = memcmp(end + QGM_SHA256_BYTES, MAGIC, sizeof MAGIC) == 0;
  /* Once per host (data_cache.h): the CRC ties the entry to its source
   * file, the digest to what was written; a damaged or altered entry is
   * a miss, and is rebuilt. */
  if (ok && verify) {
    uint8_t digest[QGM_SHA256_BYTES];
    qgm_sha256(map, n, digest);
    ok = crc32_z(crc32_z(0, Z_NULL, 0), map, n) == tr.crc &&
         memcmp(digest, end, sizeof digest) == 0;
    if (!ok)
      fprintf(stderr, "--data-cache=%s: entry %s does not match what was "
              "written (its SHA-256 or CRC-32 differs): altered or damaged; "
              "rebuilding it from %s\n", dir, name, path);
  }
  if (!ok) {
    munmap(map, (size_t)st.st_size);
    return -1;
  }
  *bytes = map;
  *len = n;
  return 0;
}

void qgmd_data_cache_unmap(const uint8_t *bytes, size_t len) {
  munmap((void *)(uintptr_t)bytes, len + TRAILER);
}

/* mkdir -p for the cache directory (mode 0700: a user's private cache).
 * Directories that exist are left as they are: open_dir judges the last. */
static int make_dirs(const char *dir) {
  char p[PATH_MAX];
  if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
    return -1;
  for (char *c = p + 1; *c; c++)
    if (*c == '/') {
      *c = '\0';
      if (mkdir(p, 0700) != 0 && errno != EEXIST)
        return -1;
      *c = '/';
    }
  return mkdir(p, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

/* Removes the directory's other entries of the file `name` (STEM-HASH):
 * one entry per file name, so that the cache stays the size of the
 * datasets in use however many copies of them come and go. */
static void drop_others(int dfd, const char *name) {
  const size_t stem = strlen(name) - 16; /* up to and with the '-' */
  int fd = dup(dfd);
  DIR *d = fd < 0 ? NULL : fdopendir(fd);
  if (!d) {
    if (fd >= 0)
      close(fd);
    return;
  }
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (strlen(e->d_name) == strlen(name) &&
        strncmp(e->d_name, name, stem) == 0 && strcmp(e->d_name, name) != 0)
      unlinkat(dfd, e->d_name, 0);
  closedir(d);
}

/* A new file of ours in the directory, under a name that did not exist
 * (O_EXCL: never one planted there, nor a symlink's target): its fd, and
 * its name in tmp. */
static int create_temp(int dfd, const char *name, char *tmp, size_t size) {
  static unsigned counter;
  for (int attempt = 0; attempt < 32; attempt++) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    const uint64_t salt[3] = {(uint64_t)getpid(), counter++,
                              (uint64_t)t.tv_nsec};
    int n = snprintf(tmp, size, "%s.tmp%016llx", name,
                     (unsigned long long)qgm_hash64(salt, sizeof salt,
                                                    QGM_HASH_INIT));
    if (n < 0 || (size_t)n >= size)
      return -1;
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
                                  O_CLOEXEC, 0600);
    if (fd >= 0 || errno != EEXIST)
      return fd;
  }
  return -1;
}

static int write_all(int fd, const uint8_t *bytes, size_t len) {
  size_t at = 0;
  while (at < len) {
    ssize_t put = write(fd, bytes + at, len - at);
    if (put <= 0)
      return -1;
    at += (size_t)put;
  }
  return 0;
}

void qgmd_data_cache_write(const char *dir, const char *path,
                           const uint8_t *bytes, size_t len) {
  char name[NAME_MAX + 1], tmp[NAME_MAX + 1];
  trailer_t tr;
  if (entry_for(dir, path, name, sizeof name, &tr) != 0 ||
      (uint32_t)len != tr.isize || make_dirs(dir) != 0)
    return;
  int dfd = open_dir(dir);
  if (dfd < 0)
    return;
  uint8_t trailer[TRAILER];
  qgm_sha256(bytes, len, trailer);
  memcpy(trailer + QGM_SHA256_BYTES, MAGIC, sizeof MAGIC);
  int fd = create_temp(dfd, name, tmp, sizeof tmp);
  if (fd < 0) {
    close(dfd);
    return;
  }
  int ok = write_all(fd, bytes, len) == 0 &&
           write_all(fd, trailer, sizeof trailer) == 0;
  if (close(fd) != 0 || !ok || renameat(dfd, tmp, dfd, name) != 0)
    unlinkat(dfd, tmp, 0);
  else
    drop_others(dfd, name);
  close(dfd);
}
