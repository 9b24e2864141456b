/* placement.h - which ranks share a host. Ranks that can share memory (as
 * MPI_Comm_split_type sees them) are one host; hosts are numbered in the
 * order of their lowest rank. The hierarchical topology groups by it, and
 * the byte counts tell traffic inside a host from traffic between hosts. */
#ifndef QGMD_PLACEMENT_H
#define QGMD_PLACEMENT_H

#include <stddef.h>

#include <mpi.h>

typedef struct qgmd_placement {
  MPI_Comm host; /* the ranks of this rank's host, in world order: the one
                    communicator of the test set, the shared files and the
                    gossip's window */
  int hosts;
  int *host_of; /* rank -> host */
  int per_host; /* ranks on every host, or 0 when hosts differ */
} qgmd_placement_t;

/* Collective over MPI_COMM_WORLD. Returns 0, or QGM_ENOMEM. */
int qgmd_placement_find(qgmd_placement_t *p);
void qgmd_placement_free(qgmd_placement_t *p);

/* "4 hosts of 2 ranks", "1 host", "3 hosts of 2 to 4 ranks". */
void qgmd_placement_describe(const qgmd_placement_t *p, char *out,
                             size_t size);

#endif /* QGMD_PLACEMENT_H */
