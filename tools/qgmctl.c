/* qgmctl - asks a running qgmd job (its rank 0) for its status, or to stop
 * cleanly, through the job's control socket.
 *
 *   qgmctl [--control=PATH] status   prints one JSON object
 *   qgmctl [--control=PATH] stop     every rank stops at the same step,
 *                                    writes its final records, exits 0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "qgm.h"

/* The daemon's default, when neither side is told a path. */
static void default_path(char *out, size_t size) {
  const char *runtime = getenv("XDG_RUNTIME_DIR");
  if (runtime && *runtime)
    snprintf(out, size, "%s/qgmd.sock", runtime);
  else
    snprintf(out, size, "/tmp/qgmd-%u/qgmd.sock", (unsigned)getuid());
}

static int usage(FILE *out, int status) {
  fprintf(out, "usage: qgmctl [--control=PATH] status|stop\n"
               "       qgmctl --help | --version\n"
               "  status  print the running job's status as JSON\n"
               "  stop    stop the job cleanly at the next agreed step\n"
               "  --control=PATH  the job's control socket (default: "
               "$XDG_RUNTIME_DIR/qgmd.sock,\n"
               "                  else /tmp/qgmd-UID/qgmd.sock)\n");
  return status;
}

int main(int argc, char **argv) {
  char path[1024] = "";
  const char *command = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
      return usage(stdout, 0);
    if (strcmp(argv[i], "--version") == 0) {
      printf("qgmctl %s\n", qgm_version());
      return 0;
    }
    if (strncmp(argv[i], "--control=", 10) == 0)
      snprintf(path, sizeof path, "%s", argv[i] + 10);
    else if (!command && (strcmp(argv[i], "status") == 0 ||
                          strcmp(argv[i], "stop") == 0))
      command = argv[i];
    else {
      fprintf(stderr, "qgmctl: unexpected argument '%s'\n", argv[i]);
      return usage(stderr, 2);
    }
  }
  if (!command)
    return usage(stderr, 2);
  if (!path[0])
    default_path(path, sizeof path);

  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof addr.sun_path) {
    fprintf(stderr, "qgmctl: --control=%s: path too long\n", path);
    return 2;
  }
  memcpy(addr.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    fprintf(stderr, "qgmctl: %s: cannot connect: %s (is qgmd running?)\n",
            path, strerror(errno));
    return 1;
  }
  char request[16];
  int len = snprintf(request, sizeof request, "%s\n", command);
  if (write(fd, request, (size_t)len) != len) {
    fprintf(stderr, "qgmctl: %s: %s\n", path, strerror(errno));
    close(fd);
    return 1;
  }
  char buf[65536];
  ssize_t got;
  size_t total = 0;
  while ((got = read(fd, buf, sizeof buf)) > 0) {
    fwrite(buf, 1, (size_t)got, stdout);
    total += (size_t)got;
  }
  close(fd);
  if (got < 0 || total == 0) {
    fprintf(stderr, "qgmctl: %s: no answer\n", path);
    return 1;
  }
  return 0;
}
