/* signals.h - the process's signal dispositions, fixed from the first line
 * of main to its exit.
 *
 * SIGINT, SIGTERM and SIGUSR1 are blocked in every thread (those that MPI,
 * libuv and BLIS start later inherit the mask) and read from a signalfd
 * by the event loop, so that a signal during start-up or after the loop
 * has ended waits instead of killing the rank: a stop requested before
 * training stops it at its first agreed step, one after the summary
 * changes nothing. SIGPIPE and SIGXFSZ are ignored: a control client
 * that hangs up, or a file that reaches the size limit (ulimit -f), is a
 * failed write (EPIPE, EFBIG) that is reported, not the end of the job. */
#ifndef QGMD_SIGNALS_H
#define QGMD_SIGNALS_H

/* The first call of main. Returns 0, or -1 with errno. */
int qgmd_signals_fix(void);

/* A non-blocking signalfd that reads the signals qgmd_signals_fix blocked
 * (those already pending included), or -1 with errno. */
int qgmd_signals_fd(void);

/* The next signal from fd, or 0 when none is pending. */
int qgmd_signals_next(int fd);

#endif /* QGMD_SIGNALS_H */
