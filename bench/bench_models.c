/* bench_models.c - one training step of each model, timed: forward,
 * backward and the momentum update (m = beta*m + g; x -= lr*m), batch 64,
 * one thread, random data of the model's input shape. Prints one line per
 * model: name, GEMM kernel, median and quartiles in milliseconds.
 *
 *   bench/bench_models [--steps=N] [--kernel=avx512|avx2|blis] [model...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qgm.h"

typedef struct bench_model {
  const char *name;
  size_t channels, height, width;
} bench_model_t;

static const bench_model_t models[] = {
    {"mlp", 1, 28, 28},
    {"lenet", 1, 28, 28},
    {"resnet20-gn", 3, 32, 32},
};

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int bench(const bench_model_t *bm, size_t batch, int warmup,
                 int steps) {
  const size_t hidden = 256;
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
  for (int s = -warmup; s < steps; s++) {
    double t0 = now_ms();
    float loss;
    qgm_model_loss_grad(model, x, data, y, batch, g, &loss);
    qgm_vec_scale_copy(m, beta, m, np);
    qgm_vec_axpy(m, 1.0f, g, np);
    qgm_vec_axpy(x, -lr, m, np);
    if (s >= 0)
      ms[s] = now_ms() - t0;
  }
  qsort(ms, (size_t)steps, sizeof *ms, cmp_double);
  printf("%s qgmd-%s %.4f %.4f %.4f %zu\n", bm->name, qgm_gemm_kernel_name(),
         ms[steps / 2], ms[steps / 4], ms[3 * steps / 4], np);
  free(x);
  free(g);
  free(m);
  free(data);
  free(y);
  free(ms);
  qgm_model_free(model);
  return 0;
}

int main(int argc, char **argv) {
  int steps = 200, failed = 0, named = 0;
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--steps=", 8) == 0) {
      steps = atoi(argv[i] + 8);
    } else if (strncmp(argv[i], "--kernel=", 9) == 0) {
      if (qgm_gemm_use(argv[i] + 9) != 0) {
        fprintf(stderr, "%s: kernel not available on this CPU\n", argv[i]);
        return 2;
      }
    }
  }
  if (steps < 4) {
    fprintf(stderr, "--steps must be at least 4\n");
    return 2;
  }
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-')
      continue;
    named = 1;
    const bench_model_t *bm = NULL;
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++)
      if (strcmp(argv[i], models[k].name) == 0)
        bm = &models[k];
    if (!bm) {
      fprintf(stderr, "unknown model '%s'\n", argv[i]);
      return 2;
    }
    failed |= bench(bm, 64, steps / 10 + 3, steps);
  }
  for (size_t k = 0; !named && k < sizeof models / sizeof models[0]; k++)
    failed |= bench(&models[k], 64, steps / 10 + 3, steps);
  return failed;
}
