/* flags.c - the one table of every flag: its name, type, bounds, default,
 * category and help, and for an enumeration or spec, the parser of its
 * feature. Parsing, validation, --help, the configuration dumps and the
 * checkpoint's training flags all read it, so they cannot disagree. */
#include "flag.h"

#include <stdio.h>
#include <string.h>

#include "feature.h"

/* F: a flag of both programs, D: of the daemon only, S: of the simulator
 * only. After the default come the category (below) and the help, and
 * last, for an enumeration or spec, its parser. */
/* (A designator spares the rows without a parser an initializer.) */
#define FLAG(programs_, name_, type_, field, min_, max_, def_, ...)          \
  {.programs = programs_, .name = name_, .type = type_,                       \
   .offset = offsetof(qgmd_config_t, field), .min = min_, .max = max_,        \
   .def = def_, __VA_ARGS__}
#define F(...) FLAG(QGMD_PROGRAM_DAEMON | QGMD_PROGRAM_SIM, __VA_ARGS__)
#define D(...) FLAG(QGMD_PROGRAM_DAEMON, __VA_ARGS__)
#define S(...) FLAG(QGMD_PROGRAM_SIM, __VA_ARGS__)

/* The categories, with how the checkpoint's training flags hold each
 * (flag.h): a training flag with its value (TRAIN_IF: while its feature is
 * in use), the others not at all. But the first form of the training
 * flags held the output and pacing flags of its time with an empty value
 * (_EMPTY), and a few with their value (_KEPT), and so they stay. */
#define TRAIN QGMD_FLAG_TRAINING, HASH_VALUE, NULL
#define TRAIN_IF(in_use) QGMD_FLAG_TRAINING, HASH_VALUE, in_use
#define OUTPUT_EMPTY QGMD_FLAG_OUTPUT, HASH_EMPTY, NULL
#define OUTPUT_KEPT QGMD_FLAG_OUTPUT, HASH_VALUE, NULL
#define OUTPUT QGMD_FLAG_OUTPUT, HASH_NONE, NULL
#define PACING QGMD_FLAG_PACING, HASH_NONE, NULL
#define PACING_EMPTY QGMD_FLAG_PACING, HASH_EMPTY, NULL
#define PACING_KEPT QGMD_FLAG_PACING, HASH_VALUE, NULL

