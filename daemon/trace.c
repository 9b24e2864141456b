/* trace.c - see trace.h. The file is a JSON array of complete ("X")
 * events, one per line, so that merging ranks is joining lines. */
#include "trace.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qgm.h"

struct qgmd_trace {
  FILE *f;
  int rank;
  double origin;
};

static const char *const lane_names[] = {"loop", "worker", "exchange"};

qgmd_trace_t *qgmd_trace_open(const char *path, int rank, double origin,
                              int *rc) {
  char name[4096];
  const char *mark = strstr(path, "%r");
  if (mark)
    snprintf(name, sizeof name, "%.*s%d%s", (int)(mark - path), path, rank,
             mark + 2);
  else
    snprintf(name, sizeof name, "%s.%d", path, rank);
  qgmd_trace_t *t = calloc(1, sizeof *t);
  int fd = -1;
  *rc = t ? qgm_open_output(name, O_TRUNC, &fd) : QGM_ENOMEM;
  if (*rc == 0 && !(t->f = fdopen(fd, "w"))) {
    close(fd);
    *rc = QGM_ENOMEM;
  }
  if (*rc != 0) {
    free(t);
    return NULL;
  }
  t->rank = rank;
  t->origin = origin;
  fprintf(t->f, "[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,"
          "\"args\":{\"name\":\"rank %d\"}}", rank, rank);
  for (int lane = 0; lane < 3; lane++)
    fprintf(t->f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,"
            "\"tid\":%d,\"args\":{\"name\":\"%s\"}}", rank, lane,
            lane_names[lane]);
  return t;
}

void qgmd_trace_span(qgmd_trace_t *t, const char *name, int lane,
                     double start, double end) {
  if (!t)
    return;
  /* One fprintf per event: stdio locks the stream, so the worker and the
   * loop thread never interleave inside an event. */
  fprintf(t->f, ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,"
          "\"ts\":%.1f,\"dur\":%.1f}", name, t->rank, lane,
          (start - t->origin) * 1e6, (end - start) * 1e6);
}

int qgmd_trace_close(qgmd_trace_t *t) {
  if (!t)
    return 0;
  fprintf(t->f, "\n]\n");
  int bad = ferror(t->f);
  bad |= fclose(t->f) != 0;
  free(t);
  return bad ? -1 : 0;
}
