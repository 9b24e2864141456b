/* log.h - leveled logging for the daemon; the level is checked before any
 * formatting happens, so a disabled debug line costs one comparison. */
#ifndef QGMD_LOG_H
#define QGMD_LOG_H

#include <stddef.h>

enum qgmd_log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

extern int qgmd_log_level;
/* The MPI rank shown in every line, or -1 before it is known. */
extern int qgmd_log_rank;

void qgmd_log_write(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* qgm_strerror(rc) and, for a failed system call (QGM_EOPEN, QGM_EIO,
 * QGM_EWRITE), the system's reason from errno, which must still be the
 * call's: "write error: No space left on device". Returns buf. */
const char *qgmd_reason(int rc, char *buf, size_t size);

#define LOG(level, ...)                                                       \
  do {                                                                        \
    if ((level) <= qgmd_log_level)                                            \
      qgmd_log_write((level), __VA_ARGS__);                                   \
  } while (0)

#endif /* QGMD_LOG_H */
