/* compress.c - the compression operators of compressed gossip and their
 * wire formats (docs/COMPRESSION.md). Every format but QSGD's has a
 * length that depends only on the operator and the vector's length;
 * QSGD's blocks each take the shorter of two forms, so its messages are
 * at most that long (qgm_compress_bytes), and self-delimiting. Every
 * multi-byte value is little-endian whatever the host.
 *
 * An operator encodes C(v - ref), the compressed difference between a
 * vector and a public copy of it, and applies a message to a copy that
 * equals ref: the sparse formats carry v's own values at the kept
 * coordinates (the copy takes them, which is ref + (v - ref) without the
 * rounding of the sum, so keeping every coordinate reproduces v exactly),
 * the quantisers carry the compressed difference, which is added. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "qgm.h"

/* The spec names: one table for parsing and for the help text. */
typedef enum { ARG_NONE, ARG_FRACTION, ARG_BITS, ARG_RANK } arg_t;
static const struct {
  const char *name;
  qgm_compress_kind_t kind;
  arg_t arg;
} kinds[] = {
    {"none", QGM_COMPRESS_NONE, ARG_NONE},
    {"topk", QGM_COMPRESS_TOPK, ARG_FRACTION},
    {"randk", QGM_COMPRESS_RANDK, ARG_FRACTION},
    {"qsgd", QGM_COMPRESS_QSGD, ARG_BITS},
    {"sign", QGM_COMPRESS_SIGN, ARG_NONE},
    {"powersgd", QGM_COMPRESS_POWERSGD, ARG_RANK},
};
#define NUM_KINDS (sizeof kinds / sizeof kinds[0])

struct qgm_compress {
  qgm_compress_spec_t spec;
  size_t n, k;     /* length; coordinates kept (sparse formats) */
  size_t blocks;   /* quantisers: scale blocks */
  int levels;      /* qsgd: s, the largest level */
  float inv_tau;   /* qsgd: 1 / (1 + omega), which makes Q contractive */
  float (*units)[4]; /* qsgd: per byte of 2-bit codes, their +1, -1 or 0 */
  float *diff;     /* v - ref */
  uint32_t *pos;   /* sparse formats: the kept coordinates, ascending */
  uint64_t *bits;  /* rand-k: the chosen set, one bit per coordinate */
};

/* ------------------------------------------------------------- names */

int qgm_compress_parse(const char *text, qgm_compress_spec_t *out) {
  if (!text || !out)
    return QGM_EINVAL;
  const char *colon = strchr(text, ':');
  size_t len = colon ? (size_t)(colon - text) : strlen(text);
  for (size_t i = 0; i < NUM_KINDS; i++) {
    if (strlen(kinds[i].name) != len || strncmp(text, kinds[i].name, len))
      continue;
    qgm_compress_spec_t s = {.kind = kinds[i].kind};
    if (kinds[i].arg == ARG_NONE)
      return colon ? QGM_EINVAL : (*out = s, 0);
    if (!colon || !colon[1])
      return QGM_EINVAL;
    char *end;
    double v = strtod(colon + 1, &end);
    if (*end)
      return QGM_EINVAL;
    if (kinds[i].arg == ARG_FRACTION && v > 0.0 && v <= 1.0)
      s.fraction = v;
    else if (kinds[i].arg == ARG_BITS && v == floor(v) &&
             v >= QGM_COMPRESS_MIN_BITS && v <= QGM_COMPRESS_MAX_BITS)
      s.bits = (int)v;
    else if (kinds[i].arg == ARG_RANK && v == floor(v) && v >= 1 &&
             v <= QGM_COMPRESS_MAX_RANK)
      s.rank = (int)v;
    else
      return QGM_EINVAL;
    *out = s;
    return 0;
  }
  return QGM_EINVAL;
}

const char *qgm_compress_names(void) {
  static char list[128];
  if (!list[0])
    for (size_t i = 0; i < NUM_KINDS; i++) {
      static const char *const args[] = {"", ":F", ":BITS", ":R"};
      size_t used = strlen(list);
      snprintf(list + used, sizeof list - used, "%s%s%s", i ? ", " : "",
               kinds[i].name, args[kinds[i].arg]);
    }
  return list;
}

/* ------------------------------------------------------ construction */

