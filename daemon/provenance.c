/* provenance.c - see provenance.h. */
#include "provenance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "config.h"
#include "qgm.h"
/* QGMD_REVISION: `git describe` of the source tree, written by the
 * Makefile ("" outside a checkout). */
#include "revision.inc"

/* Appends `"name":count` pairs of the distinct host names, in the order
 * of their first rank. */
static size_t hosts_json(const char *names, int ranks, char *buf,
                         size_t size) {
  size_t used = (size_t)snprintf(buf, size, "{");
  for (int r = 0; r < ranks && used < size; r++) {
    const char *name = names + (size_t)r * MPI_MAX_PROCESSOR_NAME;
    int first = 1, count = 0;
    for (int q = 0; q < ranks; q++) {
      const char *other = names + (size_t)q * MPI_MAX_PROCESSOR_NAME;
      if (strcmp(other, name) == 0) {
        first &= q >= r;
        count++;
      }
    }
    if (!first)
      continue;
    used += (size_t)snprintf(buf + used, size - used, "%s", used > 1 ? "," : "");
    if (used < size)
      used += (size_t)qgmd_json_string(buf + used, size - used, name);
    if (used < size)
      used += (size_t)snprintf(buf + used, size - used, ":%d", count);
  }
  if (used < size)
    used += (size_t)snprintf(buf + used, size - used, "}");
  return used;
}

int qgmd_provenance_json(char *buf, size_t size) {
  int rank, ranks, len = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  char mine[MPI_MAX_PROCESSOR_NAME] = "";
  MPI_Get_processor_name(mine, &len);
  mine[MPI_MAX_PROCESSOR_NAME - 1] = '\0';
  char *names =
      rank == 0 ? calloc((size_t)ranks, MPI_MAX_PROCESSOR_NAME) : NULL;
  if (rank == 0 && !names)
    MPI_Abort(MPI_COMM_WORLD, 1); /* before training: nothing is lost */
  MPI_Gather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names,
             MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank != 0)
    return 0;
  char started[32];
  time_t now = time(NULL);
  struct tm utc;
  strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ",
           gmtime_r(&now, &utc));
  size_t used = (size_t)snprintf(buf, size, "\"version\":\"%s\",",
                                 qgm_version());
  if (QGMD_REVISION[0] && used < size)
    used += (size_t)snprintf(buf + used, size - used, "\"revision\":\"%s\",",
                             QGMD_REVISION);
  if (used < size)
    used += (size_t)snprintf(buf + used, size - used,
                             "\"start_time\":\"%s\",\"hosts\":", started);
  if (used < size)
    used += hosts_json(names, ranks, buf + used, size - used);
  free(names);
  if (used < size)
    used += (size_t)snprintf(buf + used, size - used, ",\"flag_origins\":");
  if (used >= size ||
      qgmd_config_origins_json(buf + used, size - used) < 0)
    return -1;
  return 0;
}
