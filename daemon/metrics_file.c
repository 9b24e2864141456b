/* metrics_file.c - see metrics_file.h. */
#include "metrics_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qgm.h"

/* The number after "key": in one of the daemon's own JSON lines. */
static int record_number(const char *line, const char *key, double *out) {
  char quoted[64];
  snprintf(quoted, sizeof quoted, "\"%s\":", key);
  const char *at = strstr(line, quoted);
  if (!at)
    return -1;
  char *end;
  *out = strtod(at + strlen(quoted), &end);
  return end == at + strlen(quoted) ? -1 : 0;
}

/* A lost record says why the run before this one ended: it is history,
 * not a step the resumed run does again, so it outlives the cut. */
static int is_lost_record(const char *line) {
  static const char lost[] = "{\"type\":\"lost\"";
  return strncmp(line, lost, sizeof lost - 1) == 0;
}

/* What a run resumed at step keeps of the file: the length of its head,
 * the wall time of the last record in it, and (in *tail, *tail_len, NULL
 * when none) the whole lost records after the head. Eval records say
 * "step", the summary of a stopped run "steps" (its wall time includes
 * the stop). */
static int kept_part(FILE *f, uint64_t step, off_t *head, double *wall,
                     char **tail, size_t *tail_len) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  int cut = 0, rc = 0;
  *head = 0;
  *tail = NULL;
  *tail_len = 0;
  while (rc == 0 && (len = getline(&line, &cap, f)) > 0) {
    double at, w;
    if (line[len - 1] != '\n')
      break; /* cut short by the kill */
    if (!cut && (record_number(line, "step", &at) == 0 ||
                 record_number(line, "steps", &at) == 0) &&
        at > (double)step && !is_lost_record(line))
      cut = 1; /* the resumed run does this step again */
    if (!cut) {
      if (record_number(line, "wall_s", &w) == 0)
        *wall = w;
      *head += len;
    } else if (is_lost_record(line)) {
      char *grown = realloc(*tail, *tail_len + (size_t)len);
      if (!grown) {
        rc = QGM_ENOMEM;
        break;
      }
      memcpy(grown + *tail_len, line, (size_t)len);
      *tail = grown;
      *tail_len += (size_t)len;
    }
  }
  free(line);
  return rc;
}

/* Cuts a regular file open on fd (for writing, O_APPEND) back to what a
 * run resumed at step keeps. It is read through a second descriptor of
 * the same file. */
static int cut_for_resume(int fd, const char *path, uint64_t step,
                          double *wall) {
  struct stat st, rst;
  int rfd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  FILE *f = rfd >= 0 ? fdopen(rfd, "r") : NULL;
  if (!f) {
    if (rfd >= 0)
      close(rfd);
    return QGM_EOPEN;
  }
  int rc = 0;
  off_t head = 0;
  char *tail = NULL;
  size_t tail_len = 0;
  if (fstat(fd, &st) != 0 || fstat(rfd, &rst) != 0)
    rc = QGM_EIO;
  else if (st.st_dev != rst.st_dev || st.st_ino != rst.st_ino)
    rc = QGM_EOPEN; /* the path was replaced meanwhile */
  else if ((rc = kept_part(f, step, &head, wall, &tail, &tail_len)) == 0 &&
           (ftruncate(fd, head) != 0 ||
            (tail_len && write(fd, tail, tail_len) != (ssize_t)tail_len)))
    rc = QGM_EIO;
  free(tail);
  fclose(f);
  return rc;
}

int qgmd_metrics_open(const char *path, uint64_t resumed_step, FILE **out,
                      double *resumed_wall) {
  *out = NULL;
  *resumed_wall = 0.0;
  int fd = -1;
  int rc = qgm_open_stream(path, resumed_step > 0 ? O_APPEND : O_TRUNC, &fd);
  if (rc != 0)
    return rc;
  struct stat st;
  if (fstat(fd, &st) != 0)
    rc = QGM_EIO;
  else if (resumed_step > 0 && S_ISREG(st.st_mode))
    rc = cut_for_resume(fd, path, resumed_step, resumed_wall);
  if (rc == 0 && !(*out = fdopen(fd, resumed_step > 0 ? "a" : "w")))
    rc = QGM_ENOMEM;
  if (rc != 0)
    close(fd);
  return rc;
}
