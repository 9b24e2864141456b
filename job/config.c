/* config.c - one table defines every flag: its name, type, bounds, default
 * and help. Parsing, validation, --help and the configuration dump all read
 * the same table, so they cannot disagree. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qgm.h"

enum flag_type { FLAG_STRING, FLAG_INT, FLAG_DOUBLE };

typedef struct flag {
  const char *name;
  enum flag_type type;
  size_t offset;
  double min, max; /* inclusive bounds for numbers */
  const char *def;
  const char *help;
  unsigned programs; /* the QGMD_PROGRAM_ bits of those that take it */
} flag_t;

#define FLAG(programs, name, type, field, min, max, def, help)                \
  {name, type, offsetof(qgmd_config_t, field), min, max, def, help, programs}
/* F: a flag of both programs, D: of the daemon only, S: of the simulator
 * only. */
#define F(...) FLAG(QGMD_PROGRAM_DAEMON | QGMD_PROGRAM_SIM, __VA_ARGS__)
#define D(...) FLAG(QGMD_PROGRAM_DAEMON, __VA_ARGS__)
#define S(...) FLAG(QGMD_PROGRAM_SIM, __VA_ARGS__)

static const flag_t flags[] = {
    F("algorithm", FLAG_STRING, algorithm, 0, 0, "qg-dsgdm-n",
      "optimizer"),
    F("topology", FLAG_STRING, topology, 0, 0, "ring",
      "graph: {} (hier: an exact average inside a host, --host-topology "
      "between hosts; file:PATH: an edge list)"),
    F("mixing", FLAG_STRING, mixing, 0, 0, "default",
      "mixing weights: default (the graph's own), uniform, metropolis, "
      "lazy ((I + W)/2 of the graph's own)"),
    F("torus", FLAG_STRING, torus, 0, 0, "", "torus shape RxC"),
    F("tree-arity", FLAG_INT, tree_arity, 1, 65536, "2",
      "topology tree: children per node (2: the binary tree)"),
    F("hosts", FLAG_STRING, hosts, 0, 0, "auto",
      "topology hier: how ranks group into hosts: auto (the ranks that "
      "share memory) or N (N equal groups of consecutive ranks)"),
    F("host-topology", FLAG_STRING, host_topology, 0, 0, "ring",
      "topology hier: the graph between hosts"),
    F("dataset", FLAG_STRING, dataset, 0, 0, "fashion-mnist",
      "dataset"),
    F("data-dir", FLAG_STRING, data_dir, 0, 0,
      "/usr/share/datasets/fashion-mnist",
      "directory of the dataset's files (IDX gzipped or not; CIFAR .bin)"),
    F("data-cache", FLAG_STRING, data_cache, 0, 0, "auto",
      "where inflated copies of gzipped data files are kept, so that a "
      "start reads instead of inflating them: a directory, auto "
      "($XDG_CACHE_HOME/qgmd or ~/.cache/qgmd) or none"),
    F("model", FLAG_STRING, model, 0, 0, "mlp",
      "model"),
    F("hidden", FLAG_STRING, hidden, 0, 0, "256",
      "MLP hidden widths, comma-separated (e.g. 512,256)"),
    F("alpha", FLAG_DOUBLE, alpha, 1e-6, 1e6, "1",
      "Dirichlet concentration of the non-IID partition (small = skewed)"),
    F("epochs", FLAG_INT, epochs, 1, 100000, "5", "passes over the local shard"),
    F("batch-size", FLAG_INT, batch_size, 1, 65536, "32",
      "minibatch size per node"),
    F("lr", FLAG_DOUBLE, lr, 1e-9, 100, "0.1", "peak learning rate"),
    F("momentum", FLAG_DOUBLE, momentum, 0, 0.999, "0.9", "momentum beta"),
    F("weight-decay", FLAG_DOUBLE, weight_decay, 0, 1, "1e-4",
      "L2 weight decay, added to the gradient"),
    F("warmup-epochs", FLAG_DOUBLE, warmup_epochs, 0, 1000, "0",
      "linear learning-rate warm-up, in epochs"),
    F("lr-schedule", FLAG_STRING, lr_schedule, 0, 0, "step",
      "after the warm-up: step (decays at --lr-decay-at) or constant"),
    F("lr-decay-at", FLAG_STRING, lr_decay_at, 0, 0, "0.5,0.75",
      "fractions of the run where the step schedule decays the rate"),
    F("lr-decay-factor", FLAG_DOUBLE, lr_decay_factor, 1e-9, 1, "0.1",
      "what each decay multiplies the learning rate by"),
    F("seed", FLAG_INT, seed, 0, 4294967295.0, "1",
      "seed of the partition, the initial model and every node's sampler"),
    F("train-limit", FLAG_INT, train_limit, 0, 1e9, "0",
      "use only the first N training samples (0 = all)"),
    F("test-limit", FLAG_INT, test_limit, 0, 1e9, "0",
      "evaluate on only the first N test samples (0 = all)"),
    D("overlap", FLAG_STRING, overlap, 0, 0, "off",
      "on: exchange x_t while the gradient at x_t is computed"),
    D("local-steps", FLAG_INT, local_steps, 1, 1000000, "1",
      "gossip once every H local steps"),
    D("shared-memory", FLAG_STRING, shared_memory, 0, 0, "auto",
      "auto: ranks on one host read each other's messages in place (the "
      "all-reduce's, and the neighbours' where the graph is static and "
      "symmetric); off: as MPI messages"),
    D("allreduce", FLAG_STRING, allreduce, 0, 0, "qgmd",
      "the all-reduce of --algorithm=allreduce: qgmd (host-aware, the same "
      "bits on any placement) or mpi (Open MPI's MPI_Iallreduce)"),
    F("compress", FLAG_STRING, compress, 0, 0, "none",
      "compressed gossip with error feedback (CHOCO)"),
    F("consensus-lr", FLAG_DOUBLE, consensus_lr, 1e-6, 1, "1",
      "with --compress: the consensus step size gamma of CHOCO-gossip"),
    D("straggle", FLAG_STRING, straggle, 0, 0, "",
      "RANKS:FACTOR, e.g. 1,3:4: those ranks compute FACTOR times slower"),
    D("target-accuracy", FLAG_DOUBLE, target_accuracy, 0, 1, "0",
      "stop once an evaluation finds the averaged model's test accuracy "
      "at or above this (0: never; for time-to-accuracy measurements)"),
    F("eval-every", FLAG_INT, eval_every, 0, 1e12, "0",
      "evaluate every N steps as well as after every epoch (0: only then); "
      "asynchronous modes: every N updates of the server's model (0: ten "
      "times per epoch)"),
    D("log-every", FLAG_INT, log_every, 0, 1e12, "0",
      "a progress line (steps/s, ETA, loss, bytes sent) every N steps "
      "(0: four per epoch)"),
    D("stability-k", FLAG_INT, stability_k, 1, 1e6, "10",
      "asynchronous modes: the summary's stability is the standard "
      "deviation of the last K evaluations' accuracy"),
    D("gsgm-base", FLAG_STRING, gsgm_base, 0, 0, "sgd",
      "gsgm: what the global momentum drives"),
    F("metrics", FLAG_STRING, metrics, 0, 0, "",
      "write JSON Lines metrics to this file (rank 0)"),
    D("control", FLAG_STRING, control, 0, 0, "",
      "rank 0's control socket for qgmctl (none: no socket)"),
    D("trace", FLAG_STRING, trace, 0, 0, "",
      "write a Chrome trace per rank to PATH.RANK (or %r in PATH)"),
    D("log-level", FLAG_STRING, log_level, 0, 0, "info",
      "error, warning, info or debug"),
    F("augment", FLAG_INT, augment, 0, 1, "1",
      "CIFAR training batches: random 4-pixel-padded crop and flip (0 = off)"),
    D("checkpoint-dir", FLAG_STRING, checkpoint_dir, 0, 0, "",
      "write checkpoints here (every --checkpoint-every steps and at a stop)"),
    D("checkpoint-every", FLAG_INT, checkpoint_every, 0, 1e12, "0",
      "steps between checkpoints (0: only at the end or a stop)"),
    D("checkpoint-keep", FLAG_INT, checkpoint_keep, 1, 1000000, "3",
      "complete checkpoints kept; older ones are removed"),
    D("resume", FLAG_STRING, resume, 0, 0, "no",
      "--resume: continue from the newest complete checkpoint of "
      "--checkpoint-dir; --resume=DIR: of DIR"),
    D("comm-timeout", FLAG_DOUBLE, comm_timeout, 0, 1e6, "600",
      "seconds an exchange or collective may wait before the job is "
      "aborted naming the silent ranks (0: wait forever)"),
    S("nodes", FLAG_INT, nodes, 1, 1 << 20, "16", "number of virtual nodes"),
    S("problem", FLAG_STRING, problem, 0, 0, "least-squares",
      "what the nodes train on: dataset (--dataset with --model), or a "
      "synthetic problem with a known optimum"),
    S("dim", FLAG_INT, dim, 1, 4096, "20", "synthetic: parameters"),
    S("rows", FLAG_INT, rows, 1, 1e7, "64", "synthetic: samples per node"),
    S("heterogeneity", FLAG_DOUBLE, heterogeneity, 0, 1e3, "1",
      "synthetic: spread of the nodes' local models and features"),
    S("noise", FLAG_DOUBLE, noise, 0, 1e3, "0.1",
      "least squares: target noise"),
    S("l2", FLAG_DOUBLE, l2, 0, 1e3, "0.01",
      "synthetic: L2 term of the objective (logistic needs > 0)"),
    D("device-time", FLAG_STRING, device_time, 0, 0, "",
      "MS[:JITTER]: every gradient takes at least MS ms of wall time, the "
      "core left free (an emulated accelerator); each rank's MS is spread "
      "log-normally with log-std JITTER from --seed, and --straggle ranks' "
      "multiplied by FACTOR"),
    D("gsgm-rule", FLAG_STRING, gsgm_rule, 0, 0, "round",
      "gsgm's variant (docs/ALGORITHMS-ASYNC.md)"),
    D("gsgm-window", FLAG_INT, gsgm_window, 1, 1000000, "4",
      "--gsgm-rule=window: how many gradients a worker may run ahead of "
      "the slowest"),
    D("dc-lambda", FLAG_DOUBLE, dc_lambda, 0, 100, "0.04",
      "dc-asgd: the weight of the delay compensation g*g*(x - x_sent)"),
};
#define NUM_FLAGS (sizeof flags / sizeof flags[0])

