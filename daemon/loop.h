/* loop.h - one rank's event loop: libuv for signals, the control socket and
 * the compute worker; MPI requests progressed from the same thread.
 *
 * Open MPI offers no file descriptor to wait on, so the loop interleaves
 * MPI_Testsome with sleeping in the libuv backend (ppoll on its epoll fd):
 * a libuv event (the worker finishing, a signal, a client) wakes the rank at
 * once, and MPI completions are picked up within a back-off that starts
 * at microseconds after every event and doubles while nothing happens, up
 * to a millisecond. No core spins. (Starting the back-off at a fraction of
 * the previous wait was tried: it saves wake-ups for a rank waiting on a
 * slow neighbour, but in lock-step training a rendezvous needs both ranks'
 * progress, so a late poll lengthens the next wait, which lengthens the
 * next first delay: the step time doubled.) */
#ifndef QGMD_LOOP_H
#define QGMD_LOOP_H

#include <mpi.h>
#include <uv.h>

typedef struct qgmd_loop qgmd_loop_t;
typedef void (*qgmd_done_fn)(void *arg);
typedef void (*qgmd_work_fn)(void *arg);

/* A set of MPI requests that completes as a whole. */
typedef struct qgmd_wait {
  MPI_Request *requests;
  int count;
  int remaining;
  qgmd_done_fn done; /* called on the loop thread when all completed */
  void *arg;
  double since; /* when it began to be watched */
  double asked; /* when the timeout was last reported (since at first) */
  struct qgmd_wait *next;
} qgmd_wait_t;

/* Called when a set has been pending longer than the loop's timeout. */
typedef void (*qgmd_timeout_fn)(qgmd_wait_t *w, double waited, void *arg);

struct qgmd_loop {
  uv_loop_t uv;
  qgmd_wait_t *waits; /* active request sets */
  uv_work_t work;
  qgmd_work_fn work_fn;
  qgmd_done_fn work_done;
  void *work_arg;
  int working;
  int stopping; /* qgmd_loop_run returns once nothing is pending */
  long delay_ns;
  double idle_s;  /* time spent asleep in the backend */
  long wakeups;
  /* The watchdog: a set pending longer than timeout_s (> 0) is reported
   * to on_timeout, so a dead or hung peer ends the job instead of leaving
   * it waiting forever. */
  double timeout_s;
  qgmd_timeout_fn on_timeout;
  void *timeout_arg;
  double next_check;
};

int qgmd_loop_init(qgmd_loop_t *loop);
/* Closes every handle; returns uv_loop_close's result (0 when clean). */
int qgmd_loop_close(qgmd_loop_t *loop);

/* Watches w->requests[0..count); calls done(arg) once all have completed
 * (MPI_REQUEST_NULL among them counts as complete). w must stay valid
 * until then. A set with nothing to wait for completes on the next turn
 * of the loop. */
void qgmd_loop_wait(qgmd_loop_t *loop, qgmd_wait_t *w, MPI_Request *requests,
                    int count, qgmd_done_fn done, void *arg);
/* Whether w is still being watched. */
int qgmd_loop_waiting(const qgmd_loop_t *loop, const qgmd_wait_t *w);

/* Runs fn(arg) on the worker thread, then done(arg) on the loop thread.
 * One job at a time. fn must not call MPI. */
void qgmd_loop_work(qgmd_loop_t *loop, qgmd_work_fn fn, qgmd_done_fn done,
                    void *arg);

/* Runs until qgmd_loop_stop was called and no request set or job is
 * pending. */
void qgmd_loop_run(qgmd_loop_t *loop);
void qgmd_loop_stop(qgmd_loop_t *loop);

#endif /* QGMD_LOOP_H */