/* ceil(F n), less a millionth so that a decimal F whose double is a hair
 * above it (0.07 x 100 = 7.000000000000001) keeps the intended count. */
static size_t kept(const qgm_compress_spec_t *s, size_t n) {
  double k = ceil(s->fraction * (double)n - 1e-6);
  return k < 1.0 ? 1 : k > (double)n ? n : (size_t)k;
}

int qgm_compress_create(const qgm_compress_spec_t *spec, size_t n,
                        qgm_compress_t **out) {
  /* powersgd names an exchange of its own, not an operator of CHOCO's
   * (qgm_powersgd_*, qgm_powergossip_*). */
  if (!spec || !out || n == 0 || n > UINT32_MAX ||
      (size_t)spec->kind >= NUM_KINDS || spec->kind == QGM_COMPRESS_POWERSGD)
    return QGM_EINVAL;
  const qgm_compress_kind_t kind = spec->kind;
  if (((kind == QGM_COMPRESS_TOPK || kind == QGM_COMPRESS_RANDK) &&
       !(spec->fraction > 0.0 && spec->fraction <= 1.0)) ||
      (kind == QGM_COMPRESS_QSGD && (spec->bits < QGM_COMPRESS_MIN_BITS ||
                                     spec->bits > QGM_COMPRESS_MAX_BITS)))
    return QGM_EINVAL;
  qgm_compress_t *c = calloc(1, sizeof *c);
  if (!c)
    return QGM_ENOMEM;
  c->spec = *spec;
  c->n = n;
  c->blocks = (n + QGM_COMPRESS_BLOCK - 1) / QGM_COMPRESS_BLOCK;
  int ok = (c->diff = qgm_alloc_floats(n)) != NULL;
  if (kind == QGM_COMPRESS_TOPK || kind == QGM_COMPRESS_RANDK) {
    c->k = kept(spec, n);
    ok = ok && (c->pos = malloc(c->k * sizeof *c->pos));
  }
  if (kind == QGM_COMPRESS_RANDK)
    ok = ok && (c->bits = calloc((n + 63) / 64, sizeof *c->bits));
  if (kind == QGM_COMPRESS_QSGD) {
    /* QSGD's variance bound (Alistarh et al. 2017, Lemma 3.1) for a block
     * of B coordinates: E||Q(v) - v||^2 <= omega ||v||^2 with
     * omega = min(B / s^2, sqrt(B) / s). */
    const double s = (double)((1 << (spec->bits - 1)) - 1), b = QGM_COMPRESS_BLOCK;
    const double omega = fmin(b / (s * s), sqrt(b) / s);
    c->levels = (int)s;
    c->inv_tau = (float)(1.0 / (1.0 + omega));
    ok = ok && (c->units = malloc(256 * sizeof *c->units));
    for (unsigned byte = 0; ok && byte < 256; byte++)
      for (unsigned j = 0; j < 4; j++) { /* 1: +1, 2: -1, 0 and 3: 0 */
        const unsigned t = byte >> (2 * j) & 3u;
        c->units[byte][j] = (float)((int)(t & 1u) - (int)(t >> 1));
      }
  }
  if (!ok) {
    qgm_compress_free(c);
    return QGM_ENOMEM;
  }
  *out = c;
  return 0;
}

void qgm_compress_free(qgm_compress_t *c) {
  if (!c)
    return;
  free(c->diff);
  free(c->pos);
  free(c->bits);
  free(c->units);
  free(c);
}

size_t qgm_compress_len(const qgm_compress_t *c) { return c->n; }
size_t qgm_compress_kept(const qgm_compress_t *c) {
  return c->k ? c->k : c->n;
}

size_t qgm_compress_bytes(const qgm_compress_t *c) {
  switch (c->spec.kind) {
  case QGM_COMPRESS_TOPK:
    return 8 * c->k;
  case QGM_COMPRESS_RANDK:
    return 4 * c->k;
  case QGM_COMPRESS_QSGD:
    return 4 * c->blocks + (c->n * (size_t)c->spec.bits + 7) / 8;
  case QGM_COMPRESS_SIGN:
    return 4 * c->blocks + (c->n + 7) / 8;
  case QGM_COMPRESS_NONE:
  default:
    return 4 * c->n;
  }
}