#define MAX_INCLUDE_DEPTH 16

/* Where a setting came from, for error messages. */
typedef struct origin {
  const char *file; /* NULL: the command line */
  int line;
} origin_t;

typedef struct parser {
  qgmd_config_t *cfg; /* cfg->program: whose flags are read */
  char *err;
  size_t errlen;
  const char *stack[MAX_INCLUDE_DEPTH]; /* flag files being read */
  int depth;
} parser_t;

static int fail(parser_t *p, origin_t at, const char *fmt, const char *a,
                const char *b) {
  char msg[512];
  snprintf(msg, sizeof msg, fmt, a, b);
  /* Text from a file may hold anything: keep the message one plain line. */
  for (char *c = msg; *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f)
      *c = '?';
  if (at.file)
    snprintf(p->err, p->errlen, "%s:%d: %s", at.file, at.line, msg);
  else
    snprintf(p->err, p->errlen, "command line: %s", msg);
  return -1;
}

static size_t edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63)
    return 64;
  size_t row[64];
  for (size_t j = 0; j <= lb; j++)
    row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best)
        best = up + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

/* The program whose flags the last qgmd_config_parse read. */
static unsigned parsed_program = QGMD_PROGRAM_DAEMON;

static int takes(unsigned program, const flag_t *f) {
  return (f->programs & program) != 0;
}

