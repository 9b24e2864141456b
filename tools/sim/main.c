/* main.c - qgm-sim: a decentralized run with n virtual nodes in one
 * process. The loop is qgmd's (daemon/train.c) with the MPI exchange
 * replaced by qgm_mix_messages, which does the daemon's arithmetic, so for
 * the same seed and flags the metrics agree with the daemon's. */
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collapse.h"
#include "exchange_plan.h"
#include "job.h"
#include "record.h"
#include "sim.h"

/* A training loss this many times the first step's has grown without
 * bound: the run is reported as diverged rather than carried on. */
#define DIVERGED_FACTOR 1e6

typedef struct sim {
  const sim_config_t *cfg;
  sim_work_t *work;
  qgm_topology_t *topology;
  int n;
  size_t dim, shard, batch;
  qgm_optim_t **optim;
  qgm_rng_t *rng;   /* node i's sampler, seeded as rank i's */
  size_t **order;   /* node i's sample order of the epoch */
  const float **msgs;
  float **mixes;
  const float **models;
  qgmd_exchange_plan_t exchange; /* the kind and how, as qgmd's ranks */
  const qgmd_exchange_def_t *def; /* its in-process form */
  void **states; /* node i's state of the exchange (NULL: none) */
  float *avg;
  double *loss_sum; /* node i's summed batch losses since the last eval */
  uint64_t last_eval; /* the step of the last evaluation */
  double first_loss; /* mean over nodes of the first step's batch loss */
  qgm_lr_schedule_t schedule;
  uint64_t steps_per_epoch, step;
  double start, compute_s, comm_s;
  qgmd_chance_t chance; /* the streak of evaluations at chance */
  FILE *metrics;
} sim_t;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* qgmd's checks, then what only the simulator refuses; 0 or 2 with a
 * line in err. */
static int check(sim_config_t *cfg, char *err, size_t errlen) {
  qgm_algorithm_t alg;
  if (qgmd_config_check(cfg, err, errlen) != 0)
    return 2;
  if (qgm_algorithm_parse(cfg->algorithm, &alg) != 0)
    snprintf(err, errlen, "--algorithm=%s: an asynchronous mode needs qgmd's "
             "server and workers; qgm-sim runs the synchronous algorithms "
             "(%s)", cfg->algorithm, qgm_algorithm_names());
  else {
    /* The synthetic problems' 2 steps per epoch with momentum 0.9 diverge
     * at qgmd's 0.1 on a 1024-node ring and converge at 0.02 from 16 to
     * 4096 nodes. */
    if (strcmp(cfg->problem, "dataset") != 0 && !qgmd_config_was_set("lr"))
      cfg->lr = 0.02;
    return 0;
  }
  return 2;
}

/* The exchange qgmd's ranks would run (qgmd_job_exchange), and every
 * node's state of it from the shared initial model, as each rank builds
 * its own. */
static int setup_exchange(sim_t *s, char *err, size_t errlen) {
  const qgm_optim_t *o = s->optim[0];
  size_t nmatrices;
  const qgm_matrix_block_t *matrices = sim_work_matrices(s->work, &nmatrices);
  int rc = qgmd_job_exchange(s->cfg, qgm_optim_algorithm(o),
                             qgm_optim_combine(o), qgm_optim_message_len(o),
                             s->dim, matrices, nmatrices, s->topology,
                             &s->exchange, err, errlen);
  if (rc != 0)
    return rc;
  s->def = qgmd_exchange_def(s->exchange.kind);
  if (!(s->states = calloc((size_t)s->n, sizeof *s->states)))
    return 1;
  for (int i = 0; s->def->create && rc == 0 && i < s->n; i++)
    rc = s->def->create(&s->exchange, i, qgm_optim_params(s->optim[i]),
                        &s->states[i]);
  if (rc != 0)
    snprintf(err, errlen, "setting up the exchange: %s", qgm_strerror(rc));
  return rc != 0;
}