double qgm_compress_unbiased_scale(const qgm_compress_t *c) {
  if (c->spec.kind == QGM_COMPRESS_RANDK)
    return (double)c->n / (double)c->k;
  if (c->spec.kind == QGM_COMPRESS_QSGD)
    return 1.0 / (double)c->inv_tau;
  return c->spec.kind == QGM_COMPRESS_NONE ? 1.0 : 0.0;
}

/* ------------------------------------------------------------ bytes */

static void put_u32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_u32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static void put_f32(uint8_t *p, float f) {
  uint32_t v;
  memcpy(&v, &f, sizeof v);
  put_u32(p, v);
}

static float get_f32(const uint8_t *p) {
  uint32_t v = get_u32(p);
  float f;
  memcpy(&f, &v, sizeof f);
  return f;
}

/* Codes of `width` <= 16 bits, LSB first, packed back to back from bit
 * 0: a code spans at most 3 bytes, and only the bytes it covers are
 * touched (the buffer ends with the last code). */
static void put_bits(uint8_t *p, size_t at, unsigned code, int width) {
  const unsigned shift = (unsigned)(at & 7);
  uint32_t v = (uint32_t)code << shift;
  p += at >> 3;
  for (unsigned b = 0; b * 8 < shift + (unsigned)width; b++)
    p[b] |= (uint8_t)(v >> (8 * b));
}

static unsigned get_bits(const uint8_t *p, size_t at, int width) {
  const unsigned shift = (unsigned)(at & 7);
  uint32_t v = 0;
  p += at >> 3;
  for (unsigned b = 0; b * 8 < shift + (unsigned)width; b++)
    v |= (uint32_t)p[b] << (8 * b);
  return (unsigned)(v >> shift) & ((1u << width) - 1u);
}

/* Codes j0 .. j0 + len - 1 of `width` bits, from or into codes[0..len):
 * the same layout, with the widths that divide a byte read and written
 * in loops of their own (per-coordinate work on every message, which the
 * compiler then vectorises). A block's codes start on a byte boundary for
 * these widths, since QGM_COMPRESS_BLOCK is a multiple of 8. */
static void put_codes(uint8_t *p, size_t j0, const uint16_t *codes,
                      size_t len, int width) {
  if (width < 8 && 8 % width == 0 && j0 % 8 == 0) {
    /* Whole bytes at once, then the bytes of a short tail as below. */
    const size_t per = 8 / (size_t)width, whole = len / per;
    uint8_t *q = p + j0 * (size_t)width / 8;
    for (size_t k = 0; k < whole; k++) {
      unsigned byte = 0;
      for (size_t j = 0; j < per; j++)
        byte |= (unsigned)codes[per * k + j] << (width * (int)j);
      q[k] = (uint8_t)byte;
    }
    j0 += whole * per;
    codes += whole * per;
    len -= whole * per;
  }
  switch (width) {
  case 8:
    for (size_t i = 0; i < len; i++)
      p[j0 + i] = (uint8_t)codes[i];
    return;
  case 4:
    for (size_t i = 0; i < len; i++)
      p[(j0 + i) >> 1] |= (uint8_t)(codes[i] << (4 * ((j0 + i) & 1)));
    return;
  case 2:
    for (size_t i = 0; i < len; i++)
      p[(j0 + i) >> 2] |= (uint8_t)(codes[i] << (2 * ((j0 + i) & 3)));
    return;
  case 1:
    for (size_t i = 0; i < len; i++)
      p[(j0 + i) >> 3] |= (uint8_t)(codes[i] << ((j0 + i) & 7));
    return;
  default:
    for (size_t i = 0; i < len; i++)
      put_bits(p, (j0 + i) * (size_t)width, codes[i], width);
  }
}

static void get_codes(const uint8_t *p, size_t j0, uint16_t *codes,
                      size_t len, int width) {
  switch (width) {
  case 8:
    for (size_t i = 0; i < len; i++)
      codes[i] = p[j0 + i];
    return;
  case 4:
    for (size_t i = 0; i < len; i++)
      codes[i] = (uint16_t)((p[(j0 + i) >> 1] >> (4 * ((j0 + i) & 1))) & 15u);
    return;
  case 2:
    for (size_t i = 0; i < len; i++)
      codes[i] = (uint16_t)((p[(j0 + i) >> 2] >> (2 * ((j0 + i) & 3))) & 3u);
    return;
  case 1:
    for (size_t i = 0; i < len; i++)
      codes[i] = (uint16_t)((p[(j0 + i) >> 3] >> ((j0 + i) & 7)) & 1u);
    return;
  default:
    for (size_t i = 0; i < len; i++)
      codes[i] = (uint16_t)get_bits(p, (j0 + i) * (size_t)width, width);
  }
}

