/* unit_model.c - the MLP's loss, gradient, evaluation and initialisation
 * against a naive double-precision reference written here from the
 * definitions (nn.Linear layout, ReLU, mean softmax cross-entropy), and
 * against central finite differences of that reference.
 *
 * Kinks: a ReLU is not differentiable at 0, so the gradient tests build
 * parameters and inputs on dyadic lattices that keep every hidden
 * pre-activation an odd multiple of half a lattice step (see lattice_net):
 * it can never be 0, is computed exactly in float whatever the summation
 * order, and lies far further from 0 than any finite-difference step can
 * move it. */
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

/* The ENOMEM test asks for an impossible arena; under ASan that must come
 * back as NULL, as it does from glibc, instead of aborting the run. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
  return "allocator_may_return_null=1:max_allocation_size_mb=1048576";
}

#define MAX_LAYERS 9

/* The network shape, kept by the test independently of the library. */
typedef struct net {
  size_t nl;                  /* number of linear layers */
  size_t dims[MAX_LAYERS + 1]; /* dims[0] input ... dims[nl] classes */
} net_t;

static net_t make_net(size_t input, const size_t *hidden, size_t nh,
                      size_t classes) {
  net_t net = {.nl = nh + 1};
  net.dims[0] = input;
  for (size_t i = 0; i < nh; i++)
    net.dims[i + 1] = hidden[i];
  net.dims[nh + 1] = classes;
  return net;
}

static size_t net_params(const net_t *net) {
  size_t total = 0;
  for (size_t l = 0; l < net->nl; l++)
    total += net->dims[l] * net->dims[l + 1] + net->dims[l + 1];
  return total;
}

static qgm_model_t *create(const net_t *net, size_t max_batch) {
  qgm_model_t *m = NULL;
  assert_int_equal(qgm_mlp_create(net->dims[0], net->dims + 1, net->nl - 1,
                                  net->dims[net->nl], max_batch, &m),
                   QGM_OK);
  assert_non_null(m);
  assert_int_equal(qgm_model_num_params(m), net_params(net));
  assert_int_equal(qgm_model_input_dim(m), net->dims[0]);
  assert_int_equal(qgm_model_max_batch(m), max_batch);
  return m;
}

/* Mean cross-entropy of n samples, straight from the definitions in double.
 * *min_pre (if not NULL) gets the smallest |hidden pre-activation| seen, so
 * the tests can assert the kink margin they built in. */
static double ref_loss(const net_t *net, const double *p, const float *x,
                       const uint8_t *y, size_t n, double *logits_out,
                       double *min_pre) {
  double a[1024], z[1024];
  double total = 0.0, smallest = INFINITY;
  for (size_t s = 0; s < n; s++) {
    for (size_t k = 0; k < net->dims[0]; k++)
      a[k] = x[s * net->dims[0] + k];
    const double *w = p;
    for (size_t l = 0; l < net->nl; l++) {
      size_t din = net->dims[l], dout = net->dims[l + 1];
      const double *b = w + din * dout;
      for (size_t j = 0; j < dout; j++) {
        double v = b[j];
        for (size_t k = 0; k < din; k++)
          v += w[j * din + k] * a[k];
        z[j] = v;
      }
      if (l + 1 < net->nl)
        for (size_t j = 0; j < dout; j++) {
          if (fabs(z[j]) < smallest)
            smallest = fabs(z[j]);
          a[j] = z[j] > 0.0 ? z[j] : 0.0;
        }
      w = b + dout;
    }
    size_t c = net->dims[net->nl];
    double mx = z[0];
    for (size_t j = 1; j < c; j++)
      mx = fmax(mx, z[j]);
    double sum = exp(z[0] - mx);
    for (size_t j = 1; j < c; j++)
      sum += exp(z[j] - mx);
    total += mx + log(sum) - z[y[s]];
    if (logits_out)
      memcpy(logits_out + s * c, z, c * sizeof *z);
  }
  if (min_pre)
    *min_pre = smallest;
  return total / (double)n;
}

static int64_t lattice(qgm_rng_t *rng, int64_t half_range) {
  return (int64_t)qgm_rng_below(rng, (uint64_t)(2 * half_range + 1)) -
         half_range;
}

