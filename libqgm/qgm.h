/*
 * qgm.h - the public API of libqgm, the pure-compute half of qgmd.
 *
 * libqgm knows optimizers, models, datasets, partitions and graphs. It never
 * talks to the network, never prints and never exits: every fallible call
 * returns 0 or a negative qgm error code, and the caller decides what to say.
 *
 * Conventions (after libuv and zstd):
 *   - opaque handles qgm_<noun>_t with qgm_<noun>_create / qgm_<noun>_free;
 *     free accepts NULL;
 *   - model parameters, gradients and optimizer buffers are flat float
 *     vectors, so a whole model is one contiguous block to gossip;
 *   - randomness only comes from qgm_rng_t values the caller seeds.
 */
#ifndef QGM_H
#define QGM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(QGM_BUILDING) && defined(__GNUC__)
#define QGM_API __attribute__((visibility("default")))
#else
#define QGM_API
#endif

#define QGM_VERSION_MAJOR 0
#define QGM_VERSION_MINOR 1
#define QGM_VERSION_PATCH 0
#define QGM_VERSION_STRING "0.1.0"

/* ---------------------------------------------------------------- errors */

/* Error codes are stable: values never change once released. */
#define QGM_ERRNO_MAP(XX)                                                     \
  XX(NOMEM, -1, "out of memory")                                              \
  XX(INVAL, -2, "invalid argument")                                           \
  XX(OPEN, -3, "cannot open file")                                            \
  XX(IO, -4, "read error")                                                    \
  XX(TRUNC, -5, "file is truncated")                                          \
  XX(MAGIC, -6, "wrong magic number (not an IDX file of the expected kind)")  \
  XX(DIMS, -7, "unexpected dimensions")                                       \
  XX(COUNT, -8, "image and label counts differ")                              \
  XX(LABEL, -9, "label out of range")                                         \
  XX(GZIP, -10, "corrupt compressed stream")                                  \
  XX(TRAILING, -11, "unexpected data after the end")                          \
  XX(TOOSMALL, -12, "too few samples for the requested split")          \
  XX(NOTCKPT, -17, "not a qgm checkpoint file")                              \
  XX(VERSION, -18, "unsupported checkpoint format version")                  \
  XX(CRC, -19, "checksum mismatch: the file is corrupt")                     \
  XX(SECTION, -20, "checkpoint section missing, malformed or of the wrong size") \
  XX(WRITE, -21, "write error")                                              \
  XX(MANIFEST, -22, "malformed checkpoint manifest")

typedef enum {
  QGM_OK = 0,
#define QGM_ERR_ENUM_(name, value, text) QGM_E##name = (value),
  QGM_ERRNO_MAP(QGM_ERR_ENUM_)
#undef QGM_ERR_ENUM_
} qgm_err_t;

/* A static, human-readable description of an error code. */
QGM_API const char *qgm_strerror(int err);
/* The library version, as "MAJOR.MINOR.PATCH". */
QGM_API const char *qgm_version(void);

/* ------------------------------------------------------------------ rng */

/* xoshiro256** state. A value type so that it can be copied, compared and
 * checkpointed; seed it with qgm_rng_seed before use. */
typedef struct qgm_rng {
  uint64_t s[4];
} qgm_rng_t;

/* Seeds from (seed, stream): equal pairs give equal sequences; different
 * streams (e.g. ranks) give independent ones. */
QGM_API void qgm_rng_seed(qgm_rng_t *rng, uint64_t seed, uint64_t stream);
QGM_API uint64_t qgm_rng_u64(qgm_rng_t *rng);
/* Uniform in [0, 1) with 53 random bits. */
QGM_API double qgm_rng_uniform(qgm_rng_t *rng);
/* Uniform integer in [0, bound), bound > 0, without modulo bias. */
QGM_API uint64_t qgm_rng_below(qgm_rng_t *rng, uint64_t bound);
/* Standard normal. */
QGM_API double qgm_rng_normal(qgm_rng_t *rng);
/* Gamma(shape, 1) for shape > 0 (Marsaglia-Tsang). */
QGM_API double qgm_rng_gamma(qgm_rng_t *rng, double shape);
/* Fisher-Yates shuffle of n indices. */
QGM_API void qgm_rng_shuffle(qgm_rng_t *rng, size_t *items, size_t n);

