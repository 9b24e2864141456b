/* main.c - qgmd: one MPI rank = one node of the decentralized run. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "checkpoint.h"
#include "config.h"
#include "control.h"
#include "log.h"
#include "mpi_util.h"
#include "node.h"
#include "trace.h"
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

/* 64-bit FNV-1a, enough to tell configurations apart. */
static uint64_t hash_text(const char *s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
  return h;
}

/* All ranks must run the same flags: differing ones would deadlock or
 * silently train different models. */
static int check_same_config(const char *json) {
  uint64_t h = hash_text(json), lo, hi;
  MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (lo == hi)
    return 0;
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0)
    LOG(LOG_ERROR, "the ranks were started with different flags; every rank "
        "must get the same command line and flag files");
  return 2;
}

/* The metrics file (rank 0) and the trace (every rank). */
static int open_outputs(qgmd_node_t *node, const char *config_json,
                        char *err, size_t errlen) {
  if (node->cfg->trace[0]) {
    node->trace = qgmd_trace_open(node->cfg->trace, node->rank, qgmd_now());
    if (!node->trace) {
      snprintf(err, errlen, "--trace=%s: cannot create the rank's file: %s",
               node->cfg->trace, strerror(errno));
      return 2;
    }
  }
  if (node->rank != 0 || node->cfg->metrics[0] == '\0')
    return 0;
  /* A resumed run appends: the records before the stop stay. */
  node->metrics = fopen(node->cfg->metrics, node->step > 0 ? "a" : "w");
  if (!node->metrics) {
    snprintf(err, errlen, "--metrics=%s: cannot create the file",
             node->cfg->metrics);
    return 2;
  }
  fprintf(node->metrics,
          "{\"type\":\"config\",\"version\":\"%s\",\"nodes\":%d,"
          "\"flags\":%s}\n",
          qgm_version(), node->nodes, config_json);
  fflush(node->metrics);
  return 0;
}

int main(int argc, char **argv) {
  static qgmd_config_t cfg;
  char err[1024] = "";
  int quiet = launcher_rank() != 0;
  switch (qgmd_config_parse(argc, argv, &cfg, quiet ? NULL : stdout, err,
                            sizeof err)) {
  case QGMD_PARSE_HELP:
  case QGMD_PARSE_VERSION:
    return 0;
  case QGMD_PARSE_ERROR:
    if (!quiet)
      LOG(LOG_ERROR, "%s (see --help)", err);
    return 2;
  case QGMD_PARSE_RUN:
    break;
  }
  if (qgmd_config_check(&cfg, err, sizeof err) != 0) {
    if (!quiet)
      LOG(LOG_ERROR, "%s", err);
    return 2;
  }
  set_log_level(cfg.log_level);
  static char config_json[16384];
  if (qgmd_config_json(&cfg, config_json, sizeof config_json) < 0) {
    LOG(LOG_ERROR, "configuration too large to record");
    return 2;
  }

  /* One worker thread per rank computes; only the loop thread calls MPI. */
  setenv("UV_THREADPOOL_SIZE", "1", 1);
  setenv("OMP_NUM_THREADS", "1", 0);
  setenv("BLIS_NUM_THREADS", "1", 0);
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  if (provided < MPI_THREAD_FUNNELED) {
    LOG(LOG_ERROR, "this MPI library does not support MPI_THREAD_FUNNELED");
    MPI_Finalize();
    return 1;
  }
  qgmd_node_t node = {.cfg = &cfg};
  MPI_Comm_rank(MPI_COMM_WORLD, &node.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &node.nodes);
  qgmd_log_rank = node.rank;

  int status = check_same_config(config_json);
  if (status == 0) {
    status = qgmd_node_load_data(&node, err, sizeof err);
    status = qgmd_agree(status, err);
  }
  if (status == 0) {
    status = qgmd_node_setup(&node, err, sizeof err);
    status = qgmd_agree(status, err);
  }
  if (status == 0) {
    status = qgmd_checkpoint_init(&node, err, sizeof err);
    status = qgmd_agree(status, err);
  }
  if (status == 0) {
    status = open_outputs(&node, config_json, err, sizeof err);
    status = qgmd_agree(status, err);
  }
  int loop_ready = status == 0 && qgmd_loop_init(&node.loop) == 0;
  if (status == 0) {
    status = loop_ready ? qgmd_control_start(&node, err, sizeof err) : 1;
    status = qgmd_agree(status, loop_ready ? err : "cannot start the loop");
  }
  if (loop_ready)
    qgmd_watchdog_arm(&node);
  if (status == 0) {
    if (node.rank == 0)
      LOG(LOG_INFO, "%s on a %d-node %s, %s (alpha %g), %llu steps per epoch",
          cfg.algorithm, node.nodes, cfg.topology, cfg.dataset, cfg.alpha,
          (unsigned long long)node.steps_per_epoch);
    status = qgmd_train(&node);
  }
  if (loop_ready && qgmd_loop_close(&node.loop) != 0) {
    LOG(LOG_ERROR, "the event loop still had open handles at exit");
    status = status ? status : 1;
  }
  qgmd_control_free(node.control);
  qgmd_checkpoint_free(node.checkpoint);
  if (qgmd_trace_close(node.trace) != 0 && status == 0) {
    LOG(LOG_ERROR, "--trace=%s: could not write the whole trace", cfg.trace);
    status = 1;
  }
  qgmd_node_free(&node);
  MPI_Finalize();
  return status;
}
