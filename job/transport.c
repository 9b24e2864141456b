/* transport.c - how the nodes' messages travel: --overlap (the exchange
 * of x_t runs while the gradient at x_t is computed), --shared-memory
 * (ranks on one host read each other's messages in place) and
 * --allreduce (whose all-reduce averages over all nodes: qgmd's own or
 * Open MPI's). Each is a switch whose first name turns it on. */
#include <stdio.h>
#include <string.h>

#include "feature.h"
#include "job.h"

static const char *const overlap_names[] = {"on", "off", NULL};
static const char *const shared_memory_names[] = {"auto", "off", NULL};
static const char *const allreduce_names[] = {"mpi", "qgmd", NULL};

static int parse_switch(const char *const *names, const char *text,
                        int *on) {
  int i;
  if (qgmd_name_index(names, text, &i) != 0)
    return -1;
  *on = i == 0;
  return 0;
}

static int parse_overlap(const char *text, qgmd_config_t *cfg) {
  return parse_switch(overlap_names, text, &cfg->parsed.overlap);
}

static int parse_shared_memory(const char *text, qgmd_config_t *cfg) {
  return parse_switch(shared_memory_names, text, &cfg->parsed.shared_memory);
}

static int parse_allreduce(const char *text, qgmd_config_t *cfg) {
  return parse_switch(allreduce_names, text, &cfg->parsed.allreduce_mpi);
}

/* Measured at 100 Mbit/s across 4 emulated hosts (docs/CLUSTER.md, "Open
 * MPI's rendezvous"): sent at once, the ring's messages took 0.64x as
 * long and the all-reduce's 0.83x; the hierarchical topology's took 1.3x,
 * as both nodes of a host send their slices to the same host at the same
 * moment and the burst overflowed the link's queue (drops went from 184
 * to 759-963 an epoch). */
int qgmd_job_sends_eagerly(const qgmd_config_t *cfg) {
  return strcmp(cfg->topology, "hier") != 0;
}

/* The all-reduce baseline: the one algorithm that averages over all
 * nodes, and so the one --allreduce matters to. */
int qgmd_averaging_all(const qgmd_config_t *cfg) {
  return !cfg->parsed.asynchronous &&
         cfg->parsed.algorithm == QGM_ALG_ALLREDUCE;
}

const flag_parse_t qgmd_parse_overlap = {parse_overlap, QGMD_UNPARSED_OVERLAP,
                                         overlap_names, NULL};
const flag_parse_t qgmd_parse_shared_memory = {
    parse_shared_memory, QGMD_UNPARSED_SHARED_MEMORY, shared_memory_names,
    NULL};
const flag_parse_t qgmd_parse_allreduce = {
    parse_allreduce, QGMD_UNPARSED_ALLREDUCE, allreduce_names, NULL};

int qgmd_check_transport(const qgmd_config_t *cfg, char *err,
                         size_t errlen) {
  char names[64];
  if (cfg->parsed.unknown & QGMD_UNPARSED_OVERLAP)
    snprintf(err, errlen, "--overlap: '%s' is neither %s", cfg->overlap,
             qgmd_flag_names("overlap", " nor ", names, sizeof names));
  else if (cfg->parsed.unknown & QGMD_UNPARSED_SHARED_MEMORY)
    snprintf(err, errlen, "--shared-memory: '%s' is neither %s",
             cfg->shared_memory,
             qgmd_flag_names("shared-memory", " nor ", names, sizeof names));
  else if (cfg->parsed.unknown & QGMD_UNPARSED_ALLREDUCE)
    snprintf(err, errlen, "--allreduce: '%s' is neither %s", cfg->allreduce,
             qgmd_flag_names("allreduce", " nor ", names, sizeof names));
  else
    return 0;
  return -1;
}
