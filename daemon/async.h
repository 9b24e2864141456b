/* async.h - asynchronous parameter-server training (--algorithm=asgd,
 * asgd-m or gsgm): rank 0 serves the model and applies gradients as they
 * arrive (async_server.c); every other rank is a worker that receives the
 * model, computes a gradient on its own shard and sends it back
 * (async_worker.c). The update rules are libqgm's qgm_server_t.
 *
 * The wire protocol, two messages of floats:
 *   server -> worker  [go, x_0 .. x_{d-1}]   go = 1: compute; a lone [0]
 *                                             tells the worker to stop
 *   worker -> server  [trailer..., g_0 .. g_{d-1}]
 * The trailer carries what the server must know without a status object
 * (the loop's request sets do not keep statuses): the sender, its
 * minibatch loss, its stop vote and its running time counters. Ranks are
 * small integers, exact in a float. */
#ifndef QGMD_ASYNC_H
#define QGMD_ASYNC_H

#include "config.h"
#include "mpi_tags.h"
#include "rank.h"

enum qgmd_async_trailer {
  QGMD_TRAILER_RANK = 0,
  QGMD_TRAILER_LOSS,
  QGMD_TRAILER_STOP,      /* the worker was asked to stop (signal) */
  QGMD_TRAILER_COMPUTE_S, /* the worker's gradient seconds so far */
  QGMD_TRAILER_WAIT_S,    /* seconds it waited for models so far */
  QGMD_TRAILER_LEN,
};

/* Whether cfg->algorithm names an asynchronous rule. */
int qgmd_async_mode(const qgmd_config_t *cfg);

/* Rank 0: serves until the run's updates are applied or a stop is asked
 * for. Returns an exit status. */
int qgmd_async_serve(qgmd_rank_t *rank);

/* Ranks 1..n-1: compute until the server says stop. Returns an exit
 * status. */
int qgmd_async_work(qgmd_rank_t *rank);

static inline int qgmd_async_run(qgmd_rank_t *rank) {
  return rank->id == 0 ? qgmd_async_serve(rank) : qgmd_async_work(rank);
}

#endif /* QGMD_ASYNC_H */
