/* isa.c - see isa.h. */
#include "nn/isa.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "qgm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

static const char *const names[QGM__KERNEL_COUNT] = {
    [QGM__KERNEL_AVX512] = "avx512",
    [QGM__KERNEL_AVX2] = "avx2",
    [QGM__KERNEL_BLIS] = "blis",
};

const char *qgm__kernel_name(qgm__kernel_t kernel) { return names[kernel]; }

int qgm__kernel_parse(const char *text, size_t len, qgm__kernel_t *kernel) {
  for (int k = 0; k < QGM__KERNEL_COUNT; k++)
    if (strlen(names[k]) == len && strncmp(text, names[k], len) == 0) {
      *kernel = (qgm__kernel_t)k;
      return 0;
    }
  return -1;
}

int qgm__kernel_supported(qgm__kernel_t kernel) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (kernel == QGM__KERNEL_AVX512)
    return __builtin_cpu_supports("avx512f");
  if (kernel == QGM__KERNEL_AVX2)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  return kernel == QGM__KERNEL_BLIS;
}

qgm__kernel_t qgm__kernel_widest(void) {
  for (int k = 0; k < QGM__KERNEL_COUNT; k++)
    if (qgm__kernel_supported((qgm__kernel_t)k))
      return (qgm__kernel_t)k;
  return QGM__KERNEL_BLIS;
}

qgm__cpu_id_t qgm__cpu_id(void) {
  qgm__cpu_id_t id = {.vendor = ""};
#if defined(__x86_64__) && defined(__GNUC__)
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d))
    return id;
  memcpy(id.vendor, &b, 4);
  memcpy(id.vendor + 4, &d, 4);
  memcpy(id.vendor + 8, &c, 4);
  id.vendor[12] = '\0';
  if (!__get_cpuid(1, &a, &b, &c, &d))
    return id;
  unsigned family = (a >> 8) & 0xf, model = (a >> 4) & 0xf;
  if (family == 0xf)
    family += (a >> 20) & 0xff;
  if (family == 0x6 || family >= 0xf)
    model |= ((a >> 16) & 0xf) << 4;
  id.family = family;
  id.model = model;
#endif
  return id;
}

static char cpu_text[48];
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

static void write_cpu_text(void) {
  qgm__cpu_id_t id = qgm__cpu_id();
  if (!id.vendor[0])
    snprintf(cpu_text, sizeof cpu_text, "unknown");
  else
    snprintf(cpu_text, sizeof cpu_text, "%s family %u model %u", id.vendor,
             id.family, id.model);
}

const char *qgm_cpu(void) {
  pthread_once(&cpu_once, write_cpu_text);
  return cpu_text;
}
