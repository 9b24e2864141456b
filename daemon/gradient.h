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

#include "node.h"

/* This rank's emulated device time in seconds (0: none), from
 * --device-time, --straggle and --seed; the flags were validated. */
double qgmd_device_seconds(const qgmd_config_t *cfg, int rank);

/* Worker thread: the minibatch gradient at params of the node's batch at
 * node->step of the epoch's order into grad, the batch loss into
 * node->loss; then the emulated slow-down. Adds to node->compute_s, sets
 * node->gradient_ended and traces the span. node->rng draws the
 * augmentation: the loop thread must not use it meanwhile. */
void qgmd_gradient(qgmd_node_t *node, const float *params, float *grad);

#endif /* QGMD_GRADIENT_H */
