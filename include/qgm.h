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
 *
 * Two sections (after zstd's ZSTD_STATIC_LINKING_ONLY):
 *   - the stable API, everything up to QGM_H's end: what a program outside
 *     this tree may build on. A declaration there keeps its name, its
 *     signature and its meaning; an incompatible change comes with a new
 *     soname (libqgm.so.N).
 *   - the experimental section at the end, declared only where
 *     QGM_STATIC_LINKING_ONLY is defined before the include: the kernel
 *     selection, the benchmark hooks and the daemon's hot-path hooks. It
 *     promises nothing; any release may change or drop it, so only
 *     programs linked statically with the libqgm they were built with
 *     (qgmd, its benchmarks and tests) should use it.
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

/* The one place the version is written: the Makefile reads these three
 * lines for the shared library's name, libqgm.pc and qgmd's man page. */
#define QGM_VERSION_MAJOR 0
#define QGM_VERSION_MINOR 1
#define QGM_VERSION_PATCH 0
#define QGM_VERSION_QUOTE_(text) #text
#define QGM_VERSION_EXPAND_(text) QGM_VERSION_QUOTE_(text)
/* "MAJOR.MINOR.PATCH", what qgm_version() returns. */
#define QGM_VERSION_STRING                                                    \
  QGM_VERSION_EXPAND_(QGM_VERSION_MAJOR.QGM_VERSION_MINOR.QGM_VERSION_PATCH)

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
  XX(TOOSMALL, -12, "too few samples for the requested split")              \
  XX(NODES, -13, "the topology cannot take this number of nodes")           \
  XX(SYNTAX, -14, "syntax error")                                           \
  XX(GRAPH, -15, "invalid graph")                                           \
  XX(MIXING, -16, "mixing matrix is not doubly stochastic")                 \
  XX(NOTCKPT, -17, "not a qgm checkpoint file")                             \
  XX(VERSION, -18, "unsupported checkpoint format version")                 \
  XX(CRC, -19, "checksum mismatch: the file is corrupt")                    \
  XX(SECTION, -20, "checkpoint section missing, malformed or wrong size")   \
  XX(WRITE, -21, "write error")                                             \
  XX(MANIFEST, -22, "malformed checkpoint manifest")                        \
  XX(NOTFILE, -23, "not a regular file (a directory, a device or a pipe)")

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

/* 64-byte aligned storage for n floats, the alignment the kernels stream
 * at; release with free(). NULL on overflow or exhaustion. */
QGM_API float *qgm_alloc_floats(size_t n);
/* The shortest decimal text of v that reads back (strtod) as exactly v:
 * "0.1", not "0.10000000000000001". Writes at most size bytes; returns
 * what snprintf returns. For flag values and records people read. */
QGM_API int qgm_format_double(char *buf, size_t size, double v);
/* How a count reads in a message, the one rule every message follows:
 * qgm_count_text gives "1 node", "8 nodes" (noun + "s" unless n is 1),
 * qgm_sized_text "a 7-node", "an 8-node", "an 11-node" (the article as
 * the number is spoken). Both write at most size bytes and return buf. */
QGM_API const char *qgm_count_text(char *buf, size_t size, long long n,
                                   const char *noun);
QGM_API const char *qgm_sized_text(char *buf, size_t size, long long n,
                                   const char *noun);

/* ------------------------------------------------------------------ rng */

/* xoshiro256** state. A value type so that it can be copied, compared and
 * checkpointed; seed it with qgm_rng_seed before use. */
typedef struct qgm_rng {
  uint64_t s[4];
} qgm_rng_t;

/* Seeds from (seed, stream): equal pairs give equal sequences; different
 * streams (e.g. ranks) give independent ones. */
QGM_API void qgm_rng_seed(qgm_rng_t *rng, uint64_t seed, uint64_t stream);
/* A job's streams of its seed, one rule for qgmd, qgm-sim and the tests:
 * the initial model is stream 0, the same on every node, so that all
 * start from one model; node i's sampler (its batch order and crops) is
 * stream 1 + i, so that nodes draw apart. */
QGM_API void qgm_rng_seed_model(qgm_rng_t *rng, uint64_t seed);
QGM_API void qgm_rng_seed_sampler(qgm_rng_t *rng, uint64_t seed,
                                  uint64_t node);
QGM_API uint64_t qgm_rng_u64(qgm_rng_t *rng);
/* Uniform in [0, 1) with 53 random bits. */
QGM_API double qgm_rng_uniform(qgm_rng_t *rng);
/* out[0..n) = n draws of qgm_rng_uniform, in order, in one call. */
QGM_API void qgm_rng_uniforms(qgm_rng_t *rng, double *out, size_t n);
/* Uniform integer in [0, bound), bound > 0, without modulo bias. */
QGM_API uint64_t qgm_rng_below(qgm_rng_t *rng, uint64_t bound);
/* Standard normal. */
QGM_API double qgm_rng_normal(qgm_rng_t *rng);
/* Gamma(shape, 1) for shape > 0 (Marsaglia-Tsang). */
QGM_API double qgm_rng_gamma(qgm_rng_t *rng, double shape);
/* Fisher-Yates shuffle of n indices. */
QGM_API void qgm_rng_shuffle(qgm_rng_t *rng, size_t *items, size_t n);
/* The draw in [0, 1) that decides whether the gossip message of `round`
 * from node `from` to node `to` is lost (--drop-rate): a counter-based
 * hash of (seed, round, from, to), not a stream, so that the sender and
 * the receiver draw the same number without talking and without keeping
 * any state (nothing to checkpoint). */
QGM_API double qgm_rng_message_draw(uint64_t seed, uint64_t round, int from,
                                    int to);

/* --------------------------------------------------------------- vectors */

/* Memory-bound kernels on flat vectors. */
QGM_API void qgm_vec_copy(float *dst, const float *src, size_t n);
/* y += a * x */
QGM_API void qgm_vec_axpy(float *y, float a, const float *x, size_t n);
/* y = a * x */
QGM_API void qgm_vec_scale_copy(float *y, float a, const float *x, size_t n);
/* mix += w * (peer - own): one neighbour's share of a gossip average in
 * difference form, mix_i = x_i + sum_j W_ij (x_j - x_i). Unlike
 * W_ii x_i + sum_j W_ij x_j it keeps the nodes' mean however the weights
 * round (the row sums to 1 by construction) and returns x_i exactly at
 * consensus, which algorithms that rely on the mean being conserved (D^2)
 * need in float. */
QGM_API void qgm_vec_mix_peer(float *mix, const float *own, float w,
                              const float *peer, size_t n);
/* mix = base + sum_j w_j (peers_j - own), the neighbours added in order j =
 * 0..k-1 with the float arithmetic of qgm_vec_copy and then
 * qgm_vec_mix_peer per neighbour, but in one pass over memory (blocks
 * that stay in cache) instead of k + 1. mix must not overlap the inputs. */
QGM_API void qgm_vec_gossip_mix(float *mix, const float *base,
                                const float *own, int k,
                                const float *const *peers,
                                const double *weights, size_t n);
/* out = t + b (y - t) + e (z - t): one Chebyshev round
 * (qgm_chebyshev_rounds), t the round's mix, y its message and z the
 * message before. At consensus (t = y = z) it returns t exactly. out may
 * be t or z. */
QGM_API void qgm_vec_chebyshev_round(float *out, const float *t, float b,
                                     const float *y, float e, const float *z,
                                     size_t n);
/* One Chebyshev round's mix and combination in one pass over memory:
 * qgm_vec_gossip_mix(t, own, own, k, peers, weights), then
 * qgm_vec_chebyshev_round(out, t, b, own, e, z), with their arithmetic,
 * the mix t never written out. out may be z, not own or a peer. */
QGM_API void qgm_vec_gossip_mix_chebyshev(float *out, const float *own, int k,
                                          const float *const *peers,
                                          const double *weights, float b,
                                          float e, const float *z, size_t n);
/* sum_i (x_i - y_i)^2, accumulated in double. */
QGM_API double qgm_vec_dist2(const float *x, const float *y, size_t n);
/* sum_i x_i^2, accumulated in double. */
QGM_API double qgm_vec_norm2(const float *x, size_t n);

/* ------------------------------------------------------------- datasets */

typedef struct qgm_dataset qgm_dataset_t;

/* A file's whole content, decompressed, held in memory by the caller. A
 * loader given images reads a file whose path is among them from its
 * image instead, with the same checks and errors: the ranks of one host
 * can then inflate a dataset once and share it. */
typedef struct qgm_file_image {
  const char *path;
  const uint8_t *bytes;
  size_t len;
} qgm_file_image_t;

/* Reads path whole, decompressed when it is gzipped, into *bytes (malloc'd,
 * *len bytes). Bounded as the IDX reader bounds a file (its size, or
 * deflate's best ratio of it). */
QGM_API int qgm_file_inflate(const char *path, uint8_t **bytes, size_t *len);

/* Reads an IDX1 label file (gzip or plain). On success *labels is a
 * malloc'd array of *count labels that the caller frees. Labels >= classes
 * are QGM_ELABEL; a header claiming more labels than the file can hold is
 * QGM_ETRUNC, before anything is allocated for them. Files that users name
 * (here and in every reader below) must be regular files: anything else is
 * QGM_ENOTFILE, found without blocking on a FIFO. */
QGM_API int qgm_idx_read_labels(const char *path, int classes,
                                uint8_t **labels, size_t *count);

/* Loads an IDX3 image file and its IDX1 label file. Only the samples whose
 * indices are listed in subset (in that order) are kept, so a node holds just
 * its own shard; subset == NULL keeps all. Pixels become (p/255 - mean)/std.
 * Validates magic numbers, dimensions, label range, that both files hold
 * the same number of samples and that their headers claim no more data
 * than the files can hold (QGM_ETRUNC). */
QGM_API int qgm_dataset_load_idx(const char *images_path,
                                 const char *labels_path, int classes,
                                 const size_t *subset, size_t subset_len,
                                 float mean, float std, qgm_dataset_t **out);

/* A dataset from caller arrays (copied): n samples of dim floats each. */
QGM_API int qgm_dataset_from_arrays(const float *x, const uint8_t *y, size_t n,
                                    size_t dim, int classes,
                                    qgm_dataset_t **out);
/* A dataset over the caller's memory, not copied: n samples of channels x
 * height x width floats at x and their labels at y, which must outlive it
 * and stay unchanged (qgm_dataset_free frees the handle only). So that
 * processes sharing memory share one copy of a test set. QGM_ELABEL when
 * a label is not below classes. */
QGM_API int qgm_dataset_view(const float *x, const uint8_t *y, size_t n,
                             size_t channels, size_t height, size_t width,
                             int classes, qgm_dataset_t **out);
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
/* A training batch: qgm_dataset_gather, then, for a dataset loaded with
 * augmentation (CIFAR with qgm_data_spec_t.augment), each image shifted by
 * a random crop of the image zero-padded by 4 pixels (0 is the mean colour
 * after normalisation) and mirrored left-right with probability 1/2; the
 * draws come from rng. Without augmentation rng is not used. */
QGM_API void qgm_dataset_gather_train(const qgm_dataset_t *ds,
                                      const size_t *idx, size_t n, float *x,
                                      uint8_t *y, qgm_rng_t *rng);

/* What one node of a decentralized run trains and tests on. */
typedef struct qgm_data_spec {
  const char *dataset; /* a name of qgm_dataset_names() */
  const char *dir;     /* where its files are */
  double alpha;        /* Dirichlet concentration of the partition */
  uint64_t seed;       /* of the partition */
  size_t train_limit;  /* use only the first N training samples; 0 = all */
  size_t test_limit;   /* likewise for the test set */
  int augment;         /* CIFAR: crop and flip training batches */
  /* Images of some of the dataset's files (qgm_data_files), read instead
   * of the files; NULL: read every file. */
  const qgm_file_image_t *images;
  size_t nimages;
} qgm_data_spec_t;

/* Loads node's shard of the training set (labels are read first to
 * partition them; then only the shard's images are kept) and the whole
 * test set (test NULL: not the test set). Datasets: "fashion-mnist" and "mnist-idx" (IDX files in dir,
 * gzipped or not), "cifar10" (data_batch_1..5.bin, test_batch.bin),
 * "cifar100" (train.bin, test.bin; the fine labels), "synthetic" (seeded
 * from spec->seed, 3 x 32 x 32, 10 classes, 50000 + 10000 samples; dir is
 * not used). On error, bad_path (if not NULL) names the file at fault, or is
 * empty when no file is (QGM_ETOOSMALL: fewer samples than nodes). */
QGM_API int qgm_data_load(const qgm_data_spec_t *spec, int node, int nodes,
                          qgm_dataset_t **train, qgm_dataset_t **test,
                          char *bad_path, size_t bad_path_size);
/* The files qgm_data_load(spec, ...) reads that it can also read from
 * their images (qgm_data_spec_t.images): the IDX datasets' four files;
 * none for the others. Writes up to max paths of up to `size` bytes each
 * into paths (row i at paths + i * size) and returns their number. */
QGM_API int qgm_data_files(const qgm_data_spec_t *spec, char *paths,
                           size_t size, int max);
/* A comma-separated list of the dataset names qgm_data_load knows. */
QGM_API const char *qgm_dataset_names(void);
/* One line for a user on why qgm_data_load(spec, ..., nodes, ...) failed
 * with err, bad_path being what it named: the file and what is wrong with
 * it in the terms of the dataset's format (a CIFAR file's record size, its
 * label range, test images of another shape), or the directory when no
 * file is at fault. Returns buf. */
QGM_API const char *qgm_data_explain(const qgm_data_spec_t *spec, int nodes,
                                     int err, const char *bad_path, char *buf,
                                     size_t size);

/* ------------------------------------------------------------ partition */

/* The Dirichlet-alpha non-IID partition (docs/DATA_AND_MODELS.md, as in the
 * paper's official code), deterministic from seed. On success *shards is a
 * malloc'd nodes x *shard_len array of sample indices, row i being node i's
 * shard; every index appears at most once. Needs alpha > 0. */
QGM_API int qgm_partition_dirichlet(const uint8_t *labels, size_t count,
                                    int classes, int nodes, double alpha,
                                    uint64_t seed, size_t **shards,
                                    size_t *shard_len);

/* ---------------------------------------------------------------- models */

typedef struct qgm_model qgm_model_t;

/* A weight matrix inside a flat parameter vector: rows x cols floats,
 * row-major, from element `at` (qgm_model_matrices). */
typedef struct qgm_matrix_block {
  size_t at, rows, cols;
} qgm_matrix_block_t;

/* A multi-layer perceptron input -> hidden[0] -> ... -> classes with ReLU
 * and softmax cross-entropy. max_batch bounds the batch of every later call
 * (it sizes the model's scratch arena). */
QGM_API int qgm_mlp_create(size_t input, const size_t *hidden, size_t nhidden,
                           size_t classes, size_t max_batch,
                           qgm_model_t **out);
/* A model by name, for samples of the given shape: "mlp" (flattens it;
 * hidden widths from the spec), "softmax" (multinomial logistic
 * regression), "lenet" (LeNet-5; height and width multiples of 4, >= 12),
 * "resnet20-gn" (ResNet-20 with GroupNorm, for 32 x 32 images), "linear"
 * (bias-free, logits = W x: docs/MODELS.md's worked example). Parameters
 * are laid out as PyTorch orders them. */
typedef struct qgm_model_spec {
  const char *name; /* a name of qgm_model_names() */
  size_t channels, height, width;
  size_t classes;
  const size_t *hidden; /* MLP hidden widths */
  size_t nhidden;
  size_t max_batch;
} qgm_model_spec_t;
QGM_API int qgm_model_create(const qgm_model_spec_t *spec, qgm_model_t **out);
/* Hidden widths from text such as "512,256": at most max widths, each in
 * [1, 65536], no empty items. QGM_EINVAL otherwise. */
QGM_API int qgm_model_parse_widths(const char *text, size_t *widths,
                                   size_t max, size_t *count);
/* A comma-separated list of the model names qgm_model_create knows. */
QGM_API const char *qgm_model_names(void);
/* The max_batch to create model `name` with, for training batches of
 * `batch` and evaluation in chunks: larger chunks speed up the fully
 * connected models, but a convolutional one keeps every feature map of a
 * chunk, so it stays at the training batch. */
QGM_API size_t qgm_model_chunk(const char *name, size_t batch);
QGM_API void qgm_model_free(qgm_model_t *model);

QGM_API size_t qgm_model_num_params(const qgm_model_t *model);
/* The weight matrices in the parameter vector, rising (*count of them;
 * the MLP's and softmax's layers, rows = outputs; none for the other
 * models yet): what a low-rank compressor approximates. Valid while the
 * model lives. */
QGM_API const qgm_matrix_block_t *qgm_model_matrices(const qgm_model_t *model,
                                                      size_t *count);
QGM_API size_t qgm_model_input_dim(const qgm_model_t *model);
QGM_API size_t qgm_model_max_batch(const qgm_model_t *model);
/* Fills params with an initialisation drawn from rng: uniform
 * +-1/sqrt(fan_in), PyTorch's default for linear and convolution layers;
 * for resnet20-gn, He-normal (fan_out) convolutions and GroupNorm at the
 * identity. */
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

/* ---------------------------------------------------- the models' kernels */

/* The paths and matrix-product kernels the products take, as
 * "dense=K,conv=K,conv3x3=P-K": K the kernel ("avx512", "avx2", "blis") of
 * the fully connected layers (and every product outside a convolution),
 * of the convolutions, and of the 3x3 stride-1 convolutions with at least
 * 8 channels in and out, which take path P, "winograd" (F(4x4, 3x3)) or
 * "direct". Chosen per CPU from measurements (docs/PERFORMANCE.md); a
 * record of it reproduces a run's arithmetic on another CPU that has the
 * kernels. */
QGM_API const char *qgm_kernels(void);
/* Makes later products follow `plan`, in qgm_kernels' form; entries it
 * leaves out keep this CPU's choice (NULL: all of them). -1, and nothing
 * changed, if the text is not of that form, names a kernel the CPU lacks,
 * or gives Winograd to BLIS. Not thread-safe. */
QGM_API int qgm_kernels_use(const char *plan);
/* This CPU as the kernel plans are keyed by: "VENDOR family F model M"
 * (CPUID's vendor string and display family and model, as /proc/cpuinfo
 * gives them), or "unknown" off x86-64. */
QGM_API const char *qgm_cpu(void);

/* ------------------------------------------------------------ optimizers */

/* The values are stable (they may be stored); new algorithms go at the end.
 * docs/ALGORITHMS.md gives every update rule and its source. */
typedef enum {
  QGM_ALG_DSGD = 0,
  QGM_ALG_DSGDM_N = 1,
  QGM_ALG_QG_DSGDM_N = 2,
  QGM_ALG_DSGDM = 3,
  QGM_ALG_QG_DSGDM = 4,
  QGM_ALG_DADAM = 5,
  QGM_ALG_QG_DADAM = 6,
  QGM_ALG_D2 = 7,
  QGM_ALG_GT = 8,
  QGM_ALG_ALLREDUCE = 9,
  QGM_ALG_RELAYSGD = 10,
  QGM_ALG_SGP = 11,
  QGM_ALG_GUT = 12,
  QGM_ALG_QG_GUTM = 13,
  QGM_ALG_MT = 14,
  QGM_ALG_QG_SGP = 15,
} qgm_algorithm_t;

/* "dsgd", "dsgdm-n", "qg-dsgdm-n", "dsgdm", "qg-dsgdm", "dadam",
 * "qg-dadam", "d2", "gt", "allreduce", "relaysgd", "sgp", "gut", "qg-gutm",
 * "mt", "qg-sgp". */
QGM_API int qgm_algorithm_parse(const char *name, qgm_algorithm_t *out);
QGM_API const char *qgm_algorithm_name(qgm_algorithm_t alg);
/* A comma-separated list of every algorithm name, for help texts. */
QGM_API const char *qgm_algorithm_names(void);

typedef struct qgm_optim_config {
  qgm_algorithm_t algorithm;
  float momentum;     /* beta (Adam's beta1) */
  float weight_decay; /* lambda, added to the gradient as lambda * x */
  float adam_beta2;   /* Adam's second-moment decay; 0 selects 0.999 */
  float adam_eps;     /* Adam's denominator guard; 0 selects 1e-8 */
  /* GUT's scaling mu of the tracking correction (gut, qg-gutm); 0 selects
   * the algorithm's own default (QGM_GUT_SCALING, QGM_QG_GUTM_SCALING). */
  float tracking_scale;
} qgm_optim_config_t;

/* The scaling factors the GUT authors' code runs GUT (without momentum)
 * and QG-GUTm with on Fashion-MNIST (aparna-aketi/global_update_tracking,
 * test.sh). */
#define QGM_GUT_SCALING 0.9f
#define QGM_QG_GUTM_SCALING 0.01f

typedef struct qgm_optim qgm_optim_t;

/* How the transport must combine the messages of one step. */
typedef enum {
  QGM_COMBINE_NEIGHBOURS = 0,  /* mix_i = W_ii msg_i + sum_j W_ij msg_j */
  QGM_COMBINE_GLOBAL_MEAN = 1, /* mix_i = (1/n) sum_j msg_j over all nodes */
  QGM_COMBINE_RELAY = 2,       /* RelaySum: a different message to every
                                  neighbour, built and mixed by qgm_relay_* */
  QGM_COMBINE_PUSH_SUM = 3,    /* push-sum: mix_i = (1 - sum_k p_ki) msg_i +
                                  sum_j p_ij msg_j, the sender's shares
                                  p_kj = 1 / (out-degree_j + 1)
                                  (qgm_gossip_round) */
} qgm_combine_t;
/* How the messages of an algorithm's steps combine: qgm_optim_combine of
 * its optimizer, known before one is made. */
QGM_API qgm_combine_t qgm_algorithm_combine(qgm_algorithm_t alg);

/*
 * One decentralized step of node i is split in two so that the transport
 * stays outside libqgm:
 *
 *   grad = qgm_optim_grad(o);            caller writes grad F_i(x_t) here
 *   msg  = qgm_optim_local_step(o, lr);  msg[0..message_len) goes on the wire
 *   mix  = qgm_optim_mix_buffer(o);      caller combines the messages here,
 *                                        as qgm_optim_combine(o) says
 *   qgm_optim_after_gossip(o, lr);       x_{t+1} and the state are updated
 *
 * The same lr must be passed to both calls of a step. Where the combination
 * is the plain neighbour average, qgm_optim_gossip_step (experimental
 * section) may replace the last two lines.
 */
QGM_API int qgm_optim_create(const qgm_optim_config_t *cfg, size_t dim,
                             qgm_optim_t **out);
QGM_API void qgm_optim_free(qgm_optim_t *o);
/* The floats qgm_optim_create allocates for dim parameters (0 for an
 * unknown algorithm) and into *message_len (if not NULL) the length of
 * the message it gossips, so that memory can be checked beforehand. */
QGM_API size_t qgm_optim_footprint(qgm_algorithm_t algorithm, size_t dim,
                                   size_t *message_len);
QGM_API size_t qgm_optim_dim(const qgm_optim_t *o);
QGM_API qgm_algorithm_t qgm_optim_algorithm(const qgm_optim_t *o);
/* The model x_t (dim floats); writable so the caller can initialise it.
 * qgm_optim_after_gossip swaps internal buffers: fetch this pointer (and
 * the mix buffer) again after every step instead of keeping it. */
QGM_API float *qgm_optim_params(qgm_optim_t *o);
QGM_API float *qgm_optim_grad(qgm_optim_t *o);
/* First-moment (momentum) buffer m (dim floats), or NULL for algorithms
 * without one. */
QGM_API const float *qgm_optim_momentum(const qgm_optim_t *o);
/* dim for every algorithm except gradient tracking, whose message is
 * [x, y]: 2 * dim, and push-sum (sgp), whose message is [w z, w]:
 * dim + 1. */
QGM_API size_t qgm_optim_message_len(const qgm_optim_t *o);
/* Push-sum's weight w of the node (sgp; its params are the de-biased
 * model z = x / w); 1 for every other algorithm. */
QGM_API double qgm_optim_push_sum_weight(const qgm_optim_t *o);
QGM_API qgm_combine_t qgm_optim_combine(const qgm_optim_t *o);
QGM_API const float *qgm_optim_local_step(qgm_optim_t *o, float lr);
QGM_API float *qgm_optim_mix_buffer(qgm_optim_t *o);
QGM_API void qgm_optim_after_gossip(qgm_optim_t *o, float lr);

/* Steps completed (Adam's bias correction counts them); a resumed run sets
 * it back together with the state vectors. */
QGM_API uint64_t qgm_optim_steps(const qgm_optim_t *o);
QGM_API void qgm_optim_set_steps(qgm_optim_t *o, uint64_t steps);

/* The vectors that make up an optimizer's state between steps (the model
 * first, named "x"), so that a checkpoint can save and restore all of them
 * without knowing the algorithm. Like the model pointer, the data pointers
 * move at every step: list them again after each step. */
typedef struct qgm_optim_state {
  const char *name; /* stable, e.g. "x", "m", "v" */
  float *data;
  size_t len;       /* floats */
} qgm_optim_state_t;
QGM_API size_t qgm_optim_state_count(const qgm_optim_t *o);
/* QGM_EINVAL when i >= qgm_optim_state_count(o). */
QGM_API int qgm_optim_state_get(qgm_optim_t *o, size_t i,
                                qgm_optim_state_t *out);

/* ------------------------------------------------------ learning rates */

/* The paper's schedule: linear warm-up to base_lr over warmup_steps, then
 * base_lr multiplied by decay_factor at every fraction decay_at[k] of
 * total_steps (the paper: 0.1 at 0.5 and 0.75; no decays: constant). */
#define QGM_LR_MAX_DECAYS 8
typedef struct qgm_lr_schedule {
  double base_lr;
  uint64_t warmup_steps;
  uint64_t total_steps;
  double decay_factor;
  size_t num_decays;
  double decay_at[QGM_LR_MAX_DECAYS]; /* fractions in (0, 1] */
} qgm_lr_schedule_t;

/* The paper's schedule: decays x0.1 at 50% and 75% of total_steps. */
QGM_API void qgm_lr_schedule_paper(qgm_lr_schedule_t *s, double base_lr,
                                   uint64_t warmup_steps,
                                   uint64_t total_steps);
/* Sets the decays from text: "step" with a comma-separated list of
 * fractions in (0, 1] (e.g. "0.5,0.75") and a factor in (0, 1], or
 * "constant" (fractions and factor are then ignored). QGM_EINVAL, with s
 * unchanged, for anything else. */
QGM_API int qgm_lr_schedule_set_decays(qgm_lr_schedule_t *s,
                                       const char *kind,
                                       const char *fractions, double factor);
/* The learning rate of step t (0-based). */
QGM_API double qgm_lr_at(const qgm_lr_schedule_t *s, uint64_t t);

/* ------------------------------------------------------ synthetic problems */

typedef struct qgm_problem qgm_problem_t;

/* A decentralized problem with a known optimum: node i owns `rows` samples
 * (a_ik, b_ik) of its own and f_i is their mean loss.
 *   "least-squares": f_i(x) = 1/(2 rows) sum_k (a_ik . x - b_ik)^2; the
 *     optimum of f = (1/n) sum_i f_i is the closed-form solution of the
 *     normal equations.
 *   "logistic": f_i(x) = 1/rows sum_k log(1 + exp(-b_ik a_ik . x))
 *     + (l2/2)||x||^2 with labels b_ik = +-1; the optimum (l2 > 0 makes it
 *     unique) is found by Newton's method to machine precision.
 * Heterogeneity: node i's data follow its own model x_i^o = x^o +
 * heterogeneity * u_i (u_i standard normal) and its features are shifted by
 * heterogeneity * s_i, so the nodes' local optima differ the more the
 * larger it is (0: identically distributed). */
typedef struct qgm_problem_spec {
  const char *name;     /* one of qgm_problem_names() */
  int nodes;
  size_t dim;
  size_t rows;          /* samples per node */
  double heterogeneity; /* >= 0 */
  double noise;         /* least squares: std of the noise on b */
  double l2;            /* logistic: regularisation, > 0 */
  uint64_t seed;
} qgm_problem_spec_t;

QGM_API int qgm_problem_create(const qgm_problem_spec_t *spec,
                               qgm_problem_t **out);
QGM_API void qgm_problem_free(qgm_problem_t *p);
QGM_API const char *qgm_problem_names(void);
QGM_API size_t qgm_problem_dim(const qgm_problem_t *p);
QGM_API size_t qgm_problem_rows(const qgm_problem_t *p);
QGM_API int qgm_problem_nodes(const qgm_problem_t *p);
/* The minimiser x* of f = (1/n) sum_i f_i (dim doubles) and f(x*). */
QGM_API const double *qgm_problem_optimum(const qgm_problem_t *p);
QGM_API double qgm_problem_optimal_loss(const qgm_problem_t *p);
/* Node's mean loss over its samples rows[0..n) (rows == NULL: all of them)
 * at x, and its gradient written to grad (may be NULL). */
QGM_API int qgm_problem_loss_grad(const qgm_problem_t *p, int node,
                                  const float *x, const size_t *rows,
                                  size_t n, float *grad, double *loss);
/* f(x) = (1/n) sum_i f_i(x) over all samples, in double. */
QGM_API double qgm_problem_loss(const qgm_problem_t *p, const float *x);
/* For logistic regression, the fraction of all samples whose label sign
 * x classifies correctly; -1 for least squares. */
QGM_API double qgm_problem_accuracy(const qgm_problem_t *p, const float *x);
/* ------------------------------------------------ asynchronous server */

/*
 * The server side of asynchronous parameter-server training: workers pull
 * the model, compute a gradient on their own shard and push it back; the
 * server applies gradients as they arrive, by one of five rules:
 *
 *   asgd    x -= lr * (g + lambda x)                  each gradient as it comes
 *   asgd-m  m = beta m + (g + lambda x); x -= lr m    server (heavy-ball) momentum
 *   gsgm    white-list scheduling, the partial average of the workers' latest
 *           gradients, and a global momentum buffer fed that average; the
 *           average then drives SGD, momentum SGD or Adam (qgm_gsgm_base_t);
 *           variants in qgm_gsgm_rule_t.
 *   sa-asgd, dc-asgd  staleness-aware and delay-compensated ASGD (below).
 *
 * GSGM's white list: a round lasts until every worker has contributed once.
 * A gradient from a worker that already contributed in the current round
 * waits (the caller should hold that worker back) until the round is
 * complete; so every worker's applied-update count stays within 1 of the
 * others'. The exact rules are in docs/ALGORITHMS-ASYNC.md.
 *
 * The transport stays outside: the caller hands in each arriving gradient
 * with qgm_server_submit, then calls qgm_server_apply_next until it returns
 * 0; each applied update names the worker that may get the new model.
 */
typedef enum {
  QGM_ASYNC_ASGD = 0,
  QGM_ASYNC_ASGD_M = 1,
  QGM_ASYNC_GSGM = 2,
  /* Staleness-aware ASGD (Zhang et al., IJCAI 2016): the step of a
   * gradient of staleness tau is lr / max(1, tau). */
  QGM_ASYNC_SA_ASGD = 3,
  /* DC-ASGD (Zheng et al., ICML 2017), delay compensation:
   * x -= lr (g + dc_lambda g*g*(x - x_sent) + lambda x), where x_sent is the
   * model the worker was sent (qgm_server_sent) and * is elementwise. */
  QGM_ASYNC_DC_ASGD = 4,
} qgm_async_rule_t;

/* Which GSGM variant (docs/ALGORITHMS-ASYNC.md):
 *   round     white list by whole rounds, partial average, global momentum
 *   window    as round, but a worker may run up to `window` gradients ahead
 *             of the slowest instead of 1 (a bounded wait)
 *   weighted  as round, with each worker's latest gradient weighted by
 *             (1 - 1/workers)^(its age in versions) in the partial average
 *   fresh     as round, with the global momentum fed the arriving gradient
 *             itself instead of the partial average (no stale re-use) */
typedef enum {
  QGM_GSGM_ROUND = 0,
  QGM_GSGM_WINDOW = 1,
  QGM_GSGM_WEIGHTED = 2,
  QGM_GSGM_FRESH = 3,
} qgm_gsgm_rule_t;

/* What GSGM's direction a = partial average + lambda x drives:
 *   momentum  m = beta m + a;           x -= lr m
 *   sgd       m = beta m + (1-beta) a;  x -= lr m   (SGD on the smoothed a)
 *   adam      Adam whose first moment m (beta1 = beta) is fed a;
 *             beta2 0.999, eps 1e-8, bias-corrected. */
typedef enum {
  QGM_GSGM_MOMENTUM = 0,
  QGM_GSGM_SGD = 1,
  QGM_GSGM_ADAM = 2,
} qgm_gsgm_base_t;

/* "asgd", "asgd-m", "gsgm", "sa-asgd", "dc-asgd"; QGM_EINVAL for other
 * names. */
QGM_API int qgm_async_rule_parse(const char *name, qgm_async_rule_t *out);
QGM_API const char *qgm_async_rule_name(qgm_async_rule_t rule);
/* A comma-separated list of the rule names, for help texts. */
QGM_API const char *qgm_async_rule_names(void);
/* "momentum", "sgd", "adam". */
QGM_API int qgm_gsgm_base_parse(const char *name, qgm_gsgm_base_t *out);
QGM_API const char *qgm_gsgm_base_names(void);
/* "round", "window", "weighted", "fresh". */
QGM_API int qgm_gsgm_rule_parse(const char *name, qgm_gsgm_rule_t *out);
QGM_API const char *qgm_gsgm_rule_names(void);

typedef struct qgm_server_config {
  qgm_async_rule_t rule;
  qgm_gsgm_base_t base; /* gsgm only */
  int workers;          /* workers are numbered 0 .. workers-1 */
  float momentum;       /* beta */
  float weight_decay;   /* lambda, added to the direction as lambda * x */
  qgm_gsgm_rule_t gsgm_rule; /* gsgm only */
  int window;           /* gsgm window: the lead allowed (>= 1) */
  float dc_lambda;      /* dc-asgd: the compensation's weight (>= 0) */
} qgm_server_config_t;

/* One applied gradient. */
typedef struct qgm_server_update {
  int worker;
  uint64_t version;   /* the server's version after the update */
  uint64_t staleness; /* updates applied between the model the gradient was
                         computed on and this one */
  uint64_t round;     /* gsgm: the round it counted in (0-based); else 0 */
} qgm_server_update_t;

typedef struct qgm_server qgm_server_t;

QGM_API int qgm_server_create(const qgm_server_config_t *cfg, size_t dim,
                              qgm_server_t **out);
QGM_API void qgm_server_free(qgm_server_t *s);
QGM_API size_t qgm_server_dim(const qgm_server_t *s);
/* The model x (dim floats); writable so the caller can initialise it. */
QGM_API float *qgm_server_params(qgm_server_t *s);
/* Updates applied so far: the version of the current model. */
QGM_API uint64_t qgm_server_version(const qgm_server_t *s);
/* gsgm: rounds completed so far; 0 for the other rules. */
QGM_API uint64_t qgm_server_rounds(const qgm_server_t *s);
/* The momentum buffer (Adam: its first moment), or NULL for asgd. */
QGM_API const float *qgm_server_momentum(const qgm_server_t *s);
/* gsgm: the partial average of the workers' latest gradients as of the last
 * update (without weight decay); NULL for the other rules. */
QGM_API const float *qgm_server_partial_average(const qgm_server_t *s);
/* How many of worker's gradients were applied; whether one is waiting. */
QGM_API uint64_t qgm_server_applied(const qgm_server_t *s, int worker);
QGM_API int qgm_server_waiting(const qgm_server_t *s, int worker);

/* Hands in (copies) worker's gradient of its loss at the model of
 * `version`. QGM_EINVAL for a worker out of range, a version from the
 * future, or a worker that already has a gradient waiting. */
QGM_API int qgm_server_submit(qgm_server_t *s, int worker, const float *grad,
                              uint64_t version);
/* Applies, with learning rate lr, the earliest-submitted waiting gradient
 * that the schedule admits now: returns 1 and describes it in *out (if not
 * NULL), or 0 when none may be applied. */
QGM_API int qgm_server_apply_next(qgm_server_t *s, float lr,
                                  qgm_server_update_t *out);
/* Tells the server that worker is being sent the current model: dc-asgd
 * keeps a copy of it for the delay compensation; a no-op otherwise. */
QGM_API void qgm_server_sent(qgm_server_t *s, int worker);
/* The staleness histogram of the applied gradients: hist[t] counts those
 * of staleness t, for t < *len - 1; the last bucket counts staleness
 * *len - 1 and more. *len is 8 x workers + 1. */
QGM_API const uint64_t *qgm_server_staleness_hist(const qgm_server_t *s,
                                                  size_t *len);

/* Training stability: the population standard deviation of the last
 * min(k, n) of values[0..n) (0 when n == 0). */
QGM_API double qgm_stability_std(const double *values, size_t n, size_t k);

/* ------------------------------------------------------------ topologies */

/*
 * A topology is the communication graph of n nodes and its mixing matrix W
 * (node i's model becomes sum_j W_ij x_j). Every W a constructor returns has
 * been checked: rows and columns sum to 1, weights are positive, static
 * graphs are symmetric, and the graph (over one period, for time-varying
 * ones) is connected. docs/topologies.md describes every graph.
 */
typedef struct qgm_topology qgm_topology_t;

typedef enum {
  QGM_MIXING_DEFAULT = 0, /* the graph's own: metropolis for social, star and
                             file graphs, uniform for the regular ones */
  QGM_MIXING_UNIFORM,     /* W_ij = 1/(d+1), d the largest degree */
  QGM_MIXING_METROPOLIS,  /* W_ij = 1/(1+max(d_i,d_j)) (Metropolis-Hastings) */
  QGM_MIXING_LAZY,        /* (I + W)/2 of the graph's own W: eigenvalues in
                             [0, 1], for static graphs */
} qgm_mixing_t;

/* "default", "uniform", "metropolis", "lazy". */
QGM_API int qgm_mixing_parse(const char *name, qgm_mixing_t *out);
QGM_API const char *qgm_mixing_name(qgm_mixing_t mixing);

typedef struct qgm_topology_spec {
  const char *name; /* one of qgm_topology_names(), or "file:PATH" */
  int nodes;
  qgm_mixing_t mixing;
  int torus_rows, torus_cols; /* 0, 0: the most square factorisation */
  /* "hier" only: the nodes sit on `hosts` hosts, node i on host host_of[i]
   * (NULL: on host i / (nodes / hosts), the placement of ranks filled in
   * host by host), the same number on every host. They average exactly
   * inside a host and gossip between hosts over the graph host_topology
   * (NULL: "ring"; mixing and the torus shape apply to it). */
  int hosts;
  const int *host_of;
  const char *host_topology;
  int tree_arity; /* "tree" only: children per node; 0 selects 2 */
} qgm_topology_spec_t;

/* "RxC" (e.g. "4x8") into rows and cols, both >= 1; "" gives 0 x 0 (the
 * most square factorisation). */
QGM_API int qgm_torus_parse(const char *text, int *rows, int *cols);

/* Why a constructor failed, for the user. */
typedef struct qgm_topology_error {
  int line;       /* line of the edge file at fault; 0 when none is */
  char text[512]; /* one line, e.g. "g.edges:7: self-loop '3 3'" */
} qgm_topology_error_t;

/* Builds and validates the topology of spec. On failure error (if not NULL)
 * says why: QGM_ENODES (a node count the graph cannot take, e.g. social
 * with n != 32), QGM_EOPEN/QGM_EIO/QGM_ENOTFILE (edge file), QGM_ESYNTAX
 * (non-numeric text), QGM_EGRAPH (self-loop, duplicate edge, node id >= n,
 * no edges, not connected), QGM_EMIXING (weights out of (0, 1], not doubly
 * stochastic, or a zero diagonal on a bipartite graph: eigenvalue -1),
 * QGM_EINVAL (unknown name). */
QGM_API int qgm_topology_create_ex(const qgm_topology_spec_t *spec,
                                   qgm_topology_t **out,
                                   qgm_topology_error_t *error);
/* A topology by name with its default mixing, for n nodes; QGM_EINVAL for
 * an unknown name, QGM_ENODES for a node count the graph cannot take. */
QGM_API int qgm_topology_create(const char *name, int nodes,
                                qgm_topology_t **out);
/* The ring: each node averages with itself and its two neighbours, 1/3
 * each (n = 2: 1/2 each; n = 1: itself). */
QGM_API int qgm_topology_ring(int nodes, qgm_topology_t **out);
QGM_API void qgm_topology_free(qgm_topology_t *t);
/* A comma-separated list of the names qgm_topology_create knows. */
QGM_API const char *qgm_topology_names(void);
/* Of them, the built-in graphs (not hier, not file:PATH): what may join
 * the hosts of topology hier. */
QGM_API const char *qgm_topology_graph_names(void);
QGM_API int qgm_topology_nodes(const qgm_topology_t *t);
/* The largest number of peers any node has in any round. */
QGM_API int qgm_topology_max_degree(const qgm_topology_t *t);
/* Number of rounds after which a time-varying graph repeats; 1 if static. */
QGM_API int qgm_topology_period(const qgm_topology_t *t);
/* Undirected edges used over one period. */
QGM_API size_t qgm_topology_edges(const qgm_topology_t *t);
/* The mixing rule in force (never QGM_MIXING_DEFAULT). */
QGM_API qgm_mixing_t qgm_topology_mixing(const qgm_topology_t *t);
/* Node's peers in gossip round `round` (graphs may vary with time): writes
 * k <= max_degree peer ids and weights W_ij into the caller's arrays, sets
 * *self_weight to W_ii and returns k. These are the nodes whose messages
 * node mixes; peers are distinct and never node. */
QGM_API int qgm_topology_neighbors(const qgm_topology_t *t, int node,
                                   uint64_t round, int *peers,
                                   double *weights, double *self_weight);
/* The nodes that mix node's message in round `round` (W_ji > 0, j != node):
 * writes k <= max_degree ids and returns k. The same set as
 * qgm_topology_neighbors for symmetric graphs; different for the directed
 * one-peer exponential graph. */
QGM_API int qgm_topology_send_peers(const qgm_topology_t *t, int node,
                                    uint64_t round, int *peers);
/* The dense n x n W of round `round`, row-major. */
QGM_API void qgm_topology_weights(const qgm_topology_t *t, uint64_t round,
                                  double *w);
/* 1 - ||P - J/n||_2 with P the product of W over one period and J/n the
 * exact average: for a static symmetric W, 1 - |lambda_2(W)| (lambda_2 the
 * second largest eigenvalue in magnitude). 1 means P averages exactly, 0
 * that some disagreement never decays. Dense (Jacobi eigenvalues):
 * QGM_EINVAL for n > 2048; about a second at n = 512. */
QGM_API int qgm_topology_spectral_gap(const qgm_topology_t *t, double *gap);
/* The smallest eigenvalue of a static symmetric W (of round 0 of a
 * hierarchical one). It decides stability where the gap does not: D^2 needs
 * lambda_min(W) > -1/3, and a bipartite graph's Metropolis W comes close to
 * -1. QGM_EINVAL for a time-varying or directed W or n > 2048. */
QGM_API int qgm_topology_lambda_min(const qgm_topology_t *t,
                                    double *lambda_min);
/* The least and the largest eigenvalue of a static symmetric W but the
 * average's eigenvalue 1 (which, on a connected graph, is simple): every
 * disagreement between nodes decays at a rate in [lo, hi] per round.
 * QGM_EINVAL as qgm_topology_lambda_min, or for one node. */
QGM_API int qgm_topology_eigen_range(const qgm_topology_t *t, double *lo,
                                     double *hi);
/* Chebyshev acceleration of R gossip rounds (--gossip-acceleration). Round
 * k = 0..R-1 sends y_k (y_0 the message) and makes
 *   y_{k+1} = t_k + b[k] (y_k - t_k) + e[k] (y_{k-1} - t_k),  t_k = W y_k
 * (qgm_vec_chebyshev_round; e[0] = 0), and the mix is
 *   y = y_R + *w (y_0 - y_R),
 * so that y = P_R(W) y_0 with P_R(x) = (1 + T_R(z(x))) / (1 + T_R(z(1))),
 * T_R the Chebyshev polynomial and z mapping [lo, hi], the other
 * eigenvalues of W, onto [-1, 1]. P_R(1) = 1 keeps the nodes' mean, and
 * P_R is the polynomial of degree R that is smallest on [lo, hi] without
 * going below 0 there: a negative eigenvalue of the mix would make the
 * tracking rules diverge (docs/ALGORITHMS.md). Its largest value there,
 * 2 / (1 + T_R(z(1))), goes to *contraction (NULL: not wanted), against
 * max(|lo|, |hi|)^R for W^R: on a ring of n it falls like (1 - c/n)^R
 * where W^R's falls like (1 - c/n^2)^R. QGM_EINVAL unless
 * -1 <= lo <= hi < 1 and 1 <= rounds. */
QGM_API int qgm_chebyshev_rounds(double lo, double hi, int rounds, float *b,
                                 float *e, float *w, double *contraction);

/* 1 when the graph is a static tree (connected, n - 1 edges), else 0. */
QGM_API int qgm_topology_is_tree(const qgm_topology_t *t);
/* A hash of n and every W of one period: equal topologies hash equal. */
QGM_API uint64_t qgm_topology_hash(const qgm_topology_t *t);

/* Hierarchical topologies ("hier"): W = W_H (x) J/L, where W_H mixes the
 * hosts and J/L averages the L nodes of a host exactly. A transport that
 * knows the hosts needs only one copy of a host's mean model to cross to
 * each neighbouring host: slot s of a host reduces and exchanges slice s
 * (qgm_host_slice) of the vector, then the host shares the slices.
 * qgm_topology_hosts is 0 for every other topology; the others below are
 * only defined when it is not. */
QGM_API int qgm_topology_hosts(const qgm_topology_t *t);
QGM_API int qgm_topology_per_host(const qgm_topology_t *t);
QGM_API int qgm_topology_host_of(const qgm_topology_t *t, int node);
/* Node's index among its host's nodes (in increasing node order). */
QGM_API int qgm_topology_host_slot(const qgm_topology_t *t, int node);
/* The node at index slot of host. */
QGM_API int qgm_topology_host_member(const qgm_topology_t *t, int host,
                                     int slot);
/* W_H, over qgm_topology_hosts(t) nodes. */
QGM_API const qgm_topology_t *qgm_topology_host_graph(const qgm_topology_t *t);
/* The part of a len-float vector that slot `slot` of `parts` reduces:
 * [*offset, *offset + *count), contiguous, sizes differing by at most 1. */
QGM_API void qgm_host_slice(size_t len, int parts, int slot, size_t *offset,
                            size_t *count);
/* out = (v[0] + ... + v[k-1]) * (1/k), summed in that order: a host's mean
 * message, computed the same way by the daemon and qgm_mix_messages. */
QGM_API void qgm_vec_mean(float *out, const float *const *v, int k,
                          size_t n);
/* out = the sum of v[0..k) (k >= 1) as a pairwise tree in index order:
 * for width = 1, 2, 4, ... while width < k, every v[i] with i a multiple
 * of 2 width and i + width < k becomes v[i] + v[i + width]; out is v[0].
 * An aligned block of 2^j vectors is a subtree, so a sum of such blocks'
 * sums, taken by the same rule, has the same bits as the sum of them all:
 * what lets the all-reduce sum a host's nodes first and still give the
 * same result on any placement. */
QGM_API void qgm_vec_tree_sum(float *out, const float *const *v, int k,
                              size_t n);

/* ------------------------------------------------------------- hashing */

/* 64-bit FNV-1a of n bytes, continuing from h (start from QGM_HASH_INIT),
 * so that ranks and runs can compare what they hold. Not cryptographic. */
#define QGM_HASH_INIT 0xcbf29ce484222325ULL
QGM_API uint64_t qgm_hash64(const void *data, size_t n, uint64_t h);
/* SHA-256 (FIPS 180-4) of n bytes into out: for bytes that must not be
 * altered unnoticed by anyone (a data cache entry), where qgm_hash64 and
 * CRC-32 only catch accidents. */
#define QGM_SHA256_BYTES 32
QGM_API void qgm_sha256(const void *data, size_t n,
                        uint8_t out[QGM_SHA256_BYTES]);
/* Every image and label of a dataset, and its shape. */
QGM_API uint64_t qgm_dataset_hash(const qgm_dataset_t *ds);

/* ------------------------------------------------- in-process gossip */

/* The in-process transport: combines the messages of all n nodes of a
 * topology for round `round` as `mixing` says, in the same floating-point
 * order as qgmd's neighbour exchange (msg_i, then qgm_vec_mix_peer for each
 * peer in the order qgm_topology_neighbors lists them), so a simulated run
 * follows the daemon's bit for bit. msgs[i] and mixes[i] hold len floats each and
 * must not overlap. */
QGM_API int qgm_mix_messages(const qgm_topology_t *t, uint64_t round,
                             qgm_combine_t mixing, const float *const *msgs,
                             float *const *mixes, size_t len);

/* Lost gossip messages (--drop-rate): the message of round r from j to i
 * is lost when qgm_rng_message_draw(seed, r, j, i) < rate. rate 0 loses
 * none and changes nothing. */
typedef struct qgm_drop {
  double rate; /* in [0, 1) */
  uint64_t seed;
} qgm_drop_t;
QGM_API int qgm_drop_lost(const qgm_drop_t *d, uint64_t round, int from,
                          int to);
/* Node `node`'s mix of round: given its k peers as qgm_topology_neighbors
 * lists them (peers, weights) and their messages (from, may be NULL),
 * removes in place those whose message to node is lost (d NULL: none),
 * keeping the order, and returns how many remain. Neighbour mixing then
 * puts a lost message's weight on node's own (the receiver renormalises
 * its row: the difference form does it by leaving the term out). With
 * QGM_COMBINE_PUSH_SUM the weights become the senders' shares
 * 1 / (out-degree + 1), and *own_extra receives the share node adds to
 * its own message beyond the difference form's: (the shares it received)
 * - (the shares it delivered), so that a share whose message is lost
 * stays with its sender and the column sums stay 1: the sum of the
 * push-sum weights is kept. Elsewhere *own_extra is 0. own_extra may be
 * NULL. */
QGM_API int qgm_gossip_round(const qgm_topology_t *t, uint64_t round,
                             int node, qgm_combine_t mixing,
                             const qgm_drop_t *d, int k, int *peers,
                             const float **from, double *weights,
                             double *own_extra);
/* How many messages to node were lost in rounds [0, rounds): a count
 * from the draws alone, the same in qgmd and qgm-sim and after a resume. */
QGM_API uint64_t qgm_drop_count(const qgm_topology_t *t, const qgm_drop_t *d,
                                int node, uint64_t rounds);
/* qgm_mix_messages with lost messages (d NULL or rate 0: the same bits)
 * and push-sum, in the daemon's order: the mix of the remaining peers
 * (qgm_vec_gossip_mix), then own_extra * msg_i added where it is not 0.
 * Lost messages are refused (QGM_EINVAL) for the kinds that cannot lose
 * one: the global mean and hierarchical topologies. */
QGM_API int qgm_mix_messages_lossy(const qgm_topology_t *t, uint64_t round,
                                   qgm_combine_t mixing, const qgm_drop_t *d,
                                   const float *const *msgs,
                                   float *const *mixes, size_t len);

/* ------------------------------------------------------------ RelaySum */

/* Why alg cannot run on topology t, as one line for the user (written into
 * why, len bytes), or NULL when it can: D^2 on a W with
 * lambda_min(W) <= -1/3 (it diverges; lazy mixing fixes it), RelaySGD on a
 * graph that is not a static tree. */
QGM_API const char *qgm_optim_refuses(qgm_algorithm_t alg,
                                      const qgm_topology_t *t, char *why,
                                      size_t len);

/*
 * RelaySum, the exchange of RelaySGD (Vogels et al., NeurIPS 2021), on a
 * tree (qgm_topology_is_tree). With h_i node i's half-step model and N(i)
 * its neighbours, node i sends every j in N(i) its own message
 *   m_ij = h_i + sum_{k in N(i), k != j} m_ki',  c_ij = 1 + sum c_ki'
 * (m_ki', c_ki' what k sent i in the previous round; 0 before the first),
 * and after receiving m_ji, c_ji from every neighbour takes
 *   x_i = (h_i + sum_j m_ji + (n - 1 - sum_j c_ji) x0) / n,
 * x0 the shared initial model. A message is dim + 1 floats: the sum, then
 * the count. Peers are indexed in qgm_topology_neighbors order.
 */
typedef struct qgm_relay qgm_relay_t;
/* Node's state; x0 (dim floats) is copied. QGM_EINVAL if t is no tree. */
QGM_API int qgm_relay_create(const qgm_topology_t *t, int node, size_t dim,
                             const float *x0, qgm_relay_t **out);
QGM_API void qgm_relay_free(qgm_relay_t *r);
QGM_API size_t qgm_relay_message_len(const qgm_relay_t *r);
QGM_API int qgm_relay_peers(const qgm_relay_t *r);
/* out (message_len floats) = the message of this round to peer j. */
QGM_API void qgm_relay_message(const qgm_relay_t *r, int j, const float *h,
                               float *out);
/* Where peer j's message of this round must be written before the mix. */
QGM_API float *qgm_relay_inbox(qgm_relay_t *r, int j);
/* What peer j sent last round (message_len floats), which the next
 * messages relay: the state a checkpoint saves. */
QGM_API float *qgm_relay_sums(qgm_relay_t *r, int j);
/* mix (dim floats) = x_i from h and the inboxes, which then become the
 * sums the next round relays. */
QGM_API void qgm_relay_mix(qgm_relay_t *r, const float *h, float *mix);
/* The in-process exchange of all nodes: relays[i] and h[i] node i's,
 * mixes[i] its result (the daemon's arithmetic, for the simulator). */
QGM_API int qgm_relay_exchange(const qgm_topology_t *t,
                               qgm_relay_t *const *relays,
                               const float *const *h, float *const *mixes);

/* ---------------------------------------------------- compressed gossip */

/*
 * Compression operators C for compressed gossip, and CHOCO-gossip's state
 * (docs/COMPRESSION.md has the wire formats, docs/ALGORITHMS.md the rule).
 * A spec is written "none", "topk:F", "randk:F", "qsgd:BITS" or "sign":
 *   topk:F    the ceil(F n) coordinates of largest magnitude (F in (0, 1]);
 *   randk:F   as many at random positions that sender and receivers draw
 *             from the same seed, so no indices go on the wire;
 *   qsgd:BITS stochastic quantisation to s = 2^(BITS-1) - 1 levels of
 *             ||v_block||_2 per block of QGM_COMPRESS_BLOCK coordinates,
 *             divided by 1 + omega (QSGD's variance bound) to be contractive;
 *   sign      the scaled sign, mean |v| per block times sign(v_i).
 * "powersgd:R" parses too, but is no operator of CHOCO's: it names the
 * low-rank exchanges below (qgm_powersgd_*, qgm_powergossip_*), and
 * qgm_compress_create refuses it.
 * Every message has the exact length qgm_compress_bytes gives, but
 * qsgd's, which is at most that: each block takes the shorter of two forms
 * (the levels 0 and +-1 in 2 bits, the rest escaped), and says which.
 */
typedef enum {
  QGM_COMPRESS_NONE = 0,
  QGM_COMPRESS_TOPK = 1,
  QGM_COMPRESS_RANDK = 2,
  QGM_COMPRESS_QSGD = 3,
  QGM_COMPRESS_SIGN = 4,
  QGM_COMPRESS_POWERSGD = 5,
} qgm_compress_kind_t;

#define QGM_COMPRESS_BLOCK 256 /* coordinates per quantiser scale */
#define QGM_COMPRESS_MIN_BITS 2
#define QGM_COMPRESS_MAX_BITS 16
#define QGM_COMPRESS_MAX_RANK 64 /* powersgd's largest R */

typedef struct qgm_compress_spec {
  qgm_compress_kind_t kind;
  double fraction; /* topk, randk */
  int bits;        /* qsgd */
  int rank;        /* powersgd */
  /* powersgd: the model's matrices (qgm_model_matrices), which the job
   * fills in for the exchange; parsing leaves them NULL. */
  const qgm_matrix_block_t *matrices;
  size_t nmatrices;
} qgm_compress_spec_t;

/* Parses a spec; QGM_EINVAL for an unknown name or a bad argument. */
QGM_API int qgm_compress_parse(const char *text, qgm_compress_spec_t *out);
/* "none, topk:F, randk:F, qsgd:BITS, sign, powersgd:R", for help texts. */
QGM_API const char *qgm_compress_names(void);

typedef struct qgm_compress qgm_compress_t;

/* An operator for vectors of n floats (n < 2^32), with its scratch. */
QGM_API int qgm_compress_create(const qgm_compress_spec_t *spec, size_t n,
                                qgm_compress_t **out);
QGM_API void qgm_compress_free(qgm_compress_t *c);
QGM_API size_t qgm_compress_len(const qgm_compress_t *c);
/* Coordinates a message carries: k for topk and randk, else n. */
QGM_API size_t qgm_compress_kept(const qgm_compress_t *c);
/* The length of every message in bytes; for qsgd the most one takes, the
 * room a receiver needs. */
QGM_API size_t qgm_compress_bytes(const qgm_compress_t *c);
/* The factor that makes C unbiased (E[f C(v)] = v): n/k for randk, 1 +
 * omega for qsgd, 1 for none; 0 for the biased topk and sign. */
QGM_API double qgm_compress_unbiased_scale(const qgm_compress_t *c);
/* Encodes C(v - ref) (ref NULL: C(v)) into out, which has room for
 * qgm_compress_bytes(c), and sets *bytes (unless NULL) to the message's
 * length. rng: randk's positions and qsgd's rounding (the other operators
 * draw nothing and accept NULL). */
QGM_API int qgm_compress_encode(qgm_compress_t *c, const float *v,
                                const float *ref, qgm_rng_t *rng,
                                uint8_t *out, size_t *bytes);
/* Applies a message to copy, which must equal the encoder's ref (zeros for
 * ref NULL): copy becomes ref + C(v - ref). The sparse formats carry v's
 * values at the kept coordinates, which the copy takes (so topk:1 and
 * randk:1 reproduce v exactly); the quantisers' decoded difference is
 * added. randk draws its positions from rng, which must be seeded as the
 * encoder's was. QGM_EINVAL for top-k indices that are not rising and
 * below n, and for qsgd blocks that do not fit in qgm_compress_bytes. */
QGM_API int qgm_compress_apply(qgm_compress_t *c, const uint8_t *in,
                               qgm_rng_t *rng, float *copy);

/* The largest rank a low-rank operator can take on these matrices: the
 * smallest of their rows and columns (0 for none). */
QGM_API size_t qgm_matrices_max_rank(const qgm_matrix_block_t *m, size_t count);

/*
 * PowerSGD's all-reduce (Vogels, Karimireddy, Jaggi, NeurIPS 2019,
 * Alg. 1 with error feedback), one node's state and arithmetic; the
 * transport sums the two messages over the nodes in between:
 *   first:  M = g + e; sends [M_b Q_b for every matrix b, M's other
 *           coordinates]
 *   second: from the sum over nodes times scale (1/nodes): P_b, made
 *           orthonormal (Gram-Schmidt on its R columns, in order), and the
 *           mean of the other coordinates; sends [M_b^T P_b]
 *   decode: Q_b = the second sum times scale; out = P_b Q_b^T on the
 *           matrices, the mean elsewhere; e = M - out on the matrices (0
 *           elsewhere: they are exact); Q_b is the next step's warm start.
 * P and Q are stored column after column (R columns of rows, of cols).
 * Every node starts with the same Q (drawn from a fixed seed), and Q stays
 * the same on all, since it is the mean.
 */
typedef struct qgm_powersgd qgm_powersgd_t;
/* For vectors of n floats with these matrices (as qgm_compress_spec_t's)
 * and rank in [1, qgm_matrices_max_rank]. */
QGM_API int qgm_powersgd_create(size_t n, int rank,
                                const qgm_matrix_block_t *matrices,
                                size_t nmatrices, qgm_powersgd_t **out);
QGM_API void qgm_powersgd_free(qgm_powersgd_t *s);
/* Floats of the first message (R rows per matrix, and the other
 * coordinates) and of the second (R cols per matrix). */
QGM_API size_t qgm_powersgd_first_len(const qgm_powersgd_t *s);
QGM_API size_t qgm_powersgd_second_len(const qgm_powersgd_t *s);
QGM_API void qgm_powersgd_first(qgm_powersgd_t *s, const float *g,
                                float *msg);
QGM_API void qgm_powersgd_second(qgm_powersgd_t *s, const float *sum,
                                 float scale, float *msg);
QGM_API void qgm_powersgd_decode(qgm_powersgd_t *s, const float *sum,
                                 float scale, float *out);
/* The state a checkpoint saves: the error e (n floats) and the warm
 * start Q (second_len floats). */
QGM_API float *qgm_powersgd_error(qgm_powersgd_t *s, size_t *len);
QGM_API float *qgm_powersgd_warm(qgm_powersgd_t *s, size_t *len);

/*
 * CHOCO-gossip for node i with peers j (Koloskova, Stich, Jaggi, ICML 2019):
 * every node keeps public copies xhat of itself and of its peers, sends
 * q_i = C(h_i - xhat_i) where h_i is what plain gossip would send, every
 * holder of a copy applies xhat_i += q_i, and the node mixes
 *   mix = base + gamma sum_j W_ij (xhat_j - xhat_i)
 * (base = h_i for the adapt-then-combine step). Each message's draws come
 * from (seed, sender, round), so no generator state needs saving.
 */
typedef struct qgm_choco_config {
  qgm_compress_spec_t compress;
  size_t dim;
  int node;      /* whose messages qgm_choco_send builds */
  int peers;     /* copies of other nodes kept, in the order of
                    qgm_topology_neighbors */
  uint64_t seed;
  double gamma;  /* the consensus step size, in (0, 1] */
} qgm_choco_config_t;

typedef struct qgm_choco qgm_choco_t;

/* Why CHOCO-gossip cannot run alg on topology t (t may be NULL: the
 * algorithm alone), as one line for the user; NULL when it can. */
QGM_API const char *qgm_choco_refuses(qgm_algorithm_t alg,
                                      const qgm_topology_t *t);
QGM_API int qgm_choco_create(const qgm_choco_config_t *cfg,
                             qgm_choco_t **out);
/* The state of `node` of topology t (static: qgm_choco_refuses passed),
 * for messages of len floats: copies of the message of the node and of
 * its peers or, on a hierarchical topology, of the node's slice
 * (qgm_host_slice) of its host's mean and of the same slice of the
 * neighbouring hosts' means. cc gives the operator, seed and gamma; the
 * dimension, node and peers follow from t. Every copy starts at x0, the
 * whole initial model all nodes share. QGM_EINVAL for an empty slice. */
QGM_API int qgm_choco_create_node(const qgm_topology_t *t, int node,
                                  size_t len, qgm_choco_config_t cc,
                                  const float *x0, qgm_choco_t **out);
QGM_API void qgm_choco_free(qgm_choco_t *c);
/* The room a message needs (qgm_compress_bytes). */
QGM_API size_t qgm_choco_message_bytes(const qgm_choco_t *c);
/* Sets every copy to x0 (nodes that start from one shared model know each
 * other's starting point). Copies start at 0 otherwise. */
QGM_API void qgm_choco_reset(qgm_choco_t *c, const float *x0);
/* The copies as one block of (1 + peers) x dim floats, the node's own
 * first: the state a checkpoint saves. */
QGM_API float *qgm_choco_copies(qgm_choco_t *c, size_t *len);
/* Encodes q = C(v - xhat_i) for round into msg, sets *bytes (unless NULL)
 * to its length, and applies it to xhat_i. */
QGM_API int qgm_choco_send(qgm_choco_t *c, uint64_t round, const float *v,
                           uint8_t *msg, size_t *bytes);
/* Applies node `from`'s message of round to copy `copy` (0 .. peers-1). */
QGM_API int qgm_choco_receive(qgm_choco_t *c, int copy, int from,
                              uint64_t round, const uint8_t *msg);
/* mix = base + gamma sum_j weights[j] (xhat_j - xhat_i), in the float
 * order of qgm_vec_gossip_mix with weights gamma W_ij. */
QGM_API void qgm_choco_mix(qgm_choco_t *c, float *mix, const float *base,
                           const double *weights);
/* The in-process compressed gossip of round (qgm_mix_messages' CHOCO
 * counterpart, in the daemon's order): every node i, whose state
 * choco[i] is qgm_choco_create_node's, encodes its message msgs[i] (on a
 * hierarchical topology: its slice of its host's mean) into wire[i] (of
 * qgm_choco_message_bytes), every holder applies what it receives, and
 * mixes[i] gets the CHOCO mix (on a hierarchical topology: the host's, on
 * every node of the host). Returns 0 or an error code. */
QGM_API int qgm_mix_compressed(const qgm_topology_t *t, uint64_t round,
                               qgm_choco_t *const *choco,
                               uint8_t *const *wire, const float *const *msgs,
                               float *const *mixes, size_t len);

/*
 * PowerGossip (Vogels, Karimireddy, Jaggi, "Practical Low-Rank
 * Communication Compression in Decentralized Deep Learning", NeurIPS 2020):
 * gossip of low-rank approximations of the model differences between
 * neighbours, for the graph's static edges. Edge (i, j), i < j, keeps a
 * warm start the same on both ends, and every round does one step of
 * power iteration on D = X_i - X_j per weight matrix, alternating sides:
 *   even rounds: V = orth(V_ij) (cols x R); i and j send X V; both get
 *                A = X_i V - X_j V = D V and move X_i -= w A V^T,
 *                X_j += w A V^T (w = gamma W_ij); U_ij = A
 *   odd rounds:  U = orth(U_ij) (rows x R); they send X^T U; B = D^T U;
 *                X_i -= w U B^T, X_j += w U B^T; V_ij = B
 * D loses its part in the span of V (U) twice over, so with w <= 1/2 the
 * difference never grows; what is left stays in the models and is
 * compressed in later rounds (no public copies, as CHOCO keeps). The
 * other coordinates (biases, norms) travel with every message and are
 * gossiped exactly: x_i + sum_j w (x_j - x_i). A warm start with a
 * column of zeros (identical neighbours) takes that column of the first
 * draws again, so no direction is lost for good.
 */
typedef struct qgm_powergossip qgm_powergossip_t;
/* Node's state with `peers` neighbours (in qgm_topology_neighbors order),
 * for vectors of n floats with these matrices, at rank R in [1,
 * qgm_matrices_max_rank]. gamma in (0, 1] scales every move: 1 is the
 * paper's rule, which has no step size; the quasi-global momenta,
 * which replay every move, need less (docs/COMPRESSION.md). */
QGM_API int qgm_powergossip_create(size_t n, int rank,
                                   const qgm_matrix_block_t *matrices,
                                   size_t nmatrices, int peers, double gamma,
                                   qgm_powergossip_t **out);
QGM_API void qgm_powergossip_free(qgm_powergossip_t *g);
/* Floats of the messages of round (R rows or R cols per matrix by the
 * round's parity, and the other coordinates), and the most any takes. */
QGM_API size_t qgm_powergossip_len(const qgm_powergossip_t *g, uint64_t round);
QGM_API size_t qgm_powergossip_max_len(const qgm_powergossip_t *g);
/* out = the message of round from x to peer j. Call once per peer and
 * round, before qgm_powergossip_mix. */
QGM_API void qgm_powergossip_message(qgm_powergossip_t *g, uint64_t round,
                                     int j, const float *x, float *out);
/* mix = x moved towards every peer j as above: mine[j] what this node sent
 * j, theirs[j] what j sent it, weights[j] = W_ij, lower[j] whether this
 * node's index is below j's. Updates the warm starts. */
QGM_API void qgm_powergossip_mix(qgm_powergossip_t *g, uint64_t round,
                                 const float *x, const float *const *mine,
                                 const float *const *theirs,
                                 const double *weights, const int *lower,
                                 float *mix);
QGM_API int qgm_powergossip_peers(const qgm_powergossip_t *g);
/* Edge j's warm start (U, then V: the state a checkpoint saves). */
QGM_API float *qgm_powergossip_warm(qgm_powergossip_t *g, int j,
                                    size_t *len);
/* The in-process exchange of round by all nodes of static topology t:
 * states[i] and x[i] node i's, mixes[i] its result, in the daemon's
 * arithmetic. */
QGM_API int qgm_powergossip_exchange(const qgm_topology_t *t, uint64_t round,
                                     qgm_powergossip_t *const *states,
                                     const float *const *x,
                                     float *const *mixes);

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
/* Opens path for writing, created with mode 0644 if missing; flags is 0,
 * O_TRUNC or O_APPEND. Only a regular file is opened, and without
 * blocking: a FIFO (with or without a reader), a directory or a device is
 * QGM_ENOTFILE. QGM_EOPEN leaves errno set (EACCES, ENOSPC, ...). */
QGM_API int qgm_open_output(const char *path, int flags, int *fd);
/* The same for a stream of records a user reads as it comes (--metrics):
 * a character device (/dev/null, a terminal) or the pipe or socket that is
 * this process's standard output or error (/dev/stdout under mpirun) is
 * opened too, and never truncated; a FIFO in the file system is still
 * QGM_ENOTFILE. */
QGM_API int qgm_open_stream(const char *path, int flags, int *fd);

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
/* Every step folder of dir, complete or not, newest first (as
 * qgm_checkpoint_list), so that a caller can say why a step is not
 * complete. */
QGM_API int qgm_checkpoint_folders(const char *dir, uint64_t *steps,
                                   size_t max, size_t *count);
/* Keeps the newest `keep` complete steps (keep >= 1) up to `newest` (the
 * step just written) and removes every older step folder, complete or
 * not. Folders after `newest` are neither counted nor removed: a step
 * written later by someone else must not push the caller's own out. */
QGM_API int qgm_checkpoint_prune(const char *dir, uint64_t newest,
                                 size_t keep);

#ifdef __cplusplus
}
#endif
#endif /* QGM_H */

