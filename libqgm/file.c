/* file.c - opening the files that users name (edge lists, data files,
 * checkpoints) for reading: only regular files, and without blocking. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "qgm.h"

int qgm_open_input(const char *path, int *fd_out, uint64_t *size) {
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
  else {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
      rc = QGM_EIO;
  }
  if (rc != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
  }
  *fd_out = fd;
  *size = (uint64_t)st.st_size;
  return 0;
}

int qgm_fopen_input(const char *path, FILE **out, uint64_t *size) {
  int fd;
  int rc = qgm_open_input(path, &fd, size);
  if (rc != 0)
    return rc;
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    int saved = errno;
    close(fd);
    errno = saved;
    return QGM_ENOMEM;
  }
  *out = f;
  return 0;
}
