/* memory_limit.c - see memory_limit.h. */
#include "memory_limit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* v1 reports "no limit" as a page-rounded LONG_MAX: anything this large
 * (4 EiB) is none. */
#define UNLIMITED 4e18

/* The number in a one-line file; -1 if missing, "max" or unreadable. */
static double read_number(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  char line[64] = "";
  const int got = fgets(line, sizeof line, f) != NULL;
  fclose(f);
  char *end;
  const double v = got ? strtod(line, &end) : -1;
  if (!got || end == line || (*end != '\n' && *end != '\0') || v < 0)
    return -1;
  return v;
}

/* The least that any level from dir's cgroup path up to the top leaves:
 * base/path/limit less base/path/usage, then the parent's, and so on. */
static double least_left(const char *base, const char *path,
                         const char *limit_name, const char *usage_name) {
  char at[4096], file[4200];
  snprintf(at, sizeof at, "%s", path);
  double least = -1;
  for (;;) {
    snprintf(file, sizeof file, "%s%s/%s", base, at, limit_name);
    const double limit = read_number(file);
    if (limit >= 0 && limit < UNLIMITED) {
      snprintf(file, sizeof file, "%s%s/%s", base, at, usage_name);
      const double usage = read_number(file);
      double left = limit - (usage > 0 ? usage : 0);
      left = left > 0 ? left : 0;
      if (least < 0 || left < least)
        least = left;
    }
    char *slash = strrchr(at, '/');
    if (!slash || at[0] == '\0')
      break;
    *slash = '\0'; /* the parent; "" is the hierarchy's root */
  }
  return least;
}

static double smaller(double a, double b) {
  return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

double qgmd_cgroup_memory_left(const char *root) {
  char file[4096];
  snprintf(file, sizeof file, "%s/proc/self/cgroup", root);
  FILE *f = fopen(file, "r");
  if (!f)
    return -1;
  double least = -1;
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    /* ID:CONTROLLERS:PATH; v2's is "0::PATH". */
    char *controllers = strchr(line, ':');
    char *path = controllers ? strchr(controllers + 1, ':') : NULL;
    if (!path || path[1] != '/')
      continue;
    *path++ = '\0';
    controllers++;
    if (strcmp(path, "/") == 0)
      path[0] = '\0'; /* the root: no level below it */
    char base[4200];
    if (controllers[0] == '\0') {
      snprintf(base, sizeof base, "%s/sys/fs/cgroup", root);
      least = smaller(least, least_left(base, path, "memory.max",
                                        "memory.current"));
      snprintf(base, sizeof base, "%s/sys/fs/cgroup/unified", root);
      least = smaller(least, least_left(base, path, "memory.max",
                                        "memory.current"));
      continue;
    }
    char *save = NULL;
    for (char *c = strtok_r(controllers, ",", &save); c;
         c = strtok_r(NULL, ",", &save))
      if (strcmp(c, "memory") == 0) {
        snprintf(base, sizeof base, "%s/sys/fs/cgroup/memory", root);
        least = smaller(least, least_left(base, path, "memory.limit_in_bytes",
                                          "memory.usage_in_bytes"));
      }
  }
  fclose(f);
  return least;
}
