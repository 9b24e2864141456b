/* main.c - qgmd: one MPI rank = one node of the decentralized run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "async.h"
#include "checkpoint.h"
#include "config.h"
#include "control.h"
#include "host_files.h"
#include "data_cache.h"
#include "log.h"
#include "lost.h"
#include "memory.h"
#include "metrics_file.h"
#include "mpi_util.h"
#include "node.h"
#include "provenance.h"
#include "rank.h"
#include "report.h"
#include "signals.h"
#include "trace.h"
#include "startup.h"
#include "watchdog.h"

/* Before MPI_Init the rank is only known from the launcher's environment;
 * it decides who prints usage errors, so that N ranks say them once. */
static int launcher_rank(void) {
  const char *r = getenv("OMPI_COMM_WORLD_RANK");
  return r ? atoi(r) : 0;
}

static void set_log_level(const char *name) {
  static const char *const names[] = {"error", "warning", "info", "debug"};
  for (int i = 0; i < 4; i++)
    if (strcmp(name, names[i]) == 0)
      qgmd_log_level = i;
}

/* The metrics file (rank 0) and the trace (every rank). */
static int open_outputs(qgmd_rank_t *rank, const char *config_json,
                        const char *provenance, char *err, size_t errlen) {
  char why[256];
  int rc = 0;
  if (rank->cfg->trace[0]) {
    rank->trace =
        qgmd_trace_open(rank->cfg->trace, rank->id, qgmd_now(), &rc);
    if (!rank->trace) {
      snprintf(err, errlen, "--trace=%s: cannot create the rank's file: %s",
               rank->cfg->trace, qgmd_reason(rc, why, sizeof why));
      return 2;
    }
  }
  if (rank->id != 0 || rank->cfg->metrics[0] == '\0')
    return 0;
  /* A resumed run continues the file, and its clock goes on from the
   * records kept. */
  rc = qgmd_metrics_open(rank->cfg->metrics, rank->step, &rank->metrics,
                         &rank->resumed_wall_s);
  if (rc != 0) {
    snprintf(err, errlen, "--metrics=%s: cannot create the file: %s",
             rank->cfg->metrics, qgmd_reason(rc, why, sizeof why));
    return 2;
  }
  qgmd_report_config(rank, provenance, config_json);
  return 0;
}