static int setup(sim_t *s, char *err, size_t errlen) {
  const sim_config_t *cfg = s->cfg;
  s->n = (int)cfg->nodes;
  /* --hosts=auto: the simulator's nodes all share one host. */
  int rc = qgmd_job_topology(cfg, s->n, NULL, 1, &s->topology, err, errlen);
  if (rc != 0)
    return rc;
  rc = sim_work_create(cfg, &s->work, err, errlen);
  if (rc != 0)
    return rc;
  s->dim = sim_work_dim(s->work);
  s->shard = sim_work_shard(s->work);
  s->batch = (size_t)cfg->batch_size;
  const size_t n = (size_t)s->n;
  s->optim = calloc(n, sizeof *s->optim);
  s->rng = calloc(n, sizeof *s->rng);
  s->order = calloc(n, sizeof *s->order);
  s->msgs = calloc(n, sizeof *s->msgs);
  s->mixes = calloc(n, sizeof *s->mixes);
  s->models = calloc(n, sizeof *s->models);
  s->loss_sum = calloc(n, sizeof *s->loss_sum);
  s->avg = malloc(s->dim * sizeof *s->avg);
  if (!s->optim || !s->rng || !s->order || !s->msgs || !s->mixes ||
      !s->models || !s->loss_sum || !s->avg)
    return 1;
  qgm_optim_config_t ocfg = qgmd_job_optim(cfg);
  for (size_t i = 0; i < n; i++) {
    if (qgm_optim_create(&ocfg, s->dim, &s->optim[i]) != 0 ||
        !(s->order[i] = malloc(s->shard * sizeof *s->order[i])))
      return 1;
    sim_work_init(s->work, qgm_optim_params(s->optim[i]));
    qgm_rng_seed_sampler(&s->rng[i], (uint64_t)cfg->seed, i);
    for (size_t k = 0; k < s->shard; k++)
      s->order[i][k] = k;
  }
  rc = setup_exchange(s, err, errlen);
  if (rc != 0)
    return rc;
  s->steps_per_epoch = s->shard / s->batch;
  qgmd_job_schedule(cfg, s->steps_per_epoch, &s->schedule);
  return 0;
}

static void teardown(sim_t *s) {
  for (int i = 0; s->optim && i < s->n; i++) {
    qgm_optim_free(s->optim[i]);
    free(s->order[i]);
  }
  for (int i = 0; s->states && s->def->free && i < s->n; i++)
    s->def->free(s->states[i]);
  free(s->states);
  free(s->optim);
  free(s->rng);
  free(s->order);
  free(s->msgs);
  free(s->mixes);
  free(s->models);
  free(s->loss_sum);
  free(s->avg);
  sim_work_free(s->work);
  qgm_topology_free(s->topology);
  if (s->metrics)
    fclose(s->metrics);
}

/* Whether the step's mean loss says the run diverged (then says so, as
 * qgmd does for a loss that is no longer finite). */
static int diverged(sim_t *s, double loss) {
  if (s->step == 0)
    s->first_loss = loss;
  const int unbounded = s->first_loss > 0.0 &&
                        loss > DIVERGED_FACTOR * s->first_loss;
  if (isfinite(loss) && !unbounded)
    return 0;
  fprintf(stderr, "qgm-sim: loss is %g at epoch %llu step %llu%s: training "
          "diverged (try a smaller --lr)\n", loss,
          (unsigned long long)(s->step / s->steps_per_epoch + 1),
          (unsigned long long)s->step,
          unbounded ? ", a million times the first step's" : "");
  return 1;
}

/* One synchronous step of every node; 0, or 1 when the run diverged. */
static int step(sim_t *s, uint64_t step_in_epoch) {
  const float lr = (float)qgm_lr_at(&s->schedule, s->step);
  double t0 = now(), mean_loss = 0.0;
  for (int i = 0; i < s->n; i++) {
    qgm_optim_t *o = s->optim[i];
    double loss = 0.0;
    int rc = sim_work_grad(s->work, i, qgm_optim_params(o),
                           s->order[i] + step_in_epoch * s->batch, s->batch,
                           &s->rng[i], qgm_optim_grad(o), &loss);
    if (rc != 0) {
      fprintf(stderr, "qgm-sim: node %d's gradient: %s\n", i,
              qgm_strerror(rc));
      return 1;
    }
    mean_loss += loss / s->n;
    s->loss_sum[i] += loss;
    s->msgs[i] = qgm_optim_local_step(o, lr);
    s->mixes[i] = qgm_optim_mix_buffer(o);
  }
  if (diverged(s, mean_loss))
    return 1;
  double t1 = now();
  s->def->simulate(&s->exchange, s->step, s->states, s->msgs, s->mixes);
  double t2 = now();
  for (int i = 0; i < s->n; i++)
    qgm_optim_after_gossip(s->optim[i], lr);
  s->compute_s += (t1 - t0) + (now() - t2);
  s->comm_s += t2 - t1;
  s->step++;
  return 0;
}

