/* mpi_util.c - see mpi_util.h. */
#include "mpi_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "log.h"

int qgmd_agree(int status, const char *message) {
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int mine[2] = {status, status ? rank : size}, worst[2];
  MPI_Allreduce(&mine[0], &worst[0], 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&mine[1], &worst[1], 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (worst[1] == rank && message)
    LOG(LOG_ERROR, "%s", message);
  return worst[0];
}

void qgmd_wait_sleeping(MPI_Request *req) {
  long ns = 50000;
  for (int done = 0;;) {
    MPI_Test(req, &done, MPI_STATUS_IGNORE);
    if (done)
      return;
    struct timespec pause = {0, ns};
    nanosleep(&pause, NULL);
    ns = ns < 1000000 ? 2 * ns : 2000000;
  }
}

void qgmd_mpi_transport_defaults(int eager) {
  static const char *const names[] = {
      "OMPI_MCA_btl_tcp_eager_limit",     /* a message sent at once */
      "OMPI_MCA_btl_tcp_rndv_eager_limit", /* a larger one's first part */
      "OMPI_MCA_btl_tcp_max_send_size",   /* one fragment */
  };
  char bytes[32];
  if (!eager)
    return;
  snprintf(bytes, sizeof bytes, "%d", QGMD_TCP_EAGER_BYTES);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    setenv(names[i], bytes, 0);
}

double qgmd_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double qgmd_thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
