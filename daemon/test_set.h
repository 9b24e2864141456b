/* test_set.h - the test set once per host. Every rank scores its model on
 * the whole test set, so every rank used to hold the same normalised
 * floats (31 MB for Fashion-MNIST: half a gigabyte at 16 ranks), each
 * converting and hashing them on its own during start-up. Now the host's
 * first rank loads the test set and the host's ranks read it from an MPI
 * shared-memory window: converted once and hashed once per host. */
#ifndef QGMD_TEST_SET_H
#define QGMD_TEST_SET_H

#include <stdint.h>

#include <mpi.h>

#include "qgm.h"

typedef struct qgmd_test_set {
  MPI_Comm host;  /* the placement's: the ranks of this host (host_files.c
                     shares with it too) */
  int ranks;      /* of the host; 0 before qgmd_test_set_init */
  MPI_Win window; /* MPI_WIN_NULL when the host has one rank */
  int first;      /* this rank loads the test set for its host */
  uint64_t hash;  /* qgm_dataset_hash of the test set */
} qgmd_test_set_t;

/* Whether this rank is the first of host (the placement's communicator of
 * its host, which must outlive t), the one that loads the test set. */
void qgmd_test_set_init(qgmd_test_set_t *t, MPI_Comm host);
/* Collective over the host's ranks, once the first has loaded *test (the
 * others pass *test NULL) with the given status, and the others theirs.
 * Returns the worst status of the host (err, errlen name a failure of
 * the first rank where this rank had none); on 0, every rank's *test reads
 * the shared copy and t->hash is set. */
int qgmd_test_set_share(qgmd_test_set_t *t, int status, qgm_dataset_t **test,
                        char *err, size_t errlen);
/* Collective over the host's ranks, after *test was freed: unmaps the
 * window. Nothing on a zeroed t (before qgmd_test_set_init) or a second
 * time. */
void qgmd_test_set_free(qgmd_test_set_t *t);

#endif /* QGMD_TEST_SET_H */
