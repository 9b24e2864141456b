/* newest_slot.c - see newest_slot.h. The seqlock follows the C11 pattern:
 * the writer makes its buffer's counter odd, fences, writes, and makes it
 * even with release; a reader loads the counter with acquire, copies,
 * fences with acquire and loads it again. */
#include "newest_slot.h"

#include <stdatomic.h>
#include <string.h>

enum { BUFFERS = 3, TRIES = 8 };

typedef struct header {
  _Atomic uint64_t seq[BUFFERS]; /* odd while the writer fills it */
  _Atomic uint64_t published;    /* messages published; the newest is in
                                    buffer (published - 1) % BUFFERS */
  _Atomic int finished;
} header_t;

/* The buffers start a cache line after the header: the counters the
 * readers poll do not share a line with the floats the writer stores. */
#define HEADER_BYTES ((sizeof(header_t) + 63) / 64 * 64)

static float *buffer(const void *block, size_t len, uint64_t which) {
  /* HEADER_BYTES is a whole number of floats. */
  return (float *)block + HEADER_BYTES / sizeof(float) + which * (len + 1);
}

size_t qgmd_newest_slot_bytes(size_t len) {
  return HEADER_BYTES + BUFFERS * (len + 1) * sizeof(float);
}

void qgmd_newest_slot_init(void *block, size_t len) {
  header_t *h = block;
  for (int b = 0; b < BUFFERS; b++)
    atomic_init(&h->seq[b], 0);
  atomic_init(&h->published, 0);
  atomic_init(&h->finished, 0);
  memset(buffer(block, len, 0), 0, BUFFERS * (len + 1) * sizeof(float));
}

void qgmd_newest_slot_publish(void *block, size_t len, const float *msg,
                              double round) {
  header_t *h = block;
  const uint64_t p = atomic_load_explicit(&h->published, memory_order_relaxed);
  const uint64_t b = p % BUFFERS;
  const uint64_t s = atomic_load_explicit(&h->seq[b], memory_order_relaxed);
  atomic_store_explicit(&h->seq[b], s + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  float *dst = buffer(block, len, b);
  memcpy(dst, msg, len * sizeof(float));
  dst[len] = (float)round;
  atomic_store_explicit(&h->seq[b], s + 2, memory_order_release);
  atomic_store_explicit(&h->published, p + 1, memory_order_release);
}

void qgmd_newest_slot_finish(void *block) {
  atomic_store_explicit(&((header_t *)block)->finished, 1,
                        memory_order_release);
}

int qgmd_newest_slot_finished(const void *block) {
  /* Acquire: a reader that sees the flag sees the last message too. */
  return atomic_load_explicit(&((header_t *)block)->finished,
                              memory_order_acquire);
}

int qgmd_newest_slot_take(const void *block, size_t len, uint64_t *taken,
                          float *dst) {
  header_t *h = (header_t *)block;
  for (int t = 0; t < TRIES; t++) {
    const uint64_t p =
        atomic_load_explicit(&h->published, memory_order_acquire);
    if (p == *taken)
      return 0;
    const uint64_t b = (p - 1) % BUFFERS;
    const uint64_t s1 = atomic_load_explicit(&h->seq[b], memory_order_acquire);
    if (s1 & 1)
      continue; /* being refilled: a newer one is on its way */
    memcpy(dst, buffer(block, len, b), (len + 1) * sizeof(float));
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&h->seq[b], memory_order_relaxed) == s1) {
      *taken = p;
      return 1;
    }
  }
  return -1;
}
