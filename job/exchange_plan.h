/* exchange_plan.h - which exchange a job's nodes run, and the part of every
 * exchange that qgmd and qgm-sim share. MPI-free, as all of job/.
 *
 * The exchange is chosen once, from the algorithm, the topology and
 * --compress (qgmd_job_exchange). Each kind then has two halves, each a
 * row of a table indexed by its qgmd_exchange_kind_t:
 *
 *   here (qgmd_exchange_def)     its state in libqgm, built from the
 *                                shared initial model; that state's
 *                                checkpoint sections; and its
 *                                in-process form, every node of the job
 *                                in one process (qgm-sim);
 *   daemon/exchange.h            its transport over MPI: init, start,
 *                                advance, finish the step, byte counts.
 *
 * A new kind is an enumerator, a file here with its definition (when it
 * has state or an in-process form of its own), a file in daemon/ with its
 * transport, and a row in each table. The step, the checkpoint and the
 * simulator follow from the tables. */
#ifndef QGMD_EXCHANGE_PLAN_H
#define QGMD_EXCHANGE_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "qgm.h"

typedef enum qgmd_exchange_kind {
  QGMD_EXCHANGE_NEIGHBOURS,  /* gossip of float vectors with the graph's
                                neighbours */
  QGMD_EXCHANGE_HOSTS,       /* hierarchical: a host's mean, gossiped
                                between hosts (--topology=hier) */
  QGMD_EXCHANGE_GLOBAL_MEAN, /* the mean over all nodes (allreduce) */
  QGMD_EXCHANGE_CHOCO,       /* compressed gossip, flat or between hosts
                                (--compress) */
  QGMD_EXCHANGE_RELAY,       /* RelaySum: every neighbour its own message
                                (relaysgd) */
  QGMD_EXCHANGE_MPI_ALLREDUCE, /* the mean by Open MPI's all-reduce
                                  (allreduce, --allreduce=mpi) */
  QGMD_EXCHANGE_COMPRESSED_MEAN, /* the mean, the hosts' means compressed
                                    between hosts (allreduce, --compress,
                                    --topology=hier) */
  QGMD_EXCHANGE_POWERSGD, /* PowerSGD's low-rank mean in two all-reduces
                             (allreduce, --compress=powersgd:R) */
  QGMD_EXCHANGE_POWERGOSSIP, /* PowerGossip: low-rank differences with each
                                neighbour (gossip, --compress=powersgd:R) */
  QGMD_EXCHANGE_ROUNDS, /* the neighbours' gossip, several rounds a step
                           (--gossip-rounds) */
  QGMD_EXCHANGE_KINDS
} qgmd_exchange_kind_t;

/* What every node of the job exchanges, and how. */
typedef struct qgmd_exchange_plan {
  qgmd_exchange_kind_t kind;
  const qgm_topology_t *topology;
  qgm_combine_t combine;
  size_t len;              /* floats of the optimizer's message */
  size_t dim;              /* floats of the model */
  qgm_choco_config_t choco; /* the compressor and its step, with CHOCO */
  qgm_drop_t drop;          /* the messages lost (--drop-rate) */
  int rounds;               /* neighbour exchanges a step: 1, but for
                               QGMD_EXCHANGE_ROUNDS (--gossip-rounds) */
  /* Chebyshev rounds (--gossip-acceleration=chebyshev): round k's
   * coefficients of qgm_vec_chebyshev_round and the weight of the message
   * in the mix (qgm_chebyshev_rounds); chebyshev 0: W^R. */
  int chebyshev;
  float chebyshev_b[QGMD_GOSSIP_ROUNDS_MAX];
  float chebyshev_e[QGMD_GOSSIP_ROUNDS_MAX];
  float chebyshev_w;
} qgmd_exchange_plan_t;

/* The kind's shared half. A kind without state leaves create NULL (its
 * state is NULL and it has no sections). */
typedef struct qgmd_exchange_def {
  const char *name;
  /* Node's state, from x0, the model every node starts from. Returns 0
   * or a QGM_E code. */
  int (*create)(const qgmd_exchange_plan_t *p, int node, const float *x0,
                void **state);
  void (*free)(void *state);
  /* The state's checkpoint section i: its name (of at most
   * QGMD_SECTION_NAME_MAX bytes) and floats. Returns 0 past the last. */
  int (*section)(void *state, int i, char *name, float **data,
                 size_t *len);
  /* The exchange of round by all nodes in one process, in the daemon's
   * arithmetic: mixes[i] from msgs[i] and the states. Returns 0 or a
   * QGM_E code. */
  int (*simulate)(const qgmd_exchange_plan_t *p, uint64_t round,
                  void *const *states, const float *const *msgs,
                  float *const *mixes);
} qgmd_exchange_def_t;

#define QGMD_SECTION_NAME_MAX 32

/* Picks the job's exchange for an optimizer of `algorithm` that combines
 * as `combine`, with messages of len floats over a model of dim with
 * these weight matrices (qgm_model_matrices; none for a synthetic
 * problem), on topology (already built and checked). Returns an exit
 * status with a line in err: 2 for compression the topology, algorithm
 * or model refuses. */
int qgmd_job_exchange(const qgmd_config_t *cfg, qgm_algorithm_t algorithm,
                      qgm_combine_t combine, size_t len, size_t dim,
                      const qgm_matrix_block_t *matrices, size_t nmatrices,
                      const qgm_topology_t *topology,
                      qgmd_exchange_plan_t *plan, char *err, size_t errlen);

const qgmd_exchange_def_t *qgmd_exchange_def(qgmd_exchange_kind_t kind);

/* The rows of the kinds with state (exchange_plan_choco.c,
 * exchange_plan_relay.c, exchange_plan_mean.c, exchange_plan_powersgd.c,
 * exchange_plan_powergossip.c, exchange_plan_rounds.c). */
extern const qgmd_exchange_def_t qgmd_exchange_def_choco;
extern const qgmd_exchange_def_t qgmd_exchange_def_relay;
extern const qgmd_exchange_def_t qgmd_exchange_def_mean;
extern const qgmd_exchange_def_t qgmd_exchange_def_powersgd;
extern const qgmd_exchange_def_t qgmd_exchange_def_powergossip;
extern const qgmd_exchange_def_t qgmd_exchange_def_rounds;

/* The vectors a node of QGMD_EXCHANGE_ROUNDS mixes its rounds into, one
 * after the other: a round's mix is the next round's message, and a mix
 * cannot be written over the vector it reads. A Chebyshev round's result
 * goes over the message before the round's (y_{k+1} over y_{k-1}). */
typedef struct qgmd_rounds_state {
  float *mix[2];
  const float *first; /* the daemon's: the step's own message, y_0 */
} qgmd_rounds_state_t;

/* The last step of Chebyshev rounds, in qgmd and qgm-sim alike:
 * mix = y_R + w (y_0 - y_R), y_0 the step's message. */
void qgmd_chebyshev_share(const qgmd_exchange_plan_t *p, float *mix,
                          const float *message);

#endif /* QGMD_EXCHANGE_PLAN_H */
