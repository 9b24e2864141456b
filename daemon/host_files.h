/* host_files.h - a dataset's files inflated once per host. The host's first
 * rank reads them (qgmd_job_read_files) into an MPI shared-memory window
 * that every rank of the host maps, and each rank then loads its shard
 * from the images there: the gzip inflation that every rank did on its own
 * (a quarter of a second of CPU per rank for Fashion-MNIST) is done once
 * per host. When the first rank found every file in the data cache
 * (job/data_cache.h), there is no window: each rank maps the same cache
 * entries, which the page cache holds once. Files the loader cannot read
 * from memory, or that the first rank could not read, are read by every
 * rank, which then names what is wrong with them as before.
 *
 * The reading can start before MPI_Init (qgmd_host_files_prefetch): the
 * launcher names each rank's place on its host, and the host's first rank
 * inflates on a thread of its own while MPI_Init waits for the others. */
#ifndef QGMD_HOST_FILES_H
#define QGMD_HOST_FILES_H

#include <mpi.h>
#include <uv.h>

#include "job.h"

typedef struct qgmd_host_files {
  /* The dataset's files, and after qgmd_host_files_share their shared
   * images (spec.images; none when n is 0). */
  qgm_data_spec_t spec;
  char cache[4096]; /* the data cache's directory ("": none) */
  /* Before MPI_Init: the files being read on `reader` into `read`. */
  int prefetching;
  uv_thread_t reader;
  qgmd_job_files_t read;

  MPI_Win window; /* MPI_WIN_NULL when nothing is shared */
  int n;
  char paths[QGMD_JOB_FILES][4096];
  qgm_file_image_t images[QGMD_JOB_FILES]; /* into the window */
} qgmd_host_files_t;

/* Before MPI_Init, on every rank: sets h up for spec's files (NULL: none
 * yet, a start-up that will stop), read through the data cache in the
 * directory cache (data_cache.h; "": none), and on the first rank of a
 * host of several (by Open MPI's local rank) starts reading them. */
void qgmd_host_files_prefetch(qgmd_host_files_t *h,
                              const qgm_data_spec_t *spec, const char *cache);
/* Collective over `host`, the ranks of this host (test_set.h makes it),
 * with h from qgmd_host_files_prefetch: afterwards h->spec's images point
 * at the shared ones. */
void qgmd_host_files_share(qgmd_host_files_t *h, MPI_Comm host);
/* Collective over the host's ranks, once every one of them has loaded its
 * data: unmaps the window or the cache entries. Before
 * qgmd_host_files_share (a start-up that stopped earlier) it only waits
 * for the reading thread and frees what it read; a second call does
 * nothing. */
void qgmd_host_files_release(qgmd_host_files_t *h);

#endif /* QGMD_HOST_FILES_H */
