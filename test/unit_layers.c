/* unit_layers.c - every layer kernel of the convolutional models against a
 * double-precision reference written here from the definition, and every
 * backward pass against central finite differences of that reference.
 *
 * The scalar whose gradient is checked is L = sum_i r_i * out_i with fixed
 * random weights r, so d(L)/d(out) = r is what the backward passes get.
 * Finite differences of the double reference (step 1e-4) are accurate to
 * about 1e-8; the float kernels' gradients are compared with a relative
 * tolerance of 1e-4. Max pooling inputs are spaced 0.1 apart, so no step
 * moves a window's maximum. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn/conv_direct.h"
#include "nn/gemm.h"
#include "helpers.h"
#include "core/internal.h"
#include "nn/layers.h"
#include "qgm.h"

#define FD_STEP 1e-4
#define GRAD_TOL(g) (1e-4 * (1.0 + fabs(g)))

static double weighted_sum(const double *r, const double *out, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++)
    s += r[i] * out[i];
  return s;
}

/* ------------------------------------------------------------ convolution */

typedef struct conv_case {
  qgm__conv_t cv;
  size_t n;
  int nchw_input; /* else CNHW */
  int bias;
} conv_case_t;

/* out[o][s][oy][ox] (CNHW) straight from the definition, in double. */
static void conv_ref(const conv_case_t *t, const double *w, const double *b,
                     const double *x, double *out) {
  const qgm__conv_t *cv = &t->cv;
  size_t hw = cv->h * cv->w;
  for (size_t o = 0; o < cv->cout; o++)
    for (size_t s = 0; s < t->n; s++)
      for (size_t oy = 0; oy < cv->oh; oy++)
        for (size_t ox = 0; ox < cv->ow; ox++) {
          double v = t->bias ? b[o] : 0.0;
          for (size_t c = 0; c < cv->cin; c++)
            for (size_t ky = 0; ky < cv->k; ky++)
              for (size_t kx = 0; kx < cv->k; kx++) {
                long iy = (long)(oy * cv->stride + ky) - (long)cv->pad;
                long ix = (long)(ox * cv->stride + kx) - (long)cv->pad;
                if (iy < 0 || ix < 0 || iy >= (long)cv->h ||
                    ix >= (long)cv->w)
                  continue;
                size_t at = t->nchw_input
                                ? (s * cv->cin + c) * hw
                                : (c * t->n + s) * hw;
                v += w[((o * cv->cin + c) * cv->k + ky) * cv->k + kx] *
                     x[at + (size_t)iy * cv->w + (size_t)ix];
              }
          out[((o * t->n + s) * cv->oh + oy) * cv->ow + ox] = v;
        }
}

/* L of the reference with one of (w, b, x) perturbed at index i. */
static double conv_fd(const conv_case_t *t, double *w, double *b, double *x,
                      const double *r, double *out, size_t nout, double *v) {
  double keep = *v;
  *v = keep + FD_STEP;
  conv_ref(t, w, b, x, out);
  double up = weighted_sum(r, out, nout);
  *v = keep - FD_STEP;
  conv_ref(t, w, b, x, out);
  double down = weighted_sum(r, out, nout);
  *v = keep;
  return (up - down) / (2.0 * FD_STEP);
}

/* Large gradients are checked at about 40 entries spread over them. */
static size_t spread(size_t len) { return len > 40 ? len / 37 : 1; }

