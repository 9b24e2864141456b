/* unit_cnn.c - the convolutional model kinds (lenet, resnet20-gn), the
 * linear example of docs/MODELS.md and the softmax model end to end through the public API: parameter counts
 * against PyTorch's, the full backward pass against central finite
 * differences of the loss, batches against single samples, evaluation
 * against the loss, and argument checks.
 *
 * Each layer is checked alone in unit_layers.c; here the question is
 * whether the model wires them together right (offsets, layouts, the
 * residual sums). The gradient is checked along random unit directions,
 * each confined to one slice of the parameter vector so that every layer's
 * parameters are covered. Step 1e-3: the float loss is accurate to about
 * 3e-7, so the difference quotient is good to about 1e-4 (the tolerance is
 * 2e-4 plus 2%); a step of 1e-2 already crosses ReLU and max-pooling kinks
 * often enough to move it by 10%. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "core/internal.h"
#include "qgm.h"

#define STEP 1e-3

typedef struct fixture {
  qgm_model_t *m;
  size_t np, dim, n;
  float *p, *g, *x;
  uint8_t y[8];
} fixture_t;

static void make(fixture_t *f, const char *name, size_t c, size_t h, size_t w,
                 size_t n, uint64_t seed) {
  qgm_model_spec_t spec = {.name = name, .channels = c, .height = h,
                           .width = w, .classes = 10, .max_batch = n};
  memset(f, 0, sizeof *f);
  assert_int_equal(qgm_model_create(&spec, &f->m), 0);
  f->np = qgm_model_num_params(f->m);
  f->dim = qgm_model_input_dim(f->m);
  f->n = n;
  assert_int_equal(f->dim, c * h * w);
  f->p = qgm_alloc_floats(f->np);
  f->g = qgm_alloc_floats(f->np);
  f->x = qgm_alloc_floats(n * f->dim);
  qgm_rng_t rng;
  qgm_rng_seed(&rng, seed, 0);
  qgm_model_init_params(f->m, f->p, &rng);
  for (size_t i = 0; i < n * f->dim; i++)
    f->x[i] = (float)qgm_rng_normal(&rng);
  for (size_t i = 0; i < n; i++)
    f->y[i] = (uint8_t)((i * 3 + 1) % 10);
}

static void release(fixture_t *f) {
  free(f->p);
  free(f->g);
  free(f->x);
  qgm_model_free(f->m);
}

static double loss_at(fixture_t *f, const float *p) {
  float loss;
  float *scratch = qgm_alloc_floats(f->np);
  assert_int_equal(
      qgm_model_loss_grad(f->m, p, f->x, f->y, f->n, scratch, &loss), 0);
  free(scratch);
  return loss;
}

/* Directional derivatives along unit directions supported on each of
 * `slices` equal slices of the parameters, and on all of them. */
static void check_directions(fixture_t *f, size_t slices) {
  float loss;
  assert_int_equal(
      qgm_model_loss_grad(f->m, f->p, f->x, f->y, f->n, f->g, &loss), 0);
  assert_true(isfinite(loss) && loss > 0.0f);
  float *q = qgm_alloc_floats(f->np);
  double *v = malloc(f->np * sizeof *v);
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 77, 0);
  for (size_t s = 0; s <= slices; s++) {
    size_t lo = s < slices ? f->np * s / slices : 0;
    size_t hi = s < slices ? f->np * (s + 1) / slices : f->np;
    double norm = 0.0, gv = 0.0;
    for (size_t i = 0; i < f->np; i++) {
      v[i] = i >= lo && i < hi ? qgm_rng_normal(&rng) : 0.0;
      norm += v[i] * v[i];
    }
    norm = sqrt(norm);
    for (size_t i = 0; i < f->np; i++) {
      v[i] /= norm;
      gv += v[i] * f->g[i];
    }
    for (size_t i = 0; i < f->np; i++)
      q[i] = (float)(f->p[i] + STEP * v[i]);
    double up = loss_at(f, q);
    for (size_t i = 0; i < f->np; i++)
      q[i] = (float)(f->p[i] - STEP * v[i]);
    double down = loss_at(f, q);
    double fd = (up - down) / (2.0 * STEP);
    /* The losses are floats, each within 2 ulps of the exact value (the
     * Winograd path's transforms add about one to the direct path's):
     * 4 ulps of up - down, over 2 STEP. */
    double ulp = nextafterf(loss, INFINITY) - loss;
    double rounding = 4.0 * ulp / (2.0 * STEP);
    if (!(fabs(fd - gv) <= 2e-4 + 2e-2 * fabs(fd) + rounding))
      fail_msg("slice %zu [%zu, %zu): finite difference %.6g, gradient %.6g",
               s, lo, hi, fd, gv);
  }
  free(q);
  free(v);
}