/* --------------------------------------------------------------- vectors */

/* Memory-bound kernels on flat vectors (BLIS level-1). */
QGM_API void qgm_vec_copy(float *dst, const float *src, size_t n);
/* y += a * x */
QGM_API void qgm_vec_axpy(float *y, float a, const float *x, size_t n);
/* y = a * x */
QGM_API void qgm_vec_scale_copy(float *y, float a, const float *x, size_t n);
/* sum_i (x_i - y_i)^2, accumulated in double. */
QGM_API double qgm_vec_dist2(const float *x, const float *y, size_t n);

/* ------------------------------------------------------------- datasets */

typedef struct qgm_dataset qgm_dataset_t;

/* Reads an IDX1 label file (gzip or plain). On success *labels is a
 * malloc'd array of *count labels that the caller frees. Labels >= classes
 * are QGM_ELABEL. */
QGM_API int qgm_idx_read_labels(const char *path, int classes,
                                uint8_t **labels, size_t *count);

/* Loads an IDX3 image file and its IDX1 label file. Only the samples whose
 * indices are listed in subset (in that order) are kept, so a node holds just
 * its own shard; subset == NULL keeps all. Pixels become (p/255 - mean)/std.
 * Validates magic numbers, dimensions, label range and that both files hold
 * the same number of samples. */
QGM_API int qgm_dataset_load_idx(const char *images_path,
                                 const char *labels_path, int classes,
                                 const size_t *subset, size_t subset_len,
                                 float mean, float std, qgm_dataset_t **out);

/* A dataset from caller arrays (copied): n samples of dim floats each. */
QGM_API int qgm_dataset_from_arrays(const float *x, const uint8_t *y, size_t n,
                                    size_t dim, int classes,
                                    qgm_dataset_t **out);
QGM_API void qgm_dataset_free(qgm_dataset_t *ds);
QGM_API size_t qgm_dataset_count(const qgm_dataset_t *ds);
QGM_API size_t qgm_dataset_dim(const qgm_dataset_t *ds);
QGM_API int qgm_dataset_classes(const qgm_dataset_t *ds);
/* Row-major count x dim samples and count labels. */
QGM_API const float *qgm_dataset_images(const qgm_dataset_t *ds);
QGM_API const uint8_t *qgm_dataset_labels(const qgm_dataset_t *ds);
/* The shape of one sample (dim = channels x height x width); flat data is
 * 1 x 1 x dim. */
QGM_API void qgm_dataset_shape(const qgm_dataset_t *ds, size_t *channels,
                               size_t *height, size_t *width);
/* Copies the samples idx[0..n) into x (n x dim) and y (n). */
QGM_API void qgm_dataset_gather(const qgm_dataset_t *ds, const size_t *idx,
                                size_t n, float *x, uint8_t *y);

/* What one node of a decentralized run trains and tests on. */
typedef struct qgm_data_spec {
  const char *dataset; /* a name of qgm_dataset_names() */
  const char *dir;     /* where its files are */
  double alpha;        /* Dirichlet concentration of the partition */
  uint64_t seed;       /* of the partition */
  size_t train_limit;  /* use only the first N training samples; 0 = all */
  size_t test_limit;   /* likewise for the test set */
} qgm_data_spec_t;

/* Loads node's shard of the training set (labels are read first to
 * partition them; then only the shard's images are kept) and the whole
 * test set. On error, bad_path (if not NULL) names the file at fault, or is
 * empty when no file is (QGM_ETOOSMALL: fewer samples than nodes). */
QGM_API int qgm_data_load(const qgm_data_spec_t *spec, int node, int nodes,
                          qgm_dataset_t **train, qgm_dataset_t **test,
                          char *bad_path, size_t bad_path_size);
/* A comma-separated list of the dataset names qgm_data_load knows. */
QGM_API const char *qgm_dataset_names(void);

/* ------------------------------------------------------------ partition */

/* The Dirichlet-alpha non-IID partition (DESIGN.md section 3, as in the
 * paper's official code), deterministic from seed. On success *shards is a
 * malloc'd nodes x *shard_len array of sample indices, row i being node i's
 * shard; every index appears at most once. Needs alpha > 0. */