static void check_conv_kernel(conv_case_t t) {
  qgm__conv_t *cv = &t.cv;
  assert_int_equal(qgm__conv_init(cv), 0);
  float *col = qgm_alloc_floats(qgm__conv_scratch_floats(cv));
  assert_non_null(col);
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 5, cv->k * 100 + cv->stride);
  size_t nw = qgm__conv_num_weights(cv), nx = t.n * cv->cin * cv->h * cv->w;
  size_t nout = cv->cout * t.n * cv->oh * cv->ow;
  float *w = test_uniform(nw, &rng), *b = test_uniform(cv->cout, &rng),
        *x = test_uniform(nx, &rng), *r = test_uniform(nout, &rng);
  float *out = qgm_alloc_floats(nout), *dw = qgm_alloc_floats(nw),
        *db = qgm_alloc_floats(cv->cout), *dx = qgm_alloc_floats(nx);
  double *wd = test_widen(w, nw), *bd = test_widen(b, cv->cout), *xd = test_widen(x, nx),
         *rd = test_widen(r, nout), *ref = malloc(nout * sizeof *ref);

  size_t hw = cv->h * cv->w;
  qgm__maps_t in = t.nchw_input ? (qgm__maps_t){x, cv->cin * hw, hw}
                               : (qgm__maps_t){x, hw, t.n * hw};
  qgm__conv_forward(cv, w, t.bias ? b : NULL, in, t.n, out, col, test_pack);
  conv_ref(&t, wd, bd, xd, ref);
  for (size_t i = 0; i < nout; i++)
    assert_near(out[i], ref[i], 1e-5 * (1.0 + fabs(ref[i])));

  /* dx comes back in CNHW whatever the input layout. */
  qgm__conv_backward(cv, w, in, t.n, r, dw, t.bias ? db : NULL, dx, col,
                     test_pack);
  for (size_t i = 0; i < nw; i += spread(nw)) {
    double fd = conv_fd(&t, wd, bd, xd, rd, ref, nout, &wd[i]);
    assert_near(dw[i], fd, GRAD_TOL(fd));
  }
  if (t.bias)
    for (size_t i = 0; i < cv->cout; i++) {
      double fd = conv_fd(&t, wd, bd, xd, rd, ref, nout, &bd[i]);
      assert_near(db[i], fd, GRAD_TOL(fd));
    }
  for (size_t i = 0; i < nx; i += spread(nx)) {
    /* i indexes dx (CNHW); find the same pixel in x's layout. */
    size_t c = i / (t.n * hw), s = (i / hw) % t.n, p = i % hw;
    size_t xi = t.nchw_input ? (s * cv->cin + c) * hw + p : i;
    double fd = conv_fd(&t, wd, bd, xd, rd, ref, nout, &xd[xi]);
    assert_near(dx[i], fd, GRAD_TOL(fd));
  }
  free(w), free(b), free(x), free(r), free(out), free(dw), free(db), free(dx);
  free(wd), free(bd), free(xd), free(rd), free(ref), free(col);
}

/* Under every kernel plan this CPU runs: each kernel packs the columns in
 * its own layout (BLIS in none), and the layers Winograd fits take it or
 * the direct path. */
static void check_conv(conv_case_t t) {
  static const char *const plans[] = {
      "conv=avx512,conv3x3=winograd-avx512", "conv=avx2,conv3x3=winograd-avx2",
      "conv=avx512,conv3x3=direct-avx512", "conv=avx2,conv3x3=direct-avx2",
      "conv=blis,conv3x3=direct-blis"};
  for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++)
    if (qgm_kernels_use(plans[i]) == 0)
      check_conv_kernel(t);
  qgm_kernels_use(NULL);
}

static void test_conv_3x3_pad1_nchw(void **state) {
  (void)state;
  check_conv((conv_case_t){{.cin = 2, .h = 7, .w = 6, .cout = 3, .k = 3,
                            .stride = 1, .pad = 1},
                           2, 1, 1});
}

static void test_conv_3x3_stride2_cnhw(void **state) {
  (void)state;
  check_conv((conv_case_t){{.cin = 3, .h = 9, .w = 8, .cout = 4, .k = 3,
                            .stride = 2, .pad = 1},
                           3, 0, 0});
}

static void test_conv_1x1_stride2(void **state) {
  (void)state;
  check_conv((conv_case_t){{.cin = 2, .h = 8, .w = 8, .cout = 5, .k = 1,
                            .stride = 2, .pad = 0},
                           2, 0, 0});
}

/* Stride 2 on the grid paths (conv_grid.c): 3x3 large enough for the
 * weight gradient's long grid, with an odd height, whose last phase row
 * reads past the padded maps; 5x5 with padding 2, also long; 2x2 without
 * padding, whose odd width leaves the last column in no window. */