/* ------------------------------------------------------- selections */

/* |x| as an integer: the bits of a non-negative float order as the float
 * does. */
static uint32_t magnitude_key(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u & 0x7fffffffu;
}

/* Top-k: the k coordinates of largest |diff|; among equal magnitudes at
 * the threshold the lowest indices, so the choice is a function of diff.
 * The threshold is found by radix selection on the magnitudes' bits (11,
 * 11 and 9 bits a pass, each pass counting only the keys that share the
 * prefix found so far): four sequential passes and no reordering. */
static void select_top(qgm_compress_t *c) {
  const size_t n = c->n, k = c->k;
  const float *d = c->diff;
  static const int shifts[3] = {20, 9, 0}, widths[3] = {11, 11, 9};
  uint32_t prefix = 0, mask = 0, hist[1 << 11];
  size_t need = k; /* how many of the keys >= the prefix still to take */
  for (int pass = 0; pass < 3; pass++) {
    const int shift = shifts[pass];
    const uint32_t bins = 1u << widths[pass];
    memset(hist, 0, bins * sizeof *hist);
    for (size_t i = 0; i < n; i++) {
      uint32_t key = magnitude_key(d[i]);
      if ((key & mask) == prefix)
        hist[(key >> shift) & (bins - 1)]++;
    }
    uint32_t bin = bins - 1;
    while (hist[bin] < need) /* the k-th largest lies in this range */
      need -= hist[bin--];
    prefix |= bin << shift;
    mask |= (bins - 1) << shift;
  }
  /* prefix is now the k-th largest key; `need` of its equals are kept. */
  size_t got = 0;
  for (size_t i = 0; i < n && got < k; i++) {
    uint32_t key = magnitude_key(d[i]);
    if (key > prefix)
      c->pos[got++] = (uint32_t)i;
    else if (key == prefix && need > 0) {
      need--;
      c->pos[got++] = (uint32_t)i;
    }
  }
}

/* Rand-k: a uniformly random k-subset (Floyd's algorithm) drawn from rng,
 * listed in ascending order. */
static void select_random(qgm_compress_t *c, qgm_rng_t *rng) {
  const size_t n = c->n, k = c->k, words = (n + 63) / 64;
  memset(c->bits, 0, words * sizeof *c->bits);
  for (size_t j = n - k; j < n; j++) {
    size_t t = (size_t)qgm_rng_below(rng, j + 1);
    if (c->bits[t / 64] >> (t % 64) & 1u)
      t = j;
    c->bits[t / 64] |= (uint64_t)1 << (t % 64);
  }
  size_t got = 0;
  for (size_t w = 0; w < words; w++)
    for (uint64_t b = c->bits[w]; b; b &= b - 1)
      c->pos[got++] = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(b));
}

/* ------------------------------------------------------- quantisers */

static size_t block_len(const qgm_compress_t *c, size_t b) {
  size_t start = b * QGM_COMPRESS_BLOCK;
  return c->n - start < QGM_COMPRESS_BLOCK ? c->n - start
                                           : QGM_COMPRESS_BLOCK;
}

/* QSGD: per block the scale ||d||_2 / s, and per coordinate a code of
 * `bits` bits, the level in the low bits - 1 and the sign (1: negative)
 * in the top one. level = floor(s |d_i| / ||d|| + u) with u uniform is
 * s |d_i| / ||d|| rounded up or down at random, exact in expectation.
 *
 * Most levels are 0 or 1 (|d_i| is rarely above ||d|| / s), so a block
 * goes in whichever of two forms is shorter, starting on a byte:
 *   long:  the codes, `bits` bits each;
 *   short: a 2-bit code per coordinate (0: level 0, 1: +1, 2: -1,
 *          3: escaped), then the escaped coordinates' codes, `bits` bits
 *          each, in order.
 * The top bit of the block's scale, which is never negative, says which
 * (1: short). The levels, and so the values, are the same either way. */