/* Inputs are k/4 (|k| <= 4). If a layer's inputs are multiples of g and its
 * weights multiples of gw, every product and sum of products is a multiple
 * of g*gw; biases (m + 1/2) g gw then make each pre-activation an odd
 * multiple of g*gw/2, so |z| >= g*gw/2, and the ReLU output is a multiple of
 * g*gw/2, the next layer's g. All values are small dyadic rationals, exact
 * in float. Weight steps are chosen so the scale stays near PyTorch's
 * +-1/sqrt(fan_in). Returns the guaranteed margin of the last hidden layer
 * (the smallest). */
static double lattice_net(const net_t *net, float *p, float *x, uint8_t *y,
                          size_t n, uint64_t seed) {
  qgm_rng_t rng;
  qgm_rng_seed(&rng, seed, 99);
  for (size_t i = 0; i < n * net->dims[0]; i++)
    x[i] = (float)lattice(&rng, 4) / 4.0f;
  for (size_t i = 0; i < n; i++)
    y[i] = (uint8_t)qgm_rng_below(&rng, net->dims[net->nl]);
  double g = 0.25, margin = INFINITY;
  for (size_t l = 0; l < net->nl; l++) {
    size_t din = net->dims[l], dout = net->dims[l + 1];
    /* A step of 2^-e leaving 2 or 3 levels each side of 0 within
     * +-1/sqrt(din): coarse, so that the grain (and with it the kink
     * margin) shrinks slowly with depth. */
    double bound = 1.0 / sqrt((double)din);
    int e = 1 + (int)ceil(log2(sqrt((double)din)));
    double gw = ldexp(1.0, -e);
    int64_t levels = (int64_t)(bound / gw);
    for (size_t i = 0; i < din * dout; i++)
      *p++ = (float)((double)lattice(&rng, levels) * gw);
    double gb = g * gw;
    for (size_t j = 0; j < dout; j++)
      *p++ = (float)(((double)lattice(&rng, (int64_t)(bound / gb)) + 0.5) * gb);
    if (l + 1 < net->nl)
      margin = gb / 2.0;
    g = gb / 2.0;
  }
  return margin;
}

static void check_close(double got, double want, double abs_tol,
                        double rel_tol, const char *what, size_t index) {
  if (!(fabs(got - want) <= abs_tol + rel_tol * fabs(want)))
    fail_msg("%s[%zu]: got %.9g, want %.9g (diff %.3g)", what, index, got,
             want, fabs(got - want));
}

/* ------------------------------------------------------- (a) loss values */

/* 1 -> 1 -> 2 with W1 = 1, b1 = 0, W2 = (1, -1)^T, b2 = 0: the logits of
 * x are (relu(x), -relu(x)), so the loss has a closed form. */
static void test_loss_closed_form(void **state) {
  (void)state;
  size_t h = 1;
  qgm_model_t *m = NULL;
  assert_int_equal(qgm_mlp_create(1, &h, 1, 2, 2, &m), QGM_OK);
  const float p[] = {1.0f, 0.0f, 1.0f, -1.0f, 0.0f, 0.0f};
  float grad[6], loss;

  /* x = 2, label 0: logits (2, -2), loss = log(1 + e^-4). */
  float x = 2.0f;
  uint8_t y = 0;
  assert_int_equal(qgm_model_loss_grad(m, p, &x, &y, 1, grad, &loss), 0);
  assert_float_equal(loss, log1p(exp(-4.0)), 1e-6);
  /* x = -1: relu kills the hidden unit, logits (0, 0), loss = log 2, and
   * nothing upstream of the dead unit gets a gradient. */
  x = -1.0f;
  assert_int_equal(qgm_model_loss_grad(m, p, &x, &y, 1, grad, &loss), 0);
  assert_float_equal(loss, log(2.0), 1e-6);
  assert_float_equal(grad[0], 0.0, 0.0);
  assert_float_equal(grad[1], 0.0, 0.0);
  /* d/db2 = softmax - onehot = (1/2 - 1, 1/2). */
  assert_float_equal(grad[4], -0.5, 1e-7);
  assert_float_equal(grad[5], 0.5, 1e-7);

  /* Huge logits: (1000, -1000). A naive softmax overflows; the stable one
   * gives exactly the margin for the wrong label and ~0 for the right one. */
  const float xs[2] = {1000.0f, 1000.0f};
  const uint8_t ys[2] = {1, 0};
  assert_int_equal(qgm_model_loss_grad(m, p, xs, ys, 2, grad, &loss), 0);
  assert_float_equal(loss, 1000.0, 1e-3); /* (2000 + 0) / 2 */
  for (int i = 0; i < 6; i++)
    assert_true(isfinite(grad[i]));
  qgm_model_free(m);
}

