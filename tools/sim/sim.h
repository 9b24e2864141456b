/* sim.h - qgm-sim: n virtual nodes in one process, the same libqgm code as
 * qgmd, no MPI. Shared between the simulator's files only. */
#ifndef QGM_SIM_H
#define QGM_SIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "qgm.h"

#define SIM_STR 256

typedef struct sim_config {
  char algorithm[SIM_STR], topology[SIM_STR], problem[SIM_STR];
  char dataset[SIM_STR], data_dir[SIM_STR], model[SIM_STR], hidden[SIM_STR];
  char lr_schedule[SIM_STR], lr_decay_at[SIM_STR], metrics[SIM_STR];
  char host_topology[SIM_STR];
  long hosts;
  char compress[SIM_STR];
  long nodes, epochs, batch_size, seed, train_limit, test_limit;
  long dim, rows, eval_every;
  double alpha, lr, momentum, weight_decay, warmup_epochs, lr_decay_factor;
  double heterogeneity, noise, l2;
  double consensus_lr;
} sim_config_t;

/* Defaults, flag files, then the command line. Returns 0 to run, 1 when
 * --help or --version was printed, -1 with one line in err for bad
 * usage. */
int sim_config_parse(int argc, char **argv, sim_config_t *cfg, char *err,
                     size_t errlen);
/* The configuration as a JSON object (for the metrics' config record). */
void sim_config_json(const sim_config_t *cfg, FILE *out);

/* What the nodes train on: a synthetic problem or a real dataset and model.
 * The real one loads data exactly as qgmd does, node by node. */
typedef struct sim_work sim_work_t;

/* Returns an exit status (0, 2 bad input, 1 failure) with a line in err. */
int sim_work_create(const sim_config_t *cfg, sim_work_t **out, char *err,
                    size_t errlen);
void sim_work_free(sim_work_t *w);
size_t sim_work_dim(const sim_work_t *w);
size_t sim_work_shard(const sim_work_t *w); /* samples per node */
/* Node's initial model (the same for every node: stream 0 of the seed). */
void sim_work_init(sim_work_t *w, float *params);
/* Gradient of node's loss on its samples rows[0..n) at x; the batch loss. */
double sim_work_grad(sim_work_t *w, int node, const float *x,
                     const size_t *rows, size_t n, float *grad);

/* One evaluation after an epoch, in the daemon's metric names. */
typedef struct sim_eval {
  double acc_local_mean, acc_avg_model; /* < 0: not a classifier */
  double loss_gap, dist_to_opt;         /* < 0: optimum unknown */
} sim_eval_t;
/* Scores every node's model and the averaged one (avg, already formed). */
void sim_work_evaluate(sim_work_t *w, const float *const *models, int n,
                       const float *avg, sim_eval_t *e);

#endif /* QGM_SIM_H */