/* The gradient of a batch is the mean of its samples' gradients. */
static void check_batch_mean(fixture_t *f) {
  float loss, one;
  assert_int_equal(
      qgm_model_loss_grad(f->m, f->p, f->x, f->y, f->n, f->g, &loss), 0);
  float *gi = qgm_alloc_floats(f->np);
  double *sum = calloc(f->np, sizeof *sum), lsum = 0.0;
  for (size_t s = 0; s < f->n; s++) {
    assert_int_equal(qgm_model_loss_grad(f->m, f->p, f->x + s * f->dim,
                                         f->y + s, 1, gi, &one),
                     0);
    lsum += one;
    for (size_t i = 0; i < f->np; i++)
      sum[i] += gi[i];
  }
  assert_near(loss, lsum / (double)f->n, 1e-5);
  double scale = 0.0;
  for (size_t i = 0; i < f->np; i++)
    scale = fmax(scale, fabs(sum[i] / (double)f->n));
  for (size_t i = 0; i < f->np; i++)
    assert_near(f->g[i], sum[i] / (double)f->n, 1e-4 * scale);
  /* Evaluation (chunked forward only) agrees with the loss. */
  size_t correct;
  double loss_sum;
  assert_int_equal(qgm_model_evaluate(f->m, f->p, f->x, f->y, f->n, &correct,
                                      &loss_sum),
                   0);
  assert_near(loss_sum, lsum, 1e-4 * (double)f->n);
  free(gi);
  free(sum);
}

static void test_lenet_counts(void **state) {
  (void)state;
  fixture_t f;
  make(&f, "lenet", 1, 28, 28, 2, 1);
  /* torch: conv 6x1x5x5+6, conv 16x6x5x5+16, 400x120+120, 120x84+84,
   * 84x10+10. */
  assert_int_equal(f.np, 156 + 2416 + 48120 + 10164 + 850);
  release(&f);
  make(&f, "lenet", 3, 32, 32, 2, 1);
  assert_int_equal(f.np, 456 + 2416 + 576 * 120 + 120 + 10164 + 850);
  release(&f);
}

static void test_resnet_counts(void **state) {
  (void)state;
  fixture_t f;
  make(&f, "resnet20-gn", 3, 32, 32, 1, 1);
  /* torchvision-style ResNet-20 with 1x1-conv shortcuts: 269,722 for the
   * BatchNorm network (GroupNorm has the same affine parameters), plus
   * the two shortcut convs (16x32 + 32x64) and their norms (2 x 96). */
  assert_int_equal(f.np, 269722 + 2560 + 192);
  release(&f);
}

static void test_lenet_gradient(void **state) {
  (void)state;
  fixture_t f;
  make(&f, "lenet", 2, 16, 12, 3, 2);
  check_directions(&f, 10);
  release(&f);
}

static void test_resnet_gradient(void **state) {
  (void)state;
  fixture_t f;
  make(&f, "resnet20-gn", 3, 8, 8, 3, 3);
  check_directions(&f, 16);
  release(&f);
}

