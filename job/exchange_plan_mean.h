/* exchange_plan_mean.h - the compressed mean of the all-reduce (the
 * --algorithm=allreduce --compress kind): the arithmetic that qgmd's
 * ranks and qgm-sim share, so that both compute the same bits.
 *
 * On a hierarchical topology (its hosts, from the flags, whatever the
 * real placement), each host's exact mean travels between hosts
 * compressed: slot s of host h encodes slice s of its host's mean
 * (qgm_host_slice) with an unbiased operator (qsgd or randk), draws from
 * its own stream of the seed, and every slot s decodes every host's
 * message, scales it to be unbiased, and takes the mean over the hosts as
 * qgm_vec_tree_sum sums them. */
#ifndef QGMD_EXCHANGE_PLAN_MEAN_H
#define QGMD_EXCHANGE_PLAN_MEAN_H

#include <stddef.h>
#include <stdint.h>

#include "exchange_plan.h"

/* A node's state: the operator for its slot's slice, and room for one
 * message. */
typedef struct qgmd_mean_state {
  qgm_compress_t *compress;
  uint8_t *wire;
  size_t slice_at, slice_len;
  float *decoded; /* room for every host's decoded slice, by host */
} qgmd_mean_state_t;

/* Encodes v (the node's slice of its host's mean) for round into s->wire;
 * *bytes its length. */
int qgmd_mean_encode(qgmd_mean_state_t *s, const qgmd_exchange_plan_t *p,
                     uint64_t round, int node, const float *v,
                     size_t *bytes);
/* out (the slice's floats) = the unbiased decoding of host `host`'s
 * message of round, in; node is the slot of that host that sent it. */
int qgmd_mean_decode(qgmd_mean_state_t *s, const qgmd_exchange_plan_t *p,
                     uint64_t round, int node, const uint8_t *in,
                     float *out);
/* out = the mean of the hosts' decoded slices dec[0..hosts), in the
 * tree's order. */
void qgmd_mean_over_hosts(const float *const *dec, int hosts, size_t n,
                          float *out);

#endif /* QGMD_EXCHANGE_PLAN_MEAN_H */
