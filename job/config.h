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
  double consensus_lr;
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
  double comm_timeout;
  long tree_arity;
  /* The simulator's own: its virtual nodes and synthetic problems. */
  long nodes;
  char problem[QGMD_STR_MAX];
  long dim, rows;
  double heterogeneity, noise, l2;
  char device_time[QGMD_STR_MAX]; /* emulated accelerator (gradient.h) */
  char gsgm_rule[QGMD_STR_MAX];
  long gsgm_window;
  double dc_lambda;
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
 * topologies and datasets, and list syntax. Returns 0, or -1 with one line
 * in err. */
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
int qgmd_config_device_time(const qgmd_config_t *cfg, double *ms,
                            double *jitter);

/* The effective configuration as one JSON object without a newline, in table
 * order: the same for equal configurations, so it is also what ranks hash
 * to agree on their flags. Returns the length, or -1 if buf is too small. */
int qgmd_config_json(const qgmd_config_t *cfg, char *buf, size_t size);

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
