/* host_files.c - see host_files.h. */
#include "host_files.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mpi_util.h"

static void read_files(void *arg) {
  qgmd_host_files_t *h = arg;
  qgmd_job_read_files(&h->spec, h->cache, &h->read);
}

/* Open MPI's launcher sets these before MPI_Init. */
static int launcher_local(const char *name) {
  const char *v = getenv(name);
  return v ? atoi(v) : -1;
}

void qgmd_host_files_prefetch(qgmd_host_files_t *h,
                              const qgm_data_spec_t *spec, const char *cache) {
  memset(h, 0, sizeof *h);
  h->window = MPI_WIN_NULL;
  if (!spec)
    return;
  h->spec = *spec;
  snprintf(h->cache, sizeof h->cache, "%s", cache);
  if (launcher_local("OMPI_COMM_WORLD_LOCAL_RANK") != 0 ||
      launcher_local("OMPI_COMM_WORLD_LOCAL_SIZE") < 2)
    return;
  h->prefetching = uv_thread_create(&h->reader, read_files, h) == 0;
}

/* The rank loads from the n images in h->read; the host's first says so
 * at --log-level=debug. */
static void use_read(qgmd_host_files_t *h, int n, int here, int ranks) {
  if (n == 0)
    return;
  h->n = n;
  h->spec.images = h->read.images;
  h->spec.nimages = (size_t)n;
  if (here == 0) {
    char by[48];
    qgm_count_text(by, sizeof by, ranks, "rank");
    LOG(LOG_DEBUG, "the dataset's %d files, %s, read by the %s of this host",
        n, h->read.cached ? "mapped from the data cache" : "inflated", by);
  }
}

/* Uses the images in h->read (the first rank's: checked entries of the
 * data cache) or, on the other ranks, their own mappings of the same
 * entries: the page cache holds them once for the host, so nothing is
 * copied. A rank whose entries differ from the first's reads the files. */
static void share_cached(qgmd_host_files_t *h, const uint64_t *lens, int n,
                         int here, int ranks) {
  qgmd_job_files_t *read = &h->read;
  if (here != 0)
    qgmd_job_map_cached_files(&h->spec, h->cache, read);
  int same = read->n == n && n == (int)lens[0];
  for (int i = 0; same && i < n; i++)
    same = read->images[i].len == lens[1 + i];
  if (same)
    use_read(h, n, here, ranks);
  else
    qgmd_job_files_free(read);
}

void qgmd_host_files_share(qgmd_host_files_t *h, MPI_Comm host) {
  qgm_data_spec_t *spec = &h->spec;
  int here, ranks;
  MPI_Comm_rank(host, &here);
  MPI_Comm_size(host, &ranks);
  /* The first rank reads, unless it began before MPI_Init; the others
   * learn the files' lengths (n = 0: nothing to share, each rank reads the
   * files itself). A rank that began but is not first (another order of
   * ranks than the launcher's) drops what it read. */
  qgmd_job_files_t *read = &h->read;
  if (h->prefetching) {
    uv_thread_join(&h->reader);
    h->prefetching = 0;
    if (here != 0)
      qgmd_job_files_free(read);
  } else if (here == 0) {
    qgmd_job_read_files(spec, h->cache, read);
  }
  if (ranks == 1) { /* nothing to share */
    use_read(h, read->n, here, ranks);
    return;
  }
  /* The count, the lengths, and whether the first rank mapped them all
   * from the data cache. */
  uint64_t lens[2 + QGMD_JOB_FILES] = {0};
  lens[0] = (uint64_t)read->n;
  for (int i = 0; i < read->n; i++)
    lens[1 + i] = read->images[i].len;
  lens[1 + QGMD_JOB_FILES] = (uint64_t)read->cached;
  MPI_Request bcast;
  MPI_Ibcast(lens, 2 + QGMD_JOB_FILES, MPI_UINT64_T, 0, host, &bcast);
  qgmd_wait_sleeping(&bcast); /* while the first rank reads */
  /* Every rank names the files itself (the same flags give the same
   * paths on one host), so a rank that disagrees reads its own. */
  const int n = qgm_data_files(spec, &h->paths[0][0], sizeof h->paths[0],
                               QGMD_JOB_FILES);
  if (lens[0] == 0) {
    qgmd_job_files_free(read);
    return;
  }
  if (lens[1 + QGMD_JOB_FILES]) {
    share_cached(h, lens, n, here, ranks);
    return;
  }
  MPI_Aint total = 0;
  for (uint64_t i = 0; i < lens[0]; i++)
    total += (MPI_Aint)lens[1 + i];
  uint8_t *base = NULL;
  MPI_Win_allocate_shared(here == 0 ? total : 0, 1, MPI_INFO_NULL, host,
                          &base, &h->window);
  MPI_Aint size;
  int unit;
  MPI_Win_shared_query(h->window, 0, &size, &unit, &base);
  MPI_Win_fence(0, h->window);
  size_t at = 0;
  for (int i = 0; i < read->n; at += read->images[i].len, i++)
    memcpy(base + at, read->images[i].bytes, read->images[i].len);
  qgmd_job_files_free(read);
  MPI_Win_fence(0, h->window); /* the images are written */
  if (n != (int)lens[0])
    return; /* another dataset than the first rank's: read the files */
  for (int i = 0; i < n; i++) {
    h->images[i] = (qgm_file_image_t){h->paths[i], base, (size_t)lens[1 + i]};
    base += lens[1 + i];
  }
  h->n = n;
  spec->images = h->images;
  spec->nimages = (size_t)n;
  if (here == 0)
    LOG(LOG_DEBUG, "the dataset's %d files, inflated once, shared with the "
        "%d ranks of this host", n, ranks);
}

void qgmd_host_files_release(qgmd_host_files_t *h) {
  if (h->prefetching) { /* started, but MPI never got to share it */
    uv_thread_join(&h->reader);
    h->prefetching = 0;
  }
  qgmd_job_files_free(&h->read); /* what share left: the mapped entries */
  if (h->window != MPI_WIN_NULL)
    MPI_Win_free(&h->window);
}
