/* checkpoint.h - the daemon's checkpoints: what a node saves, when all
 * ranks save together, and how a run resumes. The file format is
 * libqgm's (qgm_checkpoint_*); this is the collective part around it. */
#ifndef QGMD_CHECKPOINT_H
#define QGMD_CHECKPOINT_H

#include <stddef.h>

#include "config.h"
#include "loop.h"

struct qgmd_node;
typedef struct qgmd_checkpoint qgmd_checkpoint_t;

/* Collective, before the data is loaded: with --resume, which rank of the
 * newest complete checkpoint this rank continues and which shard it
 * trains on (rank->from_rank, from_nodes, part, parts): its own, or with
 * --resume-ranks the one LIST names, and that rank's shard (a rank that
 * itself continued another keeps that one's). Returns 0, or 2 with one
 * line in err for a --resume-ranks that does not fit the job or the
 * checkpoint. Without --resume it changes nothing. */
struct qgmd_rank;
int qgmd_checkpoint_plan(struct qgmd_rank *rank, char *err, size_t errlen);

/* Collective, after qgmd_node_setup: validates the checkpoint flags, and
 * with --resume restores the newest step that is complete and intact on
 * every rank (damaged files are reported and an older step is tried).
 * Returns an exit status: 2 with one line in err for a bad directory, a
 * checkpoint of another configuration or node count, or a directory that
 * holds checkpoints but is not resumed from (one directory, one run).
 * Every file read back must be of its manifest's step and configuration;
 * damaged manifests are reported and their steps skipped.
 * node->checkpoint is NULL when checkpoints are off. */
int qgmd_checkpoint_init(struct qgmd_node *node, char *err, size_t errlen);
/* The checks of the checkpoint flags that need no node, for the modes
 * that keep none (the asynchronous ones); qgmd_checkpoint_init makes
 * them too. Returns 0 or 2 with one line in err. */
int qgmd_checkpoint_check_flags(const qgmd_config_t *cfg, char *err,
                                size_t errlen);
void qgmd_checkpoint_free(qgmd_checkpoint_t *c);

/* Whether the run writes checkpoints (--checkpoint-dir). */
int qgmd_checkpoint_writes(const qgmd_checkpoint_t *c);

/* Whether a checkpoint is due at the current step boundary: every
 * --checkpoint-every steps, at the last step and at an agreed stop, never
 * twice for a step and only between gossip rounds (where no exchange is in
 * flight). The same answer on every rank. */
int qgmd_checkpoint_due(const struct qgmd_node *node);

/* Collective and asynchronous: every rank writes its file on the worker,
 * the ranks agree (one allreduce of every rank's result) that all succeeded, rank 0 then writes
 * the manifest and prunes old steps; `done` runs on the loop thread. A failure on any rank
 * (a full disk, or a model that is no longer finite) keeps the previous
 * checkpoint, is reported, and stops the run with exit status 1. */
void qgmd_checkpoint_save(struct qgmd_node *node, qgmd_done_fn done);

/* After the first step of a resumed run: rank 0 writes the "resume"
 * record (the step it continued from, the checkpoint's ranks and shards
 * each rank took, the shards dropped, when the step was done). */
void qgmd_checkpoint_first_step(const struct qgmd_node *node);

/* For the watchdog: whether w is the checkpoint's agreement. */
int qgmd_checkpoint_waits(const qgmd_checkpoint_t *c, const qgmd_wait_t *w);

#endif /* QGMD_CHECKPOINT_H */
