/* gradient.c - see gradient.h. */
#include "gradient.h"

#include <math.h>
#include <stdlib.h>

#include "mpi_util.h"
#include "stop_sleep.h"
#include "trace.h"

/* The device-time spread's random stream: far from the model's and the
 * samplers' (qgm_rng_seed_model, qgm_rng_seed_sampler). */
#define DEVICE_STREAM (UINT64_C(1) << 40)

double qgmd_device_seconds(const qgmd_config_t *cfg, int rank) {
  double ms, jitter, factor;
  int max_rank;
  qgmd_config_device_time(cfg, &ms, &jitter);
  qgmd_config_straggle(cfg, rank, &factor, &max_rank);
  if (ms <= 0.0)
    return 0.0;
  qgm_rng_t rng;
  qgm_rng_seed(&rng, (uint64_t)cfg->seed, DEVICE_STREAM + (uint64_t)rank);
  return ms * 1e-3 * exp(jitter * qgm_rng_normal(&rng)) * factor;
}

int qgmd_minibatch_init(qgmd_minibatch_t *mb, const qgmd_rank_t *rank) {
  const qgmd_config_t *cfg = rank->cfg;
  const size_t shard = qgm_dataset_count(rank->train);
  const size_t batch = (size_t)cfg->batch_size;
  const size_t dim = qgm_dataset_dim(rank->train);
  mb->order = malloc(shard * sizeof *mb->order);
  mb->batch_x = malloc(batch * dim * sizeof *mb->batch_x);
  mb->batch_y = malloc(batch);
  if (!mb->order || !mb->batch_x || !mb->batch_y)
    return -1;
  for (size_t i = 0; i < shard; i++)
    mb->order[i] = i;
  qgm_rng_seed_sampler(&mb->rng, (uint64_t)cfg->seed, (uint64_t)rank->id);
  int max_rank;
  qgmd_config_straggle(cfg, rank->id, &mb->straggle, &max_rank);
  mb->device_s = qgmd_device_seconds(cfg, rank->id);
  return 0;
}

void qgmd_minibatch_free(qgmd_minibatch_t *mb) {
  free(mb->order);
  free(mb->batch_x);
  free(mb->batch_y);
}

void qgmd_minibatch_next(qgmd_minibatch_t *mb, const qgmd_rank_t *rank) {
  if (rank->step % rank->steps_per_epoch == 0)
    qgm_rng_shuffle(&mb->rng, mb->order, qgm_dataset_count(rank->train));
}

void qgmd_gradient(qgmd_rank_t *rank, qgmd_minibatch_t *mb,
                   const float *params, float *grad) {
  const size_t batch = (size_t)rank->cfg->batch_size;
  uint64_t in_epoch = rank->step % rank->steps_per_epoch;
  double t0 = qgmd_now();
  qgm_dataset_gather_train(rank->train, mb->order + in_epoch * batch, batch,
                           mb->batch_x, mb->batch_y, &mb->rng);
  qgm_model_loss_grad(rank->model, params, mb->batch_x, mb->batch_y, batch,
                      grad, &mb->loss);
  double t1 = qgmd_now();
  /* An emulated slow device: the worker thread sleeps, the loop stays
   * live and the core is free; a stop cuts the sleep short. */
  if (mb->device_s > 0.0)
    qgmd_stop_sleep(t0 + mb->device_s - t1);
  else if (mb->straggle > 1.0)
    qgmd_stop_sleep((mb->straggle - 1.0) * (t1 - t0));
  t1 = qgmd_now();
  rank->compute_s += t1 - t0;
  mb->took_s = t1 - t0;
  mb->ended = t1;
  qgmd_trace_span(rank->trace, "compute", QGMD_TRACE_WORKER, t0, t1);
}