typedef struct record {
  double train_loss, consensus;
  int has_momentum; /* the momentum norms below are defined */
  double momentum_mean, momentum_min, momentum_max;
  int dropping, has_push_sum; /* as qgmd's eval record (daemon/rank.h) */
  double messages_lost, push_sum_min, push_sum_max, push_sum_sum;
  sim_eval_t e;
} record_t;

/* The averaged model is summed in node order and scaled, as the daemon's
 * MPI_Allreduce and qgm_vec_scale_copy do (MPI may add in another order:
 * the results then differ by float rounding), each model weighed by its
 * push-sum weight (1 but for push-sum), as the daemon's (daemon/eval.c). */
static void evaluate(sim_t *s, record_t *r) {
  float total = 0.0f;
  for (int i = 0; i < s->n; i++) {
    s->models[i] = qgm_optim_params(s->optim[i]);
    const float w = (float)qgm_optim_push_sum_weight(s->optim[i]);
    if (i == 0)
      qgm_vec_scale_copy(s->avg, w, s->models[0], s->dim);
    else
      qgm_vec_axpy(s->avg, w, s->models[i], s->dim);
    total += w;
  }
  qgm_vec_scale_copy(s->avg, (float)(1.0 / total), s->avg, s->dim);
  r->train_loss = r->consensus = 0.0;
  const double steps = (double)(s->step - s->last_eval);
  for (int i = 0; i < s->n; i++) {
    r->train_loss += s->loss_sum[i] / steps;
    r->consensus += qgm_vec_dist2(s->models[i], s->avg, s->dim);
    s->loss_sum[i] = 0.0;
  }
  s->last_eval = s->step;
  r->train_loss /= s->n;
  r->consensus /= s->n;
  r->has_momentum = qgm_optim_momentum(s->optim[0]) != NULL;
  r->momentum_mean = 0.0;
  for (int i = 0; r->has_momentum && i < s->n; i++) {
    double norm = sqrt(qgm_vec_norm2(qgm_optim_momentum(s->optim[i]), s->dim));
    r->momentum_mean += norm / s->n;
    if (i == 0 || norm < r->momentum_min)
      r->momentum_min = norm;
    if (i == 0 || norm > r->momentum_max)
      r->momentum_max = norm;
  }
  const qgm_drop_t *drop = &s->exchange.drop;
  r->dropping = drop->rate > 0.0;
  r->has_push_sum = qgm_optim_combine(s->optim[0]) == QGM_COMBINE_PUSH_SUM;
  r->messages_lost = r->push_sum_sum = 0.0;
  for (int i = 0; i < s->n; i++) {
    const double w = qgm_optim_push_sum_weight(s->optim[i]);
    r->messages_lost +=
        (double)qgm_drop_count(s->topology, drop, i, s->step);
    r->push_sum_sum += w;
    if (i == 0 || w < r->push_sum_min)
      r->push_sum_min = w;
    if (i == 0 || w > r->push_sum_max)
      r->push_sum_max = w;
  }
  sim_work_evaluate(s->work, s->models, s->n, s->avg, &r->e);
}

/* The eval record, in qgmd's names; the accuracies only for a classifier,
 * the distance to the optimum only where it is known. */