/* ====================================================== experimental
 *
 * No stability promise (see the top of the file): define
 * QGM_STATIC_LINKING_ONLY before including qgm.h to see these. The guard
 * is apart from QGM_H's so that a file that included qgm.h without the
 * macro can include it again with it. */
#if defined(QGM_STATIC_LINKING_ONLY) && !defined(QGM_H_STATIC_LINKING_ONLY)
#define QGM_H_STATIC_LINKING_ONLY

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------ kernels and profiling */

/* The kernel of the products outside convolutions (qgm_kernels' dense). */
QGM_API const char *qgm_gemm_kernel_name(void);
/* Makes every later product in the process use kernel `name` ("avx512",
 * "avx2", "blis"; NULL: back to the plan's), whatever the plan says; a
 * plan's Winograd convolutions go direct under BLIS. For tests and
 * benchmarks that compare kernels; not thread-safe. -1, and nothing
 * changed, if the CPU lacks the kernel. */
QGM_API int qgm_gemm_use(const char *name);
/* C (m x n) = A (m x k) * B (k x n), all row-major and contiguous, with the
 * kernel of qgm_gemm_kernel_name: what a benchmark measures the machine's
 * peak with. QGM_ENOMEM if its packing scratch cannot be allocated. */
QGM_API int qgm_matmul(size_t m, size_t n, size_t k, const float *a,
                       const float *b, float *c);

