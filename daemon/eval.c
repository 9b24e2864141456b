/* eval.c - the synchronous node's evaluation after each epoch (and every
 * --eval-every steps); report.c writes its record.
 *
 * Every node scores its own model on the whole test set; the averaged model
 * is scored once, each rank taking a slice of the test set. The heavy parts
 * run on the worker thread and the reductions are non-blocking, so the
 * loop keeps serving signals and the control socket meanwhile; the sum of
 * the models is in flight while the worker scores the node's own model,
 * so that on slow links the one hides the other. */
#include <math.h>

#include "control.h"
#include "mpi_util.h"
#include "node.h"
#include "trace.h"

/* The phases of one evaluation, in their order. Each ends either on the
 * worker thread (scoring) or in a non-blocking reduction, and its end
 * starts the next (advance). */
typedef enum eval_phase {
  EVAL_SCORE_LOCAL,   /* worker: this node's model on the whole test set,
                         and MPI: every node's model summed, for the
                         average; both end before the next phase */
  EVAL_SCORE_AVERAGE, /* worker: the averaged model on this rank's slice */
  EVAL_SUM_SCORES,    /* MPI: the counts, losses, times and bytes summed */
  EVAL_DONE,          /* node->rank.last holds the evaluation */
} eval_phase_t;

/* The sums every evaluation reduces over the ranks. */
enum eval_sum {
  SUM_CORRECT_LOCAL,
  SUM_CONSENSUS,
  SUM_CORRECT_AVG,
  SUM_TRAIN_LOSS,
  SUM_COMPUTE_S,
  SUM_COMM_S,
  SUM_LOSS_LOCAL,
  SUM_LOSS_AVG,
  SUM_BYTES,                /* per step, since the process started */
  SUM_BYTES_BETWEEN_HOSTS,  /* of them, to ranks on other hosts */
  SUM_BYTES_IN_PLACE,       /* of them, read in place by peers */
  SUM_MOMENTUM_NORM,
  SUM_MESSAGES_LOST,        /* to this node, since round 0 */
  SUM_PUSH_SUM_WEIGHT,
  EVAL_SUMS
};

/* The extremes reduced with MPI_MAX: the best local accuracy and minus
 * the worst, the same of the momentum norm and of push-sum's weight. */
enum { EXTREMES = 6 };

typedef struct eval_job {
  qgmd_node_t *node;
  qgmd_done_fn done;
  double started;
  eval_phase_t phase;
  int pending; /* EVAL_SCORE_LOCAL: its two halves still running */
  double mine[EVAL_SUMS], sum[EVAL_SUMS];
  double extremes[EXTREMES], extremes_all[EXTREMES];
  MPI_Request requests[2];
} eval_job_t;

static eval_job_t job; /* one evaluation at a time per rank */

static void score_local(void *arg) {
  eval_job_t *j = arg;
  const qgmd_node_t *node = j->node;
  const qgm_dataset_t *test = node->rank.test;
  size_t correct = 0;
  double loss_sum = 0.0;
  qgm_model_evaluate(node->rank.model, qgm_optim_params(node->optim),
                     qgm_dataset_images(test), qgm_dataset_labels(test),
                     qgm_dataset_count(test), &correct, &loss_sum);
  const double acc = (double)correct / (double)qgm_dataset_count(test);
  j->mine[SUM_CORRECT_LOCAL] = (double)correct;
  j->mine[SUM_LOSS_LOCAL] = loss_sum;
  j->extremes[0] = acc;
  j->extremes[1] = -acc;
  const float *m = qgm_optim_momentum(node->optim);
  const double norm =
      m ? sqrt(qgm_vec_norm2(m, qgm_optim_dim(node->optim))) : 0.0;
  j->mine[SUM_MOMENTUM_NORM] = norm;
  j->extremes[2] = norm;
  j->extremes[3] = -norm;
  const double w = qgm_optim_push_sum_weight(node->optim);
  j->mine[SUM_PUSH_SUM_WEIGHT] = w;
  j->extremes[4] = w;
  j->extremes[5] = -w;
}