QGM_API int qgm_partition_dirichlet(const uint8_t *labels, size_t count,
                                    int classes, int nodes, double alpha,
                                    uint64_t seed, size_t **shards,
                                    size_t *shard_len);

/* ---------------------------------------------------------------- models */

typedef struct qgm_model qgm_model_t;

/* A multi-layer perceptron input -> hidden[0] -> ... -> classes with ReLU
 * and softmax cross-entropy. max_batch bounds the batch of every later call
 * (it sizes the model's scratch arena). */
QGM_API int qgm_mlp_create(size_t input, const size_t *hidden, size_t nhidden,
                           size_t classes, size_t max_batch,
                           qgm_model_t **out);
/* A model by name, for samples of the given shape (an MLP flattens it). */
typedef struct qgm_model_spec {
  const char *name; /* a name of qgm_model_names() */
  size_t channels, height, width;
  size_t classes;
  const size_t *hidden; /* MLP hidden widths */
  size_t nhidden;
  size_t max_batch;
} qgm_model_spec_t;
QGM_API int qgm_model_create(const qgm_model_spec_t *spec, qgm_model_t **out);
/* A comma-separated list of the model names qgm_model_create knows. */
QGM_API const char *qgm_model_names(void);
QGM_API void qgm_model_free(qgm_model_t *model);
QGM_API size_t qgm_model_num_params(const qgm_model_t *model);
QGM_API size_t qgm_model_input_dim(const qgm_model_t *model);
QGM_API size_t qgm_model_max_batch(const qgm_model_t *model);
/* Fills params with an initialisation drawn from rng (uniform
 * +-1/sqrt(fan_in), PyTorch's default for linear layers). */
QGM_API void qgm_model_init_params(const qgm_model_t *model, float *params,
                                   qgm_rng_t *rng);
/* Mean softmax cross-entropy of a batch (n <= max_batch) at params, and its
 * gradient with respect to params written to grad. */
QGM_API int qgm_model_loss_grad(qgm_model_t *model, const float *params,
                                const float *x, const uint8_t *y, size_t n,
                                float *grad, float *loss);
/* Classifies n samples (any n; processed in chunks of max_batch): the number
 * classified correctly and the summed cross-entropy. */
QGM_API int qgm_model_evaluate(qgm_model_t *model, const float *params,
                               const float *x, const uint8_t *y, size_t n,
                               size_t *correct, double *loss_sum);

/* ------------------------------------------------------------ optimizers */

typedef enum {
  QGM_ALG_DSGD = 0,
  QGM_ALG_DSGDM_N = 1,
  QGM_ALG_QG_DSGDM_N = 2,
} qgm_algorithm_t;

/* "dsgd", "dsgdm-n", "qg-dsgdm-n". */
QGM_API int qgm_algorithm_parse(const char *name, qgm_algorithm_t *out);
QGM_API const char *qgm_algorithm_name(qgm_algorithm_t alg);
/* A comma-separated list of every algorithm name, for help texts. */
QGM_API const char *qgm_algorithm_names(void);

typedef struct qgm_optim_config {
  qgm_algorithm_t algorithm;
  float momentum;     /* beta */
  float weight_decay; /* lambda, added to the gradient as lambda * x */
} qgm_optim_config_t;

typedef struct qgm_optim qgm_optim_t;

/*
 * One decentralized step of node i is split in two so that the transport
 * stays outside libqgm:
 *
 *   grad = qgm_optim_grad(o);            caller writes grad F_i(x_t) here
 *   msg  = qgm_optim_local_step(o, lr);  msg[0..message_len) goes on the wire
 *   mix  = qgm_optim_mix_buffer(o);      caller writes sum_j W_ij msg_j here
 *   qgm_optim_after_gossip(o, lr);       x_{t+1} and momentum are updated
 */
QGM_API int qgm_optim_create(const qgm_optim_config_t *cfg, size_t dim,
                             qgm_optim_t **out);
QGM_API void qgm_optim_free(qgm_optim_t *o);
QGM_API size_t qgm_optim_dim(const qgm_optim_t *o);
/* The model x_t (dim floats); writable so the caller can initialise it.
 * qgm_optim_after_gossip swaps internal buffers: fetch this pointer (and
 * the mix buffer) again after every step instead of keeping it. */
