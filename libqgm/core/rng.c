/* rng.c - xoshiro256** with splitmix64 seeding, and the distributions the
 * rest of libqgm draws from. Everything random in qgmd flows through here so
 * that a seed fixes a run. */
#include <math.h>

#include "qgm.h"

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void qgm_rng_seed(qgm_rng_t *rng, uint64_t seed, uint64_t stream) {
  /* Mixing the stream through splitmix first keeps nearby (seed, stream)
   * pairs far apart in state space. */
  uint64_t sm = seed;
  uint64_t mixed = splitmix64(&sm) ^ (stream * 0xd1342543de82ef95ULL);
  for (int i = 0; i < 4; i++)
    rng->s[i] = splitmix64(&mixed);
}

void qgm_rng_seed_model(qgm_rng_t *rng, uint64_t seed) {
  qgm_rng_seed(rng, seed, 0);
}

void qgm_rng_seed_sampler(qgm_rng_t *rng, uint64_t seed, uint64_t node) {
  qgm_rng_seed(rng, seed, 1 + node);
}

static inline uint64_t next(uint64_t *s) {
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

uint64_t qgm_rng_u64(qgm_rng_t *rng) { return next(rng->s); }

/* The top 53 bits as a double in [0, 1). */
static inline double uniform_of(uint64_t x) {
  return (double)(x >> 11) * 0x1.0p-53;
}

double qgm_rng_uniform(qgm_rng_t *rng) { return uniform_of(next(rng->s)); }

void qgm_rng_uniforms(qgm_rng_t *rng, double *out, size_t n) {
  /* The state in registers for the whole run of draws. */
  uint64_t s[4] = {rng->s[0], rng->s[1], rng->s[2], rng->s[3]};
  for (size_t i = 0; i < n; i++)
    out[i] = uniform_of(next(s));
  for (int k = 0; k < 4; k++)
    rng->s[k] = s[k];
}

uint64_t qgm_rng_below(qgm_rng_t *rng, uint64_t bound) {
  /* Rejection on the top of the range removes modulo bias. */
  uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  uint64_t r;
  do
    r = qgm_rng_u64(rng);
  while (r >= limit);
  return r % bound;
}

double qgm_rng_normal(qgm_rng_t *rng) {
  /* Box-Muller; one of the pair is dropped so that the state alone
   * determines the stream (nothing cached to checkpoint). */
  double u1, u2;
  do
    u1 = qgm_rng_uniform(rng);
  while (u1 <= 0.0);
  u2 = qgm_rng_uniform(rng);
  return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

double qgm_rng_gamma(qgm_rng_t *rng, double shape) {
  if (shape < 1.0) {
    /* Gamma(a) = Gamma(a + 1) * U^(1/a). */
    double u;
    do
      u = qgm_rng_uniform(rng);
    while (u <= 0.0);
    return qgm_rng_gamma(rng, shape + 1.0) * pow(u, 1.0 / shape);
  }
  double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = qgm_rng_normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    double u = qgm_rng_uniform(rng);
    if (u < 1.0 - 0.0331 * x * x * x * x)
      return d * v;
    if (u > 0.0 && log(u) < 0.5 * x * x + d * (1.0 - v + log(v)))
      return d * v;
  }
}

void qgm_rng_shuffle(qgm_rng_t *rng, size_t *items, size_t n) {
  for (size_t i = n; i > 1; i--) {
    size_t j = (size_t)qgm_rng_below(rng, i);
    size_t tmp = items[i - 1];
    items[i - 1] = items[j];
    items[j] = tmp;
  }
}

/* Distinct from every stream's seeding: the draw's inputs pass through
 * splitmix64 one after the other, each perturbing the state, so nearby
 * counters give unrelated draws. */
#define MESSAGE_DRAW_DOMAIN 0x6d657373616765ULL /* "message" */

double qgm_rng_message_draw(uint64_t seed, uint64_t round, int from, int to) {
  uint64_t state = seed ^ MESSAGE_DRAW_DOMAIN;
  uint64_t h = splitmix64(&state);
  state = h ^ round;
  h = splitmix64(&state);
  state = h ^ (((uint64_t)(uint32_t)from << 32) | (uint32_t)to);
  return uniform_of(splitmix64(&state));
}
