/* kernel_plan.c - see kernel_plan.h; qgm_kernels, qgm_kernels_use,
 * qgm_gemm_use and qgm_gemm_kernel_name of qgm.h.
 *
 * A plan is written "dense=K,conv=K,conv3x3=P-K", P "winograd" or
 * "direct", K a kernel name: the form the run records carry, so that a
 * run's paths can be given back to reproduce it on another CPU. */
#include "nn/kernel_plan.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "qgm.h"

/* The CPUs the plans were measured on (`make bench-models`, and
 * bench/bench_models --layers with each plan; docs/PERFORMANCE.md has the
 * tables). A CPU not listed takes the widest kernel everywhere and
 * Winograd where it fits: the choice that won on every CPU measured so
 * far but one detail, Zen 4's width of the Winograd products. */
typedef struct measured_cpu {
  const char *vendor;
  unsigned family, model;
  const char *plan;
} measured_cpu_t;

static const measured_cpu_t measured[] = {
    /* AMD EPYC, Zen 3 (no AVX-512). */
    {"AuthenticAMD", 25, 1, "dense=avx2,conv=avx2,conv3x3=winograd-avx2"},
    /* AMD EPYC, Zen 4: 512-bit operations in two halves. */
    {"AuthenticAMD", 25, 17, "dense=avx512,conv=avx512,conv3x3=winograd-avx2"},
    /* Intel Xeon with AVX-512 FP16 and AMX (its name hidden by the VM):
     * full 512-bit units, so the widest kernel everywhere, Winograd's
     * products included. */
    {"GenuineIntel", 6, 167, "dense=avx512,conv=avx512,conv3x3=winograd-avx512"},
};

/* The plan's entries, in the order its text gives them: the key, where
 * its kernel is kept, and whether a path ("winograd-", "direct-") comes
 * before the kernel. */
typedef struct entry {
  const char *key;
  size_t kernel; /* offset in qgm__kernel_plan_t */
  int has_path;
} entry_t;

static const entry_t entries[] = {
    {"dense", offsetof(qgm__kernel_plan_t, dense), 0},
    {"conv", offsetof(qgm__kernel_plan_t, conv), 0},
    {"conv3x3", offsetof(qgm__kernel_plan_t, conv3x3), 1},
};
enum { ENTRIES = sizeof entries / sizeof entries[0] };

static const char *const path_names[2] = {"direct", "winograd"};

const char *qgm__path_name(int winograd) { return path_names[winograd != 0]; }

static qgm__kernel_t *entry_kernel(qgm__kernel_plan_t *p, const entry_t *e) {
  return (qgm__kernel_t *)(void *)((char *)p + e->kernel);
}

/* The plan qgm_kernels_use set (or this CPU's), and qgm_gemm_use's kernel,
 * if any; `effective` combines them. */
static qgm__kernel_plan_t chosen, effective;
static int forcing;
static qgm__kernel_t forced;
static char text[96];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void write_text(qgm__kernel_plan_t *p) {
  size_t used = 0;
  for (int i = 0; i < ENTRIES; i++) {
    const entry_t *e = &entries[i];
    used += (size_t)snprintf(text + used, sizeof text - used, "%s%s=%s%s%s",
                             i ? "," : "", e->key,
                             e->has_path ? qgm__path_name(p->winograd) : "",
                             e->has_path ? "-" : "",
                             qgm__kernel_name(*entry_kernel(p, e)));
  }
}

static void update(void) {
  effective = chosen;
  if (forcing) {
    effective.dense = effective.conv = effective.conv3x3 = forced;
    /* Winograd's products read packed operands, which BLIS does not take. */
    if (forced == QGM__KERNEL_BLIS)
      effective.winograd = 0;
  }
  write_text(&effective);
}

/* The path named by the len characters at s (-1 if none is). */
static int parse_path(const char *s, size_t len) {
  for (int w = 0; w < 2; w++)
    if (strlen(path_names[w]) == len && strncmp(s, path_names[w], len) == 0)
      return w;
  return -1;
}

/* Item `key=value` (len characters) into p; -1 if it names no entry, an
 * entry seen before, or no kernel this CPU runs. */
static int parse_item(const char *item, size_t len, qgm__kernel_plan_t *p,
                      int *seen) {
  const char *eq = memchr(item, '=', len);
  if (!eq)
    return -1;
  size_t klen = (size_t)(eq - item);
  const char *value = eq + 1;
  size_t vlen = len - klen - 1;
  for (int i = 0; i < ENTRIES; i++) {
    const entry_t *e = &entries[i];
    if (strlen(e->key) != klen || strncmp(item, e->key, klen) != 0)
      continue;
    if (seen[i])
      return -1;
    seen[i] = 1;
    if (e->has_path) {
      const char *dash = memchr(value, '-', vlen);
      int winograd = dash ? parse_path(value, (size_t)(dash - value)) : -1;
      if (winograd < 0)
        return -1;
      p->winograd = winograd;
      vlen -= (size_t)(dash - value) + 1;
      value = dash + 1;
    }
    qgm__kernel_t kernel;
    if (qgm__kernel_parse(value, vlen, &kernel) != 0 ||
        !qgm__kernel_supported(kernel) ||
        (e->has_path && p->winograd && kernel == QGM__KERNEL_BLIS))
      return -1;
    *entry_kernel(p, e) = kernel;
    return 0;
  }
  return -1;
}

/* Every item of a comma-separated plan over *p; entries it does not name
 * keep their value. */
static int parse_plan(const char *s, qgm__kernel_plan_t *p) {
  int seen[ENTRIES] = {0};
  for (;;) {
    const char *comma = strchr(s, ',');
    size_t len = comma ? (size_t)(comma - s) : strlen(s);
    if (parse_item(s, len, p, seen) != 0)
      return -1;
    if (!comma)
      return 0;
    s = comma + 1;
  }
}

static qgm__kernel_plan_t cpu_plan(void) {
  qgm__kernel_t widest = qgm__kernel_widest();
  qgm__kernel_plan_t p = {widest, widest, widest != QGM__KERNEL_BLIS, widest};
  qgm__cpu_id_t id = qgm__cpu_id();
  for (size_t i = 0; i < sizeof measured / sizeof measured[0]; i++) {
    const measured_cpu_t *m = &measured[i];
    qgm__kernel_plan_t q = p;
    if (strcmp(id.vendor, m->vendor) == 0 && id.family == m->family &&
        id.model == m->model && parse_plan(m->plan, &q) == 0)
      return q;
  }
  return p;
}

static void init(void) {
  chosen = cpu_plan();
  update();
}

const qgm__kernel_plan_t *qgm__kernels(void) {
  pthread_once(&once, init);
  return &effective;
}

const char *qgm_kernels(void) {
  pthread_once(&once, init);
  return text;
}

int qgm_kernels_use(const char *plan) {
  pthread_once(&once, init);
  qgm__kernel_plan_t p = cpu_plan();
  if (plan && parse_plan(plan, &p) != 0)
    return -1;
  chosen = p;
  update();
  return 0;
}

const char *qgm_gemm_kernel_name(void) {
  return qgm__kernel_name(qgm__kernels()->dense);
}

int qgm_gemm_use(const char *name) {
  pthread_once(&once, init);
  qgm__kernel_t kernel;
  if (name && (qgm__kernel_parse(name, strlen(name), &kernel) != 0 ||
               !qgm__kernel_supported(kernel)))
    return -1;
  forcing = name != NULL;
  forced = name ? kernel : QGM__KERNEL_BLIS;
  update();
  return 0;
}