const flag_t qgmd_flags[] = {
    F("algorithm", FLAG_STRING, algorithm, 0, 0, "qg-dsgdm-n", TRAIN,
      "optimizer", &qgmd_parse_algorithm),
    F("topology", FLAG_STRING, topology, 0, 0, "ring", TRAIN,
      "graph: {} (hier: an exact average inside a host, --host-topology "
      "between hosts; file:PATH: an edge list)"),
    F("mixing", FLAG_STRING, mixing, 0, 0, "default", TRAIN,
      "mixing weights: default (the graph's own), uniform, metropolis, "
      "lazy ((I + W)/2 of the graph's own)",
      &qgmd_parse_mixing),
    F("torus", FLAG_STRING, torus, 0, 0, "", TRAIN, "torus shape RxC",
      &qgmd_parse_torus),
    F("tree-arity", FLAG_INT, tree_arity, 1, 65536, "2", TRAIN,
      "topology tree: children per node (2: the binary tree)"),
    F("hosts", FLAG_STRING, hosts, 0, 0, "auto", TRAIN,
      "topology hier: how ranks group into hosts: auto (the ranks that "
      "share memory) or N (N equal groups of consecutive ranks)",
      &qgmd_parse_hosts),
    F("host-topology", FLAG_STRING, host_topology, 0, 0, "ring", TRAIN,
      "topology hier: the graph between hosts"),
    F("dataset", FLAG_STRING, dataset, 0, 0, "fashion-mnist", TRAIN, "dataset"),
    F("data-dir", FLAG_STRING, data_dir, 0, 0,
      "/usr/share/datasets/fashion-mnist", TRAIN,
      "directory of the dataset's files (IDX gzipped or not; CIFAR .bin)"),
    F("data-cache", FLAG_STRING, data_cache, 0, 0, "auto", PACING,
      "where inflated copies of gzipped data files are kept, so that a "
      "start reads instead of inflating them: a directory, auto "
      "($XDG_CACHE_HOME/qgmd or ~/.cache/qgmd) or none"),
    F("model", FLAG_STRING, model, 0, 0, "mlp", TRAIN, "model"),
    F("kernels", FLAG_STRING, kernels, 0, 0, "auto", PACING,
      "the model's products: auto (this CPU's measured plan) or "
      "dense=K,conv=K,conv3x3=winograd-K|direct-K, K avx512, avx2 or blis "
      "(the config record's \"kernels\" gives a run's back, "
      "docs/PERFORMANCE.md)",
      &qgmd_parse_kernels),
    F("hidden", FLAG_STRING, hidden, 0, 0, "256", TRAIN,
      "MLP hidden widths, comma-separated (e.g. 512,256)"),
    F("alpha", FLAG_DOUBLE, alpha, 1e-6, 1e6, "1", TRAIN,
      "Dirichlet concentration of the non-IID partition (small = skewed)"),
    F("epochs", FLAG_INT, epochs, 1, 100000, "5", TRAIN,
      "passes over the local shard"),
    F("batch-size", FLAG_INT, batch_size, 1, 65536, "32", TRAIN,
      "minibatch size per node"),
    F("lr", FLAG_DOUBLE, lr, 1e-9, 100, "0.1", TRAIN, "peak learning rate"),
    F("momentum", FLAG_DOUBLE, momentum, 0, 0.999, "0.9", TRAIN,
      "momentum beta"),
    F("gut-scaling", FLAG_DOUBLE, gut_scaling, 0, 1, "0",
      TRAIN_IF(qgmd_tracking_updates),
      "gut, qg-gutm: the scaling mu of the tracking correction (0: the "
      "algorithm's own, 0.9 for gut, 0.01 for qg-gutm)"),
    F("weight-decay", FLAG_DOUBLE, weight_decay, 0, 1, "1e-4", TRAIN,
      "L2 weight decay, added to the gradient"),
    F("warmup-epochs", FLAG_DOUBLE, warmup_epochs, 0, 1000, "0", TRAIN,
      "linear learning-rate warm-up, in epochs"),
    F("lr-schedule", FLAG_STRING, lr_schedule, 0, 0, "step", TRAIN,
      "after the warm-up: step (decays at --lr-decay-at) or constant",
      &qgmd_parse_lr_schedule),
    F("lr-decay-at", FLAG_STRING, lr_decay_at, 0, 0, "0.5,0.75", TRAIN,
      "fractions of the run where the step schedule decays the rate"),
    F("lr-decay-factor", FLAG_DOUBLE, lr_decay_factor, 1e-9, 1, "0.1", TRAIN,
      "what each decay multiplies the learning rate by"),
    F("seed", FLAG_INT, seed, 0, 4294967295.0, "1", TRAIN,
      "seed of the partition, the initial model and every node's sampler"),
    F("train-limit", FLAG_INT, train_limit, 0, 1e9, "0", TRAIN,
      "use only the first N training samples (0 = all)"),
    F("test-limit", FLAG_INT, test_limit, 0, 1e9, "0", TRAIN,
      "evaluate on only the first N test samples (0 = all)"),
    D("overlap", FLAG_STRING, overlap, 0, 0, "off", TRAIN,
      "on: exchange x_t while the gradient at x_t is computed",
      &qgmd_parse_overlap),
    D("local-steps", FLAG_INT, local_steps, 1, 1000000, "1", TRAIN,
      "gossip once every H local steps"),
    D("shared-memory", FLAG_STRING, shared_memory, 0, 0, "auto", PACING_KEPT,
      "auto: ranks on one host read each other's messages in place (the "
      "all-reduce's, and the neighbours' where the graph is static and "
      "symmetric); off: as MPI messages",
      &qgmd_parse_shared_memory),
    D("allreduce", FLAG_STRING, allreduce, 0, 0, "qgmd",
      TRAIN_IF(qgmd_averaging_all),
      "the all-reduce of --algorithm=allreduce: qgmd (host-aware, the same "
      "bits on any placement) or mpi (Open MPI's MPI_Iallreduce)",
      &qgmd_parse_allreduce),
    F("compress", FLAG_STRING, compress, 0, 0, "none",
      TRAIN_IF(qgmd_compressing),
      "compressed gossip with error feedback (CHOCO); with allreduce on hier, "
      "the hosts' means compressed between hosts; powersgd:R: PowerSGD's "
      "all-reduce, or PowerGossip", &qgmd_parse_compress),
    F("consensus-lr", FLAG_DOUBLE, consensus_lr, 1e-6, 1, "1",
      TRAIN_IF(qgmd_compressing),
      "with --compress: the consensus step size gamma of CHOCO-gossip (of "
      "PowerGossip: the scale of its moves)"),
    F("gossip-rounds", FLAG_INT, gossip_rounds, 1, QGMD_GOSSIP_ROUNDS_MAX, "1",
      TRAIN_IF(qgmd_gossip_rounds),
      "exchange with the neighbours R times a step, each round mixing what "
      "the last one mixed: the model moves by W^R instead of W, at R times "
      "the messages"),
    F("gossip-acceleration", FLAG_STRING, gossip_acceleration, 0, 0, "none",
      TRAIN_IF(qgmd_gossip_rounds),
      "with --gossip-rounds: none (W^R) or chebyshev (the polynomial of "
      "degree R in W, fitted to W's eigenvalues, that shrinks the nodes' "
      "disagreement most without reversing it: the same messages; on the "
      "ring of 16, 8 rounds mix more than 35 plain ones do)",
      &qgmd_parse_gossip_acceleration),
    F("drop-rate", FLAG_DOUBLE, drop_rate, 0, 0.99, "0",
      TRAIN_IF(qgmd_dropping),
      "lose each gossip message with this probability, drawn from --seed, "
      "the round, the sender and the receiver (the receiver mixes what "
      "arrived; push-sum's sender (sgp, qg-sgp) keeps a lost message's share)"),
    D("sync", FLAG_STRING, sync, 0, 0, "sync", TRAIN_IF(qgmd_gossip_async),
      "gossip's pace: sync (every round waits for every neighbour's "
      "message) or async (each node steps at its own pace and mixes its "
      "neighbours' newest messages)", &qgmd_parse_sync),
    D("max-staleness", FLAG_INT, max_staleness, 0, 1000000, "0",
      TRAIN_IF(qgmd_gossip_async),
      "--sync=async: a node waits only for a neighbour more than this many "
      "of its own rounds behind (0: every round, as --sync=sync)"),
    D("straggle", FLAG_STRING, straggle, 0, 0, "", PACING_EMPTY,
      "RANKS:FACTOR, e.g. 1,3:4: those ranks compute FACTOR times slower "
      "(none: no rank)"),
    D("target-accuracy", FLAG_DOUBLE, target_accuracy, 0, 1, "0", TRAIN,
      "stop once an evaluation finds the averaged model's test accuracy "
      "at or above this (0: never; for time-to-accuracy measurements)"),
    F("eval-every", FLAG_INT, eval_every, 0, 1e12, "0", TRAIN,
      "evaluate every N steps as well as after every epoch (0: only then); "
      "asynchronous modes: every N updates of the server's model (0: ten "
      "times per epoch)"),
    D("log-every", FLAG_INT, log_every, 0, 1e12, "0", OUTPUT_EMPTY,
      "a progress line (steps/s, ETA, loss, bytes sent) every N steps "
      "(0: four per epoch)"),
    D("stability-k", FLAG_INT, stability_k, 1, 1e6, "10", OUTPUT_KEPT,
      "asynchronous modes: the summary's stability is the standard "
      "deviation of the last K evaluations' accuracy"),
    D("gsgm-base", FLAG_STRING, gsgm_base, 0, 0, "sgd", TRAIN,
      "gsgm: what the global momentum drives", &qgmd_parse_gsgm_base),
    F("metrics", FLAG_STRING, metrics, 0, 0, "", OUTPUT_EMPTY,
      "write JSON Lines metrics to this file (rank 0)"),
    D("control", FLAG_STRING, control, 0, 0, "", OUTPUT_EMPTY,
      "rank 0's control socket for qgmctl (none: no socket)"),
    D("trace", FLAG_STRING, trace, 0, 0, "", OUTPUT_EMPTY,
      "write a Chrome trace per rank to PATH.RANK (or %r in PATH)"),
    D("log-level", FLAG_STRING, log_level, 0, 0, "info", OUTPUT_EMPTY,
      "error, warning, info or debug", &qgmd_parse_log_level),
    F("augment", FLAG_INT, augment, 0, 1, "1", TRAIN,
      "CIFAR training batches: random 4-pixel-padded crop and flip (0 = off)"),
    D("checkpoint-dir", FLAG_STRING, checkpoint_dir, 0, 0, "", OUTPUT_EMPTY,
      "write checkpoints here (every --checkpoint-every steps and at a stop)"),
    D("checkpoint-every", FLAG_INT, checkpoint_every, 0, 1e12, "0",
      OUTPUT_EMPTY, "steps between checkpoints (0: only at the end or a stop)"),
    D("checkpoint-keep", FLAG_INT, checkpoint_keep, 1, 1000000, "3",
      OUTPUT_EMPTY, "complete checkpoints kept; older ones are removed"),
    D("resume", FLAG_STRING, resume, 0, 0, "no", OUTPUT_EMPTY,
      "--resume: continue from the newest complete checkpoint of "
      "--checkpoint-dir; --resume=DIR: of DIR"),
    D("resume-ranks", FLAG_STRING, resume_ranks, 0, 0, "", OUTPUT,
      "with --resume, from a checkpoint of more ranks: rank i continues the "
      "checkpoint's rank LIST[i] (0,1,2,3,6,7: ranks 4 and 5 are gone); "
      "the shards of the ranks left out are dropped"),
    D("comm-timeout", FLAG_DOUBLE, comm_timeout, 0, 1e6, "600", PACING_EMPTY,
      "seconds an exchange or collective may wait before the job is "
      "aborted naming the silent ranks (0: wait forever)"),
    D("lost-after", FLAG_DOUBLE, lost_after, 0, 1e6, "0", PACING,
      "a neighbour silent for this many of the rank's median step times (at "
      "least 3 s, at most --comm-timeout) is lost: the job ends naming it, "
      "and with --checkpoint-dir rank 0 writes DIR/lost.json (0: "
      "--comm-timeout alone; tools/qgm-run sets 20)"),
    F("stop-at-chance", FLAG_INT, stop_at_chance, 0, 1, "1", PACING,
      "1: end a run whose averaged model stays at chance accuracy (exit "
      "status 1; docs/RELIABILITY.md); 0: let it train on"),
    S("nodes", FLAG_INT, nodes, 1, 1 << 20, "16", TRAIN,
      "number of virtual nodes"),
    S("problem", FLAG_STRING, problem, 0, 0, "least-squares", TRAIN,
      "what the nodes train on: dataset (--dataset with --model), or a "
      "synthetic problem with a known optimum"),
    S("dim", FLAG_INT, dim, 1, 4096, "20", TRAIN, "synthetic: parameters"),
    S("rows", FLAG_INT, rows, 1, 1e7, "64", TRAIN,
      "synthetic: samples per node"),
    S("heterogeneity", FLAG_DOUBLE, heterogeneity, 0, 1e3, "1", TRAIN,
      "synthetic: spread of the nodes' local models and features"),
    S("noise", FLAG_DOUBLE, noise, 0, 1e3, "0.1", TRAIN,
      "least squares: target noise"),
    S("l2", FLAG_DOUBLE, l2, 0, 1e3, "0.01", TRAIN,
      "synthetic: L2 term of the objective (logistic needs > 0)"),
    D("device-time", FLAG_STRING, device_time, 0, 0, "", PACING,
      "MS[:JITTER]: every gradient takes at least MS ms of wall time, the "
      "core left free (an emulated accelerator); each rank's MS is spread "
      "log-normally with log-std JITTER from --seed, and --straggle ranks' "
      "multiplied by FACTOR (none: no emulated accelerator)"),
    D("gsgm-rule", FLAG_STRING, gsgm_rule, 0, 0, "round",
      TRAIN_IF(qgmd_asynchronous), "gsgm's variant (docs/ALGORITHMS-ASYNC.md)",
      &qgmd_parse_gsgm_rule),
    D("gsgm-window", FLAG_INT, gsgm_window, 1, 1000000, "4",
      TRAIN_IF(qgmd_asynchronous),
      "--gsgm-rule=window: how many gradients a worker may run ahead of "
      "the slowest"),
    D("dc-lambda", FLAG_DOUBLE, dc_lambda, 0, 100, "0.04",
      TRAIN_IF(qgmd_asynchronous),
      "dc-asgd: the weight of the delay compensation g*g*(x - x_sent)"),
};
const size_t qgmd_flag_count = sizeof qgmd_flags / sizeof qgmd_flags[0];
_Static_assert(sizeof qgmd_flags / sizeof qgmd_flags[0] <= QGMD_FLAG_ROOM,
               "QGMD_FLAG_ROOM is too small for the table");