/* Hand-set parameters (a fixed pattern, not the library's init) on the
 * shapes 3-4-2 and 5-3-3-4, against the reference. */
static void check_pattern_loss(const net_t *net, size_t n) {
  qgm_model_t *m = create(net, n);
  size_t np = net_params(net);
  float *p = malloc(np * sizeof *p), *g = malloc(np * sizeof *g);
  float x[64];
  uint8_t y[16];
  assert_non_null(p);
  assert_non_null(g);
  for (size_t i = 0; i < np; i++)
    p[i] = (float)(0.1 * (double)((int)(i * 7 % 11) - 5) + 0.01 * (double)i);
  for (size_t i = 0; i < n * net->dims[0]; i++)
    x[i] = (float)(0.5 * (double)((int)(i * 5 % 9) - 3));
  for (size_t i = 0; i < n; i++)
    y[i] = (uint8_t)(i % net->dims[net->nl]);

  double *pd = test_widen(p, np);
  double want = ref_loss(net, pd, x, y, n, NULL, NULL);
  float loss = -1.0f;
  assert_int_equal(qgm_model_loss_grad(m, p, x, y, n, g, &loss), 0);
  check_close(loss, want, 1e-6, 1e-6, "loss", 0);
  free(pd);
  free(p);
  free(g);
  qgm_model_free(m);
}

static void test_loss_matches_reference(void **state) {
  (void)state;
  net_t a = make_net(3, (const size_t[]){4}, 1, 2);
  check_pattern_loss(&a, 5);
  net_t b = make_net(5, (const size_t[]){3, 3}, 2, 4);
  check_pattern_loss(&b, 6);
  net_t c = make_net(4, NULL, 0, 3); /* no hidden layer: softmax regression */
  check_pattern_loss(&c, 3);
}

/* ------------------------------------------------ (b) finite differences */

/* The library's float gradient against a central difference of the double
 * reference with step H. The reference's own error is O(H^2) ~ 1e-12 plus
 * rounding ~1e-16/H ~ 1e-10. The library's is float rounding in the
 * backward pass (its forward is exact on the lattice): a few ulps of O(1)
 * values summed over at most 784 terms, i.e. ~1e-7 relative; measured it
 * stays ~100x inside 1e-6 absolute + 1e-4 relative, while a wrong index,
 * transpose, mask or missing 1/n fails by orders of magnitude. */
#define FD_STEP 1e-6
#define FD_ABS 1e-6
#define FD_REL 1e-4

static void check_fd(const net_t *net, size_t n, size_t samples,
                     uint64_t seed) {
  size_t np = net_params(net), in = net->dims[0];
  qgm_model_t *m = create(net, n);
  float *p = qgm_alloc_floats(np), *g = qgm_alloc_floats(np);
  float *x = malloc(n * in * sizeof *x);
  uint8_t *y = malloc(n);
  assert_non_null(p);
  assert_non_null(g);
  assert_non_null(x);
  assert_non_null(y);
  double margin = lattice_net(net, p, x, y, n, seed);
  /* One step moves a pre-activation by H times an input, activation or
   * weight (times weights downstream), all O(1) here, so a margin of 100
   * steps keeps every ReLU on its side; the perturbed losses below check
   * that directly. */
  assert_true(margin > 100.0 * FD_STEP);

  double *pd = test_widen(p, np);
  double min_pre;
  double base = ref_loss(net, pd, x, y, n, NULL, &min_pre);
  if (net->nl > 1)
    assert_true(min_pre >= margin);

  float loss;
  memset(g, 0xff, np * sizeof *g); /* NaNs: every entry must be written */
  assert_int_equal(qgm_model_loss_grad(m, p, x, y, n, g, &loss), 0);
  check_close(loss, base, 1e-6, 1e-6, "loss", 0);

  qgm_rng_t pick;
  qgm_rng_seed(&pick, seed, 7);
  size_t count = samples ? samples : np;
  for (size_t s = 0; s < count; s++) {
    size_t i = samples ? (size_t)qgm_rng_below(&pick, np) : s;
    double keep = pd[i];
    pd[i] = keep + FD_STEP;
    double up_pre, down_pre;
    double up = ref_loss(net, pd, x, y, n, NULL, &up_pre);
    pd[i] = keep - FD_STEP;
    double down = ref_loss(net, pd, x, y, n, NULL, &down_pre);
    pd[i] = keep;
    if (net->nl > 1)
      assert_true(up_pre > margin / 2.0 && down_pre > margin / 2.0);
    check_close(g[i], (up - down) / (2.0 * FD_STEP), FD_ABS, FD_REL, "grad",
                i);
  }
  free(pd);
  free(p);
  free(g);
  free(x);
  free(y);
  qgm_model_free(m);
}

