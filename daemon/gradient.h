/* gradient.h - the one minibatch gradient of every mode: the synchronous
 * node (train.c) and the asynchronous worker (async_worker.c) both call
 * qgmd_gradient on the worker thread, so both draw the same training batch
 * (CIFAR augmentation included) and are slowed down the same way.
 *
 * Slowing down, for experiments on a small machine:
 *   --straggle=RANKS:FACTOR  those ranks compute FACTOR times slower (the
 *                            worker sleeps (FACTOR - 1) x its compute time);
 *   --device-time=MS[:J]     an emulated accelerator: a gradient takes at
 *                            least the rank's device time of wall time, the
 *                            worker thread sleeping out the rest, so the
 *                            core is free for the other ranks. A rank's
 *                            device time is MS x exp(J z), z ~ N(0, 1)
 *                            drawn once from --seed and the rank (a
 *                            log-normal spread of median MS), times FACTOR
 *                            for the --straggle ranks. */
#ifndef QGMD_GRADIENT_H
#define QGMD_GRADIENT_H

#include "rank.h"

/* What a rank that computes gradients holds besides its services: the
 * synchronous node and the asynchronous worker have one, the server none. */
typedef struct qgmd_minibatch {
  qgm_rng_t rng;  /* the sampler's stream, which draws the augmentation too */
  size_t *order;  /* the epoch's sample order over the shard */
  float *batch_x;
  uint8_t *batch_y;
  double straggle; /* compute this many times slower (emulated) */
  double device_s; /* a gradient's emulated device time */
  float loss;      /* the last gradient's batch loss */
  double took_s;   /* how long it took, emulated slow-downs included */
  double ended;    /* when the worker finished it, for the hand-off */
} qgmd_minibatch_t;

/* This rank's emulated device time in seconds (0: none), from
 * --device-time, --straggle and --seed; the flags were validated. */
double qgmd_device_seconds(const qgmd_config_t *cfg, int rank);

/* The sample order, the batch buffers, the sampler's stream and the
 * slow-down of rank. Returns 0, or -1 when out of memory. */
int qgmd_minibatch_init(qgmd_minibatch_t *mb, const qgmd_rank_t *rank);
void qgmd_minibatch_free(qgmd_minibatch_t *mb);

/* Loop thread, before a step's gradient is queued: a new epoch's step
 * shuffles the order (the worker thread then has mb->rng to itself). */
void qgmd_minibatch_next(qgmd_minibatch_t *mb, const qgmd_rank_t *rank);

/* Worker thread: the minibatch gradient at params of the batch at
 * rank->step of the epoch's order into grad, the batch loss into
 * mb->loss; then the emulated slow-down. Adds to rank->compute_s, sets
 * mb->ended and traces the span. mb->rng draws the augmentation: the loop
 * thread must not use it meanwhile. */
void qgmd_gradient(qgmd_rank_t *rank, qgmd_minibatch_t *mb,
                   const float *params, float *grad);

#endif /* QGMD_GRADIENT_H */
