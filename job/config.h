/* config.h - the configuration of a job, filled from the one flag table
 * that qgmd and qgm-sim share (each takes the flags marked for it). MPI-free,
 * as all of job/. */
#ifndef QGMD_CONFIG_H
#define QGMD_CONFIG_H

#include <stdio.h>

#include "qgm.h"

#define QGMD_STR_MAX 256

/* The programs that read the flag table. */
enum qgmd_program { QGMD_PROGRAM_DAEMON = 1, QGMD_PROGRAM_SIM = 2 };

/* What changing a flag changes (--show-flags=json says it per flag). */
enum qgmd_flag_category {
  QGMD_FLAG_TRAINING, /* what is trained: a checkpoint resumes only with
                         the value it was written with */
  QGMD_FLAG_OUTPUT,   /* what is written, and where */
  QGMD_FLAG_PACING,   /* how fast or how patiently, not what */
};

/* The bits of qgmd_parsed_t.unknown: a flag whose text names nothing
 * (qgmd_config_check refuses it, naming the flag). */
enum qgmd_unparsed {
  QGMD_UNPARSED_ALGORITHM = 1u << 0,
  QGMD_UNPARSED_MIXING = 1u << 1,
  QGMD_UNPARSED_TORUS = 1u << 2,
  QGMD_UNPARSED_HOSTS = 1u << 3,
  QGMD_UNPARSED_OVERLAP = 1u << 4,
  QGMD_UNPARSED_SHARED_MEMORY = 1u << 5,
  QGMD_UNPARSED_COMPRESS = 1u << 6,
  QGMD_UNPARSED_LR_SCHEDULE = 1u << 7,
  QGMD_UNPARSED_GSGM_BASE = 1u << 8,
  QGMD_UNPARSED_GSGM_RULE = 1u << 9,
  QGMD_UNPARSED_LOG_LEVEL = 1u << 10,
  QGMD_UNPARSED_ALLREDUCE = 1u << 11,
  QGMD_UNPARSED_SYNC = 1u << 12,
  QGMD_UNPARSED_KERNELS = 1u << 13,
  QGMD_UNPARSED_GOSSIP_ACCELERATION = 1u << 14,
};

/* --lr-schedule. */
enum qgmd_lr_schedule { QGMD_LR_STEP, QGMD_LR_CONSTANT };

/* The enumeration and spec flags, parsed once, as they are set (their
 * text stays in the fields of qgmd_config_t, for the records and the
 * messages). A field is valid when its bit is clear in `unknown`, which
 * qgmd_config_check makes sure of. */
typedef struct qgmd_parsed {
  unsigned unknown;              /* QGMD_UNPARSED_ bits */
  /* --algorithm: an asynchronous rule (asynchronous 1, async_rule) or a
   * synchronous algorithm (asynchronous 0, algorithm). */
  int asynchronous;
  qgm_async_rule_t async_rule;
  qgm_algorithm_t algorithm;
  qgm_mixing_t mixing;
  int torus_rows, torus_cols;    /* 0 x 0: the most square */
  int hosts;                     /* the host count; 0: auto */
  int overlap;                   /* 1: on */
  int shared_memory;             /* 1: auto */
  int allreduce_mpi;             /* 1: --allreduce=mpi, Open MPI's */
  int gossip_async;              /* 1: --sync=async */
  int gossip_chebyshev;          /* 1: --gossip-acceleration=chebyshev */
  qgm_compress_spec_t compress;  /* kind QGM_COMPRESS_NONE: plain gossip */
  enum qgmd_lr_schedule lr_schedule;
  qgm_gsgm_base_t gsgm_base;
  qgm_gsgm_rule_t gsgm_rule;
  int log_level;                 /* 0 error, 1 warning, 2 info, 3 debug */
} qgmd_parsed_t;