static void test_grad_small_all_params(void **state) {
  (void)state;
  net_t a = make_net(3, (const size_t[]){4}, 1, 2);
  check_fd(&a, 4, 0, 1);
  check_fd(&a, 1, 0, 2);
  net_t b = make_net(5, (const size_t[]){3, 3}, 2, 4);
  check_fd(&b, 6, 0, 3);
  net_t c = make_net(4, NULL, 0, 3);
  check_fd(&c, 5, 0, 4);
  net_t d = make_net(4, (const size_t[]){5, 4, 6}, 3, 3);
  check_fd(&d, 7, 0, 5);
}

static void test_grad_mnist_sampled(void **state) {
  (void)state;
  net_t net = make_net(784, (const size_t[]){256}, 1, 10);
  check_fd(&net, 8, 200, 11);
}

/* ------------------------------------- (c) batch = mean of single samples */

static void check_batch_mean(const net_t *net, size_t n, uint64_t seed) {
  size_t np = net_params(net), in = net->dims[0];
  qgm_model_t *m = create(net, n);
  float *p = qgm_alloc_floats(np), *g = qgm_alloc_floats(np);
  float *g1 = qgm_alloc_floats(np);
  float *x = malloc(n * in * sizeof *x);
  uint8_t *y = malloc(n);
  double *mean = calloc(np, sizeof *mean);
  assert_non_null(p);
  assert_non_null(g);
  assert_non_null(g1);
  assert_non_null(x);
  assert_non_null(y);
  assert_non_null(mean);
  lattice_net(net, p, x, y, n, seed);

  double loss_mean = 0.0;
  float loss;
  for (size_t s = 0; s < n; s++) {
    assert_int_equal(
        qgm_model_loss_grad(m, p, x + s * in, y + s, 1, g1, &loss), 0);
    loss_mean += loss / (double)n;
    for (size_t i = 0; i < np; i++)
      mean[i] += g1[i] / (double)n;
  }
  assert_int_equal(qgm_model_loss_grad(m, p, x, y, n, g, &loss), 0);
  check_close(loss, loss_mean, 1e-6, 1e-6, "loss", 0);
  for (size_t i = 0; i < np; i++)
    check_close(g[i], mean[i], 1e-6, 1e-5, "grad", i);
  free(mean);
  free(p);
  free(g);
  free(g1);
  free(x);
  free(y);
  qgm_model_free(m);
}

static void test_batch_is_mean_of_samples(void **state) {
  (void)state;
  net_t a = make_net(5, (const size_t[]){3, 3}, 2, 4);
  check_batch_mean(&a, 6, 21);
  net_t b = make_net(784, (const size_t[]){256}, 1, 10);
  check_batch_mean(&b, 8, 22);
}

/* ---------------------------------------------------------- (d) evaluate */

/* 2 -> 2 -> 2 with identity weights and zero biases: logits = relu(x). */
static void test_evaluate_hand_built(void **state) {
  (void)state;
  size_t h = 2;
  qgm_model_t *m = NULL;
  /* max_batch 4 < 6 samples, so the chunking is exercised. */
  assert_int_equal(qgm_mlp_create(2, &h, 1, 2, 4, &m), QGM_OK);
  const float p[] = {1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0};
  const float x[] = {2, 1, 1, 2, 1, 1, 1, 1, -1, 3, -3, -1};
  const uint8_t y[] = {0, 0, 0, 1, 1, 0};
  /* logits (2,1) right; (1,2) wrong; (1,1) tie -> class 0, right;
   * (1,1) tie -> class 0, wrong; (0,3) right; (0,0) tie -> 0, right. */
  size_t correct = 99;
  double loss_sum = -1.0;
  assert_int_equal(qgm_model_evaluate(m, p, x, y, 6, &correct, &loss_sum), 0);
  assert_int_equal(correct, 4);
  double want = log1p(exp(-1.0)) + log1p(exp(1.0)) + 3.0 * log(2.0) +
                log1p(exp(-3.0));
  assert_float_equal(loss_sum, want, 1e-9);

  /* Nothing to evaluate is not an error. */
  assert_int_equal(qgm_model_evaluate(m, p, NULL, NULL, 0, &correct,
                                      &loss_sum),
                   0);
  assert_int_equal(correct, 0);
  assert_float_equal(loss_sum, 0.0, 0.0);
  qgm_model_free(m);
}

