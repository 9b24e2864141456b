/* data_cache.c - see data_cache.h. */
#include "data_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "qgm.h"

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

/* dir/STEM-HASH for the gzipped file at path, and its trailer. */
static int entry_for(const char *dir, const char *path, char *entry,
                     size_t size, trailer_t *tr) {
  struct stat st;
  if (!dir[0] || !gzipped(path) || stat(path, &st) != 0 || st.st_size < 18)
    return -1;
  int fd = open(path, O_RDONLY);
  uint8_t t[8];
  ssize_t got = fd < 0 ? -1 : pread(fd, t, 8, st.st_size - 8);
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
  int n = snprintf(entry, size, "%s/%.*s-%016llx", dir,
                   (int)(strlen(base) - 3), base, (unsigned long long)h);
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

int qgmd_data_cache_map(const char *dir, const char *path, int verify,
                        const uint8_t **bytes, size_t *len) {
  char entry[PATH_MAX + 64];
  trailer_t tr;
  if (entry_for(dir, path, entry, sizeof entry, &tr) != 0)
    return -1;
  int fd = open(entry, O_RDONLY);
  struct stat st;
  if (fd < 0)
    return -1;
  void *map = MAP_FAILED;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
      (uint32_t)st.st_size == tr.isize)
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED)
    return -1;
  const size_t n = (size_t)st.st_size;
  /* The CRC costs a few milliseconds and makes a damaged entry a miss. */
  if (verify && crc32_z(crc32_z(0, Z_NULL, 0), map, n) != tr.crc) {
    munmap(map, n);
    return -1;
  }
  *bytes = map;
  *len = n;
  return 0;
}

void qgmd_data_cache_unmap(const uint8_t *bytes, size_t len) {
  munmap((void *)(uintptr_t)bytes, len);
}

/* mkdir -p for the cache directory (mode 0700: a user's private cache). */
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

/* Removes dir's other entries of the file `name` (STEM-HASH): one entry
 * per file name, so that the cache stays the size of the datasets in use
 * however many copies of them come and go. */
static void drop_others(const char *dir, const char *name) {
  const size_t stem = strlen(name) - 16; /* up to and with the '-' */
  DIR *d = opendir(dir);
  if (!d)
    return;
  char victim[PATH_MAX + 300];
  for (struct dirent *e; (e = readdir(d)) != NULL;)
    if (strlen(e->d_name) == strlen(name) &&
        strncmp(e->d_name, name, stem) == 0 &&
        strcmp(e->d_name, name) != 0 &&
        snprintf(victim, sizeof victim, "%s/%s", dir, e->d_name) <
            (int)sizeof victim)
      unlink(victim);
  closedir(d);
}

void qgmd_data_cache_write(const char *dir, const char *path,
                           const uint8_t *bytes, size_t len) {
  char entry[PATH_MAX + 64], tmp[PATH_MAX + 96];
  trailer_t tr;
  if (entry_for(dir, path, entry, sizeof entry, &tr) != 0 ||
      (uint32_t)len != tr.isize || make_dirs(dir) != 0)
    return;
  snprintf(tmp, sizeof tmp, "%s.tmp%ld", entry, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0)
    return;
  size_t at = 0;
  while (at < len) {
    ssize_t put = write(fd, bytes + at, len - at);
    if (put <= 0)
      break;
    at += (size_t)put;
  }
  if (close(fd) != 0 || at != len || rename(tmp, entry) != 0) {
    unlink(tmp);
    return;
  }
  drop_others(dir, strrchr(entry, '/') + 1);
}
