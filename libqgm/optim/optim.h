/* optim.h - the layout of qgm_optim_t and the contract between the generic
 * entry points (optim.c) and the algorithm families (optim_momentum.c,
 * optim_adam.c, optim_track.c, optim_gut.c); not installed.
 *
 * An algorithm is a row of a table: its name, how its message is mixed, how
 * long the message is, which state vectors it keeps, and the two halves of
 * its step. The generic code allocates and lists the state from the row, so
 * a family file holds nothing but update rules. */
#ifndef QGM_OPTIM_H
#define QGM_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "qgm.h"

#define OPTIM_MAX_STATE 2

typedef struct optim_kind {
  const char *name;
  qgm_combine_t mixing;
  /* The message is x-sized (1) or [x, y] (2, gradient tracking; the model
   * buffer then holds both halves and is itself the message). */
  int message_parts;
  /* Names of the state vectors besides x, in buf[] order; NULL-terminated
   * when shorter than OPTIM_MAX_STATE. */
  const char *state[OPTIM_MAX_STATE];
  /* Builds the message from x_t and the gradient the caller wrote. */
  void (*local_step)(qgm_optim_t *o, float lr);
  /* Finishes the step from the mixed messages; must leave x_{t+1} in o->x
   * (usually by qgm__optim_take_mix). */
  void (*after_gossip)(qgm_optim_t *o, float lr);
  /* The gossip average of qgm_optim_gossip_step and after_gossip in one
   * pass, or NULL; returns 0 when it did them, 1 where it does not apply
   * (then the caller does both). */
  int (*mix_and_update)(qgm_optim_t *o, float lr, const float *base,
                        const float *own, int k, const float *const *peers,
                        const double *weights);
  /* 1: push-sum. The model buffer holds [z, w], the de-biased model and
   * its push-sum weight (one float, 1 at the start, listed as state "w"),
   * and the message is [w z', w], one float longer than the model. */
  int weighted;
} optim_kind_t;

struct qgm_optim {
  qgm_optim_config_t cfg;
  const optim_kind_t *kind;
  size_t dim;
  uint64_t steps;
  float *x;   /* x_t (message_parts x dim floats; push-sum: and w) */
  float *g;   /* gradient of the local loss at x_t, written by the caller */
  float *msg; /* the message, or NULL when x itself is the message */
  float *own_msg; /* what msg points to unless the caller gave a buffer */
  float *mix; /* the mixed messages, written by the caller */
  float *buf[OPTIM_MAX_STATE]; /* the kind's state vectors, dim each */
};

/* x_{t+1} is the mixed vector: swapping the buffers saves a copy. */
static inline void qgm__optim_take_mix(qgm_optim_t *o) {
  float *next = o->mix;
  o->mix = o->x;
  o->x = next;
}

/* The rows of the families, in qgm_algorithm_t order within each. */
extern const optim_kind_t qgm_optim_dsgd, qgm_optim_dsgdm, qgm_optim_dsgdm_n,
    qgm_optim_qg_dsgdm, qgm_optim_qg_dsgdm_n, qgm_optim_allreduce,
    qgm_optim_relaysgd, qgm_optim_sgp, qgm_optim_qg_sgp;
extern const optim_kind_t qgm_optim_dadam, qgm_optim_qg_dadam;
extern const optim_kind_t qgm_optim_d2, qgm_optim_gt, qgm_optim_mt;
extern const optim_kind_t qgm_optim_gut, qgm_optim_qg_gutm;

#endif /* QGM_OPTIM_H */