/* Over many chunks, evaluate agrees with loss_grad's mean loss and with
 * argmax of the reference logits. */
static void test_evaluate_matches_loss_grad(void **state) {
  (void)state;
  net_t net = make_net(5, (const size_t[]){8, 6}, 2, 4);
  const size_t mb = 8, n = 29;
  size_t np = net_params(&net);
  qgm_model_t *m = create(&net, mb);
  float *p = qgm_alloc_floats(np), *g = qgm_alloc_floats(np);
  float x[29 * 5];
  uint8_t y[29];
  double logits[29 * 4];
  assert_non_null(p);
  assert_non_null(g);
  lattice_net(&net, p, x, y, n, 31);

  size_t correct;
  double loss_sum;
  assert_int_equal(qgm_model_evaluate(m, p, x, y, n, &correct, &loss_sum),
                   0);
  double *pd = test_widen(p, np);
  double ref = ref_loss(&net, pd, x, y, n, logits, NULL);
  check_close(loss_sum, ref * (double)n, 1e-5, 1e-6, "loss_sum", 0);

  size_t want_correct = 0;
  for (size_t s = 0; s < n; s++) {
    size_t best = 0;
    for (size_t j = 1; j < 4; j++)
      if (logits[s * 4 + j] > logits[s * 4 + best])
        best = j;
    want_correct += best == y[s];
  }
  assert_int_equal(correct, want_correct);

  double chunked = 0.0;
  for (size_t s = 0; s < n; s += mb) {
    size_t k = n - s < mb ? n - s : mb;
    float loss;
    assert_int_equal(
        qgm_model_loss_grad(m, p, x + s * 5, y + s, k, g, &loss), 0);
    chunked += (double)loss * (double)k;
  }
  check_close(loss_sum, chunked, 1e-5, 1e-6, "loss_sum vs loss_grad", 0);
  free(pd);
  free(p);
  free(g);
  qgm_model_free(m);
}

/* -------------------------------------------------------------- (e) init */

static void test_init(void **state) {
  (void)state;
  net_t net = make_net(784, (const size_t[]){256, 32}, 2, 10);
  qgm_model_t *m = create(&net, 4);
  size_t np = net_params(&net);
  float *a = qgm_alloc_floats(np), *b = qgm_alloc_floats(np);
  float *c = qgm_alloc_floats(np);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(c);
  qgm_rng_t r1, r2, r3;
  qgm_rng_seed(&r1, 42, 0);
  qgm_rng_seed(&r2, 42, 0);
  qgm_rng_seed(&r3, 43, 0);
  qgm_model_init_params(m, a, &r1);
  qgm_model_init_params(m, b, &r2);
  qgm_model_init_params(m, c, &r3);
  assert_memory_equal(a, b, np * sizeof *a);
  assert_memory_not_equal(a, c, np * sizeof *a);
  /* Every draw was consumed: both generators are in the same state. */
  assert_memory_equal(&r1, &r2, sizeof r1);

  /* Layout order and bounds: replay the draws layer by layer. */
  qgm_rng_t replay;
  qgm_rng_seed(&replay, 42, 0);
  size_t i = 0, differ = 0;
  for (size_t l = 0; l < net.nl; l++) {
    double bound = 1.0 / sqrt((double)net.dims[l]);
    size_t count = net.dims[l] * net.dims[l + 1] + net.dims[l + 1];
    double maxabs = 0.0, sum = 0.0;
    for (size_t k = 0; k < count; k++, i++) {
      double u = qgm_rng_uniform(&replay);
      assert_float_equal(a[i], (2.0 * u - 1.0) * bound, 1e-7);
      assert_true(fabs(a[i]) <= (float)bound);
      maxabs = fmax(maxabs, fabs(a[i]));
      sum += a[i];
      differ += a[i] != c[i];
    }
    /* It fills the interval, centred: not a constant, not one-sided. */
    assert_true(maxabs > 0.9 * bound);
    assert_true(fabs(sum / (double)count) < 0.2 * bound);
  }
  assert_int_equal(i, np);
  assert_true(differ > np * 99 / 100);
  free(a);
  free(b);
  free(c);
  qgm_model_free(m);
}

