/* bench_models.c - one training step of each model, timed: forward,
 * backward and the momentum update (m = beta*m + g; x -= lr*m), batch 64,
 * one thread, random data of the model's input shape.
 *
 *   bench/bench_models [--steps=N] [--kernel=avx512|avx2|blis]
 *                      [--kernels=PLAN] [model...]
 *       one line per model: name, kernel plan, median and quartiles in ms,
 *       parameter count; --kernel forces one kernel on every product,
 *       --kernels sets the plan (qgm_kernels_use);
 *   bench/bench_models --cpu      the CPU and the kernel plan libqgm picked;
 *   bench/bench_models --peak     the GEMM's speed on this machine
 *       (GFLOP/s) and the floating-point operations of the MLP's products
 *       per step;
 *   bench/bench_models --layers [--steps=N] [model]
 *       a Markdown table of the model's step per layer (resnet20-gn by
 *       default), each against the GEMM peak measured in the same run,
 *       all in the thread's CPU time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qgm.h"

#define BATCH 64
#define MLP_HIDDEN 256

typedef struct bench_model {
  const char *name;
  size_t channels, height, width;
} bench_model_t;

static const bench_model_t models[] = {
    {"mlp", 1, 28, 28},
    {"lenet", 1, 28, 28},
    {"resnet20-gn", 3, 32, 32},
};

/* Wall-clock time, or with --layers the thread's CPU time: per-layer
 * shares of a step stay readable on a machine shared with other jobs,
 * where the wall clock also counts the time the scheduler gave them. */
static clockid_t bench_clock = CLOCK_MONOTONIC;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(bench_clock, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* ------------------------------------------------------------ the CPU */

/* The value of the first "key : value" line of /proc/cpuinfo with this
 * key, into buf ("?" if there is none). */
static void cpuinfo(const char *key, char *buf, size_t size) {
  snprintf(buf, size, "?");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f)
    return;
  char line[8192];
  size_t klen = strlen(key);
  while (fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (strncmp(line, key, klen) != 0 || !colon ||
        strspn(line + klen, " \t") != (size_t)(colon - line - (ptrdiff_t)klen))
      continue;
    colon += 1 + strspn(colon + 1, " ");
    colon[strcspn(colon, "\n")] = '\0';
    snprintf(buf, size, "%s", colon);
    break;
  }
  fclose(f);
}