/* One layer's share of a model step, as the layer hook sees it. */
typedef struct qgm_layer_span {
  const char *layer; /* e.g. "conv3x3 16>32 32x32/2", "groupnorm (+relu)" */
  int backward;      /* 0: the forward pass, 1: the backward pass */
  double flops;      /* floating-point operations of its products (0: none) */
  /* A convolution's path and kernel, in the form of qgm_kernels' conv3x3
   * entry ("winograd-avx2", "direct-avx512"); NULL for other layers.
   * Valid until the span ends. */
  const char *path;
} qgm_layer_span_t;
/* Called at the start (end = 0) and the end (end = 1) of each layer of a
 * convolutional model's forward and backward pass, with the same span both
 * times; spans do not nest. For per-layer timing in benchmarks. */
typedef void (*qgm_layer_hook_fn)(void *user, const qgm_layer_span_t *span,
                                  int end);
/* Installs fn for every model in the process (NULL: none, the default);
 * not thread-safe, and the hook must not call back into libqgm. */
QGM_API void qgm_set_layer_hook(qgm_layer_hook_fn fn, void *user);

/* --------------------------------------------- the daemon's hot path */

/* Hooks that let qgmd's exchange skip copies of the whole model; their
 * shape follows the exchange's, so they stay out of the stable API. */

/* Where the local steps write the message from now on: message_len floats
 * of the caller's (memory its peers read in place, say), or NULL for the
 * optimizer's own. QGM_EINVAL for gradient tracking, whose message is the
 * model buffer itself. */
QGM_API int qgm_optim_set_message_buffer(qgm_optim_t *o, float *msg);
/* qgm_vec_gossip_mix(mix buffer, base, own, k, peers, weights, message
 * length) followed by qgm_optim_after_gossip(o, lr), with the same bits;
 * for the quasi-global rules on up to two peers, one pass that mixes and
 * updates x and m in place (the mixed vector is neither written nor read
 * back). base and own may be the message or x. */
QGM_API void qgm_optim_gossip_step(qgm_optim_t *o, float lr,
                                   const float *base, const float *own,
                                   int k, const float *const *peers,
                                   const double *weights);

#ifdef __cplusplus
}
#endif
#endif /* QGM_STATIC_LINKING_ONLY */