/* The flag of any program with this name (the caller checks that it is the
 * reading program's), or NULL. */
static const flag_t *find_flag(const char *name, size_t len) {
  for (size_t i = 0; i < NUM_FLAGS; i++)
    if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0)
      return &flags[i];
  return NULL;
}

static const char *closest_flag(unsigned program, const char *name) {
  const char *best = NULL;
  size_t best_d = 3; /* suggest only near misses */
  for (size_t i = 0; i < NUM_FLAGS; i++) {
    if (!takes(program, &flags[i]))
      continue;
    size_t d = edit_distance(name, flags[i].name);
    if (d < best_d) {
      best_d = d;
      best = flags[i].name;
    }
  }
  return best;
}

/* Where each flag was last set from a file ("" for the command line or
 * the default), so that a value the table's bounds accept but
 * qgmd_config_check rejects is still blamed on its file and line. */
static char flag_origin[NUM_FLAGS][QGMD_STR_MAX + 16];
/* Whether the command line set it last (for the config record). */
static int flag_from_command_line[NUM_FLAGS];

/* Defaults are set from this origin, which leaves the records of where
 * the flags were set alone. */
static const origin_t DEFAULT_ORIGIN = {NULL, -1};

static int set_value(parser_t *p, origin_t at, const flag_t *f,
                     const char *value) {
  void *field = (char *)p->cfg + f->offset;
  if (at.line >= 0) {
    flag_from_command_line[f - flags] = !at.file;
    if (at.file)
      snprintf(flag_origin[f - flags], sizeof flag_origin[0], "%.*s:%d",
               QGMD_STR_MAX - 1, at.file, at.line);
    else
      flag_origin[f - flags][0] = '\0';
  }
  if (f->type == FLAG_STRING) {
    if (strlen(value) >= QGMD_STR_MAX) {
      char start[40]; /* enough to recognise it, not the whole of it */
      snprintf(start, sizeof start, "%.32s...", value);
      return fail(p, at, "value of --%s is too long: '%s'", f->name, start);
    }
    strcpy(field, value);
    return 0;
  }
  char *end;
  errno = 0;
  double v = strtod(value, &end);
  if (*value == '\0' || *end != '\0' || errno == ERANGE || !isfinite(v))
    return fail(p, at, "--%s needs a number, got '%s'", f->name, value);
  if (f->type == FLAG_INT && v != floor(v))
    return fail(p, at, "--%s needs a whole number, got '%s'", f->name, value);
  if (v < f->min || v > f->max) {
    char range[128];
    snprintf(range, sizeof range, "'%s' is outside [%g, %g]", value, f->min,
             f->max);
    return fail(p, at, "--%s: %s", f->name, range);
  }
  if (f->type == FLAG_INT)
    *(long *)field = (long)v;
  else
    *(double *)field = v;
  return 0;
}

static int read_flag_file(parser_t *p, origin_t at, const char *path);

/* One "--name=value" setting; flag files nest through --flagfile. */
static int apply(parser_t *p, origin_t at, const char *arg) {
  if (strncmp(arg, "--", 2) != 0)
    return fail(p, at, "expected --name=value, got '%s'%s", arg, "");
  const char *name = arg + 2, *eq = strchr(name, '=');
  size_t len = eq ? (size_t)(eq - name) : strlen(name);
  if (len == 8 && strncmp(name, "flagfile", 8) == 0) {
    if (!eq || eq[1] == '\0')
      return fail(p, at, "--flagfile needs a path%s%s", "", "");
    return read_flag_file(p, at, eq + 1);
  }
  const flag_t *f = find_flag(name, len);
  if (f && !takes(p->cfg->program, f))
    return fail(p, at, "--%s is a flag of %s only", f->name,
                f->programs == QGMD_PROGRAM_SIM ? "qgm-sim" : "qgmd");
  if (!f) {
    char unknown[128];
    snprintf(unknown, sizeof unknown, "%.*s", (int)(len < 100 ? len : 100),
             name);
    const char *hint = closest_flag(p->cfg->program, unknown);
    char suggestion[160] = "";
    if (hint)
      snprintf(suggestion, sizeof suggestion, " (did you mean --%s?)", hint);
    return fail(p, at, "unknown flag '--%s'%s", unknown, suggestion);
  }
  /* --resume alone means: from --checkpoint-dir. */
  if (!eq && f->offset == offsetof(qgmd_config_t, resume))
    return set_value(p, at, f, "yes");
  if (!eq)
    return fail(p, at, "--%s needs a value (--%s=VALUE)", f->name, f->name);
  return set_value(p, at, f, eq + 1);
}

