/* gradient.c - see gradient.h. */
#include "gradient.h"

#include <math.h>
#include <time.h>

#include "mpi_util.h"
#include "trace.h"

/* The device-time spread's random stream: apart from the samplers' (1 +
 * rank) and the initial model's (0). */
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

static void sleep_for(double seconds) {
  if (seconds <= 0.0)
    return;
  struct timespec ts = {(time_t)seconds,
                        (long)((seconds - (double)(time_t)seconds) * 1e9)};
  nanosleep(&ts, NULL);
}

void qgmd_gradient(qgmd_node_t *node, const float *params, float *grad) {
  const size_t batch = (size_t)node->cfg->batch_size;
  uint64_t in_epoch = node->step % node->steps_per_epoch;
  double t0 = qgmd_now();
  qgm_dataset_gather_train(node->train, node->order + in_epoch * batch, batch,
                           node->batch_x, node->batch_y, &node->rng);
  qgm_model_loss_grad(node->model, params, node->batch_x, node->batch_y,
                      batch, grad, &node->loss);
  double t1 = qgmd_now();
  /* An emulated slow device: the worker thread sleeps, the loop stays
   * live and the core is free. */
  if (node->device_s > 0.0)
    sleep_for(t0 + node->device_s - t1);
  else if (node->straggle > 1.0)
    sleep_for((node->straggle - 1.0) * (t1 - t0));
  t1 = qgmd_now();
  node->compute_s += t1 - t0;
  node->gradient_ended = t1;
  qgmd_trace_span(node->trace, "compute", QGMD_TRACE_WORKER, t0, t1);
}
