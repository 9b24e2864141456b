/* startup.h - what every rank checks before training: that the topology
 * can be built for this many ranks, and that all ranks run the same flags
 * on the same topology and data. Each check ends the same way on every
 * rank, so a mismatch is an error everywhere and never a hang. */
#ifndef QGMD_STARTUP_H
#define QGMD_STARTUP_H

#include <stddef.h>

#include "rank.h"

/* Collective. 0 if every rank's configuration JSON is the same; otherwise
 * rank 0 says so and every rank gets 2. */
int qgmd_check_same_flags(const char *config_json);

/* Builds and checks the synchronous node's topology for rank->nodes ranks
 * on the placement's hosts: qgmd_job_topology (job.h), whose exit status
 * and line in err it returns. Not collective. */
int qgmd_make_topology(const qgmd_rank_t *rank, qgm_topology_t **topology,
                       char *err, size_t errlen);

/* Rank 0 logs the flags that differ from the defaults (info), the whole
 * configuration (debug) and the topology's shape and spectral gap (none
 * for the asynchronous mode: topology NULL). */
void qgmd_log_startup(const qgmd_rank_t *rank,
                      const qgm_topology_t *topology,
                      const char *config_json);

/* Collective, after the data is loaded: the topology's W (if any), the
 * test set and the training shard size must agree on every rank (the
 * flags may name the same path on machines that hold different files).
 * Returns 0 or 2. */
int qgmd_check_same_inputs(const qgmd_rank_t *rank,
                           const qgm_topology_t *topology);

#endif /* QGMD_STARTUP_H */