/* Nested paths are relative to the file that names them, like #include,
 * so a flag file works from any working directory. */
static void resolve(const char *including, const char *path, char *out,
                    size_t size) {
  const char *slash = including ? strrchr(including, '/') : NULL;
  if (path[0] == '/' || !slash)
    snprintf(out, size, "%s", path);
  else
    snprintf(out, size, "%.*s/%s", (int)(slash - including), including, path);
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  char *end = s + strlen(s);
  while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' ||
                     end[-1] == '\r'))
    *--end = '\0';
  return s;
}

/* Where `make install` puts the flag files: PREFIX/share/qgmd beside the
 * PREFIX/bin holding this executable, so that an installed qgmd finds
 * --flagfile=topologies/ring.flags from any directory (and wherever
 * PREFIX or DESTDIR put it). Returns 0 with the path in out. */
static int installed_path(const char *path, char *out, size_t size) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0)
    return -1;
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash)
    return -1;
  *slash = '\0';
  char there[4096];
  int len = snprintf(there, sizeof there, "%s/../share/qgmd/%s", exe, path);
  if (len <= 0 || (size_t)len >= sizeof there || access(there, F_OK) != 0)
    return -1;
  snprintf(out, size, "%s", there);
  return 0;
}

static int read_flag_file(parser_t *p, origin_t at, const char *path) {
  char full[4096];
  resolve(at.file, path, full, sizeof full);
  /* A relative path on the command line that is not here may name one
   * of the installed files. */
  if (!at.file && path[0] != '/' && access(full, F_OK) != 0)
    installed_path(path, full, sizeof full);
  for (int i = 0; i < p->depth; i++)
    if (strcmp(p->stack[i], full) == 0)
      return fail(p, at, "flag file '%s' includes itself%s", full, "");
  if (p->depth == MAX_INCLUDE_DEPTH)
    return fail(p, at, "flag files nest too deeply at '%s'%s", full, "");
  /* Regular files only, found without blocking: opening a FIFO would wait
   * for a writer (O_NONBLOCK stops that and does nothing to a regular
   * file), and a directory would fail later as an obscure read error. */
  int fd = open(full, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return fail(p, at, "cannot open flag file '%s': %s", full, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return fail(p, at, "flag file '%s' is not a regular file (a directory, "
                "a device or a pipe)%s", full, "");
  }
  FILE *f = fdopen(fd, "r");
  char *name = f ? strdup(full) : NULL;
  if (!name) {
    if (f)
      fclose(f);
    else
      close(fd);
    return fail(p, at, "out of memory%s%s", "", "");
  }
  p->stack[p->depth++] = name;
  origin_t here = {name, 0};
  char line[1024];
  int rc = 0;
  while (rc == 0 && fgets(line, sizeof line, f)) {
    here.line++;
    if (!strchr(line, '\n') && !feof(f)) {
      /* fgets stopped short of a full buffer: a NUL byte ended the line. */
      rc = fail(p, here, "%s%s", strlen(line) + 1 < sizeof line
                ? "a NUL byte: this is not a text file" : "line too long", "");
      break;
    }
    /* '#' starts a comment at the start of a line or after a blank, so
     * "--lr=0.1  # the paper's" works and values may still contain '#'. */
    for (char *c = line; *c; c++)
      if (*c == '#' && (c == line || c[-1] == ' ' || c[-1] == '\t')) {
        *c = '\0';
        break;
      }
    char *s = trim(line);
    if (*s == '\0')
      continue;
    rc = apply(p, here, s);
  }
  if (rc == 0 && ferror(f))
    rc = fail(p, here, "read error%s%s", "", "");
  fclose(f);
  p->depth--;
  free(name);
  return rc;
}

static void set_defaults(qgmd_config_t *cfg) {
  parser_t p = {.cfg = cfg, .err = (char[64]){0}, .errlen = 64};
  for (size_t i = 0; i < NUM_FLAGS; i++)
    set_value(&p, DEFAULT_ORIGIN, &flags[i], flags[i].def);
}

/* A flag's value as text: what a flag file would say (and, for numbers,
 * what the JSON dump says): the shortest text that reads back as the
 * same double. */
static const char *value_text(const flag_t *f, const qgmd_config_t *cfg,
                              char *buf, size_t size) {
  const void *field = (const char *)cfg + f->offset;
  if (f->type == FLAG_STRING)
    return field;
  if (f->type == FLAG_INT)
    snprintf(buf, size, "%ld", *(const long *)field);
  else
    qgm_format_double(buf, size, *(const double *)field);
  return buf;
}

int qgmd_config_was_set(const char *name) {
  const flag_t *f = find_flag(name, strlen(name));
  return f && (flag_origin[f - flags][0] || flag_from_command_line[f - flags]);
}

int qgmd_config_origins_json(char *buf, size_t size) {
  size_t used = 0;
  for (size_t i = 0; i < NUM_FLAGS; i++) {
    if (!takes(parsed_program, &flags[i]))
      continue;
    const char *from = flag_origin[i][0]          ? flag_origin[i]
                       : flag_from_command_line[i] ? "command line"
                                                   : "default";
    int n = snprintf(used < size ? buf + used : NULL,
                     used < size ? size - used : 0, "%s\"%s\":",
                     used ? "," : "{", flags[i].name);
    used += (size_t)n;
    used += (size_t)qgmd_json_string(used < size ? buf + used : NULL,
                                     used < size ? size - used : 0, from);
  }
  if (used + 2 > size)
    return -1;
  buf[used++] = '}';
  buf[used] = '\0';
  return (int)used;
}

void qgmd_config_changed(const qgmd_config_t *cfg, char *buf, size_t size) {
  static qgmd_config_t defaults;
  set_defaults(&defaults);
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < NUM_FLAGS && used < size; i++) {
    if (!takes(cfg->program, &flags[i]))
      continue;
    char now[QGMD_STR_MAX], then[QGMD_STR_MAX];
    const char *v = value_text(&flags[i], cfg, now, sizeof now);
    if (strcmp(v, value_text(&flags[i], &defaults, then, sizeof then)) != 0)
      used += (size_t)snprintf(buf + used, size - used, "%s--%s=%s",
                               used ? " " : "", flags[i].name, v);
  }
  if (used == 0)
    snprintf(buf, size, "all defaults");
}