int main(int argc, char **argv) {
  /* Before anything else: a signal now must wait for the loop, not kill
   * the rank while it starts. */
  if (qgmd_signals_fix() != 0) {
    perror("qgmd: cannot block signals");
    return 1;
  }
  static qgmd_config_t cfg;
  char err[1024] = "";
  int quiet = launcher_rank() != 0;
  int status = 0;
  switch (qgmd_config_parse(argc, argv, QGMD_PROGRAM_DAEMON, &cfg,
                            quiet ? NULL : stdout, err, sizeof err)) {
  case QGMD_PARSE_HELP:
  case QGMD_PARSE_VERSION:
  case QGMD_PARSE_SHOWN:
    return 0;
  case QGMD_PARSE_ERROR:
    status = 2;
    break;
  case QGMD_PARSE_RUN:
    if (qgmd_config_check(&cfg, err, sizeof err) != 0)
      status = 2;
    break;
  }
  static char config_json[16384];
  if (status == 0 && qgmd_config_json(&cfg, config_json,
                                      sizeof config_json) < 0) {
    snprintf(err, sizeof err, "configuration too large to record");
    status = 2;
  }
  if (status == 0)
    set_log_level(cfg.log_level);
  if (status != 0)
    strncat(err, " (see --help)", sizeof err - strlen(err) - 1);
  /* Started by hand, a usage error needs no MPI. Under mpirun it is
   * reported after MPI_Init, through qgmd_agree: a rank whose flag file is
   * broken must not leave the others waiting, and N ranks with the same
   * mistake should say it once. */
  if (status != 0 && !getenv("OMPI_COMM_WORLD_SIZE")) {
    LOG(LOG_ERROR, "%s", err);
    return status;
  }

  /* The host's first rank starts inflating the dataset's files now: the
   * launcher has started the other ranks, whose MPI_Init it would
   * otherwise wait for first. */
  static qgmd_host_files_t host_files;
  qgm_data_spec_t data = {0};
  char cache[4096] = "";
  if (status == 0) {
    data = qgmd_job_data(&cfg);
    qgmd_data_cache_dir(cfg.data_cache, cache, sizeof cache);
  }
  qgmd_host_files_prefetch(&host_files, status == 0 ? &data : NULL, cache);

  /* One worker thread per rank computes; only the loop thread calls MPI. */
  setenv("UV_THREADPOOL_SIZE", "1", 1);
  setenv("OMP_NUM_THREADS", "1", 0);
  setenv("BLIS_NUM_THREADS", "1", 0);
  qgmd_mpi_transport_defaults(status == 0 && qgmd_job_sends_eagerly(&cfg));
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  if (provided < MPI_THREAD_FUNNELED) {
    LOG(LOG_ERROR, "this MPI library does not support MPI_THREAD_FUNNELED");
    MPI_Finalize();
    return 1;
  }
  /* A synchronous rank is a gossip node, which holds the rank's services
   * (node.h); an asynchronous rank holds those alone: the server and its
   * workers build their own state (async.h), and nothing of the gossip
   * node's is built or checked for them, no topology either. */
  static qgmd_node_t sync_node;
  static qgmd_rank_t async_rank;
  const int async = status == 0 && qgmd_async_mode(&cfg);
  qgmd_node_t *node = async ? NULL : &sync_node;
  qgmd_rank_t *rank = node ? &node->rank : &async_rank;
  qgm_topology_t *topology = NULL;
  rank->cfg = &cfg;
  rank->async = async;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank->id);
  MPI_Comm_size(MPI_COMM_WORLD, &rank->nodes);
  rank->from_rank = rank->part = rank->id;
  rank->from_nodes = rank->parts = rank->nodes;
  qgmd_log_rank = rank->id;

  status = qgmd_agree(status, err);
  if (status == 0)
    status = qgmd_check_same_flags(config_json);
  if (status == 0 && qgmd_placement_find(&rank->placement) != 0) {
    snprintf(err, sizeof err, "out of memory finding the ranks' hosts");
    status = qgmd_agree(1, err);
  }
  if (status == 0 && node) {
    status = qgmd_make_topology(rank, &topology, err, sizeof err);
    node->topology = topology;
    status = qgmd_agree(status, err);
  }
  if (status == 0 && node) { /* which checkpoint rank and shard, if any */
    status = qgmd_checkpoint_plan(rank, err, sizeof err);
    status = qgmd_agree(status, err);
  }
  if (status == 0) {
    status = qgmd_rank_load_data(rank, &host_files, err, sizeof err);
    status = qgmd_agree(status, err);
  }
  if (status == 0)
    status = qgmd_check_same_inputs(rank, topology);
  if (status == 0) {
    qgmd_log_startup(rank, topology, config_json);
    MPI_Comm_size(rank->placement.host, &rank->ranks_here);
    status = qgmd_rank_setup(rank, err, sizeof err);
    if (status == 0 && node)
      status = qgmd_node_setup(node, err, sizeof err);
    status = qgmd_agree(status, err);
  }
  if (status == 0 && node) {
    status = qgmd_node_share_host(node, err, sizeof err);
    status = qgmd_agree(status, err);
  }
  if (status == 0) { /* every mode's checkpoint flags are checked */
    status = node ? qgmd_checkpoint_init(node, err, sizeof err)
                  : qgmd_checkpoint_check_flags(&cfg, err, sizeof err);
    status = qgmd_agree(status, err);
  }
  if (status == 0 && node) { /* host names for the record of lost ranks */
    snprintf(err, sizeof err, "out of memory");
    status = qgmd_agree(qgmd_lost_setup(rank), err);
  }
  static char provenance[32768];
  if (status == 0 && qgmd_provenance_json(provenance, sizeof provenance)) {
    snprintf(err, sizeof err, "the flags' origins are too long to record");
    status = 2;
  }
  if (status == 0) {
    status = open_outputs(rank, config_json, provenance, err, sizeof err);
    status = qgmd_agree(status, err);
  }
  int loop_ready = status == 0 && qgmd_loop_init(&rank->loop) == 0;
  if (status == 0) {
    status = loop_ready ? qgmd_control_start(rank, err, sizeof err) : 1;
    status = qgmd_agree(status, loop_ready ? err : "cannot start the loop");
  }
  if (loop_ready && node)
    qgmd_watchdog_arm(node);
  if (status == 0 && !node) {
    status = qgmd_async_run(rank);
  } else if (status == 0) {
    if (rank->id == 0) {
      char job[256];
      qgmd_report_job(rank, job, sizeof job);
      char steps[48];
      qgm_count_text(steps, sizeof steps, (long long)rank->steps_per_epoch,
                     "step");
      LOG(LOG_INFO, "%s, %s (alpha %g), %s per epoch", job, cfg.dataset,
          cfg.alpha, steps);
    }
    status = qgmd_train(node);
  }
  if (loop_ready)
    qgmd_watchdog_keep_word();
  if (loop_ready && qgmd_loop_close(&rank->loop) != 0) {
    LOG(LOG_ERROR, "the event loop still had open handles at exit");
    status = status ? status : 1;
  }
  qgmd_control_free(rank->control);
  if (qgmd_trace_close(rank->trace) != 0 && status == 0) {
    LOG(LOG_ERROR, "--trace=%s: could not write the whole trace", cfg.trace);
    status = 1;
  }
  if (node) {
    qgmd_checkpoint_free(node->checkpoint);
    qgmd_node_free(node);
  }
  qgmd_rank_free(rank);
  qgmd_lost_free();
  qgmd_host_files_release(&host_files); /* when start-up stopped before */
  /* Every rank gets here (a failure at start-up is agreed on first), so
   * the barrier cannot hang; it lets the last messages of every rank
   * complete before Open MPI tears its transports down. Then _exit: once
   * MPI_Finalize has unloaded Open MPI's components, no library destructor
   * runs after it (a rank ended by SIGSEGV after printing its error, under
   * heavy load, with a fault in unmapped code). */
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  fflush(NULL);
  _exit(status);
}