static void score_average(void *arg) {
  eval_job_t *j = arg;
  const qgmd_node_t *node = j->node;
  const qgmd_rank_t *rank = &node->rank;
  const size_t dim = qgm_optim_dim(node->optim);
  qgm_vec_scale_copy(node->avg_params,
                     (float)(1.0 / (double)node->avg_params[dim]),
                     node->avg_params, dim);
  j->mine[SUM_CONSENSUS] =
      qgm_vec_dist2(qgm_optim_params(node->optim), node->avg_params, dim);
  const size_t tests = qgm_dataset_count(rank->test);
  const size_t lo = tests * (size_t)rank->id / (size_t)rank->nodes;
  const size_t hi = tests * ((size_t)rank->id + 1) / (size_t)rank->nodes;
  size_t correct = 0;
  double loss_sum = 0.0;
  if (hi > lo)
    qgm_model_evaluate(rank->model, node->avg_params,
                       qgm_dataset_images(rank->test) +
                           lo * qgm_dataset_dim(rank->test),
                       qgm_dataset_labels(rank->test) + lo, hi - lo, &correct,
                       &loss_sum);
  j->mine[SUM_CORRECT_AVG] = (double)correct;
  j->mine[SUM_LOSS_AVG] = loss_sum;
}

/* The last step at or before `step` that ended an evaluation interval. */
static uint64_t interval_start(const qgmd_rank_t *rank, uint64_t step) {
  uint64_t start = step - step % rank->steps_per_epoch;
  const uint64_t every = (uint64_t)rank->cfg->eval_every;
  if (every > 0 && step - step % every > start)
    start = step - step % every;
  return start;
}

int qgmd_eval_due(const qgmd_node_t *node) {
  return interval_start(&node->rank, node->rank.step) == node->rank.step;
}

/* What this rank adds to the scores' sums besides them: its training loss
 * and times since the last evaluation, and its bytes per step. */
static void add_own_sums(eval_job_t *j) {
  const qgmd_node_t *node = j->node;
  const qgmd_rank_t *rank = &node->rank;
  /* epoch_loss sums the steps since the previous evaluation (a resumed
   * run restores it), so their count follows from the step alone. */
  const uint64_t steps = rank->step - interval_start(rank, rank->step - 1);
  j->mine[SUM_TRAIN_LOSS] = node->epoch_loss / (double)steps;
  j->mine[SUM_COMPUTE_S] = rank->compute_s;
  j->mine[SUM_COMM_S] = rank->comm_s;
  const double done = rank->step > rank->first_step
                          ? (double)(rank->step - rank->first_step)
                          : 1.0;
  j->mine[SUM_BYTES] = node->exchange.bytes_sent / done;
  j->mine[SUM_BYTES_BETWEEN_HOSTS] = node->exchange.bytes_between_hosts / done;
  j->mine[SUM_BYTES_IN_PLACE] = node->exchange.bytes_in_place / done;
  /* The rounds whose exchange has ended: every step's, or one per
   * --local-steps. */
  const qgmd_exchange_plan_t *plan = &node->exchange.plan;
  j->mine[SUM_MESSAGES_LOST] =
      node->exchange.messages_lost >= 0.0
          ? node->exchange.messages_lost
          : (double)qgm_drop_count(plan->topology, &plan->drop, rank->id,
                                   rank->step / node->local_steps);
}

/* rank->last from the sums, and the best evaluation so far. */
static void collect(const eval_job_t *j, qgmd_rank_t *rank) {
  const double n = rank->nodes, tests = (double)qgm_dataset_count(rank->test);
  qgmd_evaluation_t *e = &rank->last;
  const double *sum = j->sum;
  e->epoch = (double)rank->step / (double)rank->steps_per_epoch;
  e->step = rank->step;
  e->lr = rank->lr;
  e->acc_local_mean = sum[SUM_CORRECT_LOCAL] / tests / n;
  e->acc_local_max = j->extremes_all[0];
  e->acc_local_min = -j->extremes_all[1];
  e->consensus = sum[SUM_CONSENSUS] / n;
  e->has_momentum = qgm_optim_momentum(j->node->optim) != NULL;
  e->momentum_norm_mean = sum[SUM_MOMENTUM_NORM] / n;
  e->momentum_norm_max = j->extremes_all[2];
  e->momentum_norm_min = -j->extremes_all[3];
  e->dropping = j->node->exchange.plan.drop.rate > 0.0;
  e->messages_lost = sum[SUM_MESSAGES_LOST];
  e->has_push_sum =
      qgm_optim_combine(j->node->optim) == QGM_COMBINE_PUSH_SUM;
  e->push_sum_sum = sum[SUM_PUSH_SUM_WEIGHT];
  e->push_sum_max = j->extremes_all[4];
  e->push_sum_min = -j->extremes_all[5];
  e->acc_avg_model = sum[SUM_CORRECT_AVG] / tests;
  e->loss_local_mean = sum[SUM_LOSS_LOCAL] / tests / n;
  e->loss_avg_model = sum[SUM_LOSS_AVG] / tests;
  e->train_loss = sum[SUM_TRAIN_LOSS] / n;
  e->compute_s = sum[SUM_COMPUTE_S] / n;
  e->comm_s = sum[SUM_COMM_S] / n;
  e->bytes_per_step = sum[SUM_BYTES] / n;
  e->between_hosts_per_step = sum[SUM_BYTES_BETWEEN_HOSTS] / n;
  e->in_place_per_step = sum[SUM_BYTES_IN_PLACE] / n;
  if (e->acc_avg_model > rank->best.acc_avg_model)
    rank->best = *e;
}

