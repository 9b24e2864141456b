/* stop_sleep.c - see stop_sleep.h. A condition variable on the monotonic
 * clock: a wake-up is seen at once, and a change of the wall clock does
 * not lengthen or cut a sleep. */
#include "stop_sleep.h"

#include <pthread.h>
#include <time.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t woken;
static int stopping;

static void init_clock(void) {
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&woken, &attr);
  pthread_condattr_destroy(&attr);
}

void qgmd_stop_sleep(double seconds) {
  if (seconds <= 0.0)
    return;
  pthread_once(&once, init_clock);
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  const time_t whole = (time_t)seconds;
  until.tv_sec += whole;
  until.tv_nsec += (long)((seconds - (double)whole) * 1e9);
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&lock);
  /* Spurious wake-ups go back to sleep; the deadline ends the wait. */
  while (!stopping && pthread_cond_timedwait(&woken, &lock, &until) == 0) {
  }
  pthread_mutex_unlock(&lock);
}

void qgmd_stop_wake(void) {
  pthread_once(&once, init_clock);
  pthread_mutex_lock(&lock);
  stopping = 1;
  pthread_cond_broadcast(&woken);
  pthread_mutex_unlock(&lock);
}
