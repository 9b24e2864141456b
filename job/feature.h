/* feature.h - what each feature of a job gives the flag table and the
 * check: the parsers of its enumeration and spec flags (the table's rows
 * point at them), whether a run uses it, and its checks. Each check
 * returns 0, or -1 with one line in err that starts with the flag at
 * fault ("--mixing: ..."), so that check.c can name the file that set it.
 * The features keep their flags' rules next to what the flags drive. */
#ifndef QGMD_FEATURE_H
#define QGMD_FEATURE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "flag.h"

typedef int qgmd_check_fn(const qgmd_config_t *cfg, char *err, size_t errlen);

/* job.c: the optimizer, the model and the data. */
extern const flag_parse_t qgmd_parse_algorithm;
qgmd_check_fn qgmd_check_algorithm, qgmd_check_model, qgmd_check_dataset,
    qgmd_check_hidden, qgmd_check_problem;
/* Whether the algorithm tracks the global update (gut, qg-gutm), the
 * runs --gut-scaling applies to. */
int qgmd_tracking_updates(const qgmd_config_t *cfg);

/* topology.c: the graph and its weights. */
extern const flag_parse_t qgmd_parse_mixing, qgmd_parse_torus, qgmd_parse_hosts;
qgmd_check_fn qgmd_check_topology;

/* transport.c: how the messages travel (--overlap, --shared-memory,
 * --allreduce). */
extern const flag_parse_t qgmd_parse_overlap, qgmd_parse_shared_memory,
    qgmd_parse_allreduce;
int qgmd_averaging_all(const qgmd_config_t *cfg);
qgmd_check_fn qgmd_check_transport;

/* kernels.c: the paths and kernels of the model's products (--kernels). */
extern const flag_parse_t qgmd_parse_kernels;
qgmd_check_fn qgmd_check_kernels;

/* compress.c: compressed gossip. */
extern const flag_parse_t qgmd_parse_compress;
int qgmd_compressing(const qgmd_config_t *cfg);
qgmd_check_fn qgmd_check_compress;

/* The consensus step size CHOCO takes when --consensus-lr is not given:
 * the compressor's, for the algorithm's momentum (docs/COMPRESSION.md,
 * "Choosing gamma"). */
double qgmd_default_consensus_lr(const qgmd_config_t *cfg);

/* resolve.c: the defaults that follow other flags, for the flags the
 * files and the command line left unset (qgmd_config_parse calls it).
 * qgmd_default_data_dir writes the directory --data-dir defaults to for a
 * dataset into buf and returns 1, or 0 when it is the flag table's. */
void qgmd_config_resolve(qgmd_config_t *cfg);
int qgmd_default_data_dir(const char *dataset, char *buf, size_t size);
/* The rule, as --help says it. */
void qgmd_data_dir_rule(char *buf, size_t size);

/* drop.c: lost gossip messages (--drop-rate). */
int qgmd_dropping(const qgmd_config_t *cfg);
qgmd_check_fn qgmd_check_drop;

/* gossip_rounds.c: R neighbour exchanges a step (--gossip-rounds); whether
 * a run takes more than one. */
int qgmd_gossip_rounds(const qgmd_config_t *cfg);
qgmd_check_fn qgmd_check_gossip_rounds;
/* --gossip-acceleration: how the rounds combine (none: W^R). */
extern const flag_parse_t qgmd_parse_gossip_acceleration;

/* sync.c: asynchronous gossip (--sync, --max-staleness); whether it runs
 * (--sync=async with T > 0). */
extern const flag_parse_t qgmd_parse_sync;
int qgmd_gossip_async(const qgmd_config_t *cfg);
qgmd_check_fn qgmd_check_sync;
/* The step an asynchronous node reads the learning-rate schedule at: the
 * job's progress as it sees it, the larger of its own step and `newest`,
 * the most rounds an in-neighbour has sent (negative: none yet; infinite:
 * a neighbour that finished, which took all `total`). By its own count
 * alone, a slow node would step at the first rate on its own non-IID
 * shard while its neighbours' rates had decayed a hundredfold, and the
 * graph would follow it toward its shard's classes (docs/RESULTS.md,
 * "Asynchronous gossip with a straggler"). */
uint64_t qgmd_schedule_clock(uint64_t own, double newest, uint64_t total);

/* schedule.c: the learning-rate schedule. */
extern const flag_parse_t qgmd_parse_lr_schedule;
qgmd_check_fn qgmd_check_schedule;

/* async.c: the asynchronous modes. */
extern const flag_parse_t qgmd_parse_gsgm_base, qgmd_parse_gsgm_rule;
int qgmd_asynchronous(const qgmd_config_t *cfg);
qgmd_check_fn qgmd_check_gsgm, qgmd_check_async_checkpoint;

/* pacing.c: emulated slow ranks and devices. */
qgmd_check_fn qgmd_check_straggle, qgmd_check_device_time;

/* elastic.c: resuming on fewer ranks (--resume-ranks), and when a silent
 * peer counts as lost (--lost-after). */
qgmd_check_fn qgmd_check_resume_ranks;

/* output.c: the log. */
extern const flag_parse_t qgmd_parse_log_level;
qgmd_check_fn qgmd_check_log_level;

#endif /* QGMD_FEATURE_H */