static void test_conv_stride2_grid(void **state) {
  (void)state;
  check_conv((conv_case_t){{.cin = 3, .h = 33, .w = 32, .cout = 4, .k = 3,
                            .stride = 2, .pad = 1},
                           2, 1, 1});
  check_conv((conv_case_t){{.cin = 2, .h = 35, .w = 34, .cout = 3, .k = 5,
                            .stride = 2, .pad = 2},
                           2, 0, 0});
  check_conv((conv_case_t){{.cin = 3, .h = 12, .w = 13, .cout = 2, .k = 2,
                            .stride = 2, .pad = 0},
                           2, 1, 1});
}

static void test_conv_5x5_lenet(void **state) {
  (void)state;
  check_conv((conv_case_t){{.cin = 1, .h = 12, .w = 12, .cout = 6, .k = 5,
                            .stride = 1, .pad = 2},
                           2, 1, 1});
  check_conv((conv_case_t){{.cin = 6, .h = 10, .w = 10, .cout = 4, .k = 5,
                            .stride = 1, .pad = 0},
                           2, 0, 1});
}

/* 576 matrix rows leave room for 448 output pixels per chunk: 3 samples
 * of 14 x 14 = 588 pixels take two chunks, the first ending mid-row in the
 * third sample. */
static void test_conv_chunked(void **state) {
  (void)state;
  check_conv((conv_case_t){{.cin = 64, .h = 14, .w = 14, .cout = 3, .k = 3,
                            .stride = 1, .pad = 1},
                           3, 0, 0});
}

/* Output grids of at least 256 pixels per sample (oh x padded width: 16 x
 * 20 and 18 x 20) take the in-place paths: the forward product on whole
 * slivers of the grid and the weight gradient that reads the padded input;
 * the second has no padding, so the last rows read run into the scratch's
 * slack. (test_conv_chunked takes the forward path one sample per chunk.) */
static void test_conv_weight_grad_in_place(void **state) {
  (void)state;
  check_conv((conv_case_t){{.cin = 1, .h = 16, .w = 16, .cout = 6, .k = 5,
                            .stride = 1, .pad = 2},
                           2, 1, 1});
  check_conv((conv_case_t){{.cin = 3, .h = 20, .w = 20, .cout = 4, .k = 3,
                            .stride = 1, .pad = 0},
                           2, 0, 0});
}

/* LeNet's second convolution (14 x 14 maps, no padding) takes the band
 * paths: its in-place grid would be 14 columns wide for 10 output ones.
 * 15 samples take two chunks of bands (13 + 2), and the packed slivers
 * of 32 or 16 columns cross from one sample's 100 pixels to the next. */
static void test_conv_bands_chunked(void **state) {
  (void)state;
  check_conv((conv_case_t){{.cin = 6, .h = 14, .w = 14, .cout = 4, .k = 5,
                            .stride = 1, .pad = 0},
                           15, 0, 1});
}

/* 3x3 stride-1 layers of at least 8 channels, which Winograd fits: an odd
 * output size, whose last tiles stick out of the maps (7 x 5 in tiles of
 * 4 x 4), from NCHW input; the 12 tiles of the three samples fill one
 * block of eight lanes and part of another. (Chunks whose weight
 * gradients add up are checked on resnet20-gn against the direct path in
 * unit_cnn.c.) */
static void test_conv_winograd(void **state) {
  (void)state;
  check_conv((conv_case_t){{.cin = 8, .h = 7, .w = 5, .cout = 9, .k = 3,
                            .stride = 1, .pad = 1},
                           3, 1, 1});
}

/* Which direct path a layer takes on a kernel: 'c' the output channels
 * across the lanes, 'r' the rows, '-' neither (the im2col paths). */
static char direct_path(conv_case_t t, qgm__kernel_t kernel) {
  assert_int_equal(qgm__conv_init(&t.cv), 0);
  if (!qgm__direct_fits(&t.cv, kernel))
    return '-';
  size_t lanes = kernel == QGM__KERNEL_AVX512 ? 16 : 8;
  return t.cv.cout % lanes == 0 ? 'c' : 'r';
}

/* The path a layer's table names under `plan`, whose kernel is
 * `kernel`: refused only where this CPU lacks that kernel. */