static void write_eval(sim_t *s, double lr, const record_t *r) {
  if (!s->metrics)
    return;
  const int classifier = r->e.acc_avg_model >= 0.0;
  const int optimum = r->e.loss_gap >= -0.5;
  const int m = r->has_momentum;
  const qgmd_field_t fields[] = {
      QGMD_DOUBLE("epoch", "%.6g",
                  (double)s->step / (double)s->steps_per_epoch),
      QGMD_UINT("step", s->step),
      QGMD_DOUBLE("wall_s", "%.3f", now() - s->start),
      QGMD_DOUBLE("lr", "%.6g", lr),
      QGMD_DOUBLE("train_loss", "%.6f", r->train_loss),
      QGMD_IF(classifier, QGMD_DOUBLE("test_acc_local_mean", "%.6f",
                                      r->e.acc_local_mean)),
      QGMD_IF(classifier, QGMD_DOUBLE("test_acc_avg_model", "%.6f",
                                      r->e.acc_avg_model)),
      QGMD_IF(optimum, QGMD_DOUBLE("loss_gap", "%.6g", r->e.loss_gap)),
      QGMD_IF(optimum, QGMD_DOUBLE("dist_to_opt", "%.6g", r->e.dist_to_opt)),
      QGMD_IF(m, QGMD_DOUBLE("momentum_norm_mean", "%.6g", r->momentum_mean)),
      QGMD_IF(m, QGMD_DOUBLE("momentum_norm_min", "%.6g", r->momentum_min)),
      QGMD_IF(m, QGMD_DOUBLE("momentum_norm_max", "%.6g", r->momentum_max)),
      QGMD_IF(r->dropping,
              QGMD_DOUBLE("messages_lost", "%.0f", r->messages_lost)),
      QGMD_IF(r->has_push_sum, QGMD_DOUBLE("push_sum_weight_min", "%.9g",
                                           r->push_sum_min)),
      QGMD_IF(r->has_push_sum, QGMD_DOUBLE("push_sum_weight_max", "%.9g",
                                           r->push_sum_max)),
      QGMD_IF(r->has_push_sum, QGMD_DOUBLE("push_sum_weight_sum", "%.9g",
                                           r->push_sum_sum)),
      QGMD_DOUBLE("consensus_dist", "%.6g", r->consensus),
      QGMD_DOUBLE("compute_s", "%.3f", s->compute_s),
      QGMD_DOUBLE("comm_s", "%.3f", s->comm_s),
  };
  qgmd_record_write(s->metrics, "eval", QGMD_FIELDS(fields));
}

/* As qgmd (daemon/report.c): an evaluation past one of the bounds of
 * job/collapse.h, or the end of a streak at chance, ends the run with one
 * line; 1 then. Only for a model on a dataset, the runs the bounds were
 * drawn from: a synthetic problem's few parameters start further apart
 * per parameter than they allow, and its rule is the loss's (diverged). */
static int collapsed(sim_t *s, const record_t *r) {
  if (sim_work_classes(s->work) == 0)
    return 0;
  const qgmd_collapse_eval_t measures = {
      .epoch = (double)s->step / (double)s->steps_per_epoch,
      .step = s->step,
      .steps_per_epoch = s->steps_per_epoch,
      .dim = s->dim,
      .consensus = r->consensus,
      .has_momentum = r->has_momentum,
      .momentum_max = r->momentum_max,
      .accuracy = r->e.acc_avg_model,
      .classes = sim_work_classes(s->work),
  };
  char line[448];
  if (!qgmd_collapse_check(&measures, &s->chance,
                           s->cfg->stop_at_chance != 0, line, sizeof line))
    return 0;
  fprintf(stderr, "qgm-sim: %s\n", line);
  return 1;
}

/* The first record: what ran, marked as simulated, and on what: the CPU
 * and the paths the products took, as the daemon's config record names
 * them, so that a run can be replayed with the same rounding. */
static void write_config(sim_t *s) {
  static char flags[65536];
  qgmd_config_json(s->cfg, flags, sizeof flags);
  const qgmd_field_t fields[] = {
      QGMD_STRING("version", qgm_version()),
      QGMD_INT("nodes", s->n),
      QGMD_BOOL("simulated", 1),
      QGMD_STRING("cpu", qgm_cpu()),
      QGMD_STRING("kernels", qgm_kernels()),
      QGMD_JSON("flags", flags),
  };
  qgmd_record_write(s->metrics, "config", QGMD_FIELDS(fields));
}