QGM_API float *qgm_optim_params(qgm_optim_t *o);
QGM_API float *qgm_optim_grad(qgm_optim_t *o);
/* Momentum buffer m (dim floats), or NULL for algorithms without one. */
QGM_API const float *qgm_optim_momentum(const qgm_optim_t *o);
QGM_API size_t qgm_optim_message_len(const qgm_optim_t *o);
QGM_API const float *qgm_optim_local_step(qgm_optim_t *o, float lr);
QGM_API float *qgm_optim_mix_buffer(qgm_optim_t *o);
QGM_API void qgm_optim_after_gossip(qgm_optim_t *o, float lr);
/* The optimizer's state as named vectors, for checkpoints: i in
 * [0, qgm_optim_num_state(o)) is x first, then every buffer the algorithm
 * keeps between steps (e.g. "m"). Returns the vector (writable, so that a
 * checkpoint can be restored into it) and sets *name and *len (floats);
 * NULL for i out of range. Fetch again after every step, as for params. */
QGM_API int qgm_optim_num_state(const qgm_optim_t *o);
QGM_API float *qgm_optim_state(qgm_optim_t *o, int i, const char **name,
                               size_t *len);

/* ------------------------------------------------------ learning rates */

/* The paper's schedule: linear warm-up to base_lr over warmup_steps, then
 * base_lr, multiplied by 0.1 at 50% and again at 75% of total_steps. */
typedef struct qgm_lr_schedule {
  double base_lr;
  uint64_t warmup_steps;
  uint64_t total_steps;
} qgm_lr_schedule_t;

/* The learning rate of step t (0-based). */
QGM_API double qgm_lr_at(const qgm_lr_schedule_t *s, uint64_t t);

/* ------------------------------------------------------------ topologies */

typedef struct qgm_topology qgm_topology_t;

/* The ring: each node averages with itself and its two neighbours, 1/3
 * each (n = 2: 1/2 each; n = 1: itself). */
QGM_API int qgm_topology_ring(int nodes, qgm_topology_t **out);
QGM_API void qgm_topology_free(qgm_topology_t *t);
QGM_API int qgm_topology_nodes(const qgm_topology_t *t);
/* A topology by name (one of qgm_topology_names()) for n nodes.
 * QGM_EINVAL for an unknown name or a node count the graph cannot take. */
QGM_API int qgm_topology_create(const char *name, int nodes,
                                qgm_topology_t **out);
/* A comma-separated list of the names qgm_topology_create knows. */
QGM_API const char *qgm_topology_names(void);
/* The largest number of peers any node has in any round. */
QGM_API int qgm_topology_max_degree(const qgm_topology_t *t);
/* Node's peers in gossip round `round` (graphs may vary with time): writes
 * k <= max_degree peer ids and weights W_ij into the caller's arrays, sets
 * *self_weight to W_ii and returns k. Peers are distinct and never node. */
QGM_API int qgm_topology_neighbors(const qgm_topology_t *t, int node,
                                   uint64_t round, int *peers,
                                   double *weights, double *self_weight);

/* ----------------------------------------------------------- checkpoints */

/* A checkpoint is a set of named, typed sections (a node's parameters,
 * optimizer buffers, RNG state, step, ...) stamped with the caller's hash
 * of its configuration. On disk it is zlib-compressed behind a header with
 * a magic, a format version and CRC-32s; qgm_checkpoint_write replaces the
 * file atomically (temporary file, fsync, rename, fsync of the directory).
 * Values are stored little-endian and read back on any host. */
typedef struct qgm_checkpoint qgm_checkpoint_t;

typedef enum {
  QGM_CHECKPOINT_BYTES = 0,
  QGM_CHECKPOINT_F32 = 1,
  QGM_CHECKPOINT_U64 = 2,
  QGM_CHECKPOINT_F64 = 3,
} qgm_checkpoint_type_t;

#define QGM_CHECKPOINT_NAME_MAX 63      /* bytes in a section name */
#define QGM_CHECKPOINT_MAX_SECTIONS 64
#define QGM_CHECKPOINT_MAX_BYTES ((uint64_t)1 << 34) /* uncompressed */

