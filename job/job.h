/* job.h - what a job's configuration makes, for qgmd's ranks and qgm-sim's
 * virtual nodes alike: a node's data, the model, the gossip graph, the
 * optimizer's settings and the learning-rate schedule. One place, so that the simulator cannot
 * drift from the daemon. MPI-free.
 *
 * The functions that can fail return an exit status (0; 1 a runtime
 * failure such as memory; 2 bad input) with one line in err. */
#ifndef QGMD_JOB_H
#define QGMD_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "qgm.h"

/* The dataset cfg names, its partition and limits (no file images). */
qgm_data_spec_t qgmd_job_data(const qgmd_config_t *cfg);

/* The files of a dataset that its loader can read from memory
 * (qgm_data_files), read whole: the nodes of one process, or the ranks of
 * one host, inflate them once and load their shards from the images. */
#define QGMD_JOB_FILES 4
typedef struct qgmd_job_files {
  int n; /* 0 when none is read: the loader then reads the files itself */
  int cached; /* every file is a mapping of a data cache entry */
  char paths[QGMD_JOB_FILES][4096];
  qgm_file_image_t images[QGMD_JOB_FILES];
  uint8_t *owned[QGMD_JOB_FILES];  /* inflated here, or NULL */
  size_t mapped[QGMD_JOB_FILES];   /* the length of a mapped entry, or 0 */
} qgmd_job_files_t;

/* Reads spec's files: each one's entry in the data cache in the directory
 * `cache` ("": none; data_cache.h), mapped after checking its CRC, or the
 * file inflated (qgm_file_inflate) and then stored there. When one cannot
 * be read, none is kept, so that the loader meets the broken file and
 * names it. */
void qgmd_job_read_files(const qgm_data_spec_t *spec, const char *cache,
                         qgmd_job_files_t *f);
/* Maps the cache entries of all of spec's files, without checking their
 * CRC (the host's first rank did, in qgmd_job_read_files), or none. */
void qgmd_job_map_cached_files(const qgm_data_spec_t *spec,
                               const char *cache, qgmd_job_files_t *f);
void qgmd_job_files_free(qgmd_job_files_t *f);

/* Node `shard`'s part of the Dirichlet partition of spec over `shards`
 * nodes and the whole test set. */
int qgmd_job_load_data(const qgm_data_spec_t *spec, int shard, int shards,
                       qgm_dataset_t **train, qgm_dataset_t **test, char *err,
                       size_t errlen);

/* The model --model and --hidden describe, for samples of train's shape
 * and classes, made for training batches of --batch-size (which must fit
 * in train's shard) and evaluation in the library's chunks; its products
 * take the paths of --kernels (qgmd_job_kernels). */
int qgmd_job_model(const qgmd_config_t *cfg, const qgm_dataset_t *train,
                   qgm_model_t **model, char *err, size_t errlen);
/* Makes the process's products follow --kernels (a checked config). */
void qgmd_job_kernels(const qgmd_config_t *cfg);

/* The gossip graph of `nodes` nodes that the flags describe, with the
 * hosts of a hierarchical one (host_of NULL and hosts 1: one host), then
 * checked against the algorithm (qgm_optim_refuses). Returns 0, 1 when
 * out of memory, or 2 when the flags or the edge file are wrong, with one
 * line in err that names the file and line when there is one; *topology
 * is NULL on failure. */
int qgmd_job_topology(const qgmd_config_t *cfg, int nodes,
                      const int *host_of, int hosts,
                      qgm_topology_t **topology, char *err, size_t errlen);

/* The graph the nodes gossip on (--topology), or NULL for the all-reduce,
 * which averages over all nodes and has none. */
const char *qgmd_job_graph(const qgmd_config_t *cfg);

/* The optimizer's settings (cfg passed qgmd_config_check, so the
 * algorithm is a synchronous one it knows). */
qgm_optim_config_t qgmd_job_optim(const qgmd_config_t *cfg);

/* Why the compressor, at its default --consensus-lr, is known to train
 * poorly (qgmd and qgm-sim warn at start-up with it), or NULL. */
const char *qgmd_compress_caveat(const qgmd_config_t *cfg);

/* CHOCO-gossip's settings for --compress (the spec it was parsed into as
 * it was set, cfg->parsed.compress, with the model's weight matrices for
 * powersgd) and --consensus-lr; the exchange fills in the dimension, node
 * and peers. cc->compress.kind is QGM_COMPRESS_NONE without compression.
 * Refuses (2) an algorithm, topology or model the compressor cannot run
 * with (compress.c). */
int qgmd_job_compress(const qgmd_config_t *cfg, qgm_algorithm_t algorithm,
                      const qgm_topology_t *topology,
                      const qgm_matrix_block_t *matrices, size_t nmatrices,
                      qgm_choco_config_t *cc, char *err, size_t errlen);

/* Whether the job's messages between hosts should leave at once, whole
 * (Open MPI's eager protocol: see qgmd_mpi_transport_defaults), rather
 * than after the receiver's reply to their first fragment (transport.c). */
int qgmd_job_sends_eagerly(const qgmd_config_t *cfg);

/* The learning-rate schedule over epochs of steps_per_epoch steps
 * (schedule.c). */
void qgmd_job_schedule(const qgmd_config_t *cfg, uint64_t steps_per_epoch,
                       qgm_lr_schedule_t *schedule);

#endif /* QGMD_JOB_H */