static void assert_path(qgm__conv_t cv, const char *plan, qgm__kernel_t kernel,
                        const char *expected) {
  assert_int_equal(qgm__conv_init(&cv), 0);
  if (!qgm__kernel_supported(kernel)) {
    assert_int_equal(qgm_kernels_use(plan), -1);
    return;
  }
  assert_int_equal(qgm_kernels_use(plan), 0);
  assert_string_equal(qgm__conv_path(&cv), expected);
  qgm_kernels_use(NULL);
}

/* The direct paths, on layers chosen to reach each of their tiles:
 * LeNet's second convolution (rows of 10 pixels, two rows a tile on
 * AVX-512); 7 x 7 kernels on padded NCHW input with rows of 17 (segments
 * of 9 and 8) and an odd number of them (a last tile of one row); 7 x 7
 * kernels with 8 channels (a block of the AVX2 lanes; on AVX-512 the
 * im2col paths, its rows of 11 too short for the row path); and
 * LeNet's first convolution on two input channels, whose rows of 28 take
 * the row path (two vectors a row and one tile of its 6 output channels
 * on AVX-512; four vectors and tiles of 2 channels on AVX2). */
static void test_conv_direct(void **state) {
  (void)state;
  const conv_case_t lenet2 = {{.cin = 6, .h = 14, .w = 14, .cout = 16, .k = 5,
                               .stride = 1, .pad = 0},
                              3, 0, 1},
                    wide = {{.cin = 2, .h = 13, .w = 21, .cout = 16, .k = 7,
                             .stride = 1, .pad = 1},
                            2, 1, 1},
                    k7 = {{.cin = 2, .h = 11, .w = 11, .cout = 8, .k = 7,
                           .stride = 1, .pad = 3},
                          2, 0, 0},
                    lenet1 = {{.cin = 2, .h = 28, .w = 28, .cout = 6, .k = 5,
                               .stride = 1, .pad = 2},
                              2, 1, 1};
  const struct {
    conv_case_t t;
    char avx512, avx2;
  } cases[] = {{lenet2, 'c', 'c'}, {wide, 'c', 'c'}, {k7, '-', 'c'},
               {lenet1, 'r', 'r'}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    assert_int_equal(direct_path(cases[i].t, QGM__KERNEL_AVX512),
                     cases[i].avx512);
    assert_int_equal(direct_path(cases[i].t, QGM__KERNEL_AVX2), cases[i].avx2);
    assert_int_equal(direct_path(cases[i].t, QGM__KERNEL_BLIS), '-');
    check_conv(cases[i].t);
    assert_path(cases[i].t.cv, "conv=avx512", QGM__KERNEL_AVX512,
                cases[i].avx512 == '-' ? "im2col-avx512" : "direct-avx512");
    assert_path(cases[i].t.cv, "conv=avx2", QGM__KERNEL_AVX2,
                cases[i].avx2 == '-' ? "im2col-avx2" : "direct-avx2");
    assert_path(cases[i].t.cv, "conv=blis", QGM__KERNEL_BLIS, "im2col-blis");
  }
  /* A 3x3 layer: Winograd, or without it the products. */
  const qgm__conv_t c3 = {.cin = 16, .h = 8, .w = 8, .cout = 16, .k = 3,
                          .stride = 1, .pad = 1};
  assert_path(c3, "conv3x3=winograd-avx2", QGM__KERNEL_AVX2, "winograd-avx2");
  assert_path(c3, "conv3x3=direct-avx2", QGM__KERNEL_AVX2, "im2col-avx2");
}

static void test_conv_init_rejects(void **state) {
  (void)state;
  qgm__conv_t big = {.cin = 1, .h = 3, .w = 3, .cout = 1, .k = 5, .stride = 1};
  assert_int_equal(qgm__conv_init(&big), -1); /* kernel larger than input */
  big.pad = 1;
  assert_int_equal(qgm__conv_init(&big), 0);
  assert_int_equal(big.oh, 1);
  qgm__conv_t zero = {.cin = 1, .h = 3, .w = 3, .cout = 1, .k = 1};
  assert_int_equal(qgm__conv_init(&zero), -1); /* stride 0 */
}

/* ---------------------------------------------------------------- pooling */

