/* loop.c - see loop.h. */
/* ppoll: nanosecond sleeps that still wake on libuv events. */
#define _GNU_SOURCE
#include "loop.h"

#include <poll.h>
#include <stddef.h>
#include <time.h>

#include "mpi_util.h"

/* The back-off doubles each idle turn: a completion is noticed at most
 * as late again as it came (a 60 us exchange by ~64 us), a 3 ms wait
 * costs about ten wake-ups, and a long one settles at one per
 * MAX_DELAY_NS. */
enum {
  MIN_DELAY_NS = 2000,
  MAX_DELAY_NS = 1000000,
  MAX_TESTED = 64, /* requests tested per set per turn */
};

int qgmd_loop_init(qgmd_loop_t *loop) {
  *loop = (qgmd_loop_t){.delay_ns = MIN_DELAY_NS};
  return uv_loop_init(&loop->uv);
}

static void close_handle(uv_handle_t *handle, void *arg) {
  (void)arg;
  if (!uv_is_closing(handle))
    uv_close(handle, NULL);
}

int qgmd_loop_close(qgmd_loop_t *loop) {
  uv_walk(&loop->uv, close_handle, NULL);
  uv_run(&loop->uv, UV_RUN_DEFAULT);
  return uv_loop_close(&loop->uv);
}

void qgmd_loop_wait(qgmd_loop_t *loop, qgmd_wait_t *w, MPI_Request *requests,
                    int count, qgmd_done_fn done, void *arg) {
  w->requests = requests;
  w->count = count;
  w->remaining = 0; /* a null request is complete already */
  for (int i = 0; i < count; i++)
    w->remaining += requests[i] != MPI_REQUEST_NULL;
  w->done = done;
  w->arg = arg;
  w->since = w->asked = qgmd_now();
  w->next = loop->waits;
  loop->waits = w;
}

int qgmd_loop_waiting(const qgmd_loop_t *loop, const qgmd_wait_t *w) {
  for (const qgmd_wait_t *it = loop->waits; it; it = it->next)
    if (it == w)
      return 1;
  return 0;
}

static void work_cb(uv_work_t *req) {
  qgmd_loop_t *loop = req->data;
  loop->work_fn(loop->work_arg);
}

static void after_work_cb(uv_work_t *req, int status) {
  (void)status;
  qgmd_loop_t *loop = req->data;
  loop->working = 0;
  loop->work_done(loop->work_arg);
}

void qgmd_loop_work(qgmd_loop_t *loop, qgmd_work_fn fn, qgmd_done_fn done,
                    void *arg) {
  loop->work_fn = fn;
  loop->work_done = done;
  loop->work_arg = arg;
  loop->working = 1;
  loop->work.data = loop;
  uv_queue_work(&loop->uv, &loop->work, work_cb, after_work_cb);
}

void qgmd_loop_stop(qgmd_loop_t *loop) { loop->stopping = 1; }

/* Tests every watched set once; fires the callbacks of completed sets.
 * Returns whether anything completed. */
static int progress(qgmd_loop_t *loop) {
  int progressed = 0;
  qgmd_wait_t **link = &loop->waits;
  while (*link) {
    qgmd_wait_t *w = *link;
    for (int first = 0; w->remaining > 0 && first < w->count;
         first += MAX_TESTED) {
      int indices[MAX_TESTED], done = 0;
      int n = w->count - first < MAX_TESTED ? w->count - first : MAX_TESTED;
      MPI_Testsome(n, w->requests + first, &done, indices,
                   MPI_STATUSES_IGNORE);
      if (done != MPI_UNDEFINED && done > 0) {
        w->remaining -= done;
        progressed = 1;
      }
    }
    if (w->remaining <= 0) {
      *link = w->next; /* unlink first: the callback may wait again */
      w->next = NULL;
      w->done(w->arg);
      progressed = 1;
      link = &loop->waits; /* the list may have changed */
      continue;
    }
    link = &w->next;
  }
  return progressed;
}

/* Sleeps in the libuv backend for at most delay_ns, or less if a libuv
 * timer is due sooner; any libuv event ends the sleep early. Returns
 * whether one did. */
static int sleep_in_backend(qgmd_loop_t *loop) {
  long ns = loop->delay_ns;
  int uv_ms = uv_backend_timeout(&loop->uv);
  if (uv_ms >= 0 && (long)uv_ms * 1000000L < ns)
    ns = (long)uv_ms * 1000000L;
  struct pollfd pfd = {.fd = uv_backend_fd(&loop->uv), .events = POLLIN};
  struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
  double t0 = qgmd_now();
  int events = ppoll(&pfd, 1, &ts, NULL);
  loop->idle_s += qgmd_now() - t0;
  loop->wakeups++;
  return events > 0;
}

/* At most ten times a second: a timeout is coarse, and a clock read per
 * set on every turn would cost more than it tells. */
static void watch(qgmd_loop_t *loop) {
  double now = qgmd_now();
  if (loop->timeout_s <= 0 || !loop->on_timeout || now < loop->next_check)
    return;
  loop->next_check = now + 0.1;
  for (qgmd_wait_t *w = loop->waits; w; w = w->next)
    if (now - w->asked > loop->timeout_s) {
      w->asked = now; /* the callback let it wait on: ask again later */
      loop->on_timeout(w, now - w->since, loop->timeout_arg);
    }
}

void qgmd_loop_run(qgmd_loop_t *loop) {
  for (;;) {
    uv_run(&loop->uv, UV_RUN_NOWAIT);
    int progressed = progress(loop);
    watch(loop);
    if (loop->stopping && !loop->waits && !loop->working)
      return;
    if (progressed) {
      loop->delay_ns = MIN_DELAY_NS;
      continue;
    }
    if (sleep_in_backend(loop)) {
      /* What the event started (a new exchange, say) is waited for from
       * the shortest delay again. */
      loop->delay_ns = MIN_DELAY_NS;
      continue;
    }
    loop->delay_ns *= 2;
    if (loop->delay_ns > MAX_DELAY_NS)
      loop->delay_ns = MAX_DELAY_NS;
  }
}
