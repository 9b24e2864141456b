/* optim.c - the optimizer step is memory-bound: this measures the bytes it
 * moves per second for each algorithm beside a plain triad a = b + s*c, in
 * the same run, for d = 1e5, 1e6 and 1e7 parameters. One step is
 * qgm_optim_local_step + qgm_optim_after_gossip (the gossip itself is the
 * transport's and is not timed). Bytes are the floats each rule must read
 * and write at the least (docs/ALGORITHMS.md), times 4; the triad moves 3
 * floats per element. Medians over repetitions; ratio = step / triad. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qgm.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Floats read + written per parameter by one step. */
static const struct {
  qgm_algorithm_t alg;
  int floats;
} traffic[] = {
    {QGM_ALG_DSGD, 3},       {QGM_ALG_DSGDM, 5},    {QGM_ALG_DSGDM_N, 5},
    {QGM_ALG_QG_DSGDM, 8},   {QGM_ALG_QG_DSGDM_N, 8}, {QGM_ALG_DADAM, 7},
    {QGM_ALG_QG_DADAM, 13},  {QGM_ALG_D2, 8},       {QGM_ALG_GT, 12},
    {QGM_ALG_ALLREDUCE, 8},
};

static double triad_seconds(size_t d, int reps) {
  float *a = malloc(d * sizeof *a), *b = malloc(d * sizeof *b),
        *c = malloc(d * sizeof *c);
  if (!a || !b || !c)
    exit(1);
  for (size_t i = 0; i < d; i++) {
    b[i] = 1.0f;
    c[i] = (float)i * 1e-7f;
  }
  double t[64];
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    const float s = 0.5f + (float)r;
    float *restrict ar = a;
    const float *restrict br = b, *restrict cr = c;
    for (size_t i = 0; i < d; i++)
      ar[i] = br[i] + s * cr[i];
    t[r] = now() - t0;
    /* keep the stores observable */
    if (a[d / 2] == -1.0f)
      puts("");
  }
  free(a);
  free(b);
  free(c);
  return median(t, reps);
}

static double step_seconds(qgm_algorithm_t alg, size_t d, int reps) {
  qgm_optim_config_t cfg = {.algorithm = alg, .momentum = 0.9f,
                            .weight_decay = 1e-4f};
  qgm_optim_t *o = NULL;
  if (qgm_optim_create(&cfg, d, &o) != 0)
    exit(1);
  float *g = qgm_optim_grad(o);
  for (size_t i = 0; i < d; i++)
    g[i] = 1e-3f * (float)(i % 7);
  double t[64];
  for (int r = -1; r < reps; r++) { /* r = -1 warms the pages */
    double t0 = now();
    const float *msg = qgm_optim_local_step(o, 0.01f);
    (void)msg;
    qgm_optim_after_gossip(o, 0.01f);
    if (r >= 0)
      t[r] = now() - t0;
  }
  qgm_optim_free(o);
  return median(t, reps);
}

int main(void) {
  const size_t sizes[] = {100000, 1000000, 10000000};
  const int reps[] = {41, 15, 7};
  printf("%-10s %-11s %10s %10s %7s\n", "d", "step", "GB/s", "triad GB/s",
         "ratio");
  for (size_t k = 0; k < 3; k++) {
    const size_t d = sizes[k];
    double triad = 3.0 * 4.0 * (double)d / triad_seconds(d, reps[k]) / 1e9;
    for (size_t a = 0; a < sizeof traffic / sizeof traffic[0]; a++) {
      double s = step_seconds(traffic[a].alg, d, reps[k]);
      double bw = traffic[a].floats * 4.0 * (double)d / s / 1e9;
      /* The triad again, right after: noise from other processes then
       * hits both sides of the ratio alike. */
      double triad2 = 3.0 * 4.0 * (double)d / triad_seconds(d, reps[k]) / 1e9;
      double ref = 0.5 * (triad + triad2);
      printf("%-10zu %-11s %10.2f %10.2f %7.2f\n", d,
             qgm_algorithm_name(traffic[a].alg), bw, ref, bw / ref);
      triad = triad2;
    }
  }
  return 0;
}
