/* memory.c - see memory.h. */
#include "memory.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "memory_limit.h"
#include "qgm.h"

/* The host's MemAvailable in bytes, or -1 if unknown. */
static double host_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f)
    return -1;
  char line[256];
  double kb = -1;
  while (kb < 0 && fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %lf kB", &kb) != 1)
      kb = -1;
  fclose(f);
  return kb < 0 ? -1 : kb * 1024.0;
}

/* What the address-space limit leaves this process, or -1 if unlimited
 * or unknown. */
static double address_space_left(void) {
  struct rlimit lim;
  if (getrlimit(RLIMIT_AS, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY)
    return -1;
  FILE *f = fopen("/proc/self/statm", "r");
  double pages = 0;
  int ok = f && fscanf(f, "%lf", &pages) == 1;
  if (f)
    fclose(f);
  double used = ok ? pages * (double)sysconf(_SC_PAGESIZE) : 0;
  double left = (double)lim.rlim_cur - used;
  return left > 0 ? left : 0;
}

int qgmd_memory_check(double bytes, int ranks_here, const char *what,
                      char *err, size_t errlen) {
  const double gb = 1e9;
  double left = address_space_left();
  if (left >= 0 && bytes > left) {
    snprintf(err, errlen, "%s: needs about %.3g GB more per rank, and the "
             "address-space limit (ulimit -v) leaves %.3g GB; choose a "
             "smaller model", what, bytes / gb, left / gb);
    return 2;
  }
  /* A container's or a slice's cgroup limit binds before the host's
   * memory does: its OOM killer ends the ranks (exit 137) otherwise. */
  const double host = host_available();
  const double cgroup = qgmd_cgroup_memory_left("");
  const int bound = cgroup >= 0 && (host < 0 || cgroup < host);
  const double available = bound ? cgroup : host;
  if (available >= 0 && bytes * ranks_here > available) {
    char here[48];
    snprintf(err, errlen, "%s: needs about %.3g GB per rank, %.3g GB for "
             "the %s on this host, which has %.3g GB available%s; "
             "choose a smaller model or fewer ranks per host", what,
             bytes / gb, bytes * ranks_here / gb,
             qgm_count_text(here, sizeof here, ranks_here, "rank"),
             available / gb, bound ? " under its memory cgroup's limit" : "");
    return 2;
  }
  return 0;
}