static void write_summary(sim_t *s, const record_t *r, double best) {
  if (!s->metrics)
    return;
  const int classifier = r->e.acc_avg_model >= 0.0;
  const qgmd_field_t fields[] = {
      QGMD_INT("epochs", s->cfg->epochs),
      QGMD_UINT("steps", s->step),
      QGMD_DOUBLE("wall_s", "%.3f", now() - s->start),
      QGMD_IF(classifier, QGMD_DOUBLE("final_test_acc_avg_model", "%.6f",
                                      r->e.acc_avg_model)),
      QGMD_IF(classifier,
              QGMD_DOUBLE("best_test_acc_avg_model", "%.6f", best)),
      QGMD_IF(classifier, QGMD_DOUBLE("final_test_acc_local_mean", "%.6f",
                                      r->e.acc_local_mean)),
      QGMD_DOUBLE("final_consensus_dist", "%.6g", r->consensus),
      QGMD_DOUBLE("final_train_loss", "%.6f", r->train_loss),
  };
  qgmd_record_write(s->metrics, "summary", QGMD_FIELDS(fields));
}

static int train(sim_t *s) {
  const long epochs = s->cfg->epochs;
  record_t r = {0};
  double best = -1.0;
  s->start = now();
  for (long epoch = 1; epoch <= epochs; epoch++) {
    for (int i = 0; i < s->n; i++)
      qgm_rng_shuffle(&s->rng[i], s->order[i], s->shard);
    for (uint64_t k = 0; k < s->steps_per_epoch; k++) {
      const double lr = qgm_lr_at(&s->schedule, s->step);
      if (step(s, k) != 0)
        return 1;
      /* As qgmd: after every epoch, and every --eval-every steps. */
      const uint64_t every = (uint64_t)s->cfg->eval_every;
      if (k + 1 == s->steps_per_epoch || (every && s->step % every == 0)) {
        evaluate(s, &r);
        if (r.e.acc_avg_model > best)
          best = r.e.acc_avg_model;
        write_eval(s, lr, &r);
        if (collapsed(s, &r))
          return 1;
      }
    }
  }
  write_summary(s, &r, best);
  char nodes[48], runs[48], steps[48];
  printf("qgm-sim: %s on %s (%s), %s, %s: train loss %.6g, consensus "
         "distance %.4g", s->cfg->algorithm,
         qgm_count_text(nodes, sizeof nodes, s->n, "node"), s->cfg->topology,
         qgm_count_text(runs, sizeof runs, epochs, "epoch"),
         qgm_count_text(steps, sizeof steps, (long long)s->step, "step"),
         r.train_loss, r.consensus);
  if (r.e.loss_gap >= -0.5)
    printf(", loss gap %.4g, distance to optimum %.4g (relative)",
           r.e.loss_gap, r.e.dist_to_opt);
  if (r.e.acc_avg_model >= 0.0)
    printf(", averaged-model accuracy %.4f", r.e.acc_avg_model);
  printf("\n");
  return 0;
}

int main(int argc, char **argv) {
  static sim_config_t cfg;
  char err[10000] = "";
  int rc;
  switch (qgmd_config_parse(argc, argv, QGMD_PROGRAM_SIM, &cfg, stdout, err,
                            sizeof err)) {
  case QGMD_PARSE_RUN:
    break;
  case QGMD_PARSE_ERROR:
    fprintf(stderr, "qgm-sim: %s\n", err);
    return 2;
  default: /* --help, --version, --show-config, --show-flags */
    return 0;
  }
  if (check(&cfg, err, sizeof err) != 0) {
    fprintf(stderr, "qgm-sim: %s\n", err);
    return 2;
  }
  const char *caveat = qgmd_compress_caveat(&cfg);
  if (caveat)
    fprintf(stderr, "qgm-sim: warning: --compress=%s (--consensus-lr=%g): %s\n",
            cfg.compress, cfg.consensus_lr, caveat);
  sim_t s = {.cfg = &cfg};
  rc = setup(&s, err, sizeof err);
  if (rc == 0 && cfg.metrics[0]) {
    /* As the daemon's: a FIFO is refused, not waited on. */
    int fd = -1;
    if (qgm_open_stream(cfg.metrics, O_TRUNC, &fd) != 0 ||
        !(s.metrics = fdopen(fd, "w"))) {
      if (fd >= 0)
        close(fd);
      snprintf(err, sizeof err, "--metrics=%s: cannot create the file",
               cfg.metrics);
      rc = 2;
    } else {
      write_config(&s);
    }
  }
  if (rc != 0)
    fprintf(stderr, "qgm-sim: %s\n", *err ? err : "out of memory");
  else
    rc = train(&s);
  teardown(&s);
  return rc;
}