static void test_maxpool(void **state) {
  (void)state;
  enum { P = 3, H = 4, W = 6, N = P * H * W };
  /* A permutation of 0.1 * k: distinct values 0.1 apart. */
  size_t perm[N];
  for (size_t i = 0; i < N; i++)
    perm[i] = i;
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 3, 0);
  qgm_rng_shuffle(&rng, perm, N);
  float x[N], out[N / 4], r[N / 4], dx[N];
  for (size_t i = 0; i < N; i++)
    x[i] = 0.1f * (float)perm[i] - 3.0f;
  for (size_t i = 0; i < N / 4; i++)
    r[i] = (float)(i % 5) - 2.0f;
  qgm__maxpool2_forward(x, P, H, W, 0, out);
  for (size_t p = 0; p < P; p++)
    for (size_t y = 0; y < H / 2; y++)
      for (size_t c = 0; c < W / 2; c++) {
        const float *b = x + p * H * W + 2 * y * W + 2 * c;
        float m = fmaxf(fmaxf(b[0], b[1]), fmaxf(b[W], b[W + 1]));
        assert_float_equal(out[(p * H / 2 + y) * W / 2 + c], m, 0.0);
      }
  qgm__maxpool2_backward(x, P, H, W, r, dx);
  /* L = sum r * maxpool(x) is piecewise linear: the finite difference is
   * exactly r at each window's maximum and 0 elsewhere. */
  for (size_t i = 0; i < N; i++) {
    float keep = x[i];
    x[i] = keep + 0.01f;
    qgm__maxpool2_forward(x, P, H, W, 0, out);
    double up = 0, down = 0;
    for (size_t k = 0; k < N / 4; k++)
      up += (double)r[k] * out[k];
    x[i] = keep - 0.01f;
    qgm__maxpool2_forward(x, P, H, W, 0, out);
    for (size_t k = 0; k < N / 4; k++)
      down += (double)r[k] * out[k];
    x[i] = keep;
    double fd = (up - down) / (2.0 * (double)0.01f);
    assert_near(dx[i], fd, 1e-4);
  }
}

static void test_maxpool_ties_take_first(void **state) {
  (void)state;
  float x[4] = {1, 1, 1, 1}, out, dx[4], g = 2.0f;
  qgm__maxpool2_forward(x, 1, 2, 2, 0, &out);
  qgm__maxpool2_backward(x, 1, 2, 2, &g, dx);
  assert_float_equal(out, 1.0f, 0.0);
  assert_float_equal(dx[0], 2.0f, 0.0);
  assert_float_equal(dx[1] + dx[2] + dx[3], 0.0f, 0.0);
}

/* The ReLU fused into the pooling gives the same floats as a ReLU pass
 * before it, forward, and backward the ReLU's gradient on the pooled
 * level, then the pooling's from the ReLU's input, the same as the two
 * layers' gradients one after the other: on values a few apart with ties,
 * zeros and windows all negative. */
static void test_maxpool_relu_fused(void **state) {
  (void)state;
  enum { P = 3, H = 6, W = 8, N = P * H * W };
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 4, 0);
  float x[N], y[N], g[N / 4], out[N / 4], want[N / 4], dx[N], dy[N];
  for (size_t i = 0; i < N; i++) {
    x[i] = 0.5f * (float)qgm_rng_below(&rng, 7) - 2.0f;
    y[i] = x[i];
  }
  for (size_t i = 0; i < N / 4; i++)
    g[i] = (float)(i % 5) + 1.0f;
  qgm__relu(y, N);
  qgm__maxpool2_forward(x, P, H, W, 1, out);
  qgm__maxpool2_forward(y, P, H, W, 0, want);
  for (size_t i = 0; i < N / 4; i++)
    assert_float_equal(out[i], want[i], 0.0);
  float gm[N / 4];
  memcpy(gm, g, sizeof gm);
  qgm__relu_backward(gm, out, N / 4);
  qgm__maxpool2_backward(x, P, H, W, gm, dx);
  qgm__maxpool2_backward(y, P, H, W, g, dy);
  qgm__relu_backward(dy, y, N);
  size_t nonzero = 0;
  for (size_t i = 0; i < N; i++) {
    assert_float_equal(dx[i], dy[i], 0.0);
    nonzero += dx[i] != 0.0f;
  }
  assert_true(nonzero > 0 && nonzero < N / 4); /* some windows masked */
}