static void test_softmax_gradient(void **state) {
  (void)state;
  fixture_t f;
  make(&f, "softmax", 1, 4, 5, 4, 4);
  assert_int_equal(f.np, 20 * 10 + 10);
  check_directions(&f, 4);
  release(&f);
}

static void test_linear_gradient(void **state) {
  (void)state;
  fixture_t f;
  make(&f, "linear", 1, 4, 5, 4, 4);    /* 1 x 4 x 5 inputs, batch of 4 */
  assert_int_equal(f.np, 10 * 20);      /* 10 classes x 20 inputs */
  check_directions(&f, 4);
  release(&f);
}

static void test_lenet_batch_mean(void **state) {
  (void)state;
  fixture_t f;
  make(&f, "lenet", 1, 12, 12, 4, 5);
  check_batch_mean(&f);
  release(&f);
}

static void test_resnet_batch_mean(void **state) {
  (void)state;
  fixture_t f;
  make(&f, "resnet20-gn", 3, 8, 8, 4, 6);
  check_batch_mean(&f);
  release(&f);
}

/* GroupNorm starts as the identity, and a fresh network's logits are
 * small: the initial loss is close to log(10). */
static void test_resnet_initial_loss(void **state) {
  (void)state;
  fixture_t f;
  make(&f, "resnet20-gn", 3, 32, 32, 4, 7);
  double loss = loss_at(&f, f.p);
  assert_true(fabs(loss - log(10.0)) < 0.5);
  release(&f);
}

/* What the layer hook sees of one resnet20-gn step on 32 x 32 images:
 * spans that open and close in turn, with the same span both times, and
 * the convolutions' operations in closed form. Per sample the forward
 * convolutions take 40 812 544 multiply-adds (the stem 3*9*16 * 1024, six
 * 16-channel 3x3 layers 16*9*16 * 1024, the stride-2 3x3 layers 16*9*32 *
 * 256 and 32*9*64 * 64, ten more 3x3 layers, five 32*9*32 * 256 and five
 * 64*9*64 * 64, the 1x1 shortcuts 16*32 * 256 and 32*64 * 64); the
 * backward pass twice that, less the stem's input gradient. */
typedef struct hook_log {
  qgm_layer_span_t open; /* the span begun last */
  int is_open;
  size_t spans, conv_spans;
  double forward_flops, backward_flops;
} hook_log_t;

static void log_span(void *user, const qgm_layer_span_t *span, int end) {
  hook_log_t *log = user;
  if (!end) {
    assert_false(log->is_open); /* spans do not nest */
    log->open = *span;
    log->is_open = 1;
    return;
  }
  assert_true(log->is_open);
  assert_ptr_equal(span->layer, log->open.layer);
  assert_int_equal(span->backward, log->open.backward);
  assert_true(span->flops == log->open.flops);
  log->is_open = 0;
  log->spans++;
  if (strncmp(span->layer, "conv", 4) == 0)
    log->conv_spans++;
  *(span->backward ? &log->backward_flops : &log->forward_flops) +=
      span->flops;
}

static void test_resnet_layer_hook(void **state) {
  (void)state;
  fixture_t f;
  const double macs = 40812544.0, stem = 3 * 9 * 16 * 1024.0;
  make(&f, "resnet20-gn", 3, 32, 32, 1, 8);
  hook_log_t log = {0};
  qgm_set_layer_hook(log_span, &log);
  loss_at(&f, f.p);
  qgm_set_layer_hook(NULL, NULL);
  assert_false(log.is_open);
  assert_int_equal(log.conv_spans, 2 * 21); /* 21 convolutions, 2 passes */
  assert_true(log.forward_flops == 2.0 * macs);
  assert_true(log.backward_flops == 2.0 * (2 * macs - stem));
  size_t seen = log.spans;
  loss_at(&f, f.p); /* removed: no more calls */
  assert_int_equal(log.spans, seen);
  release(&f);
}