static void print_cpu(void) {
  static const char *const isa[] = {"sse4_2", "avx", "avx2", "fma",
                                    "avx512f", "avx512bw", "avx512vl"};
  char vendor[64], family[16], model[16], name[128], flags[8192];
  cpuinfo("vendor_id", vendor, sizeof vendor);
  cpuinfo("cpu family", family, sizeof family);
  cpuinfo("model", model, sizeof model);
  cpuinfo("model name", name, sizeof name);
  cpuinfo("flags", flags, sizeof flags);
  printf("cpu: %s, %s family %s model %s; ISA:", name, vendor, family, model);
  for (size_t i = 0; i < sizeof isa / sizeof isa[0]; i++) {
    /* A flag is a whole word of the list. */
    size_t len = strlen(isa[i]);
    for (const char *p = flags; (p = strstr(p, isa[i])) != NULL; p += len)
      if ((p == flags || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0')) {
        printf(" %s", isa[i]);
        break;
      }
  }
  printf("; kernels: %s\n", qgm_kernels());
}

/* ------------------------------------------------------ the GEMM peak */

/* The median GFLOP/s of a product shaped like the kernels' best case: k
 * one packed panel deep, m and n multiples of every kernel's tile. */
static double gemm_peak(void) {
  enum { M = 480, N = 2048, K = 256, REPS = 15 };
  float *a = qgm_alloc_floats((size_t)M * K),
        *b = qgm_alloc_floats((size_t)K * N),
        *c = qgm_alloc_floats((size_t)M * N);
  double gflops[REPS];
  if (!a || !b || !c) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  for (size_t i = 0; i < (size_t)M * K; i++)
    a[i] = (float)(i % 7) * 0.25f;
  for (size_t i = 0; i < (size_t)K * N; i++)
    b[i] = (float)(i % 5) * 0.5f;
  for (int r = -2; r < REPS; r++) {
    double t0 = now_ms();
    if (qgm_matmul(M, N, K, a, b, c) != 0) {
      fprintf(stderr, "out of memory\n");
      exit(1);
    }
    if (r >= 0)
      gflops[r] = 2.0 * M * N * K / ((now_ms() - t0) * 1e6);
  }
  qsort(gflops, REPS, sizeof *gflops, cmp_double);
  free(a);
  free(b);
  free(c);
  return gflops[REPS / 2];
}

/* The products of one MLP step: input -> hidden -> classes, forward,
 * weight gradients and the input gradient of the second layer only (the
 * model computes none at its input). */
static double mlp_flops(void) {
  const double in = 28 * 28, hid = MLP_HIDDEN, out = 10;
  return 2.0 * BATCH * (2 * in * hid + 3 * hid * out);
}

/* ---------------------------------------------------------- the layers */

#define MAX_SPANS 64

/* Time per timed step and operations per (layer, pass); the table gives
 * each layer's median step, which one slow step (another job taking the
 * core or the caches) does not move. */
typedef struct span_sum {
  char layer[48];
  char path[24]; /* a convolution's (qgm_layer_span_t), or "-" */
  int backward;
  double *ms; /* per timed step */
  double flops;
  size_t calls;
} span_sum_t;

typedef struct profile {
  span_sum_t sums[MAX_SPANS];
  size_t nsums;
  int step; /* the timed step running, or -1 during the warm-up */
  int steps;
  double t0;
} profile_t;

static void layer_hook(void *user, const qgm_layer_span_t *span, int end) {
  profile_t *p = user;
  if (!end) {
    p->t0 = now_ms();
    return;
  }
  double ms = now_ms() - p->t0;
  if (p->step < 0)
    return;
  size_t i = 0;
  while (i < p->nsums && (p->sums[i].backward != span->backward ||
                          strcmp(p->sums[i].layer, span->layer) != 0))
    i++;
  if (i == p->nsums) {
    if (p->nsums == MAX_SPANS)
      return;
    p->sums[i].ms = calloc((size_t)p->steps, sizeof *p->sums[i].ms);
    if (!p->sums[i].ms)
      return;
    snprintf(p->sums[i].layer, sizeof p->sums[i].layer, "%s", span->layer);
    snprintf(p->sums[i].path, sizeof p->sums[i].path, "%s",
             span->path ? span->path : "-");
    p->sums[i].backward = span->backward;
    p->nsums++;
  }
  p->sums[i].ms[p->step] += ms;
  p->sums[i].flops += span->flops;
  p->sums[i].calls++;
}

/* ------------------------------------------------------------ the step */

typedef struct step_times {
  double median, q1, q3;
  double update_ms; /* the momentum update, summed over the timed steps */
} step_times_t;

static int run_steps(const bench_model_t *bm, int warmup, int steps,
                     profile_t *prof, step_times_t *out, size_t *nparams) {
  const size_t hidden = MLP_HIDDEN, batch = BATCH;
  qgm_model_spec_t spec = {.name = bm->name,
                           .channels = bm->channels,
                           .height = bm->height,
                           .width = bm->width,
                           .classes = 10,
                           .hidden = &hidden,
                           .nhidden = 1,
                           .max_batch = batch};
  qgm_model_t *model = NULL;
  int rc = qgm_model_create(&spec, &model);
  if (rc != 0) {
    fprintf(stderr, "%s: %s\n", bm->name, qgm_strerror(rc));
    return 1;
  }
  size_t np = qgm_model_num_params(model), dim = qgm_model_input_dim(model);
  float *x = qgm_alloc_floats(np), *g = qgm_alloc_floats(np),
        *m = qgm_alloc_floats(np), *data = qgm_alloc_floats(batch * dim);
  uint8_t *y = malloc(batch);
  double *ms = malloc((size_t)steps * sizeof *ms);
  if (!x || !g || !m || !data || !y || !ms) {
    fprintf(stderr, "out of memory\n");
    return 1;
  }
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 1, 0);
  qgm_model_init_params(model, x, &rng);
  memset(m, 0, np * sizeof *m);
  for (size_t i = 0; i < batch * dim; i++)
    data[i] = (float)qgm_rng_normal(&rng);
  for (size_t i = 0; i < batch; i++)
    y[i] = (uint8_t)qgm_rng_below(&rng, 10);

  const float lr = 0.01f, beta = 0.9f;
  out->update_ms = 0.0;
  for (int s = -warmup; s < steps; s++) {
    if (prof)
      prof->step = s;
    double t0 = now_ms();
    float loss;
    qgm_model_loss_grad(model, x, data, y, batch, g, &loss);
    double t1 = now_ms();
    /* One pass, as qgmd's optimizers make it (libqgm/optim). */
    for (size_t i = 0; i < np; i++) {
      m[i] = beta * m[i] + g[i];
      x[i] -= lr * m[i];
    }
    if (s >= 0) {
      double t2 = now_ms();
      ms[s] = t2 - t0;
      out->update_ms += t2 - t1;
    }
  }
  qsort(ms, (size_t)steps, sizeof *ms, cmp_double);
  out->median = ms[steps / 2];
  out->q1 = ms[steps / 4];
  out->q3 = ms[3 * steps / 4];
  *nparams = np;
  free(x);
  free(g);
  free(m);
  free(data);
  free(y);
  free(ms);
  qgm_model_free(model);
  return 0;
}