typedef struct qgmd_config {
  unsigned program; /* the QGMD_PROGRAM_ whose flags were read */
  char algorithm[QGMD_STR_MAX];
  char topology[QGMD_STR_MAX];
  char mixing[QGMD_STR_MAX];
  char torus[QGMD_STR_MAX];
  char hosts[QGMD_STR_MAX];
  char host_topology[QGMD_STR_MAX];
  char dataset[QGMD_STR_MAX];
  char data_dir[QGMD_STR_MAX];
  char data_cache[QGMD_STR_MAX];
  char model[QGMD_STR_MAX];
  char hidden[QGMD_STR_MAX];
  double alpha;
  long epochs;
  long batch_size;
  double lr;
  double momentum;
  double weight_decay;
  double gut_scaling; /* GUT's mu (gut, qg-gutm; libqgm/optim/optim_gut.c) */
  double warmup_epochs;
  char lr_schedule[QGMD_STR_MAX];
  char lr_decay_at[QGMD_STR_MAX];
  double lr_decay_factor;
  long seed;
  long train_limit;
  long test_limit;
  char overlap[QGMD_STR_MAX];
  long local_steps;
  char shared_memory[QGMD_STR_MAX]; /* auto or off (exchange.h) */
  char allreduce[QGMD_STR_MAX]; /* qgmd or mpi (exchange_plan.h) */
  char compress[QGMD_STR_MAX]; /* compressed gossip (docs/COMPRESSION.md) */
  char kernels[QGMD_STR_MAX]; /* the products' paths (job/kernels.c) */
  double consensus_lr;
  double drop_rate; /* lost gossip messages (lossy.c in libqgm/graph) */
  long gossip_rounds; /* neighbour exchanges per step (job/gossip_rounds.c),
                         at most: */
#define QGMD_GOSSIP_ROUNDS_MAX 64
  char gossip_acceleration[QGMD_STR_MAX]; /* how the rounds combine */
  char sync[QGMD_STR_MAX]; /* sync or async gossip (job/sync.c) */
  long max_staleness;
  char straggle[QGMD_STR_MAX];
  double target_accuracy;
  long eval_every;
  long log_every;
  long stability_k;
  char gsgm_base[QGMD_STR_MAX];
  char metrics[QGMD_STR_MAX];
  char control[QGMD_STR_MAX];
  char trace[QGMD_STR_MAX];
  char log_level[QGMD_STR_MAX];
  long augment;
  char checkpoint_dir[QGMD_STR_MAX];
  long checkpoint_every;
  long checkpoint_keep;
  char resume[QGMD_STR_MAX];
  char resume_ranks[QGMD_STR_MAX]; /* elastic.c */
  double comm_timeout;
  double lost_after; /* elastic.c */
  long stop_at_chance; /* the accuracy rule of collapse.h */
  long tree_arity;
  /* The simulator's own: its virtual nodes and synthetic problems. */
  long nodes;
  char problem[QGMD_STR_MAX];
  long dim, rows;
  double heterogeneity, noise, l2;
  /* The daemon's own: the emulated device and the asynchronous modes. */
  char device_time[QGMD_STR_MAX]; /* emulated accelerator (gradient.h) */
  char gsgm_rule[QGMD_STR_MAX];
  long gsgm_window;
  double dc_lambda;
  qgmd_parsed_t parsed;
} qgmd_config_t;

/* What qgmd_config_parse found on the command line. */
enum qgmd_parse_result {
  QGMD_PARSE_RUN = 0,   /* cfg is complete: train */
  QGMD_PARSE_HELP,      /* --help: usage was printed */
  QGMD_PARSE_VERSION,   /* --version: the version was printed */
  QGMD_PARSE_SHOWN,     /* --show-config: the configuration was printed */
  QGMD_PARSE_ERROR,     /* bad usage: one line in err */
};

/* Fills cfg with the defaults, then the flag files (in order, nested), then
 * the rest of the command line, which overrides the files; only the flags
 * of `program` are taken. `out` receives --help, --version and
 * --show-config text (NULL: say nothing). */
enum qgmd_parse_result qgmd_config_parse(int argc, char **argv,
                                         unsigned program, qgmd_config_t *cfg,
                                         FILE *out, char *err, size_t errlen);