void qgmd_config_topology(const qgmd_config_t *cfg, int nodes,
                          const int *host_of, int hosts,
                          qgm_topology_spec_t *spec) {
  memset(spec, 0, sizeof *spec);
  spec->name = cfg->topology;
  spec->nodes = nodes;
  spec->host_topology = cfg->host_topology;
  if (strcmp(cfg->hosts, "auto") == 0) {
    spec->hosts = hosts;
    spec->host_of = host_of;
  } else {
    spec->hosts = atoi(cfg->hosts); /* qgmd_config_check: 1..4096 */
  }
  /* qgmd_config_check accepted both. */
  qgm_mixing_parse(cfg->mixing, &spec->mixing);
  qgm_torus_parse(cfg->torus, &spec->torus_rows, &spec->torus_cols);
  spec->tree_arity = (int)cfg->tree_arity;
}

static int show_flags(unsigned program, const char *format, FILE *out,
                      char *err, size_t errlen);

/* A flag's help with, for the flags that name things, the names the
 * library knows (where the help has "{}", else after it): the library's
 * tables are the only lists of them. */
static const char *help_text(unsigned program, const flag_t *f, char *buf,
                             size_t size) {
  static const struct {
    size_t offset;
    const char *(*names)(void);
  } lists[] = {
      {offsetof(qgmd_config_t, algorithm), qgm_algorithm_names},
      {offsetof(qgmd_config_t, topology), qgm_topology_names},
      {offsetof(qgmd_config_t, host_topology), qgm_topology_graph_names},
      {offsetof(qgmd_config_t, dataset), qgm_dataset_names},
      {offsetof(qgmd_config_t, model), qgm_model_names},
      {offsetof(qgmd_config_t, compress), qgm_compress_names},
      {offsetof(qgmd_config_t, gsgm_base), qgm_gsgm_base_names},
      {offsetof(qgmd_config_t, gsgm_rule), qgm_gsgm_rule_names},
      {offsetof(qgmd_config_t, problem), qgm_problem_names},
  };
  for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
    if (lists[i].offset == f->offset) {
      const char *at = strstr(f->help, "{}");
      int n = at ? snprintf(buf, size, "%.*s%s%s", (int)(at - f->help),
                            f->help, lists[i].names(), at + 2)
                 : snprintf(buf, size, "%s: %s", f->help, lists[i].names());
      if (f->offset == offsetof(qgmd_config_t, algorithm) &&
          program == QGMD_PROGRAM_DAEMON && n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "; asynchronous parameter "
                 "server (rank 0 serves): %s", qgm_async_rule_names());
      return buf;
    }
  return f->help;
}
/* What --help says a flag's default is: its value, or for the flags
 * whose empty default stands for a rule, the rule. */
static const char *default_text(const flag_t *f) {
  static const struct {
    size_t offset;
    const char *text;
  } rules[] = {
      {offsetof(qgmd_config_t, torus), "the most square"},
      {offsetof(qgmd_config_t, control),
       "$XDG_RUNTIME_DIR/qgmd.sock, else /tmp/qgmd-UID/qgmd.sock"},
  };
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
    if (rules[i].offset == f->offset)
      return rules[i].text;
  return *f->def ? f->def : "none";
}

static void print_usage(unsigned program, FILE *out) {
  if (program == QGMD_PROGRAM_SIM)
    fprintf(out,
            "usage: qgm-sim [--flagfile=PATH]... [--name=value]...\n\n"
            "Simulates a decentralized run with n virtual nodes in one "
            "process: qgmd's\nflags, rules and records, without MPI.\n");
  else
    fprintf(out,
            "usage: mpirun -np N qgmd [--flagfile=PATH]... "
            "[--name=value]...\n\nDecentralized training: every MPI rank is "
            "one node that trains on its own\nnon-IID shard and averages its "
            "model with its graph neighbours.\n");
  fprintf(out,
          "\nflags:\n"
          "  --flagfile=PATH  read flags from PATH (one --name=value per "
          "line, # comments;\n                   may nest; the command line "
          "overrides files)\n");
  for (size_t i = 0; i < NUM_FLAGS; i++) {
    if (!takes(program, &flags[i]))
      continue;
    char left[64];
    snprintf(left, sizeof left, "--%s=%s", flags[i].name,
             flags[i].type == FLAG_STRING ? "STR"
             : flags[i].type == FLAG_INT  ? "INT"
                                          : "NUM");
    char help[1024];
    fprintf(out, "  %-22s %s (default: %s)\n", left,
            help_text(program, &flags[i], help, sizeof help),
            default_text(&flags[i]));
  }
  fprintf(out, "  --show-flags=json      print this table as JSON (for tools) "
               "and exit\n");
  fprintf(out, "  --show-config          print the effective flags (after every "
               "file) and exit\n  --help, --version\n\nexit status: 0 success, 2 bad usage "
               "or bad input, 1 runtime failure\n");
}

