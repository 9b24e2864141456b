/* kernel_plan.c - see kernel_plan.h; qgm_kernels, qgm_kernels_use,
 * qgm_gemm_use and qgm_gemm_kernel_name of qgm.h.
 *
 * A plan is written "dense=K,conv=K,conv3x3=P-K", P "winograd" or
 * "direct", K a kernel name: the form the run records carry, so that a
 * run's paths can be given back to reproduce it on another CPU. */
#include "nn/kernel_plan.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "qgm.h"

/* The CPUs the plans were measured on (`make bench-models`, and
 * bench/bench_models --layers with each plan; docs/PERFORMANCE.md has the
 * tables). A CPU not listed takes the widest kernel everywhere and
 * Winograd where it fits: the choice that won on every CPU measured so
 * far but one detail, the width of the Winograd products. */
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
};

static const char *const keys[] = {"dense", "conv", "conv3x3"};
enum { KEYS = sizeof keys / sizeof keys[0] };

/* The plan qgm_kernels_use set (or this CPU's), and qgm_gemm_use's kernel,
 * if any; `effective` combines them. */
static qgm__kernel_plan_t chosen, effective;
static int forcing;
static qgm__kernel_t forced;
static char text[96];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void write_text(const qgm__kernel_plan_t *p) {
  snprintf(text, sizeof text, "dense=%s,conv=%s,conv3x3=%s-%s",
           qgm__kernel_name(p->dense), qgm__kernel_name(p->conv),
           p->winograd ? "winograd" : "direct", qgm__kernel_name(p->conv3x3));
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

/* Item `key=value` (len characters) into p; -1 if it names no entry or no
 * kernel this CPU runs. */
static int parse_item(const char *item, size_t len, qgm__kernel_plan_t *p,
                      int *seen) {
  const char *eq = memchr(item, '=', len);
  if (!eq)
    return -1;
  size_t klen = (size_t)(eq - item);
  const char *value = eq + 1;
  size_t vlen = len - klen - 1;
  for (int k = 0; k < KEYS; k++) {
    if (strlen(keys[k]) != klen || strncmp(item, keys[k], klen) != 0)
      continue;
    if (seen[k])
      return -1;
    seen[k] = 1;
    qgm__kernel_t kernel;
    if (k == 2) { /* conv3x3: path-kernel */
      const char *dash = memchr(value, '-', vlen);
      if (!dash)
        return -1;
      size_t plen = (size_t)(dash - value);
      if (plen == 8 && strncmp(value, "winograd", 8) == 0)
        p->winograd = 1;
      else if (plen == 6 && strncmp(value, "direct", 6) == 0)
        p->winograd = 0;
      else
        return -1;
      vlen -= plen + 1;
      value = dash + 1;
    }
    if (qgm__kernel_parse(value, vlen, &kernel) != 0 ||
        !qgm__kernel_supported(kernel))
      return -1;
    if (k == 2 && p->winograd && kernel == QGM__KERNEL_BLIS)
      return -1;
    *(k == 0 ? &p->dense : k == 1 ? &p->conv : &p->conv3x3) = kernel;
    return 0;
  }
  return -1;
}

/* Every item of a comma-separated plan over *p; entries it does not name
 * keep their value. */
static int parse_plan(const char *s, qgm__kernel_plan_t *p) {
  int seen[KEYS] = {0};
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