enum { QSGD_ESCAPED = 3 };

static size_t long_form_bytes(size_t len, int width) {
  return (len * (size_t)width + 7) / 8;
}

static size_t short_form_bytes(size_t len, size_t escaped, int width) {
  return (len + 3) / 4 + (escaped * (size_t)width + 7) / 8;
}

/* The escaped coordinates of a short form's 2-bit codes, byte k: bit 2j
 * set where code j of the byte is QSGD_ESCAPED. */
static unsigned escapes_of(uint8_t byte) {
  return (unsigned)(byte & (byte >> 1) & 0x55u);
}

/* Writes a block at p in its shorter form, from its codes and its 2-bit
 * codes two[0..len) with `escaped` of them QSGD_ESCAPED; returns its
 * bytes and sets *is_short. */
static size_t put_block(uint8_t *p, const uint16_t *codes,
                        const uint16_t *two, size_t escaped, size_t len,
                        int width, int *is_short) {
  const size_t long_bytes = long_form_bytes(len, width);
  const size_t head = (len + 3) / 4;
  const size_t short_bytes = short_form_bytes(len, escaped, width);
  *is_short = short_bytes < long_bytes;
  if (!*is_short) {
    memset(p, 0, long_bytes);
    put_codes(p, 0, codes, len, width);
    return long_bytes;
  }
  memset(p, 0, short_bytes);
  put_codes(p, 0, two, len, 2);
  uint8_t *escapes = p + head;
  size_t k = 0;
  for (size_t byte = 0; k < escaped; byte++)
    for (unsigned m = escapes_of(p[byte]); m; m &= m - 1)
      put_bits(escapes, (size_t)width * k++,
               codes[4 * byte + (size_t)__builtin_ctz(m) / 2], width);
  return short_bytes;
}

/* The escaped codes among n bytes of 2-bit codes: a bit count, done
 * without the popcount instruction the baseline x86-64 lacks. */
static size_t count_escaped(const uint8_t *p, size_t n) {
  size_t count = 0;
  for (size_t k = 0; k < n; k++) {
    unsigned m = escapes_of(p[k]);            /* bits 0, 2, 4, 6 */
    m = (m & 0x33u) + ((m >> 2) & 0x33u);     /* pairs */
    count += (m & 0x0fu) + (m >> 4);
  }
  return count;
}

/* Adds a short-form block at p, which has `room` bytes, to x[0..len):
 * +-step for the levels 1, then level * step for the escaped ones (in the
 * float order of the long form's loop; adding 0 first leaves every x as
 * it was but a -0.0, which becomes +0.0). Returns
 * its bytes, or 0 when it is not one this operator writes. */
static size_t apply_short(const qgm_compress_t *c, const uint8_t *p,
                          size_t room, size_t len, float step, float *x) {
  const int width = c->spec.bits;
  const unsigned mask = (1u << (width - 1)) - 1u;
  const size_t head = (len + 3) / 4;
  if (head > room)
    return 0;
  const size_t escaped = count_escaped(p, head);
  const size_t short_bytes = short_form_bytes(len, escaped, width);
  if (short_bytes >= long_form_bytes(len, width) || short_bytes > room)
    return 0;
  for (size_t k = 0; k < len / 4; k++) {
    const float *unit = c->units[p[k]];
    for (size_t j = 0; j < 4; j++)
      x[4 * k + j] += step * unit[j];
  }
  for (size_t i = len & ~(size_t)3; i < len; i++)
    x[i] += step * c->units[p[i / 4]][i % 4];
  const uint8_t *escapes = p + head;
  size_t k = 0;
  for (size_t byte = 0; k < escaped; byte++)
    for (unsigned m = escapes_of(p[byte]); m; m &= m - 1) {
      const unsigned code = get_bits(escapes, (size_t)width * k++, width);
      const float q = (float)(code & mask) * step;
      x[4 * byte + (size_t)__builtin_ctz(m) / 2] +=
          q * (1.0f - 2.0f * (float)(code >> (width - 1)));
    }
  return short_bytes;
}

#define SHORT_FORM 0x80000000u /* the scale's sign bit */

/* sum d_i^2 in double, in four interleaved partial sums: one sum's
 * additions wait on each other, four keep the adder busy. */