enum qgmd_parse_result qgmd_config_parse(int argc, char **argv,
                                         unsigned program, qgmd_config_t *cfg,
                                         FILE *out, char *err, size_t errlen) {
  memset(cfg, 0, sizeof *cfg);
  memset(flag_origin, 0, sizeof flag_origin);
  memset(flag_from_command_line, 0, sizeof flag_from_command_line);
  set_defaults(cfg);
  cfg->program = parsed_program = program;
  parser_t p = {.cfg = cfg, .err = err, .errlen = errlen};
  int show = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      if (out)
        print_usage(program, out);
      return QGMD_PARSE_HELP;
    }
    if (strcmp(argv[i], "--version") == 0) {
      if (out)
        fprintf(out, "%s %s\n",
                program == QGMD_PROGRAM_SIM ? "qgm-sim" : "qgmd",
                qgm_version());
      return QGMD_PARSE_VERSION;
    }
    if (strncmp(argv[i], "--show-flags", 12) == 0)
      return show_flags(program, argv[i] + 12, out, err, errlen);
    show |= strcmp(argv[i], "--show-config") == 0;
  }
  /* Files first, then everything else: the command line wins wherever it
   * stands relative to --flagfile. */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 1; i < argc; i++) {
      int is_file = strncmp(argv[i], "--flagfile", 10) == 0;
      if (strcmp(argv[i], "--show-config") != 0 && is_file == (pass == 0) &&
          apply(&p, (origin_t){NULL, 0}, argv[i]) != 0)
        return QGMD_PARSE_ERROR;
    }
  if (!show)
    return QGMD_PARSE_RUN;
  if (qgmd_config_check(cfg, err, errlen) != 0)
    return QGMD_PARSE_ERROR;
  for (size_t i = 0; out && i < NUM_FLAGS; i++) {
    if (!takes(program, &flags[i]))
      continue;
    char value[QGMD_STR_MAX];
    fprintf(out, "--%s=%s\n", flags[i].name,
            value_text(&flags[i], cfg, value, sizeof value));
  }
  return QGMD_PARSE_SHOWN;
}

int qgmd_config_widths(const qgmd_config_t *cfg, size_t *widths, size_t max,
                       size_t *count) {
  return qgm_model_parse_widths(cfg->hidden, widths, max, count) ? -1 : 0;
}

/* Whether value is one of the names in a ", "-separated list. */
static int in_list(const char *value, const char *list) {
  size_t len = strlen(value);
  for (const char *s = list; *s;) {
    const char *end = strchr(s, ',');
    size_t n = end ? (size_t)(end - s) : strlen(s);
    if (n == len && strncmp(s, value, len) == 0)
      return 1;
    if (!end)
      break;
    s = end + 1;
    while (*s == ' ')
      s++;
  }
  return 0;
}

