/* sim.h - qgm-sim: n virtual nodes in one process, the same libqgm code as
 * qgmd, no MPI. Shared between the simulator's files only. */
#ifndef QGM_SIM_H
#define QGM_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "qgm.h"

/* The simulator reads qgmd's flag table (job/config.c): the flags
 * marked for it, with qgmd's names, defaults and checks. */
typedef qgmd_config_t sim_config_t;

/* What the nodes train on: a synthetic problem or a real dataset and model.
 * The real one is set up by qgmd's own job layer (job/job.h), node
 * by node. */
typedef struct sim_work sim_work_t;

/* Returns an exit status (0, 2 bad input, 1 failure) with a line in err. */
int sim_work_create(const sim_config_t *cfg, sim_work_t **out, char *err,
                    size_t errlen);
void sim_work_free(sim_work_t *w);
size_t sim_work_dim(const sim_work_t *w);
size_t sim_work_shard(const sim_work_t *w); /* samples per node */
/* The dataset's classes; 0 for a synthetic problem (no accuracy). */
int sim_work_classes(const sim_work_t *w);
/* The model's weight matrices (qgm_model_matrices); none for a synthetic
 * problem. */
const qgm_matrix_block_t *sim_work_matrices(const sim_work_t *w,
                                            size_t *count);
/* Node's initial model (the same for every node: qgm_rng_seed_model). */
void sim_work_init(sim_work_t *w, float *params);
/* Gradient of node's loss on its samples rows[0..n) at x, into grad, with
 * the batch loss in *loss; a training batch is drawn as qgmd's ranks draw
 * theirs (augmented where the dataset asks for it, from rng). Returns 0 or
 * a QGM_E code. */
int sim_work_grad(sim_work_t *w, int node, const float *x,
                  const size_t *rows, size_t n, qgm_rng_t *rng, float *grad,
                  double *loss);

/* One evaluation after an epoch, in the daemon's metric names. */
typedef struct sim_eval {
  double acc_local_mean, acc_avg_model; /* < 0: not a classifier */
  double loss_gap, dist_to_opt;         /* < 0: optimum unknown */
} sim_eval_t;
/* Scores every node's model and the averaged one (avg, already formed). */
void sim_work_evaluate(sim_work_t *w, const float *const *models, int n,
                       const float *avg, sim_eval_t *e);

#endif /* QGM_SIM_H */