static double sum_of_squares(const float *d, size_t len) {
  double part[4] = {0.0, 0.0, 0.0, 0.0};
  size_t i = 0;
  for (; i + 4 <= len; i += 4)
    for (size_t j = 0; j < 4; j++)
      part[j] += (double)d[i + j] * (double)d[i + j];
  for (; i < len; i++)
    part[i % 4] += (double)d[i] * (double)d[i];
  return (part[0] + part[1]) + (part[2] + part[3]);
}

/* Returns the message's length. */
static size_t encode_qsgd(const qgm_compress_t *c, qgm_rng_t *rng,
                          uint8_t *out) {
  const int width = c->spec.bits, s = c->levels;
  uint16_t codes[QGM_COMPRESS_BLOCK], two[QGM_COMPRESS_BLOCK];
  double u[QGM_COMPRESS_BLOCK];
  size_t at = 4 * c->blocks;
  for (size_t b = 0; b < c->blocks; b++) {
    const float *d = c->diff + b * QGM_COMPRESS_BLOCK;
    const size_t len = block_len(c, b);
    const double norm = sqrt(sum_of_squares(d, len));
    /* The draws first, then a loop without calls the compiler can
     * vectorise; for a non-negative value the conversion to unsigned is
     * its floor. */
    qgm_rng_uniforms(rng, u, len);
    const double top = norm > 0.0 ? s : 0.0, by = norm > 0.0 ? norm : 1.0;
    size_t escaped = 0;
    for (size_t i = 0; i < len; i++) {
      /* With a zero norm every level is 0 (0 / 1 * 0 + u < 1); the value
       * is below s + 1, so int holds it (and SSE2 converts to int). */
      int level = (int)(fabs((double)d[i]) / by * top + u[i]);
      if (level > s) /* |d_i| / ||d|| <= 1 up to rounding */
        level = s;
      const unsigned negative = d[i] < 0.0f;
      codes[i] = (uint16_t)((unsigned)level | negative << (width - 1));
      two[i] = (uint16_t)(level > 1    ? QSGD_ESCAPED
                          : level == 1 ? 1u + negative
                                       : 0u);
      escaped += level > 1;
    }
    int is_short;
    at += put_block(out + at, codes, two, escaped, len, width, &is_short);
    const float scale = (float)(norm / s);
    uint32_t word;
    memcpy(&word, &scale, sizeof word);
    put_u32(out + 4 * b, word | (is_short ? SHORT_FORM : 0u));
  }
  return at;
}

static int apply_qsgd(const qgm_compress_t *c, const uint8_t *in,
                      float *copy) {
  const int width = c->spec.bits;
  const unsigned mask = (1u << (width - 1)) - 1u;
  const size_t room = qgm_compress_bytes(c);
  uint16_t codes[QGM_COMPRESS_BLOCK];
  size_t at = 4 * c->blocks;
  for (size_t b = 0; b < c->blocks; b++) {
    const uint32_t word = get_u32(in + 4 * b);
    float scale;
    const uint32_t magnitude = word & ~SHORT_FORM;
    memcpy(&scale, &magnitude, sizeof scale);
    const float step = scale * c->inv_tau;
    float *x = copy + b * QGM_COMPRESS_BLOCK;
    const size_t len = block_len(c, b);
    if (word & SHORT_FORM) {
      const size_t used = apply_short(c, in + at, room - at, len, step, x);
      if (used == 0)
        return QGM_EINVAL;
      at += used;
      continue;
    }
    const size_t used = long_form_bytes(len, width);
    if (used > room - at)
      return QGM_EINVAL;
    get_codes(in + at, 0, codes, len, width);
    at += used;
    /* q times +1 or -1 is exactly q or -q; the product keeps the loop
     * free of branches. */
    for (size_t i = 0; i < len; i++) {
      float q = (float)(codes[i] & mask) * step;
      x[i] += q * (1.0f - 2.0f * (float)(codes[i] >> (width - 1)));
    }
  }
  return 0;
}

/* Scaled sign: per block the scale mean |d_i| and one bit per coordinate,
 * set when d_i < 0. */
