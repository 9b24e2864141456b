/* helpers.c - see helpers.h. */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nn/gemm.h"
#include "core/internal.h"

void test_make_tmpdir(char *buf, size_t size) {
  const char *base = getenv("TMPDIR");
  snprintf(buf, size, "%s/qgm-test-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(buf)) {
    perror("mkdtemp");
    exit(1);
  }
}

void test_remove_tree(const char *path) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
  if (system(cmd) != 0)
    fprintf(stderr, "warning: could not remove %s\n", path);
}

char test_tmpdir[256];

int test_tmpdir_setup(void **state) {
  (void)state;
  test_make_tmpdir(test_tmpdir, sizeof test_tmpdir);
  return 0;
}

int test_tmpdir_teardown(void **state) {
  (void)state;
  test_remove_tree(test_tmpdir);
  return 0;
}

int test_write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  size_t w = fwrite(data, 1, n, f);
  return (fclose(f) == 0 && w == n) ? 0 : -1;
}

int test_run(const char *command, char *out, size_t size) {
  char full[4096];
  snprintf(full, sizeof full, "%s 2>&1", command);
  FILE *p = popen(full, "r");
  if (!p)
    return -1;
  size_t used = 0;
  char chunk[4096];
  size_t got;
  while ((got = fread(chunk, 1, sizeof chunk, p)) > 0) {
    if (out && used + 1 < size) {
      size_t take = got < size - 1 - used ? got : size - 1 - used;
      memcpy(out + used, chunk, take);
      used += take;
    }
  }
  if (out && size)
    out[used] = '\0';
  int status = pclose(p);
  if (status == -1)
    return -1;
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

size_t test_count_lines(const char *s) {
  size_t n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

int test_json_number(const char *line, const char *key, double *out) {
  char pattern[128];
  snprintf(pattern, sizeof pattern, "\"%s\":", key);
  const char *at = strstr(line, pattern);
  if (!at)
    return -1;
  char *end;
  *out = strtod(at + strlen(pattern), &end);
  return end == at + strlen(pattern) ? -1 : 0;
}

char *test_read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 4096, used = 0;
  char *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + used, 1, cap - used - 1, f)) > 0) {
    used += got;
    if (used + 1 == cap) {
      char *bigger = realloc(buf, cap *= 2);
      if (!bigger)
        free(buf);
      buf = bigger;
    }
  }
  fclose(f);
  if (buf)
    buf[used] = '\0';
  return buf;
}

int test_jsonl_record(const char *text, const char *type, int n, char *out,
                      size_t size) {
  char pattern[128];
  snprintf(pattern, sizeof pattern, "\"type\":\"%s\"", type);
  for (const char *line = text; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char buf[8192];
    snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
    if (strstr(buf, pattern) && n-- == 0) {
      snprintf(out, size, "%s", buf);
      return 0;
    }
    line = end ? end + 1 : NULL;
  }
  return -1;
}

int test_spawn(const char *command, const char *log_path) {
  char full[4096];
  snprintf(full, sizeof full, "exec %s >>'%s' 2>&1", command, log_path);
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", full, (char *)NULL);
    _exit(127);
  }
  return (int)pid;
}

int test_wait(int pid) {
  int status;
  if (waitpid((pid_t)pid, &status, 0) < 0)
    return -1;
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

int test_rank_pid(const char *tag, int rank) {
  char cmd[1024], pid[64];
  snprintf(cmd, sizeof cmd,
           "for p in $(pgrep -f 'qgm[d] .*%s'); do tr '\\0' '\\n' 2>/dev/null "
           "</proc/$p/environ | grep -qx OMPI_COMM_WORLD_RANK=%d && echo $p; "
           "done; true", tag, rank);
  if (test_run(cmd, pid, sizeof pid) != 0 || !pid[0])
    return -1;
  return atoi(pid);
}

int test_wait_for_command(const char *command, double timeout_s) {
  struct timespec tick = {0, 10 * 1000 * 1000};
  for (double waited = 0.0; waited < timeout_s; waited += 0.01) {
    if (test_run(command, NULL, 0) == 0)
      return 0;
    nanosleep(&tick, NULL);
  }
  return -1;
}

int test_wait_for_text(const char *path, const char *needle,
                       double timeout_s) {
  struct timespec tick = {0, 10 * 1000 * 1000};
  for (double waited = 0.0; waited < timeout_s; waited += 0.01) {
    char *text = test_read_file(path);
    int found = text && strstr(text, needle);
    free(text);
    if (found)
      return 0;
    nanosleep(&tick, NULL);
  }
  return -1;
}

/* ------------------------------------------------------ kernel tests */

float *test_pack;

int test_pack_setup(void **state) {
  (void)state;
  test_pack = qgm_alloc_floats(QGM__GEMM_PACK_FLOATS);
  return test_pack ? 0 : -1;
}

int test_pack_teardown(void **state) {
  (void)state;
  qgm_gemm_use(NULL);
  free(test_pack);
  return 0;
}

void test_fill_uniform(float *x, size_t n, qgm_rng_t *rng) {
  for (size_t i = 0; i < n; i++)
    x[i] = (float)(2.0 * qgm_rng_uniform(rng) - 1.0);
}

static void *or_exit(void *p) {
  if (!p) {
    perror("test allocation");
    exit(1);
  }
  return p;
}

float *test_uniform(size_t n, qgm_rng_t *rng) {
  float *x = or_exit(qgm_alloc_floats(n));
  test_fill_uniform(x, n, rng);
  return x;
}

double *test_widen(const float *x, size_t n) {
  double *d = or_exit(malloc(n * sizeof *d));
  for (size_t i = 0; i < n; i++)
    d[i] = x[i];
  return d;
}

void test_end_jobs_and_remove(const char *dir) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "pkill -KILL -f '(mpiru[n]|qgm[d]) .*%s'; true",
           dir);
  test_run(cmd, NULL, 0);
  test_remove_tree(dir);
}
