/* qgmctl - asks a running qgmd job (its rank 0) for its status, or to stop
 * cleanly, through the job's control socket.
 *
 *   qgmctl [--control=PATH] status   prints one JSON object
 *   qgmctl ... status --human        the same for a person: the job, the
 *                                    last evaluation, a table of the ranks
 *   qgmctl [--control=PATH] stop     every rank stops at the same step,
 *                                    writes its final records, exits 0
 *
 * A job that does not answer within --timeout seconds (default 10) is an
 * error, not a wait for ever; so is an answer that says it did nothing
 * ({"error":...}, as from a job serving too many connections), printed on
 * stderr with exit status 1. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "qgm.h"

/* How every answer of qgmd that did nothing begins. */
#define ERROR_REPLY "{\"error\":"

/* The daemon's default, when neither side is told a path. */
static void default_path(char *out, size_t size) {
  const char *runtime = getenv("XDG_RUNTIME_DIR");
  if (runtime && *runtime)
    snprintf(out, size, "%s/qgmd.sock", runtime);
  else
    snprintf(out, size, "/tmp/qgmd-%u/qgmd.sock", (unsigned)getuid());
}

/* Seconds in (0, 3600], or -1. */
static double parse_timeout(const char *text) {
  char *end;
  double t = strtod(text, &end);
  return end != text && !*end && t > 0 && t <= 3600 ? t : -1;
}

static int usage(FILE *out, int status) {
  fprintf(out, "usage: qgmctl [--control=PATH] [--timeout=SECONDS] "
               "status [--human]|stop\n"
               "       qgmctl --help | --version\n"
               "  status  print the running job's status as JSON (--human: "
               "as text, the ranks\n"
               "          as a table)\n"
               "  stop    stop the job cleanly at the next agreed step\n"
               "  --control=PATH  the job's control socket (default: "
               "$XDG_RUNTIME_DIR/qgmd.sock,\n"
               "                  else /tmp/qgmd-UID/qgmd.sock)\n"
               "  --timeout=SECONDS  give up on a job that does not answer "
               "(default 10)\n");
  return status;
}

int main(int argc, char **argv) {
  char path[1024] = "";
  const char *command = NULL;
  int human = 0;
  double timeout = 10;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
      return usage(stdout, 0);
    if (strcmp(argv[i], "--version") == 0) {
      printf("qgmctl %s\n", qgm_version());
      return 0;
    }
    if (strncmp(argv[i], "--control=", 10) == 0)
      snprintf(path, sizeof path, "%s", argv[i] + 10);
    else if (strncmp(argv[i], "--timeout=", 10) == 0) {
      if ((timeout = parse_timeout(argv[i] + 10)) < 0) {
        fprintf(stderr, "qgmctl: %s: not a number of seconds in (0, 3600]\n",
                argv[i]);
        return 2;
      }
    }
    else if (strcmp(argv[i], "--human") == 0)
      human = 1;
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
  if (human && strcmp(command, "status") != 0) {
    fprintf(stderr, "qgmctl: --human goes with status\n");
    return 2;
  }
  if (!path[0])
    default_path(path, sizeof path);

  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof addr.sun_path) {
    fprintf(stderr, "qgmctl: --control=%s: path too long\n", path);
    return 2;
  }
  memcpy(addr.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  /* Bounds the connect (a full backlog), the request and each read. */
  struct timeval tv = {(time_t)timeout,
                       (suseconds_t)((timeout - (time_t)timeout) * 1e6)};
  if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) ||
                  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv))) {
    close(fd);
    fd = -1;
  }
  if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    fprintf(stderr, "qgmctl: %s: cannot connect: %s (is qgmd running?)\n",
            path, strerror(errno));
    return 1;
  }
  char request[16];
  int len = snprintf(request, sizeof request, "%s%s\n", command,
                     human ? " human" : "");
  /* A busy job answers and closes without reading the request: a write
   * after that close fails with EPIPE (and without MSG_NOSIGNAL would
   * kill qgmctl with SIGPIPE), while the answer waits to be read. */
  ssize_t sent = send(fd, request, (size_t)len, MSG_NOSIGNAL);
  if (sent != len && !(sent < 0 && (errno == EPIPE || errno == ECONNRESET))) {
    fprintf(stderr, "qgmctl: %s: %s\n", path, strerror(errno));
    close(fd);
    return 1;
  }
  char buf[65536];
  ssize_t got;
  size_t total = 0;
  int refused = 0;
  while ((got = read(fd, buf, sizeof buf)) > 0) {
    /* {"error":...}: qgmd did not do it (busy, say); a line on stderr. */
    if (total == 0 && strncmp(buf, ERROR_REPLY, strlen(ERROR_REPLY)) == 0)
      refused = 1;
    fwrite(buf, 1, (size_t)got, refused ? stderr : stdout);
    total += (size_t)got;
  }
  if (refused) { /* the job closes without reading the request: a reset */
    close(fd);
    return 1;
  }
  int timed_out = got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  close(fd);
  if (timed_out) {
    fprintf(stderr, "qgmctl: %s: no answer within %g s (--timeout)\n", path,
            timeout);
    return 1;
  }
  if (got < 0 || total == 0) {
    fprintf(stderr, "qgmctl: %s: no answer\n", path);
    return 1;
  }
  return 0;
}