/* Checks what the table's bounds cannot: names of algorithms, models,
 * topologies and datasets, list syntax, and the features' rules on each
 * other (check.c runs each feature's checks). Returns 0, or -1 with one
 * line in err. */
int qgmd_config_check(const qgmd_config_t *cfg, char *err, size_t errlen);

/* The MLP hidden widths of --hidden ("512,256"); 0 on success. */
int qgmd_config_widths(const qgmd_config_t *cfg, size_t *widths, size_t max,
                       size_t *count);

/* How much slower --straggle makes `rank` compute (1 when it is not
 * named); *max_rank receives the largest rank named. Returns 0, or -1 when
 * the value is malformed. */
int qgmd_config_straggle(const qgmd_config_t *cfg, int rank, double *factor,
                         int *max_rank);

/* --device-time=MS[:JITTER]: the median device time in milliseconds (0:
 * none) and the log-normal spread. Returns 0, or -1 when malformed. */
/* --resume-ranks=LIST: the checkpoint's rank that each rank of this run
 * continues, into ranks[0..max). Returns how many LIST names (0 when the
 * flag is not set; more than max are counted, not stored), or -1 when it
 * is not a list of distinct ranks. */
int qgmd_config_resume_ranks(const qgmd_config_t *cfg, int *ranks, int max);

/* The least time a silent peer is waited for before it counts as lost
 * (--lost-after), whatever the step time: a scheduling hiccup of a loaded
 * host is not a lost host. */
#define QGMD_LOST_FLOOR_S 3.0

/* How long a peer may stay silent in a step's exchange before it is lost,
 * for a median step time of step_s seconds: --lost-after step times, at
 * least QGMD_LOST_FLOOR_S, at most --comm-timeout (0: --comm-timeout
 * alone, as before a step time is known). */
double qgmd_config_lost_deadline(const qgmd_config_t *cfg, double step_s);

int qgmd_config_device_time(const qgmd_config_t *cfg, double *ms,
                            double *jitter);

/* The effective configuration as one JSON object without a newline, in table
 * order: the same for equal configurations, so it is also what ranks hash
 * to agree on their flags. Returns the length, or -1 if buf is too small. */
int qgmd_config_json(const qgmd_config_t *cfg, char *buf, size_t size);

/* The flags that decide what is trained, as a checkpoint holds them
 * (one JSON object, in table order): the training flags, less those of a
 * feature this run does not use, and the output and pacing flags that its
 * first form held, as it held them (most with an empty value). Its hash
 * decides whether a checkpoint resumes, so its form never changes.
 * Returns the length, or -1 (and "") if buf is too small. */
int qgmd_config_training_json(const qgmd_config_t *cfg, char *buf,
                              size_t size);

/* s as a JSON string, quotes included, into buf (cut at size bytes, not
 * terminated); returns the full length, as snprintf does. */
int qgmd_json_string(char *buf, size_t size, const char *s);

/* Where each flag of the last qgmd_config_parse got its value, as one
 * JSON object in table order: "FILE:LINE", "command line" or "default".
 * Returns the length, or -1 if buf is too small. */
int qgmd_config_origins_json(char *buf, size_t size);

/* Whether the last qgmd_config_parse set flag `name` (in a file or on the
 * command line) rather than leaving its default. */
int qgmd_config_was_set(const char *name);

/* The flags that differ from their defaults, as "--name=value ..." (or
 * "all defaults"), for the start-up log line. */
void qgmd_config_changed(const qgmd_config_t *cfg, char *buf, size_t size);

/* The topology the flags describe, for n nodes (fields point into cfg);
 * host_of and hosts are the ranks' placement, which topology hier uses
 * with --hosts=auto. */
void qgmd_config_topology(const qgmd_config_t *cfg, int nodes,
                          const int *host_of, int hosts,
                          qgm_topology_spec_t *spec);

#endif /* QGMD_CONFIG_H */