/* Winograd F(4x4, 3x3) on either kernel against the direct im2col
 * products under BLIS. The two differ by
 * rounding only: on a 32 x 32 batch the losses agree to 1e-6 of the loss
 * and the gradients to 1e-5 of the gradient's largest entry (measured on
 * this batch: the same loss to all digits, 3.2e-7 in the gradient).
 * Three samples: the 16-channel layers take two per chunk, so a full chunk
 * and a part one add up their weight gradients. */
static void check_winograd_matches_direct(fixture_t *f, const float *direct,
                                          float direct_loss, const char *plan) {
  if (qgm_kernels_use(plan) != 0)
    return; /* a kernel this CPU lacks */
  float wino_loss;
  assert_int_equal(qgm_model_loss_grad(f->m, f->p, f->x, f->y, f->n, f->g,
                                       &wino_loss), 0);
  qgm_kernels_use(NULL);
  assert_near(wino_loss, direct_loss, 1e-6 * direct_loss);
  double scale = 0.0;
  for (size_t i = 0; i < f->np; i++)
    scale = fmax(scale, fabs(direct[i]));
  assert_true(scale > 0.0);
  for (size_t i = 0; i < f->np; i++)
    assert_near(f->g[i], direct[i], 1e-5 * scale);
}

static void test_resnet_winograd_matches_direct(void **state) {
  (void)state;
  fixture_t f;
  make(&f, "resnet20-gn", 3, 32, 32, 3, 9);
  float direct_loss;
  float *direct = qgm_alloc_floats(f.np);
  assert_int_equal(qgm_kernels_use("dense=blis,conv=blis,conv3x3=direct-blis"),
                   0);
  assert_int_equal(qgm_model_loss_grad(f.m, f.p, f.x, f.y, f.n, direct,
                                       &direct_loss), 0);
  check_winograd_matches_direct(&f, direct, direct_loss,
                                "conv3x3=winograd-avx512");
  check_winograd_matches_direct(&f, direct, direct_loss,
                                "conv3x3=winograd-avx2");
  qgm_kernels_use(NULL);
  free(direct);
  release(&f);
}

static void test_create_invalid(void **state) {
  (void)state;
  qgm_model_t *m = (qgm_model_t *)&m;
  qgm_model_spec_t spec = {.name = "lenet", .channels = 1, .height = 30,
                           .width = 28, .classes = 10, .max_batch = 4};
  assert_int_equal(qgm_model_create(&spec, &m), QGM_EINVAL); /* 30 % 4 */
  assert_null(m);
  spec.height = 8; /* too small for two poolings */
  assert_int_equal(qgm_model_create(&spec, &m), QGM_EINVAL);
  spec.name = "resnet20-gn";
  spec.height = 2;
  assert_int_equal(qgm_model_create(&spec, &m), QGM_EINVAL);
  spec.height = 8;
  spec.max_batch = 0;
  assert_int_equal(qgm_model_create(&spec, &m), QGM_EINVAL);
  spec.name = "resnet18";
  spec.max_batch = 4;
  assert_int_equal(qgm_model_create(&spec, &m), QGM_EINVAL);
  assert_null(m);
  spec.name = "linear";
  spec.classes = 0;
  assert_int_equal(qgm_model_create(&spec, &m), QGM_EINVAL);
  assert_null(m);
  assert_string_equal(qgm_model_names(),
                      "mlp, softmax, lenet, resnet20-gn, linear");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lenet_counts),
      cmocka_unit_test(test_resnet_counts),
      cmocka_unit_test(test_lenet_gradient),
      cmocka_unit_test(test_resnet_gradient),
      cmocka_unit_test(test_softmax_gradient),
      cmocka_unit_test(test_linear_gradient),
      cmocka_unit_test(test_lenet_batch_mean),
      cmocka_unit_test(test_resnet_batch_mean),
      cmocka_unit_test(test_resnet_initial_loss),
      cmocka_unit_test(test_resnet_layer_hook),
      cmocka_unit_test(test_resnet_winograd_matches_direct),
      cmocka_unit_test(test_create_invalid),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
