/* log.c - one line per message on stderr, prefixed with the rank. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "qgm.h"

int qgmd_log_level = LOG_INFO;
int qgmd_log_rank = -1;

void qgmd_log_write(int level, const char *fmt, ...) {
  static const char *const names[] = {"error", "warning", "info", "debug"};
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  /* One fprintf per line keeps lines of different ranks from interleaving
   * mid-line on a shared terminal. */
  if (level >= LOG_INFO) {
    /* Progress is output, not diagnosis: stdout, flushed per line so that
     * it interleaves correctly with errors and shows up live in pipes. */
    fprintf(stdout, "qgmd: %s\n", line);
    fflush(stdout);
  } else if (qgmd_log_rank >= 0)
    fprintf(stderr, "qgmd[%d]: %s: %s\n", qgmd_log_rank, names[level], line);
  else
    fprintf(stderr, "qgmd: %s: %s\n", names[level], line);
}

const char *qgmd_reason(int rc, char *buf, size_t size) {
  int err = errno;
  if ((rc == QGM_EOPEN || rc == QGM_EIO || rc == QGM_EWRITE) && err != 0)
    snprintf(buf, size, "%s: %s", qgm_strerror(rc), strerror(err));
  else
    snprintf(buf, size, "%s", qgm_strerror(rc));
  return buf;
}
