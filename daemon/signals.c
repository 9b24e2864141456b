/* signals.c - see signals.h. */
#define _GNU_SOURCE /* signalfd */
#include "signals.h"

#include <errno.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

static void steered(sigset_t *set) {
  sigemptyset(set);
  sigaddset(set, SIGINT);
  sigaddset(set, SIGTERM);
  sigaddset(set, SIGUSR1);
}

int qgmd_signals_fix(void) {
  sigset_t set;
  steered(&set);
  struct sigaction ignore = {.sa_handler = SIG_IGN};
  sigemptyset(&ignore.sa_mask);
  if (sigaction(SIGPIPE, &ignore, NULL) != 0 ||
      sigaction(SIGXFSZ, &ignore, NULL) != 0)
    return -1;
  return sigprocmask(SIG_BLOCK, &set, NULL) == 0 ? 0 : -1;
}

int qgmd_signals_fd(void) {
  sigset_t set;
  steered(&set);
  return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

int qgmd_signals_next(int fd) {
  struct signalfd_siginfo info;
  ssize_t got;
  do
    got = read(fd, &info, sizeof info);
  while (got < 0 && errno == EINTR);
  return got == (ssize_t)sizeof info ? (int)info.ssi_signo : 0;
}