static void advance(void *arg);

/* One half of EVAL_SCORE_LOCAL ended; the second advances. */
static void half_done(void *arg) {
  eval_job_t *j = arg;
  if (--j->pending == 0)
    advance(j);
}

/* Starts the sum of every node's model for the average, each weighed by
 * its push-sum weight and the weights summed after them: push-sum's
 * averaged model is the one its sums keep, sum x / sum w = sum w z / sum
 * w. The plain mean of the z would count a node whose weight fell, whose
 * model the others barely share, as much as the others
 * (docs/ALGORITHMS.md, "Push-sum (SGP)"). Every other rule's weight is 1,
 * and its average the plain mean, bit for bit. */
static void sum_models(eval_job_t *j) {
  qgmd_node_t *node = j->node;
  const size_t dim = qgm_optim_dim(node->optim);
  const double w = qgm_optim_push_sum_weight(node->optim);
  qgm_vec_scale_copy(node->avg_params, (float)w, qgm_optim_params(node->optim),
                     dim);
  node->avg_params[dim] = (float)w;
  MPI_Iallreduce(MPI_IN_PLACE, node->avg_params, (int)dim + 1, MPI_FLOAT,
                 MPI_SUM, MPI_COMM_WORLD, &j->requests[0]);
}

/* Starts j's phase; its end calls advance. */
static void start_phase(eval_job_t *j) {
  qgmd_node_t *node = j->node;
  qgmd_loop_t *loop = &node->rank.loop;
  switch (j->phase) {
  case EVAL_SCORE_LOCAL: /* both only read the model */
    qgmd_control_joining(&node->rank);
    sum_models(j);
    j->pending = 2;
    qgmd_loop_wait(loop, &node->eval_wait, j->requests, 1, half_done, j);
    qgmd_loop_work(loop, score_local, half_done, j);
    return;
  case EVAL_SCORE_AVERAGE:
    qgmd_loop_work(loop, score_average, advance, j);
    return;
  case EVAL_SUM_SCORES:
    add_own_sums(j);
    qgmd_control_joining(&node->rank);
    /* Both reductions in flight at once, completed together. */
    MPI_Iallreduce(j->mine, j->sum, EVAL_SUMS, MPI_DOUBLE, MPI_SUM,
                   MPI_COMM_WORLD, &j->requests[0]);
    MPI_Iallreduce(j->extremes, j->extremes_all, EXTREMES, MPI_DOUBLE,
                   MPI_MAX,
                   MPI_COMM_WORLD, &j->requests[1]);
    qgmd_loop_wait(loop, &node->eval_wait, j->requests, 2, advance, j);
    return;
  case EVAL_DONE:
    collect(j, &node->rank);
    qgmd_trace_span(node->rank.trace, "evaluate", QGMD_TRACE_LOOP,
                    j->started, qgmd_now());
    j->done(node);
    return;
  }
}

static void advance(void *arg) {
  eval_job_t *j = arg;
  j->phase++;
  start_phase(j);
}

void qgmd_evaluate(qgmd_node_t *node, qgmd_done_fn done) {
  job = (eval_job_t){.node = node, .done = done, .started = qgmd_now(),
                     .phase = EVAL_SCORE_LOCAL};
  start_phase(&job);
}
