/* host_files.h - a dataset's files inflated once per host. The host's first
 * rank reads them (qgmd_job_read_files) into an MPI shared-memory window
 * that every rank of the host maps, and each rank then loads its shard
 * from the images there: the gzip inflation that every rank did on its own
 * (a quarter of a second of CPU per rank for Fashion-MNIST) is done once
 * per host. Files the loader cannot read from memory, or that the first
 * rank could not read, are read by every rank, which then names what is
 * wrong with them as before. */
#ifndef QGMD_HOST_FILES_H
#define QGMD_HOST_FILES_H

#include <mpi.h>

#include "job/job.h"

typedef struct qgmd_host_files {
  MPI_Comm host; /* the ranks of this host */
  MPI_Win window; /* MPI_WIN_NULL when nothing is shared */
  int n;
  char paths[QGMD_JOB_FILES][4096];
  qgm_file_image_t images[QGMD_JOB_FILES]; /* into the window */
} qgmd_host_files_t;

/* Collective over MPI_COMM_WORLD. Afterwards spec->images and
 * spec->nimages point at the shared images (none when n is 0). */
void qgmd_host_files_share(qgmd_host_files_t *h, qgm_data_spec_t *spec);
/* Collective over the host's ranks, once every one of them has loaded its
 * data: unmaps the window. */
void qgmd_host_files_release(qgmd_host_files_t *h);

#endif /* QGMD_HOST_FILES_H */
