/* watchdog.c - see watchdog.h.
 *
 * A rank killed with SIGKILL is usually noticed by mpirun, which ends the
 * job; a rank that hangs (stopped, swapping, stuck in a driver) is not,
 * and without a timeout its neighbours would wait in their receives
 * forever. The watchdog turns that into one clear error naming the ranks
 * that went quiet, then aborts the whole job: a decentralized step cannot
 * go on without a neighbour, and the last complete checkpoint is on disk
 * for --resume.
 *
 * A hang spreads: the neighbours of a stopped rank wait for it, their
 * other neighbours wait for them, and so on, all timing out within a few
 * steps of each other. So a rank whose exchange times out says what it
 * waits for and tells rank 0 (lost.c), which after a grace names the
 * ranks that did not, and their hosts: those that went silent, as far as
 * the ranks that can still reach rank 0 can tell. */
#include "watchdog.h"

#include <stdio.h>
#include <string.h>

#include "checkpoint.h"
#include "control.h"
#include "log.h"
#include "lost.h"
#include "mpi_util.h"
#include "node.h"

enum { GRACE_MS = 1500 };

static uv_timer_t abort_timer;
static int aborting;

static void abort_job(uv_timer_t *timer) {
  (void)timer;
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The peers whose messages of the round have not arrived (or, failing
 * that, which have not taken ours). */
static void silent_peers(const qgmd_exchange_t *g, char *out, size_t size) {
  size_t used = 0;
  out[0] = '\0';
  for (int pass = 0; pass < 2 && used == 0; pass++)
    for (int j = 0; j < g->degree; j++) {
      if (g->requests[pass * g->degree + j] == MPI_REQUEST_NULL)
        continue;
      int n = snprintf(out + used, size - used, "%s%d", used ? ", " : "",
                       g->peers[j]);
      if (n < 0 || (size_t)n >= size - used)
        return;
      used += (size_t)n;
    }
}

static void on_timeout(qgmd_wait_t *w, double waited, void *arg) {
  qgmd_node_t *node = arg;
  if (aborting)
    return;
  /* A collective that times out while an exchange is stuck too is stuck
   * for the same reason: the exchange can say who. */
  if (w != &node->exchange_wait &&
      qgmd_loop_waiting(&node->rank.loop, &node->exchange_wait)) {
    waited = qgmd_now() - node->exchange_wait.since;
    w = &node->exchange_wait;
  }
  const qgmd_config_t *cfg = node->rank.cfg;
  if (w == &node->exchange_wait && cfg->lost_after > 0) {
    double step_s, deadline = qgmd_lost_deadline(&node->rank, &step_s);
    if (waited < deadline)
      return;
    char who[256], why[160];
    silent_peers(&node->exchange, who, sizeof who);
    if (step_s > 0)
      snprintf(why, sizeof why, "--lost-after=%g median step times of "
               "%.3f s, at least %g s", cfg->lost_after, step_s,
               QGMD_LOST_FLOOR_S);
    else
      snprintf(why, sizeof why, "--comm-timeout=%g, before a step time is "
               "known", cfg->comm_timeout);
    LOG(LOG_ERROR, "no message from neighbour rank %s for %.1f s (%s) at "
        "step %llu: it is lost (died, hangs or cut off), or waits for one "
        "that is; ending the job (--resume continues from the last "
        "complete checkpoint)", who[0] ? who : "?", waited, why,
        (unsigned long long)node->rank.step);
    aborting = 1;
    qgmd_lost_noticed(&node->rank, w->since, 1);
    return;
  }
  /* The other waits, and the exchange without --lost-after, have
   * --comm-timeout (the loop may look more often, for the exchange). */
  if (waited < cfg->comm_timeout || cfg->comm_timeout <= 0)
    return;
  if (w == &node->exchange_wait) {
    char who[256];
    silent_peers(&node->exchange, who, sizeof who);
    LOG(LOG_ERROR, "no message from neighbour rank %s for %.1f s "
        "(--comm-timeout=%g) at step %llu: it died or hangs, or waits for "
        "one that did; aborting the job (--resume continues from the last "
        "complete checkpoint)",
        who[0] ? who : "?", waited, node->rank.cfg->comm_timeout,
        (unsigned long long)node->rank.step);
    /* Rank 0 names the ranks that went silent, and their hosts, from who
     * reported the timeout in the grace, then ends the job. */
    aborting = 1;
    qgmd_lost_noticed(&node->rank, w->since, 0);
    return;
  } else {
    char who[256] = "";
    const char *what = NULL;
    if (w == &node->control_wait)
      what = "the stop vote";
    else if (w == &node->eval_wait)
      what = "the evaluation";
    else if (qgmd_checkpoint_waits(node->checkpoint, w))
      what = "the checkpoint's agreement";
    if (w == &node->eval_wait || qgmd_checkpoint_waits(node->checkpoint, w))
      qgmd_control_behind(node->rank.control, node->rank.collectives, who,
                          sizeof who);
    /* Other sets (rank 0's standing receive of status reports) are idle
     * by design, not stuck. */
    if (!what)
      return;
    if (who[0])
      LOG(LOG_ERROR, "%s has had no word from rank %s for %.1f s "
          "(--comm-timeout=%g) at step %llu: it died or hangs, or waits for "
          "one that did; aborting the job (--resume continues from the "
          "last complete checkpoint)", what, who, waited,
          node->rank.cfg->comm_timeout, (unsigned long long)node->rank.step);
    else
      LOG(LOG_ERROR, "%s has waited %.1f s for another rank "
          "(--comm-timeout=%g) at step %llu: a rank died or hangs; aborting "
          "the job (--resume continues from the last complete checkpoint)",
          what, waited, node->rank.cfg->comm_timeout,
          (unsigned long long)node->rank.step);
  }
  qgmd_watchdog_abort_soon(&node->rank.loop);
}

int qgmd_watchdog_aborting(void) { return aborting; }

void qgmd_watchdog_abort_soon(qgmd_loop_t *loop) {
  if (aborting)
    return;
  aborting = 1;
  if (uv_timer_init(&loop->uv, &abort_timer) != 0 ||
      uv_timer_start(&abort_timer, abort_job, GRACE_MS, 0) != 0)
    MPI_Abort(MPI_COMM_WORLD, 1);
}

void qgmd_watchdog_keep_word(void) {
  if (aborting)
    MPI_Abort(MPI_COMM_WORLD, 1);
}

void qgmd_watchdog_step(qgmd_node_t *node, double seconds) {
  qgmd_lost_step(seconds);
  double step_s, deadline = qgmd_lost_deadline(&node->rank, &step_s);
  const double comm = node->rank.cfg->comm_timeout;
  node->rank.loop.timeout_s = comm > 0 && comm < deadline ? comm : deadline;
}

void qgmd_watchdog_arm(qgmd_node_t *node) {
  node->rank.loop.timeout_s = node->rank.cfg->comm_timeout;
  node->rank.loop.on_timeout = on_timeout;
  node->rank.loop.timeout_arg = node;
}
