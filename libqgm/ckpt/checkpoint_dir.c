/* checkpoint_dir.c - a directory of checkpoints: one folder per step, one
 * file per rank, and a manifest that makes the step complete.
 *
 *   DIR/step-000000000120/rank-00003.qgmc
 *   DIR/step-000000000120/MANIFEST
 *
 * The manifest is written last, by one rank, once every rank reported its
 * file safely on disk; a step without one is an interrupted write and is
 * never resumed from. Pruning removes a step's manifest before its files,
 * so a half-removed step is never mistaken for a complete one. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"
#include "qgm.h"

#define MANIFEST_NAME "MANIFEST"
#define MANIFEST_MAX 256 /* bytes; a real manifest is under 100 */

static int step_dir(const char *dir, uint64_t step, char *buf, size_t size) {
  int n = snprintf(buf, size, "%s/step-%012" PRIu64, dir, step);
  return n > 0 && (size_t)n < size ? 0 : QGM_EINVAL;
}

int qgm_checkpoint_path(const char *dir, uint64_t step, int rank, char *buf,
                        size_t size) {
  char folder[4096];
  if (!dir || !buf || step_dir(dir, step, folder, sizeof folder) != 0)
    return QGM_EINVAL;
  int n = rank < 0 ? snprintf(buf, size, "%s/" MANIFEST_NAME, folder)
                   : snprintf(buf, size, "%s/rank-%05d.qgmc", folder, rank);
  return n > 0 && (size_t)n < size ? 0 : QGM_EINVAL;
}

static int make_dir(const char *path) {
  if (mkdir(path, 0755) == 0 || errno == EEXIST) {
    struct stat st;
    if (stat(path, &st) != 0)
      return QGM_EOPEN;
    if (S_ISDIR(st.st_mode))
      return 0;
    errno = ENOTDIR;
  }
  return QGM_EOPEN;
}

int qgm_checkpoint_prepare(const char *dir, uint64_t step) {
  char folder[4096];
  if (!dir || !*dir || step_dir(dir, step, folder, sizeof folder) != 0)
    return QGM_EINVAL;
  int rc = make_dir(dir);
  return rc ? rc : make_dir(folder);
}

/* ------------------------------------------------------------ manifest */

static int format_manifest(char *buf, size_t size, uint64_t step, int nodes,
                           uint64_t config_hash) {
  return snprintf(buf, size,
                  "qgm checkpoint manifest 1\nstep %" PRIu64
                  "\nnodes %d\nconfig %016" PRIx64 "\n",
                  step, nodes, config_hash);
}

int qgm_manifest_write(const char *dir, uint64_t step, int nodes,
                       uint64_t config_hash) {
  char path[4096], text[MANIFEST_MAX];
  if (nodes < 1 || qgm_checkpoint_path(dir, step, -1, path, sizeof path))
    return QGM_EINVAL;
  int n = format_manifest(text, sizeof text, step, nodes, config_hash);
  return qgm_write_file_atomic(path, text, (size_t)n);
}

int qgm_manifest_parse(const char *text, size_t len, uint64_t *step,
                       int *nodes, uint64_t *config_hash) {
  if (!text || !step || !nodes || !config_hash)
    return QGM_EINVAL;
  char copy[MANIFEST_MAX], again[MANIFEST_MAX];
  if (len >= sizeof copy || memchr(text, '\0', len))
    return QGM_EMANIFEST;
  memcpy(copy, text, len);
  copy[len] = '\0';
  uint64_t s, h;
  int n;
  if (sscanf(copy, "qgm checkpoint manifest 1\nstep %" SCNu64 "\nnodes %d"
             "\nconfig %" SCNx64, &s, &n, &h) != 3 || n < 1)
    return QGM_EMANIFEST;
  /* Strict: the text must be exactly what qgm_manifest_write produces, so
   * stray bytes, signs or leading zeros are rejected rather than read. */
  format_manifest(again, sizeof again, s, n, h);
  if (strcmp(copy, again) != 0)
    return QGM_EMANIFEST;
  *step = s;
  *nodes = n;
  *config_hash = h;
  return 0;
}

