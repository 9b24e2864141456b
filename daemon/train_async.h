/* train_async.h - the synchronous node's training loop when its gossip
 * is asynchronous (--sync=async with --max-staleness > 0; see
 * train_async.c). */
#ifndef QGMD_TRAIN_ASYNC_H
#define QGMD_TRAIN_ASYNC_H

#include "node.h"

/* Runs the node's training to the end; returns the exit status. */
int qgmd_train_async(qgmd_node_t *node);

#endif /* QGMD_TRAIN_ASYNC_H */
