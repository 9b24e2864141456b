/* synthetic.c - a seeded CIFAR-shaped dataset (3 x 32 x 32, 10 classes) for
 * tests and for measuring the system without downloading anything.
 *
 * Class k has a fixed random prototype image, in each channel a plane
 * wave of low frequency (so that convolutions and pooling, which look at
 * neighbourhoods, see it as well as a linear model does); a sample of class
 * k is its prototype plus uniform noise of variance 1. Both kinds of model
 * can learn it; a bug that scrambles images or labels cannot. Every sample is drawn from its own generator stream, so a node
 * generates only its own shard, and the same (seed, index) always gives
 * the same sample whatever the shard. */
#include <math.h>
#include <stdlib.h>

#include "data/dataset.h"
#include "qgm.h"

#define SYN_C 3
#define SYN_HW 32
#define SYN_DIM (SYN_C * SYN_HW * SYN_HW)
#define SYN_CLASSES 10
#define PROTO_AMPLITUDE 1.0
#define TWO_PI 6.283185307179586
#define PROTO_MAX_FREQ 3 /* cycles per image side */

/* Generator streams, far apart so that no two uses overlap. */
#define STREAM_LABELS 1000u
#define STREAM_PROTOS 2000u
#define STREAM_SAMPLES ((uint64_t)1 << 32)
#define STREAM_TEST_OFFSET ((uint64_t)1 << 40)

size_t qgm__synthetic_count(int test) { return test ? 10000 : 50000; }

int qgm__synthetic_labels(uint64_t seed, int test, size_t count,
                         uint8_t **labels) {
  uint8_t *out = malloc(count ? count : 1);
  if (!out)
    return QGM_ENOMEM;
  qgm_rng_t rng;
  qgm_rng_seed(&rng, seed, STREAM_LABELS + (uint64_t)test);
  for (size_t i = 0; i < count; i++)
    out[i] = (uint8_t)qgm_rng_below(&rng, SYN_CLASSES);
  *labels = out;
  return 0;
}

int qgm__synthetic_load(uint64_t seed, int test, size_t count,
                       const size_t *subset, size_t len, qgm_dataset_t **out) {
  size_t n = subset ? len : count;
  for (size_t i = 0; subset && i < len; i++)
    if (subset[i] >= count)
      return QGM_EINVAL;
  uint8_t *labels = NULL;
  float *protos = malloc(SYN_CLASSES * SYN_DIM * sizeof *protos);
  qgm_dataset_t *ds = NULL;
  int rc = protos ? qgm__synthetic_labels(seed, test, count, &labels)
                  : QGM_ENOMEM;
  if (rc == 0)
    rc = qgm__dataset_alloc(n, SYN_DIM, SYN_CLASSES, &ds);
  if (rc == 0) {
    ds->channels = SYN_C;
    ds->height = ds->width = SYN_HW;
    qgm_rng_t rng;
    qgm_rng_seed(&rng, seed, STREAM_PROTOS);
    for (size_t p = 0; p < SYN_CLASSES * SYN_C; p++) {
      double fy = (double)qgm_rng_below(&rng, PROTO_MAX_FREQ + 1);
      double fx = (double)qgm_rng_below(&rng, PROTO_MAX_FREQ + 1);
      double phase = TWO_PI * qgm_rng_uniform(&rng);
      for (size_t y = 0; y < SYN_HW; y++)
        for (size_t x = 0; x < SYN_HW; x++)
          protos[p * SYN_HW * SYN_HW + y * SYN_HW + x] = (float)(
              PROTO_AMPLITUDE *
              cos(TWO_PI * (fy * (double)y + fx * (double)x) / SYN_HW +
                  phase));
    }
    const double half_width = sqrt(3.0); /* uniform noise of variance 1 */
    for (size_t r = 0; r < n; r++) {
      size_t idx = subset ? subset[r] : r;
      uint64_t stream = STREAM_SAMPLES + (test ? STREAM_TEST_OFFSET : 0) + idx;
      qgm_rng_seed(&rng, seed, stream);
      const float *proto = protos + (size_t)labels[idx] * SYN_DIM;
      float *dst = ds->images + r * SYN_DIM;
      for (size_t k = 0; k < SYN_DIM; k++)
        dst[k] = proto[k] + (float)((2.0 * qgm_rng_uniform(&rng) - 1.0) *
                                    half_width);
      ds->labels[r] = labels[idx];
    }
  }
  free(protos);
  free(labels);
  if (rc != 0) {
    qgm_dataset_free(ds);
    return rc;
  }
  *out = ds;
  return 0;
}