static void encode_sign(const qgm_compress_t *c, uint8_t *out) {
  uint8_t *signs = out + 4 * c->blocks;
  uint16_t codes[QGM_COMPRESS_BLOCK];
  memset(signs, 0, (c->n + 7) / 8);
  for (size_t b = 0; b < c->blocks; b++) {
    const float *d = c->diff + b * QGM_COMPRESS_BLOCK;
    const size_t len = block_len(c, b);
    double l1 = 0.0;
    for (size_t i = 0; i < len; i++)
      l1 += fabs((double)d[i]);
    put_f32(out + 4 * b, (float)(l1 / (double)len));
    for (size_t i = 0; i < len; i++)
      codes[i] = d[i] < 0.0f;
    put_codes(signs, b * QGM_COMPRESS_BLOCK, codes, len, 1);
  }
}

static void apply_sign(const qgm_compress_t *c, const uint8_t *in,
                       float *copy) {
  const uint8_t *signs = in + 4 * c->blocks;
  uint16_t codes[QGM_COMPRESS_BLOCK];
  for (size_t b = 0; b < c->blocks; b++) {
    const float scale = get_f32(in + 4 * b);
    float *x = copy + b * QGM_COMPRESS_BLOCK;
    const size_t len = block_len(c, b);
    get_codes(signs, b * QGM_COMPRESS_BLOCK, codes, len, 1);
    for (size_t i = 0; i < len; i++) /* exactly +scale or -scale */
      x[i] += scale * (1.0f - 2.0f * (float)codes[i]);
  }
}

/* ------------------------------------------------------ entry points */

int qgm_compress_encode(qgm_compress_t *c, const float *v, const float *ref,
                        qgm_rng_t *rng, uint8_t *out, size_t *bytes) {
  if (!c || !v || !out || (!rng && (c->spec.kind == QGM_COMPRESS_RANDK ||
                                    c->spec.kind == QGM_COMPRESS_QSGD)))
    return QGM_EINVAL;
  const size_t n = c->n;
  if (ref)
    for (size_t i = 0; i < n; i++)
      c->diff[i] = v[i] - ref[i];
  else
    qgm_vec_copy(c->diff, v, n);
  size_t unused;
  if (!bytes)
    bytes = &unused;
  *bytes = qgm_compress_bytes(c);
  switch (c->spec.kind) {
  case QGM_COMPRESS_TOPK:
    select_top(c);
    for (size_t j = 0; j < c->k; j++) {
      put_u32(out + 4 * j, c->pos[j]);
      put_f32(out + 4 * (c->k + j), v[c->pos[j]]);
    }
    return 0;
  case QGM_COMPRESS_RANDK:
    select_random(c, rng);
    for (size_t j = 0; j < c->k; j++)
      put_f32(out + 4 * j, v[c->pos[j]]);
    return 0;
  case QGM_COMPRESS_QSGD:
    *bytes = encode_qsgd(c, rng, out);
    return 0;
  case QGM_COMPRESS_SIGN:
    encode_sign(c, out);
    return 0;
  case QGM_COMPRESS_NONE:
  default:
    for (size_t i = 0; i < n; i++)
      put_f32(out + 4 * i, v[i]);
    return 0;
  }
}

int qgm_compress_apply(qgm_compress_t *c, const uint8_t *in, qgm_rng_t *rng,
                       float *copy) {
  if (!c || !in || !copy || (!rng && c->spec.kind == QGM_COMPRESS_RANDK))
    return QGM_EINVAL;
  switch (c->spec.kind) {
  case QGM_COMPRESS_TOPK:
    for (size_t j = 0; j < c->k; j++) {
      uint32_t i = get_u32(in + 4 * j);
      if (i >= c->n || (j > 0 && i <= get_u32(in + 4 * (j - 1))))
        return QGM_EINVAL; /* not a message of this operator */
      copy[i] = get_f32(in + 4 * (c->k + j));
    }
    return 0;
  case QGM_COMPRESS_RANDK:
    select_random(c, rng);
    for (size_t j = 0; j < c->k; j++)
      copy[c->pos[j]] = get_f32(in + 4 * j);
    return 0;
  case QGM_COMPRESS_QSGD:
    return apply_qsgd(c, in, copy);
  case QGM_COMPRESS_SIGN:
    apply_sign(c, in, copy);
    return 0;
  case QGM_COMPRESS_NONE:
  default:
    for (size_t i = 0; i < c->n; i++)
      copy[i] = get_f32(in + 4 * i);
    return 0;
  }
}