/* ---------------------------------------------------------- (f) invalid */

static void test_create_invalid(void **state) {
  (void)state;
  static int sentinel;
  qgm_model_t *m = (qgm_model_t *)(void *)&sentinel; /* must become NULL */
  const size_t h[9] = {4, 4, 4, 4, 4, 4, 4, 4, 4};
  const size_t zero_width[2] = {4, 0};
  const size_t huge = (size_t)-1 / 2;

  assert_int_equal(qgm_mlp_create(0, h, 1, 2, 8, &m), QGM_EINVAL);
  assert_null(m);
  assert_int_equal(qgm_mlp_create(3, h, 1, 0, 8, &m), QGM_EINVAL);
  assert_int_equal(qgm_mlp_create(3, h, 1, 2, 0, &m), QGM_EINVAL);
  assert_int_equal(qgm_mlp_create(3, zero_width, 2, 2, 8, &m), QGM_EINVAL);
  assert_int_equal(qgm_mlp_create(3, h, 9, 2, 8, &m), QGM_EINVAL);
  assert_int_equal(qgm_mlp_create(3, NULL, 1, 2, 8, &m), QGM_EINVAL);
  assert_int_equal(qgm_mlp_create(3, h, 1, 2, 8, NULL), QGM_EINVAL);
  /* Sizes whose products overflow size_t. */
  assert_int_equal(qgm_mlp_create(huge, (const size_t[]){huge}, 1, 2, 8, &m),
                   QGM_EINVAL);
  assert_int_equal(qgm_mlp_create(3, h, 1, huge, 8, &m), QGM_EINVAL);
  assert_int_equal(qgm_mlp_create(3, h, 1, 2, huge, &m), QGM_EINVAL);
  assert_null(m);

  /* Representable but far beyond memory: an arena of 2^62 bytes. */
  size_t wide = (size_t)1 << 30;
  assert_int_equal(qgm_mlp_create(1, &wide, 1, 1, wide, &m), QGM_ENOMEM);
  assert_null(m);

  /* The limits themselves are fine. */
  assert_int_equal(qgm_mlp_create(1, h, 8, 1, 1, &m), QGM_OK);
  assert_int_equal(qgm_model_num_params(m), 1 * 4 + 4 + 7 * (16 + 4) + 5);
  qgm_model_free(m);
  qgm_model_free(NULL);
}

static void test_calls_invalid(void **state) {
  (void)state;
  size_t h = 4;
  qgm_model_t *m = NULL;
  assert_int_equal(qgm_mlp_create(3, &h, 1, 2, 4, &m), QGM_OK);
  float p[26] = {0}, g[26], x[15] = {0}, loss = 7.0f;
  uint8_t y[5] = {0, 1, 0, 1, 0};
  size_t correct;
  double loss_sum;

  assert_int_equal(qgm_model_loss_grad(m, p, x, y, 0, g, &loss), QGM_EINVAL);
  assert_int_equal(qgm_model_loss_grad(m, p, x, y, 5, g, &loss), QGM_EINVAL);
  assert_int_equal(qgm_model_loss_grad(NULL, p, x, y, 1, g, &loss),
                   QGM_EINVAL);
  assert_int_equal(qgm_model_loss_grad(m, NULL, x, y, 1, g, &loss),
                   QGM_EINVAL);
  assert_int_equal(qgm_model_loss_grad(m, p, NULL, y, 1, g, &loss),
                   QGM_EINVAL);
  assert_int_equal(qgm_model_loss_grad(m, p, x, NULL, 1, g, &loss),
                   QGM_EINVAL);
  assert_int_equal(qgm_model_loss_grad(m, p, x, y, 1, NULL, &loss),
                   QGM_EINVAL);
  assert_int_equal(qgm_model_loss_grad(m, p, x, y, 1, g, NULL), QGM_EINVAL);
  assert_float_equal(loss, 7.0, 0.0); /* untouched on error */
  /* A label past the last class would index outside the logits. */
  y[2] = 2;
  assert_int_equal(qgm_model_loss_grad(m, p, x, y, 4, g, &loss), QGM_EINVAL);
  assert_int_equal(qgm_model_evaluate(m, p, x, y, 5, &correct, &loss_sum),
                   QGM_EINVAL);
  y[2] = 0;
  assert_int_equal(qgm_model_loss_grad(m, p, x, y, 4, g, &loss), 0);
  assert_float_equal(loss, log(2.0), 1e-6);

  assert_int_equal(qgm_model_evaluate(NULL, p, x, y, 5, &correct, &loss_sum),
                   QGM_EINVAL);
  assert_int_equal(qgm_model_evaluate(m, NULL, x, y, 5, &correct, &loss_sum),
                   QGM_EINVAL);
  assert_int_equal(qgm_model_evaluate(m, p, NULL, y, 5, &correct, &loss_sum),
                   QGM_EINVAL);
  assert_int_equal(qgm_model_evaluate(m, p, x, NULL, 5, &correct, &loss_sum),
                   QGM_EINVAL);
  assert_int_equal(qgm_model_evaluate(m, p, x, y, 5, NULL, &loss_sum),
                   QGM_EINVAL);
  assert_int_equal(qgm_model_evaluate(m, p, x, y, 5, &correct, NULL),
                   QGM_EINVAL);
  assert_int_equal(qgm_model_evaluate(m, p, x, y, 5, &correct, &loss_sum), 0);
  assert_int_equal(correct, 3); /* all logits tie -> class 0 */
  qgm_model_free(m);
}