QGM_API int qgm_checkpoint_create(uint64_t config_hash,
                                  qgm_checkpoint_t **out);
QGM_API void qgm_checkpoint_free(qgm_checkpoint_t *c);
QGM_API uint64_t qgm_checkpoint_config_hash(const qgm_checkpoint_t *c);
/* Copies count elements of the type into a new section; QGM_EINVAL for a
 * repeated or bad name (1..63 bytes) or too many sections. */
QGM_API int qgm_checkpoint_put(qgm_checkpoint_t *c, const char *name,
                               qgm_checkpoint_type_t type, const void *data,
                               size_t count);
/* Copies a section out; QGM_ESECTION unless it exists with exactly this
 * type and count, so a caller states what it expects and gets nothing
 * else. */
QGM_API int qgm_checkpoint_get(const qgm_checkpoint_t *c, const char *name,
                               qgm_checkpoint_type_t type, void *data,
                               size_t count);
QGM_API size_t qgm_checkpoint_num_sections(const qgm_checkpoint_t *c);
/* Section i's name (valid while c lives), type and element count. */
QGM_API int qgm_checkpoint_section(const qgm_checkpoint_t *c, size_t i,
                                   const char **name,
                                   qgm_checkpoint_type_t *type,
                                   size_t *count);
QGM_API int qgm_checkpoint_write(const qgm_checkpoint_t *c, const char *path);
/* Reads and verifies a file: QGM_ENOTCKPT, QGM_EVERSION, QGM_ETRUNC,
 * QGM_ETRAILING, QGM_ECRC, QGM_EGZIP or QGM_ESECTION for a bad one. Every
 * size is bounded by the file's actual size before it is allocated. */
QGM_API int qgm_checkpoint_read(const char *path, qgm_checkpoint_t **out);
/* The same from a buffer holding a whole file. */
QGM_API int qgm_checkpoint_parse(const void *data, size_t len,
                                 qgm_checkpoint_t **out);

/* Writes len bytes to path through a temporary file, fsync and rename, so
 * that a crash leaves the old content or the new, never a mix. */
QGM_API int qgm_write_file_atomic(const char *path, const void *data,
                                  size_t len);
/* 64-bit FNV-1a of n bytes, continuing from h (start with
 * QGM_HASH64_INIT): for configuration hashes. */
#define QGM_HASH64_INIT 0xcbf29ce484222325ULL
QGM_API uint64_t qgm_hash64(const void *data, size_t n, uint64_t h);

/* A checkpoint directory holds DIR/step-NNNNNNNNNNNN/ folders with one
 * file per rank and a MANIFEST that one rank writes once every rank's file
 * is on disk: only a step with a manifest is complete. */

/* The path of rank's file of step (rank < 0: the step's manifest). */
QGM_API int qgm_checkpoint_path(const char *dir, uint64_t step, int rank,
                                char *buf, size_t size);
/* Creates dir and the step's folder if they do not exist. */
QGM_API int qgm_checkpoint_prepare(const char *dir, uint64_t step);
/* Marks step complete (atomically). */
QGM_API int qgm_manifest_write(const char *dir, uint64_t step, int nodes,
                               uint64_t config_hash);
/* Reads a manifest; QGM_EMANIFEST unless it is exactly in the format
 * qgm_manifest_write produces. */
QGM_API int qgm_manifest_read(const char *path, uint64_t *step, int *nodes,
                              uint64_t *config_hash);
QGM_API int qgm_manifest_parse(const char *text, size_t len, uint64_t *step,
                               int *nodes, uint64_t *config_hash);
/* The complete steps of dir, newest first: up to max into steps, their
 * number into *count. QGM_EOPEN if dir cannot be read. */
QGM_API int qgm_checkpoint_list(const char *dir, uint64_t *steps, size_t max,
                                size_t *count);
/* Keeps the newest `keep` complete steps (keep >= 1) and removes every
 * older step folder, complete or not. */
QGM_API int qgm_checkpoint_prune(const char *dir, size_t keep);

#ifdef __cplusplus
}
#endif
#endif /* QGM_H */
