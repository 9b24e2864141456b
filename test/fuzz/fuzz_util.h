/* fuzz_util.h - scratch files for the fuzz targets: the readers under test
 * take paths, so every input is written to a file in a private directory
 * (in /dev/shm when it can, to keep the disk out of the loop), removed
 * with its files when the fuzzer exits. */
#ifndef QGM_FUZZ_UTIL_H
#define QGM_FUZZ_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FUZZ_MAX_FILES 16

static char fuzz_dir_[256];
static char fuzz_names_[FUZZ_MAX_FILES][64];
static int fuzz_nnames_;

static void fuzz_cleanup_(void) {
  char path[512];
  for (int i = 0; i < fuzz_nnames_; i++) {
    snprintf(path, sizeof path, "%s/%s", fuzz_dir_, fuzz_names_[i]);
    unlink(path);
  }
  rmdir(fuzz_dir_);
}

/* The scratch directory, made on first use. */
static const char *fuzz_dir(void) {
  if (fuzz_dir_[0] == '\0') {
    const char *base = getenv("TMPDIR");
    if (access("/dev/shm", W_OK) == 0)
      base = "/dev/shm";
    snprintf(fuzz_dir_, sizeof fuzz_dir_, "%s/qgm-fuzz-XXXXXX",
             base && *base ? base : "/tmp");
    if (!mkdtemp(fuzz_dir_)) {
      perror("fuzz_dir: mkdtemp");
      abort();
    }
    atexit(fuzz_cleanup_);
  }
  return fuzz_dir_;
}

/* Writes data to the scratch file `name` (replacing it); path gets its
 * full name. */
static void fuzz_file(const char *name, const void *data, size_t size,
                      char *path, size_t path_size) {
  snprintf(path, path_size, "%s/%s", fuzz_dir(), name);
  int known = 0;
  for (int i = 0; i < fuzz_nnames_; i++)
    known |= strcmp(fuzz_names_[i], name) == 0;
  if (!known && fuzz_nnames_ < FUZZ_MAX_FILES)
    snprintf(fuzz_names_[fuzz_nnames_++], sizeof fuzz_names_[0], "%s", name);
  FILE *f = fopen(path, "wb");
  if (!f || (size > 0 && fwrite(data, 1, size, f) != size) || fclose(f)) {
    perror(path);
    abort();
  }
}

#endif /* QGM_FUZZ_UTIL_H */
