/* file.c - opening the files that users name (edge lists, data files,
 * checkpoints; metrics, traces): only regular files, and without
 * blocking. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/internal.h"
#include "qgm.h"

void qgm__close_keeping_errno(int fd) {
  int saved = errno;
  close(fd);
  errno = saved;
}

/* Clears O_NONBLOCK once the open has not blocked: reads and writes of a
 * regular file should wait as usual. */
static int blocking_again(int fd) {
  int flags = fcntl(fd, F_GETFL);
  return flags >= 0 && fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0;
}

/* Whether fd is the pipe (or socket) this process was given as its
 * standard output or error: /dev/stdout of a rank whose output goes to
 * mpirun. A FIFO anyone made in the file system is never that. */
static int is_own_stream(const struct stat *st) {
  for (int std = 1; std <= 2; std++) {
    struct stat s;
    if (fstat(std, &s) == 0 && s.st_dev == st->st_dev && s.st_ino == st->st_ino)
      return 1;
  }
  return 0;
}

static int open_output(const char *path, int flags, int streams,
                       int *fd_out) {
  if (!path || !fd_out || (flags & ~(O_TRUNC | O_APPEND)) != 0)
    return QGM_EINVAL;
  /* O_NONBLOCK: a FIFO with no reader fails at once (ENXIO) instead of
   * waiting for one. O_TRUNC waits until the file is known to be
   * regular: truncating a device is not ours to do. */
  int fd = open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
                          (flags & O_APPEND),
                0644);
  if (fd < 0) /* ENXIO: a FIFO without a reader; EISDIR: a directory */
    return errno == ENXIO || errno == EISDIR ? QGM_ENOTFILE : QGM_EOPEN;
  struct stat st;
  int rc = 0;
  if (fstat(fd, &st) != 0)
    rc = QGM_EOPEN;
  else if (!S_ISREG(st.st_mode) &&
           !(streams && (S_ISCHR(st.st_mode) || is_own_stream(&st))))
    rc = QGM_ENOTFILE;
  else if (!blocking_again(fd) ||
           (S_ISREG(st.st_mode) && (flags & O_TRUNC) && ftruncate(fd, 0) != 0))
    rc = QGM_EOPEN;
  if (rc != 0) {
    qgm__close_keeping_errno(fd);
    return rc;
  }
  *fd_out = fd;
  return 0;
}

int qgm_open_output(const char *path, int flags, int *fd_out) {
  return open_output(path, flags, 0, fd_out);
}

int qgm_open_stream(const char *path, int flags, int *fd_out) {
  return open_output(path, flags, 1, fd_out);
}

int qgm__open_input(const char *path, int *fd_out, uint64_t *size) {
  /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
   * writer, for ever if none comes. Regular files ignore it. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return QGM_EOPEN;
  struct stat st;
  int rc = 0;
  if (fstat(fd, &st) != 0)
    rc = QGM_EIO;
  else if (!S_ISREG(st.st_mode))
    rc = QGM_ENOTFILE;
  else if (!blocking_again(fd))
    rc = QGM_EIO;
  if (rc != 0) {
    qgm__close_keeping_errno(fd);
    return rc;
  }
  *fd_out = fd;
  *size = (uint64_t)st.st_size;
  return 0;
}

int qgm__fopen_input(const char *path, FILE **out, uint64_t *size) {
  int fd;
  int rc = qgm__open_input(path, &fd, size);
  if (rc != 0)
    return rc;
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    qgm__close_keeping_errno(fd);
    return QGM_ENOMEM;
  }
  *out = f;
  return 0;
}
