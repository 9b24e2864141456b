/* placement.c - see placement.h. */
#include "placement.h"

#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

#include "qgm.h"

int qgmd_placement_find(qgmd_placement_t *p) {
  int rank, n, leader;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                      &p->host);
  /* Key 0 keeps the world order: local rank 0 is the host's lowest rank. */
  leader = rank;
  MPI_Bcast(&leader, 1, MPI_INT, 0, p->host);
  int *leaders = malloc((size_t)n * sizeof *leaders);
  int *host_of_leader = malloc((size_t)n * sizeof *host_of_leader);
  p->host_of = malloc((size_t)n * sizeof *p->host_of);
  int ok = leaders && host_of_leader && p->host_of, all_ok;
  /* Every rank learns whether all can go on, so none waits alone. */
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (all_ok)
    MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, MPI_COMM_WORLD);
  if (!all_ok) {
    free(leaders);
    free(host_of_leader);
    free(p->host_of);
    p->host_of = NULL;
    MPI_Comm_free(&p->host);
    return QGM_ENOMEM;
  }
  /* A leader is its host's lowest rank, so hosts are numbered in the rank
   * order of their leaders. */
  p->hosts = 0;
  for (int r = 0; r < n; r++)
    if (leaders[r] == r)
      host_of_leader[r] = p->hosts++;
  for (int r = 0; r < n; r++)
    p->host_of[r] = host_of_leader[leaders[r]];
  int lo = n, hi = 0;
  for (int h = 0; h < p->hosts; h++) {
    int c = 0;
    for (int r = 0; r < n; r++)
      c += p->host_of[r] == h;
    lo = c < lo ? c : lo;
    hi = c > hi ? c : hi;
  }
  p->per_host = lo == hi ? lo : 0;
  free(leaders);
  free(host_of_leader);
  return 0;
}

void qgmd_placement_free(qgmd_placement_t *p) {
  if (!p->host_of)
    return; /* never found: nothing of it is held */
  free(p->host_of);
  p->host_of = NULL;
  MPI_Comm_free(&p->host);
}

void qgmd_placement_describe(const qgmd_placement_t *p, char *out,
                             size_t size) {
  if (p->hosts == 1)
    snprintf(out, size, "1 host");
  else if (p->per_host)
  {
    char ranks[48];
    snprintf(out, size, "%d hosts of %s", p->hosts,
             qgm_count_text(ranks, sizeof ranks, p->per_host, "rank"));
  }
  else
    snprintf(out, size, "%d hosts of unequal rank counts", p->hosts);
}
