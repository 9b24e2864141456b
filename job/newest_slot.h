/* newest_slot.h - a writer's newest message, which other processes of the
 * host copy out of shared memory when they like (asynchronous gossip,
 * daemon/train_async.c).
 *
 * Why not a message per reader: the writer would copy its model once per
 * reader and each copy would move only when both sides call into MPI, so
 * a busy reader took messages many rounds old. Here the writer publishes
 * once per round, never waits, and a reader takes the newest message at
 * the moment it mixes.
 *
 * A block holds three buffers of len + 1 floats (the message, then its
 * round) under sequence counters (a seqlock each): the writer fills the
 * buffer after the newest one, a reader copies the newest and keeps the
 * copy only if its buffer's counter did not move meanwhile. With three
 * buffers a copy is torn only if the reader is descheduled for two of the
 * writer's rounds; it then tries again. The block lives in memory that
 * every process maps (an MPI shared window); nothing here knows MPI. */
#ifndef QGMD_NEWEST_SLOT_H
#define QGMD_NEWEST_SLOT_H

#include <stddef.h>
#include <stdint.h>

/* Bytes of a block for messages of len floats (the round comes on top). */
size_t qgmd_newest_slot_bytes(size_t len);

/* A block with nothing published and the writer not finished. */
void qgmd_newest_slot_init(void *block, size_t len);

/* The writer: msg (len floats) of round `round` becomes the newest. */
void qgmd_newest_slot_publish(void *block, size_t len, const float *msg,
                              double round);

/* The writer publishes no more. */
void qgmd_newest_slot_finish(void *block);
int qgmd_newest_slot_finished(const void *block);

/* A reader: when a message newer than the one it took last (*taken, 0
 * before any) was published, copies it, its round at dst[len], into dst
 * (len + 1 floats) and returns 1; 0 when there is nothing newer; -1 when
 * every try met the writer overwriting the buffer (dst is then
 * undefined; the reader keeps its older message). */
int qgmd_newest_slot_take(const void *block, size_t len, uint64_t *taken,
                          float *dst);

#endif