/* An odd last row and column are not pooled: they get no gradient, even
 * when dx held garbage before. Two planes, so the second plane's offsets
 * are checked too. Hand values: window maxima 8, 9 (plane 0) and the same
 * plus 25 (plane 1). */
static void test_maxpool_odd_size(void **state) {
  (void)state;
  enum { P = 2, H = 5, W = 5 };
  float x[P * H * W], out[P * 4], dx[P * H * W], g[P * 4] = {1, 2, 3, 4,
                                                            5, 6, 7, 8};
  for (size_t i = 0; i < P * H * W; i++) {
    x[i] = (float)i;
    dx[i] = -99.0f;
  }
  qgm__maxpool2_forward(x, P, H, W, 0, out);
  const float want[4] = {6, 8, 16, 18};
  for (size_t p = 0; p < P; p++)
    for (size_t i = 0; i < 4; i++)
      assert_float_equal(out[p * 4 + i], want[i] + 25.0f * (float)p, 0.0);
  qgm__maxpool2_backward(x, P, H, W, g, dx);
  for (size_t p = 0; p < P; p++)
    for (size_t i = 0; i < H * W; i++) {
      float expect = 0.0f;
      for (size_t k = 0; k < 4; k++)
        if ((float)i == want[k])
          expect = g[p * 4 + k];
      assert_float_equal(dx[p * H * W + i], expect, 0.0);
    }
}

static void test_avgpool(void **state) {
  (void)state;
  enum { C = 3, N = 2, HW = 5 };
  float x[C * N * HW], rows[N * C], dx[C * N * HW], g[N * C];
  for (size_t i = 0; i < C * N * HW; i++)
    x[i] = (float)i;
  qgm__avgpool_forward(x, C, N, HW, rows);
  /* Plane (c, s) holds 5 consecutive integers from 5(cN + s): mean +2. */
  for (size_t s = 0; s < N; s++)
    for (size_t c = 0; c < C; c++)
      assert_float_equal(rows[s * C + c], 5.0f * (float)(c * N + s) + 2.0f,
                         1e-5);
  for (size_t i = 0; i < N * C; i++)
    g[i] = (float)i + 1.0f;
  qgm__avgpool_backward(g, C, N, HW, dx);
  /* Linear: d(sum g * rows)/dx = g / HW over the plane. */
  for (size_t c = 0; c < C; c++)
    for (size_t s = 0; s < N; s++)
      for (size_t i = 0; i < HW; i++)
        assert_float_equal(dx[(c * N + s) * HW + i], g[s * C + c] / HW,
                           1e-6);
}

/* -------------------------------------------------------------- GroupNorm */

enum { GC = 6, GN_N = 3, GHW = 10, GG = 2, GSIZE = GC * GN_N * GHW };

static void groupnorm_ref(const double *x, const double *gamma,
                          const double *beta, double *y) {
  const size_t per = GC / GG;
  for (size_t s = 0; s < GN_N; s++)
    for (size_t g = 0; g < GG; g++) {
      double sum = 0, ss = 0, cnt = (double)(per * GHW);
      for (size_t c = g * per; c < (g + 1) * per; c++)
        for (size_t i = 0; i < GHW; i++)
          sum += x[(c * GN_N + s) * GHW + i];
      double mean = sum / cnt;
      for (size_t c = g * per; c < (g + 1) * per; c++)
        for (size_t i = 0; i < GHW; i++) {
          double d = x[(c * GN_N + s) * GHW + i] - mean;
          ss += d * d;
        }
      double rstd = 1.0 / sqrt(ss / cnt + 1e-5);
      for (size_t c = g * per; c < (g + 1) * per; c++)
        for (size_t i = 0; i < GHW; i++) {
          size_t at = (c * GN_N + s) * GHW + i;
          y[at] = (x[at] - mean) * rstd * gamma[c] + beta[c];
        }
    }
}

static double gn_fd(double *x, double *gamma, double *beta, const double *r,
                    double *y, double *v) {
  double keep = *v;
  *v = keep + FD_STEP;
  groupnorm_ref(x, gamma, beta, y);
  double up = weighted_sum(r, y, GSIZE);
  *v = keep - FD_STEP;
  groupnorm_ref(x, gamma, beta, y);
  double down = weighted_sum(r, y, GSIZE);
  *v = keep;
  return (up - down) / (2.0 * FD_STEP);
}

