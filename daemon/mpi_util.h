/* mpi_util.h - small MPI helpers: collective error agreement and waiting
 * without spinning. */
#ifndef QGMD_MPI_UTIL_H
#define QGMD_MPI_UTIL_H

#include <mpi.h>

/* Every rank passes its own exit status (0 = fine) and, if non-zero, a
 * message. Returns the largest status of all ranks; the lowest failing
 * rank logs its message, so a failure shared by every rank (a bad file)
 * is reported once, and a failure of one rank never leaves the others
 * waiting. Collective. */
int qgmd_agree(int status, const char *message);

/* MPI_Wait without spinning: MPI_Test, then sleeps that double from 50
 * microseconds up to 2 ms. For the long waits of start-up, before the
 * event loop runs, where a blocking call would poll (with sched_yield)
 * on cores that the rank being waited for needs. */
void qgmd_wait_sleeping(MPI_Request *req);

/* Before MPI_Init, for a job whose messages between hosts should leave
 * at once (qgmd_job_sends_eagerly): Open MPI's TCP messages of up to
 * QGMD_TCP_EAGER_BYTES are sent eagerly, unless the user set these
 * parameters (an OMPI_MCA_ variable, or mpirun's --mca, which reaches the
 * rank as one). Open MPI's default (64 KB) sends a larger message only
 * after the receiver's reply to its first fragment, and on a loaded slow
 * link that reply queues behind the data flowing the other way. */
enum { QGMD_TCP_EAGER_BYTES = 4 << 20 };
void qgmd_mpi_transport_defaults(int eager);

/* Monotonic seconds. */
double qgmd_now(void);
/* CPU seconds used by the calling thread. */
double qgmd_thread_cpu(void);

#endif /* QGMD_MPI_UTIL_H */