/* ---------------------------------------------------------- (g) training */

/* Four Gaussian blobs in 8 dimensions, centred at +-3 on two axes with
 * noise sd 0.5: six standard deviations apart, so linearly separable in
 * practice and an MLP must reach 100% training accuracy. */
static void test_sgd_learns_blobs(void **state) {
  (void)state;
  enum { N = 128, D = 8, C = 4, B = 32, STEPS = 200 };
  static float x[N * D], bx[B * D];
  uint8_t y[N], by[B];
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 2024, 0);
  for (size_t s = 0; s < N; s++) {
    y[s] = (uint8_t)(s % C);
    for (size_t k = 0; k < D; k++)
      x[s * D + k] = (float)(0.5 * qgm_rng_normal(&rng));
    x[s * D + y[s] / 2] += (y[s] % 2) ? 3.0f : -3.0f;
  }

  size_t h = 16;
  qgm_model_t *m = NULL;
  assert_int_equal(qgm_mlp_create(D, &h, 1, C, B, &m), QGM_OK);
  size_t np = qgm_model_num_params(m);
  float *p = qgm_alloc_floats(np), *g = qgm_alloc_floats(np);
  assert_non_null(p);
  assert_non_null(g);
  qgm_model_init_params(m, p, &rng);

  size_t correct;
  double loss_sum;
  assert_int_equal(qgm_model_evaluate(m, p, x, y, N, &correct, &loss_sum), 0);
  double initial = loss_sum / N;

  size_t order[N];
  for (size_t s = 0; s < N; s++)
    order[s] = s;
  for (int step = 0; step < STEPS; step++) {
    if (step % (N / B) == 0)
      qgm_rng_shuffle(&rng, order, N);
    size_t off = (size_t)(step % (N / B)) * B;
    for (size_t s = 0; s < B; s++) {
      memcpy(bx + s * D, x + order[off + s] * D, D * sizeof *x);
      by[s] = y[order[off + s]];
    }
    float loss;
    assert_int_equal(qgm_model_loss_grad(m, p, bx, by, B, g, &loss), 0);
    qgm_vec_axpy(p, -0.1f, g, np);
  }
  assert_int_equal(qgm_model_evaluate(m, p, x, y, N, &correct, &loss_sum), 0);
  assert_true(initial > 1.0); /* about log 4 at the start */
  assert_int_equal(correct, N);
  assert_true(loss_sum / N < 0.05);
  free(p);
  free(g);
  qgm_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_loss_closed_form),
      cmocka_unit_test(test_loss_matches_reference),
      cmocka_unit_test(test_grad_small_all_params),
      cmocka_unit_test(test_grad_mnist_sampled),
      cmocka_unit_test(test_batch_is_mean_of_samples),
      cmocka_unit_test(test_evaluate_hand_built),
      cmocka_unit_test(test_evaluate_matches_loss_grad),
      cmocka_unit_test(test_init),
      cmocka_unit_test(test_create_invalid),
      cmocka_unit_test(test_calls_invalid),
      cmocka_unit_test(test_sgd_learns_blobs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