int qgmd_config_check(const qgmd_config_t *cfg, char *err, size_t errlen) {
  qgm_algorithm_t alg;
  qgm_lr_schedule_t schedule;
  qgm_mixing_t mixing;
  int rows, cols;
  qgm_async_rule_t rule;
  qgm_gsgm_base_t base;
  qgm_gsgm_rule_t gsgm_rule;
  double device_ms, jitter;
  qgm_compress_spec_t compress;
  const char *refused;
  size_t widths[8], n;
  double factor;
  int max_rank;
  if (qgm_algorithm_parse(cfg->algorithm, &alg) != 0 &&
      qgm_async_rule_parse(cfg->algorithm, &rule) != 0)
    snprintf(err, errlen, "--algorithm: unknown algorithm '%s' (known: %s; "
             "asynchronous: %s)", cfg->algorithm, qgm_algorithm_names(),
             qgm_async_rule_names());
  else if (!in_list(cfg->model, qgm_model_names()))
    snprintf(err, errlen, "--model: unknown model '%s' (known: %s)",
             cfg->model, qgm_model_names());
  else if (!in_list(cfg->topology, qgm_topology_names()) &&
           (strncmp(cfg->topology, "file:", 5) != 0 || !cfg->topology[5]))
    snprintf(err, errlen, "--topology: unknown topology '%s' (known: %s)",
             cfg->topology, qgm_topology_names());
  else if (strcmp(cfg->hosts, "auto") != 0 &&
           (strspn(cfg->hosts, "0123456789") != strlen(cfg->hosts) ||
            strlen(cfg->hosts) > 4 || atoi(cfg->hosts) < 1 ||
            atoi(cfg->hosts) > 4096))
    snprintf(err, errlen, "--hosts: '%s' is neither auto nor a host count "
             "from 1 to 4096", cfg->hosts);
  else if (!in_list(cfg->host_topology, qgm_topology_graph_names()))
    snprintf(err, errlen, "--host-topology: '%s' cannot join hosts (known: "
             "%s)", cfg->host_topology, qgm_topology_graph_names());
  else if (qgm_mixing_parse(cfg->mixing, &mixing) != 0)
    snprintf(err, errlen, "--mixing: unknown rule '%s' (default, uniform, "
             "metropolis, lazy)", cfg->mixing);
  else if (qgm_torus_parse(cfg->torus, &rows, &cols) != 0)
    snprintf(err, errlen, "--torus: '%s' is not RxC (e.g. 4x8)", cfg->torus);
  else if (!in_list(cfg->dataset, qgm_dataset_names()))
    snprintf(err, errlen, "--dataset: unknown dataset '%s' (known: %s)",
             cfg->dataset, qgm_dataset_names());
  else if (qgmd_config_widths(cfg, widths, 8, &n) != 0)
    snprintf(err, errlen, "--hidden: '%s' is not a list of 1 to 8 widths in "
             "[1, 65536]", cfg->hidden);
  else if (!in_list(cfg->overlap, "on, off"))
    snprintf(err, errlen, "--overlap: '%s' is neither on nor off",
             cfg->overlap);
  else if (!in_list(cfg->allreduce, "qgmd, mpi"))
    snprintf(err, errlen, "--allreduce: '%s' is neither qgmd nor mpi",
             cfg->allreduce);
  else if (!in_list(cfg->shared_memory, "auto, off"))
    snprintf(err, errlen, "--shared-memory: '%s' is neither auto nor off",
             cfg->shared_memory);
  else if (qgmd_config_straggle(cfg, 0, &factor, &max_rank) != 0)
    snprintf(err, errlen, "--straggle: '%s' is not RANKS:FACTOR (e.g. 1,3:4 "
             "with FACTOR in [1, 1000])", cfg->straggle);
  else if (qgm_compress_parse(cfg->compress, &compress) != 0)
    snprintf(err, errlen, "--compress: unknown or malformed '%s' (known: %s; "
             "F in (0, 1], BITS in [%d, %d])", cfg->compress,
             qgm_compress_names(), QGM_COMPRESS_MIN_BITS,
             QGM_COMPRESS_MAX_BITS);
  else if (compress.kind != QGM_COMPRESS_NONE &&
           (refused = qgm_algorithm_parse(cfg->algorithm, &alg) != 0
                          ? "an asynchronous mode sends gradients to a "
                            "server; it does not gossip"
                          : qgm_choco_refuses(alg, NULL)))
    snprintf(err, errlen, "--compress=%s: not with --algorithm=%s (%s)",
             cfg->compress, cfg->algorithm, refused);
  else if (!in_list(cfg->lr_schedule, "step, constant"))
    snprintf(err, errlen, "--lr-schedule: unknown schedule '%s' (step, "
             "constant)", cfg->lr_schedule);
  else if (qgm_lr_schedule_set_decays(&schedule, cfg->lr_schedule,
                                      cfg->lr_decay_at,
                                      cfg->lr_decay_factor) != 0)
    snprintf(err, errlen, "--lr-decay-at: '%s' is not a rising list of 1 to "
             "%d fractions in (0, 1]", cfg->lr_decay_at, QGM_LR_MAX_DECAYS);
  else if (qgm_gsgm_base_parse(cfg->gsgm_base, &base) != 0)
    snprintf(err, errlen, "--gsgm-base: unknown base '%s' (known: %s)",
             cfg->gsgm_base, qgm_gsgm_base_names());
  else if (qgm_gsgm_rule_parse(cfg->gsgm_rule, &gsgm_rule) != 0)
    snprintf(err, errlen, "--gsgm-rule: unknown rule '%s' (known: %s)",
             cfg->gsgm_rule, qgm_gsgm_rule_names());
  else if (qgmd_config_device_time(cfg, &device_ms, &jitter) != 0)
    snprintf(err, errlen, "--device-time: '%s' is not MS[:JITTER] (MS in "
             "[0, 600000], JITTER in [0, 3])", cfg->device_time);
  else if (strcmp(cfg->problem, "dataset") != 0 &&
           !in_list(cfg->problem, qgm_problem_names()))
    snprintf(err, errlen, "--problem: unknown problem '%s' (known: dataset, "
             "%s)", cfg->problem, qgm_problem_names());
  else if (!in_list(cfg->log_level, "error, warning, info, debug"))
    snprintf(err, errlen, "--log-level: unknown level '%s' (error, warning, "
             "info, debug)", cfg->log_level);
  else if (qgm_async_rule_parse(cfg->algorithm, &rule) == 0 &&
           (cfg->checkpoint_dir[0] || strcmp(cfg->resume, "no") != 0))
    snprintf(err, errlen, "--checkpoint-dir: the asynchronous mode (%s) "
             "writes no checkpoints", cfg->algorithm);
  else
    return 0;
  /* err starts with the flag at fault: prefix the file that set it. */
  for (size_t i = 0; i < NUM_FLAGS; i++) {
    size_t len = strlen(flags[i].name);
    if (flag_origin[i][0] && strncmp(err, "--", 2) == 0 &&
        strncmp(err + 2, flags[i].name, len) == 0 && err[2 + len] == ':') {
      char copy[1024];
      snprintf(copy, sizeof copy, "%s", err);
      snprintf(err, errlen, "%s: %s", flag_origin[i], copy);
      break;
    }
  }
  return -1;
}