const flag_t *qgmd_flag_find(const char *name, size_t len) {
  for (size_t i = 0; i < qgmd_flag_count; i++)
    if (strlen(qgmd_flags[i].name) == len &&
        strncmp(qgmd_flags[i].name, name, len) == 0)
      return &qgmd_flags[i];
  return NULL;
}

const char *qgmd_flag_names(const char *flag, const char *sep, char *buf,
                            size_t size) {
  const flag_t *f = qgmd_flag_find(flag, strlen(flag));
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; f && f->parse && f->parse->names && f->parse->names[i]; i++)
    used += (size_t)snprintf(buf + used, used < size ? size - used : 0, "%s%s",
                             i ? sep : "", f->parse->names[i]);
  return buf;
}

int qgmd_name_index(const char *const *names, const char *text, int *index) {
  for (int i = 0; names[i]; i++)
    if (strcmp(names[i], text) == 0) {
      *index = i;
      return 0;
    }
  return -1;
}

int qgmd_in_list(const char *text, const char *list) {
  size_t len = strlen(text);
  for (const char *s = list; *s;) {
    const char *end = strchr(s, ',');
    size_t n = end ? (size_t)(end - s) : strlen(s);
    if (n == len && strncmp(s, text, len) == 0)
      return 1;
    if (!end)
      break;
    s = end + 1;
    while (*s == ' ')
      s++;
  }
  return 0;
}