int qgm_manifest_read(const char *path, uint64_t *step, int *nodes,
                      uint64_t *config_hash) {
  if (!path)
    return QGM_EINVAL;
  FILE *f;
  uint64_t size;
  int rc = qgm__fopen_input(path, &f, &size);
  if (rc != 0)
    return rc;
  char text[MANIFEST_MAX];
  size_t len = fread(text, 1, sizeof text, f);
  rc = ferror(f) ? QGM_EIO : 0;
  fclose(f);
  return rc ? rc : qgm_manifest_parse(text, len, step, nodes, config_hash);
}

/* -------------------------------------------------------- listing steps */

/* The step of a folder name "step-NNNNNNNNNNNN", or -1. */
static int folder_step(const char *name, uint64_t *step) {
  if (strncmp(name, "step-", 5) != 0 || strlen(name) != 17)
    return -1;
  uint64_t s = 0;
  for (const char *p = name + 5; *p; p++) {
    if (*p < '0' || *p > '9')
      return -1;
    s = s * 10 + (uint64_t)(*p - '0');
  }
  *step = s;
  return 0;
}

static int complete(const char *dir, uint64_t step) {
  char path[4096];
  uint64_t s, h;
  int n;
  return qgm_checkpoint_path(dir, step, -1, path, sizeof path) == 0 &&
         qgm_manifest_read(path, &s, &n, &h) == 0 && s == step;
}

static int newest_first(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x < y) - (x > y);
}

/* Every step folder in dir (complete or not), newest first, malloc'd. */
static int list_folders(const char *dir, uint64_t **steps, size_t *count) {
  DIR *d = opendir(dir);
  if (!d)
    return QGM_EOPEN;
  size_t n = 0, cap = 16;
  uint64_t *all = malloc(cap * sizeof *all);
  int rc = all ? 0 : QGM_ENOMEM;
  struct dirent *e;
  while (rc == 0 && (e = readdir(d))) {
    uint64_t s;
    if (folder_step(e->d_name, &s) != 0)
      continue;
    if (n == cap) {
      uint64_t *bigger = realloc(all, (cap *= 2) * sizeof *all);
      if (!bigger) {
        rc = QGM_ENOMEM;
        break;
      }
      all = bigger;
    }
    all[n++] = s;
  }
  closedir(d);
  if (rc != 0) {
    free(all);
    return rc;
  }
  qsort(all, n, sizeof *all, newest_first);
  *steps = all;
  *count = n;
  return 0;
}

static int list_steps(const char *dir, uint64_t *steps, size_t max,
                      size_t *count, int complete_only) {
  if (!dir || !count || (!steps && max > 0))
    return QGM_EINVAL;
  uint64_t *all;
  size_t n;
  int rc = list_folders(dir, &all, &n);
  if (rc != 0)
    return rc;
  *count = 0;
  for (size_t i = 0; i < n && *count < max; i++)
    if (!complete_only || complete(dir, all[i]))
      steps[(*count)++] = all[i];
  free(all);
  return 0;
}

int qgm_checkpoint_list(const char *dir, uint64_t *steps, size_t max,
                        size_t *count) {
  return list_steps(dir, steps, max, count, 1);
}

int qgm_checkpoint_folders(const char *dir, uint64_t *steps, size_t max,
                           size_t *count) {
  return list_steps(dir, steps, max, count, 0);
}

/* ------------------------------------------------------------- pruning */

static void remove_step(const char *dir, uint64_t step) {
  char folder[4096], path[4096 + 300];
  if (step_dir(dir, step, folder, sizeof folder) != 0)
    return;
  snprintf(path, sizeof path, "%s/" MANIFEST_NAME, folder);
  unlink(path); /* first: the step stops being complete */
  DIR *d = opendir(folder);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      snprintf(path, sizeof path, "%s/%s", folder, e->d_name);
      unlink(path);
    }
  closedir(d);
  rmdir(folder);
}

int qgm_checkpoint_prune(const char *dir, uint64_t newest, size_t keep) {
  if (!dir || keep == 0)
    return QGM_EINVAL;
  uint64_t *all;
  size_t n;
  int rc = list_folders(dir, &all, &n);
  if (rc != 0)
    return rc;
  /* Everything older than the keep-th newest complete step goes,
   * complete or not; newer incomplete steps may still be being written. */
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    if (all[i] > newest)
      continue;
    if (kept == keep)
      remove_step(dir, all[i]);
    else if (complete(dir, all[i]))
      kept++;
  }
  free(all);
  return 0;
}
