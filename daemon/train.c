/* train.c - the training loop of one node, read top to bottom: sample a
 * minibatch, compute the local gradient, take the local step, gossip,
 * finish the step; evaluate after every epoch. */
#include <math.h>
#include <stdio.h>

#include "log.h"
#include "mpi_util.h"
#include "node.h"

typedef struct evaluation {
  double train_loss;     /* mean over nodes of the epoch's mean batch loss */
  double acc_local_mean; /* mean over nodes of each local model's accuracy */
  double acc_avg_model;  /* accuracy of the averaged model */
  double consensus;      /* mean over nodes of ||x_i - x_bar||^2 */
} evaluation_t;

/* Collective. Every node scores its own model on the whole test set; the
 * averaged model is scored once, each rank taking a slice of the test set. */
static void evaluate(qgmd_node_t *node, double epoch_loss, evaluation_t *e) {
  const float *x = qgm_optim_params(node->optim);
  const size_t dim = qgm_optim_dim(node->optim);
  const size_t tests = qgm_dataset_count(node->test), tdim =
                                                          qgm_dataset_dim(
                                                              node->test);
  const float *images = qgm_dataset_images(node->test);
  const uint8_t *labels = qgm_dataset_labels(node->test);
  const double n = node->nodes;

  MPI_Allreduce(x, node->avg_params, (int)dim, MPI_FLOAT, MPI_SUM,
                MPI_COMM_WORLD);
  qgm_vec_scale_copy(node->avg_params, (float)(1.0 / n), node->avg_params,
                     dim);

  size_t correct = 0;
  double loss_sum = 0.0;
  qgm_model_evaluate(node->model, x, images, labels, tests, &correct,
                     &loss_sum);
  double local[4];
  local[0] = (double)correct / (double)tests;
  local[1] = qgm_vec_dist2(x, node->avg_params, dim);
  size_t lo = tests * (size_t)node->rank / (size_t)node->nodes;
  size_t hi = tests * ((size_t)node->rank + 1) / (size_t)node->nodes;
  correct = 0;
  if (hi > lo)
    qgm_model_evaluate(node->model, node->avg_params, images + lo * tdim,
                       labels + lo, hi - lo, &correct, &loss_sum);
  local[2] = (double)correct;
  local[3] = epoch_loss;
  double sum[4];
  MPI_Allreduce(local, sum, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  e->acc_local_mean = sum[0] / n;
  e->consensus = sum[1] / n;
  e->acc_avg_model = sum[2] / (double)tests;
  e->train_loss = sum[3] / n;
}

/* Trains on one minibatch; returns the batch loss. */
static float local_gradient(qgmd_node_t *node, uint64_t step_in_epoch) {
  const size_t batch = (size_t)node->cfg->batch_size;
  qgm_dataset_gather_train(node->train, node->order + step_in_epoch * batch,
                           batch, node->batch_x, node->batch_y, &node->rng);
  float loss = 0.0f;
  qgm_model_loss_grad(node->model, qgm_optim_params(node->optim),
                      node->batch_x, node->batch_y, batch,
                      qgm_optim_grad(node->optim), &loss);
  return loss;
}

static void write_eval(qgmd_node_t *node, long epoch, double lr,
                       const evaluation_t *e, double times[2]) {
  double wall = qgmd_now() - node->start_s;
  if (node->metrics) {
    fprintf(node->metrics,
            "{\"type\":\"eval\",\"epoch\":%ld,\"step\":%llu,\"wall_s\":%.3f,"
            "\"lr\":%.6g,\"train_loss\":%.6f,\"test_acc_local_mean\":%.6f,"
            "\"test_acc_avg_model\":%.6f,\"consensus_dist\":%.6g,"
            "\"compute_s\":%.3f,\"comm_s\":%.3f}\n",
            epoch, (unsigned long long)node->step, wall, lr, e->train_loss,
            e->acc_local_mean, e->acc_avg_model, e->consensus, times[0],
            times[1]);
    fflush(node->metrics);
  }
  if (node->rank == 0)
    LOG(LOG_INFO,
        "epoch %ld/%ld  step %llu  lr %.4g  loss %.4f  acc(avg model) %.4f  "
        "acc(local mean) %.4f  consensus %.3g  %.1fs",
        epoch, node->cfg->epochs, (unsigned long long)node->step, lr,
        e->train_loss, e->acc_avg_model, e->acc_local_mean, e->consensus,
        wall);
}

int qgmd_train(qgmd_node_t *node) {
  const long epochs = node->cfg->epochs;
  evaluation_t e = {0}, best = {0};
  double lr = 0.0;
  node->start_s = qgmd_now();
  for (long epoch = 1; epoch <= epochs; epoch++) {
    qgm_rng_shuffle(&node->rng, node->order, qgm_dataset_count(node->train));
    double loss_sum = 0.0;
    for (uint64_t s = 0; s < node->steps_per_epoch; s++) {
      lr = qgm_lr_at(&node->schedule, node->step);
      double t0 = qgmd_now();
      float loss = local_gradient(node, s);
      if (!isfinite(loss)) {
        LOG(LOG_ERROR, "loss is %f at epoch %ld step %llu: diverged (try a "
            "smaller --lr)", loss, epoch, (unsigned long long)node->step);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      loss_sum += loss;
      const float *msg = qgm_optim_local_step(node->optim, (float)lr);
      double t1 = qgmd_now();
      qgmd_gossip_exchange(&node->gossip, node->step, msg,
                           qgm_optim_mix_buffer(node->optim));
      double t2 = qgmd_now();
      qgm_optim_after_gossip(node->optim, (float)lr);
      node->compute_s += (t1 - t0) + (qgmd_now() - t2);
      node->comm_s += t2 - t1;
      node->step++;
    }
    evaluate(node, loss_sum / (double)node->steps_per_epoch, &e);
    if (e.acc_avg_model > best.acc_avg_model)
      best = e;
    double mine[2] = {node->compute_s, node->comm_s}, times[2];
    MPI_Reduce(mine, times, 2, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    times[0] /= node->nodes;
    times[1] /= node->nodes;
    write_eval(node, epoch, lr, &e, times);
  }
  if (node->rank == 0) {
    double wall = qgmd_now() - node->start_s;
    if (node->metrics) {
      fprintf(node->metrics,
              "{\"type\":\"summary\",\"epochs\":%ld,\"steps\":%llu,"
              "\"wall_s\":%.3f,\"final_test_acc_avg_model\":%.6f,"
              "\"best_test_acc_avg_model\":%.6f,"
              "\"final_test_acc_local_mean\":%.6f,"
              "\"final_consensus_dist\":%.6g,\"final_train_loss\":%.6f}\n",
              epochs, (unsigned long long)node->step, wall, e.acc_avg_model,
              best.acc_avg_model, e.acc_local_mean, e.consensus, e.train_loss);
      fflush(node->metrics);
    }
    LOG(LOG_INFO, "done: %s on a %d-node %s, %ld epochs in %.1f s: "
        "averaged-model test accuracy %.4f (best %.4f), local models %.4f, "
        "consensus distance %.3g",
        node->cfg->algorithm, node->nodes, node->cfg->topology, epochs,
        wall, e.acc_avg_model, best.acc_avg_model, e.acc_local_mean,
        e.consensus);
  }
  return 0;
}