static int bench(const bench_model_t *bm, int steps) {
  step_times_t t;
  size_t np;
  if (run_steps(bm, steps / 10 + 3, steps, NULL, &t, &np) != 0)
    return 1;
  printf("%s qgmd-%s %.4f %.4f %.4f %zu\n", bm->name, qgm_kernels(),
         t.median, t.q1, t.q3, np);
  return 0;
}

/* The median of n values (sorted in place). */
static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int bench_layers(const bench_model_t *bm, int steps) {
  static profile_t prof;
  double peak = gemm_peak();
  step_times_t t;
  size_t np;
  prof.steps = steps;
  qgm_set_layer_hook(layer_hook, &prof);
  int rc = run_steps(bm, 2, steps, &prof, &t, &np);
  qgm_set_layer_hook(NULL, NULL);
  if (rc != 0)
    return 1;
  /* Per step: each layer's median, the operations' mean. */
  double ms[MAX_SPANS], total = t.update_ms / steps, flops = 0.0;
  for (size_t i = 0; i < prof.nsums; i++) {
    ms[i] = median(prof.sums[i].ms, (size_t)steps);
    total += ms[i];
    flops += prof.sums[i].flops / steps;
  }
  printf("%s, kernels %s, %d steps, thread CPU time; GEMM peak %.1f GFLOP/s "
         "(median); a step %.2f ms (the layers' medians; median step %.2f "
         "ms)\n\n",
         bm->name, qgm_kernels(), steps, peak, total, t.median);
  printf("| layer | path | pass | calls | ms per step | share | GFLOP/s "
         "| of peak | ms at peak |\n|---|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < prof.nsums; i++) {
    const span_sum_t *s = &prof.sums[i];
    double f = s->flops / steps;
    printf("| %s | %s | %s | %zu | %.2f | %.1f%% |", s->layer, s->path,
           s->backward ? "backward" : "forward", s->calls / (size_t)steps,
           ms[i], 100.0 * ms[i] / total);
    if (f > 0.0)
      printf(" %.1f | %.0f%% | %.2f |\n", f / (ms[i] * 1e6),
             100.0 * f / (ms[i] * 1e6) / peak, f / (peak * 1e6));
    else
      printf(" - | - | - |\n");
    free(s->ms);
  }
  printf("| momentum update | - | - | 1 | %.2f | %.1f%% | - | - | - |\n",
         t.update_ms / steps, 100.0 * t.update_ms / steps / total);
  printf("| **all** | | | | %.2f | 100%% | %.1f | %.0f%% | %.2f |\n", total,
         flops / (total * 1e6), 100.0 * flops / (total * 1e6) / peak,
         flops / (peak * 1e6));
  return 0;
}

/* ------------------------------------------------------------ main */

static const bench_model_t *find_model(const char *name) {
  for (size_t k = 0; k < sizeof models / sizeof models[0]; k++)
    if (strcmp(name, models[k].name) == 0)
      return &models[k];
  return NULL;
}

int main(int argc, char **argv) {
  int steps = 200, failed = 0, named = 0, layers = 0;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--steps=", 8) == 0) {
      char *end;
      long v = strtol(argv[i] + 8, &end, 10);
      if (*end != '\0' || v < 4 || v > 1000000) {
        fprintf(stderr, "--steps: expected an integer in [4, 1000000]\n");
        return 2;
      }
      steps = (int)v;
    } else if (strncmp(argv[i], "--kernel=", 9) == 0) {
      if (qgm_gemm_use(argv[i] + 9) != 0) {
        fprintf(stderr, "%s: kernel not available on this CPU\n", argv[i]);
        return 2;
      }
    } else if (strncmp(argv[i], "--kernels=", 10) == 0) {
      if (qgm_kernels_use(argv[i] + 10) != 0) {
        fprintf(stderr, "%s: not a kernel plan this CPU runs\n", argv[i]);
        return 2;
      }
    } else if (strcmp(argv[i], "--cpu") == 0) {
      print_cpu();
      return 0;
    } else if (strcmp(argv[i], "--peak") == 0) {
      printf("%.3f %.0f\n", gemm_peak(), mlp_flops());
      return 0;
    } else if (strcmp(argv[i], "--layers") == 0) {
      layers = 1;
      bench_clock = CLOCK_THREAD_CPUTIME_ID;
    } else if (argv[i][0] == '-') {
      fprintf(stderr, "unknown option '%s'\n", argv[i]);
      return 2;
    } else if (!find_model(argv[i])) {
      fprintf(stderr, "unknown model '%s'\n", argv[i]);
      return 2;
    }
  }
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-')
      continue;
    named = 1;
    const bench_model_t *bm = find_model(argv[i]);
    failed |= layers ? bench_layers(bm, steps) : bench(bm, steps);
  }
  if (!named && layers)
    failed |= bench_layers(find_model("resnet20-gn"), steps);
  for (size_t k = 0; !named && !layers && k < sizeof models / sizeof models[0];
       k++)
    failed |= bench(&models[k], steps);
  return failed;
}
