/* isa.h - the matrix-product kernels libqgm carries, which of them this
 * CPU can run, and which CPU it is (isa.c). Not installed. */
#ifndef QGM_ISA_H
#define QGM_ISA_H

#include <stddef.h>

/* The kernels, each a register tile for one instruction set (gemm.c), and
 * BLIS's bli_sgemm for CPUs with neither; widest first (qgm__kernel_widest
 * takes the first the CPU runs). */
typedef enum {
  QGM__KERNEL_AVX512,
  QGM__KERNEL_AVX2,
  QGM__KERNEL_BLIS,
  QGM__KERNEL_COUNT
} qgm__kernel_t;

/* "avx512", "avx2", "blis". */
const char *qgm__kernel_name(qgm__kernel_t kernel);
/* The kernel named by the len characters at text; -1 if none is. */
int qgm__kernel_parse(const char *text, size_t len, qgm__kernel_t *kernel);
/* 1 if this CPU runs the kernel (BLIS runs everywhere). */
int qgm__kernel_supported(qgm__kernel_t kernel);
/* The kernel of the widest instruction set this CPU has. */
qgm__kernel_t qgm__kernel_widest(void);

/* The CPU, as CPUID names it: vendor string ("AuthenticAMD",
 * "GenuineIntel"; "" off x86-64), and the display family and model (the
 * extended fields folded in, as /proc/cpuinfo shows them). */
typedef struct qgm_cpu_id {
  char vendor[13];
  unsigned family, model;
} qgm__cpu_id_t;

qgm__cpu_id_t qgm__cpu_id(void);

#endif /* QGM_ISA_H */