static void check_groupnorm(float offset) {
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 9, 0);
  float *x = test_uniform(GSIZE, &rng), *gamma = test_uniform(GC, &rng),
        *beta = test_uniform(GC, &rng), *r = test_uniform(GSIZE, &rng);
  /* A large common offset tests that the variance does not cancel. */
  for (size_t i = 0; i < GSIZE; i++)
    x[i] += offset;
  float y[GSIZE], dx[GSIZE], dgamma[GC], dbeta[GC], stats[2 * GN_N * GG];
  double *xd = test_widen(x, GSIZE), *gd = test_widen(gamma, GC), *bd = test_widen(beta, GC),
         *rd = test_widen(r, GSIZE), yd[GSIZE];
  qgm__groupnorm_forward(x, GC, GN_N, GHW, GG, gamma, beta, 0, y, stats);
  groupnorm_ref(xd, gd, bd, yd);
  for (size_t i = 0; i < GSIZE; i++)
    assert_near(y[i], yd[i], 2e-5 * (1.0 + fabs(offset)));
  qgm__groupnorm_backward(x, GC, GN_N, GHW, GG, gamma, beta, stats, 0, r, dx,
                         dgamma, dbeta);
  for (size_t i = 0; i < GSIZE; i++) {
    double fd = gn_fd(xd, gd, bd, rd, yd, &xd[i]);
    assert_near(dx[i], fd, 2e-4 * (1.0 + fabs(fd)));
  }
  for (size_t c = 0; c < GC; c++) {
    double fd = gn_fd(xd, gd, bd, rd, yd, &gd[c]);
    assert_near(dgamma[c], fd, GRAD_TOL(fd));
    fd = gn_fd(xd, gd, bd, rd, yd, &bd[c]);
    assert_near(dbeta[c], fd, GRAD_TOL(fd));
  }
  free(x), free(gamma), free(beta), free(r), free(xd), free(gd), free(bd);
  free(rd);
}

static void test_groupnorm(void **state) {
  (void)state;
  check_groupnorm(0.0f);
}

static void test_groupnorm_offset(void **state) {
  (void)state;
  check_groupnorm(100.0f);
}

/* GroupNorm with its ReLU in the same pass gives the floats of GroupNorm
 * followed by qgm__relu, and its backward pass those of qgm__relu_backward
 * followed by the plain backward, bit for bit (also with dx = dy). */
static void test_groupnorm_relu_fused(void **state) {
  (void)state;
  qgm_rng_t rng;
  qgm_rng_seed(&rng, 10, 0);
  float *x = test_uniform(GSIZE, &rng), *gamma = test_uniform(GC, &rng),
        *beta = test_uniform(GC, &rng), *r = test_uniform(GSIZE, &rng);
  float y[GSIZE], yf[GSIZE], dr[GSIZE], dx[GSIZE], dxf[GSIZE];
  float st[2 * GN_N * GG], stf[2 * GN_N * GG], dg[GC], db[GC], dgf[GC],
      dbf[GC];
  qgm__groupnorm_forward(x, GC, GN_N, GHW, GG, gamma, beta, 0, y, st);
  qgm__relu(y, GSIZE);
  qgm__groupnorm_forward(x, GC, GN_N, GHW, GG, gamma, beta, 1, yf, stf);
  assert_memory_equal(yf, y, sizeof y);
  assert_memory_equal(stf, st, sizeof st);
  size_t zeros = 0;
  for (size_t i = 0; i < GSIZE; i++)
    zeros += y[i] == 0.0f;
  assert_true(zeros > 0 && zeros < GSIZE); /* the mask does something */
  memcpy(dr, r, sizeof dr);
  qgm__relu_backward(dr, y, GSIZE);
  qgm__groupnorm_backward(x, GC, GN_N, GHW, GG, gamma, beta, st, 0, dr, dx, dg,
                         db);
  qgm__groupnorm_backward(x, GC, GN_N, GHW, GG, gamma, beta, st, 1, r, dxf,
                         dgf, dbf);
  assert_memory_equal(dxf, dx, sizeof dx);
  assert_memory_equal(dgf, dg, sizeof dg);
  assert_memory_equal(dbf, db, sizeof db);
  memcpy(dxf, r, sizeof dxf);
  qgm__groupnorm_backward(x, GC, GN_N, GHW, GG, gamma, beta, st, 1, dxf, dxf,
                         dgf, dbf);
  assert_memory_equal(dxf, dx, sizeof dx);
  free(x), free(gamma), free(beta), free(r);
}

