/* kernel_plan.h - which path and matrix-product kernel each kind of
 * product takes (kernel_plan.c). Not installed.
 *
 * The fastest kernel is not always the widest: on Zen 4, whose 512-bit
 * units are two 256-bit halves, the AVX-512 tile runs the direct
 * convolutions within 10% of the AVX2 one, the 3x3 convolutions run twice
 * as fast as Winograd products as directly, and those products are no
 * faster on the wider tile. So each kind of product has its own entry,
 * read from a table of the CPUs it was measured on. */
#ifndef QGM_KERNEL_PLAN_H
#define QGM_KERNEL_PLAN_H

#include "nn/isa.h"

typedef struct qgm_kernel_plan {
  qgm__kernel_t dense;   /* fully connected layers, and every product
                            outside a convolution */
  qgm__kernel_t conv;    /* the other convolutions (im2col products) */
  int winograd;          /* 3x3 stride-1 convolutions that Winograd fits
                            (qgm__winograd_fits): 1 by Winograd F(4x4,
                            3x3), 0 directly like the others */
  qgm__kernel_t conv3x3; /* their kernel */
} qgm__kernel_plan_t;

/* "winograd" (1) or "direct" (0): a path as plans and layer spans name it. */
const char *qgm__path_name(int winograd);

/* The plan in effect: the one qgm_kernels_use set, else the measured one
 * for this CPU, with a kernel qgm_gemm_use forced in every entry. */
const qgm__kernel_plan_t *qgm__kernels(void);

#endif /* QGM_KERNEL_PLAN_H */