int qgmd_config_straggle(const qgmd_config_t *cfg, int rank, double *factor,
                         int *max_rank) {
  *factor = 1.0;
  *max_rank = -1;
  if (!cfg->straggle[0])
    return 0;
  const char *colon = strrchr(cfg->straggle, ':');
  if (!colon)
    return -1;
  char *end;
  errno = 0;
  double f = strtod(colon + 1, &end);
  if (*end || errno || !(f >= 1.0 && f <= 1000.0))
    return -1;
  const char *s = cfg->straggle;
  while (s < colon) {
    long r = strtol(s, &end, 10);
    if (end == s || r < 0 || r > 1000000 || (*end != ',' && end != colon))
      return -1;
    if (r == rank)
      *factor = f;
    if (r > *max_rank)
      *max_rank = (int)r;
    s = end + (end != colon);
  }
  return *max_rank >= 0 ? 0 : -1;
}

int qgmd_config_device_time(const qgmd_config_t *cfg, double *ms,
                            double *jitter) {
  *ms = *jitter = 0.0;
  if (!cfg->device_time[0])
    return 0;
  char *end;
  errno = 0;
  double m = strtod(cfg->device_time, &end), j = 0.0;
  if (end == cfg->device_time || errno)
    return -1;
  if (*end == ':') {
    const char *from = end + 1;
    j = strtod(from, &end);
    if (end == from || errno)
      return -1;
  }
  if (*end || !(m >= 0.0 && m <= 600000.0) || !(j >= 0.0 && j <= 3.0))
    return -1;
  *ms = m;
  *jitter = j;
  return 0;
}

int qgmd_json_string(char *buf, size_t size, const char *s) {
  size_t used = 0;
  if (used < size)
    buf[used] = '"';
  used++;
  for (; *s; s++) {
    char esc[8];
    int n = (*s == '"' || *s == '\\') ? snprintf(esc, sizeof esc, "\\%c", *s)
            : ((unsigned char)*s < 0x20)
                ? snprintf(esc, sizeof esc, "\\u%04x", (unsigned char)*s)
                : snprintf(esc, sizeof esc, "%c", *s);
    for (int k = 0; k < n; k++, used++)
      if (used < size)
        buf[used] = esc[k];
  }
  if (used < size)
    buf[used] = '"';
  used++;
  return (int)used;
}

int qgmd_config_json(const qgmd_config_t *cfg, char *buf, size_t size) {
  size_t used = 0;
  for (size_t i = 0; i < NUM_FLAGS; i++) {
    const flag_t *f = &flags[i];
    if (!takes(cfg->program, f))
      continue;
    const void *field = (const char *)cfg + f->offset;
    char head[80];
    int n = snprintf(head, sizeof head, "%s\"%s\":", used ? "," : "{",
                     f->name);
    if (used + (size_t)n < size)
      memcpy(buf + used, head, (size_t)n);
    used += (size_t)n;
    char *at = used < size ? buf + used : NULL;
    size_t room = used < size ? size - used : 0;
    if (f->type == FLAG_STRING) {
      n = qgmd_json_string(at, room, field);
    } else {
      char number[64];
      n = snprintf(at, room, "%s", value_text(f, cfg, number, sizeof number));
    }
    used += (size_t)n;
  }
  if (used + 2 > size)
    return -1;
  buf[used++] = '}';
  buf[used] = '\0';
  return (int)used;
}

/* s as a terminated JSON string literal in buf ("" if it does not fit). */
static const char *json_quoted(const char *s, char *buf, size_t size) {
  size_t n = (size_t)qgmd_json_string(buf, size - 1, s);
  snprintf(buf + (n < size - 1 ? n : 0), size, "%s", n < size - 1 ? "" : "\"\"");
  return buf;
}

/* --show-flags=json: the flag table itself, one flag per line, for tools
 * (tools/sweep) that must know the flags without scraping --help. Numbers
 * carry their bounds; defaults are the values the daemon starts from. */
static int show_flags(unsigned program, const char *format, FILE *out,
                      char *err, size_t errlen) {
  if (strcmp(format, "=json") != 0) {
    snprintf(err, errlen, "--show-flags%s: the only format is json "
             "(--show-flags=json)", format);
    return QGMD_PARSE_ERROR;
  }
  if (!out)
    return QGMD_PARSE_SHOWN;
  static qgmd_config_t defaults;
  set_defaults(&defaults);
  static const char *const type_names[] = {
      [FLAG_STRING] = "string", [FLAG_INT] = "integer",
      [FLAG_DOUBLE] = "number"};
  fputs("{\"flags\":[\n", out);
  size_t last = 0;
  for (size_t i = 0; i < NUM_FLAGS; i++)
    if (takes(program, &flags[i]))
      last = i;
  for (size_t i = 0; i < NUM_FLAGS; i++) {
    const flag_t *f = &flags[i];
    if (!takes(program, f))
      continue;
    char name[128], text[1024], value[QGMD_STR_MAX];
    const char *def = value_text(f, &defaults, value, sizeof value);
    fprintf(out, "{\"name\":%s,\"type\":\"%s\",\"default\":%s",
            json_quoted(f->name, name, sizeof name), type_names[f->type],
            f->type == FLAG_STRING ? json_quoted(def, text, sizeof text) : def);
    if (f->type != FLAG_STRING) {
      char lo[32], hi[32];
      qgm_format_double(lo, sizeof lo, f->min);
      qgm_format_double(hi, sizeof hi, f->max);
      fprintf(out, ",\"min\":%s,\"max\":%s", lo, hi);
    }
    char help[1024];
    fprintf(out, ",\"help\":%s}%s\n",
            json_quoted(help_text(program, f, help, sizeof help), text,
                        sizeof text),
            i < last ? "," : "");
  }
  fputs("]}\n", out);
  return QGMD_PARSE_SHOWN;
}