/* ------------------------------------------------------------ elementwise */

static void test_elementwise(void **state) {
  (void)state;
  float x[6] = {-1, 2, -3, 4, 0, -0.5f}, b[3] = {0.5f, -1, 3};
  qgm__rows_add_bias(x, b, 2, 3, 1);
  const float relu[6] = {0, 1, 0, 4.5f, 0, 2.5f};
  assert_memory_equal(x, relu, sizeof x);
  float d[6] = {1, 1, 1, 1, 1, 1};
  qgm__relu_backward(d, x, 6);
  const float mask[6] = {0, 1, 0, 1, 0, 1};
  assert_memory_equal(d, mask, sizeof d);
  float sums[3], m[2 * 37];
  for (size_t i = 0; i < 74; i++)
    m[i] = (float)i;
  qgm__rows_sum(sums, relu, 2, 3);
  assert_float_equal(sums[0], 4.5f, 0.0);
  assert_float_equal(sums[2], 2.5f, 0.0);
  /* 37 columns: two 16-wide blocks plus a tail of 5. */
  qgm__cols_sum(sums, m, 2, 37);
  assert_float_equal(sums[0], 36.0f * 37 / 2, 0.0);
  assert_float_equal(sums[1], 37.0f * 37 + 36.0f * 37 / 2, 0.0);
  float y[6] = {-2, 0, 3, -0.0f, 1e-30f, -1e-30f};
  qgm__relu(y, 6);
  assert_float_equal(y[0], 0.0f, 0.0);
  assert_float_equal(y[2], 3.0f, 0.0);
  assert_true(y[4] > 0.0f);
  assert_float_equal(y[5], 0.0f, 0.0);
}

static void test_layout_transposes(void **state) {
  (void)state;
  enum { C = 3, N = 2, HW = 4 };
  float x[C * N * HW], rows[C * N * HW], back[C * N * HW];
  for (size_t i = 0; i < C * N * HW; i++)
    x[i] = (float)i;
  qgm__cnhw_to_rows(rows, x, C, N, HW);
  /* Row s holds channel c's plane at c*HW: x[(c*N + s)*HW + i]. */
  assert_float_equal(rows[1 * C * HW + 2 * HW + 3], x[(2 * N + 1) * HW + 3],
                     0.0);
  assert_float_equal(rows[0 * C * HW + 1 * HW + 0], x[(1 * N + 0) * HW], 0.0);
  qgm__rows_to_cnhw(back, rows, C, N, HW);
  assert_memory_equal(back, x, sizeof x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv_3x3_pad1_nchw),
      cmocka_unit_test(test_conv_3x3_stride2_cnhw),
      cmocka_unit_test(test_conv_1x1_stride2),
      cmocka_unit_test(test_conv_stride2_grid),
      cmocka_unit_test(test_conv_5x5_lenet),
      cmocka_unit_test(test_conv_chunked),
      cmocka_unit_test(test_conv_weight_grad_in_place),
      cmocka_unit_test(test_conv_bands_chunked),
      cmocka_unit_test(test_conv_winograd),
      cmocka_unit_test(test_conv_direct),
      cmocka_unit_test(test_conv_init_rejects),
      cmocka_unit_test(test_maxpool),
      cmocka_unit_test(test_maxpool_odd_size),
      cmocka_unit_test(test_maxpool_ties_take_first),
      cmocka_unit_test(test_maxpool_relu_fused),
      cmocka_unit_test(test_avgpool),
      cmocka_unit_test(test_groupnorm),
      cmocka_unit_test(test_groupnorm_offset),
      cmocka_unit_test(test_groupnorm_relu_fused),
      cmocka_unit_test(test_elementwise),
      cmocka_unit_test(test_layout_transposes),
  };
  return cmocka_run_group_tests(tests, test_pack_setup, test_pack_teardown);
}
