/* flags.c - qgm-sim's command line: qgmd's flag names for everything the
 * two share, plus the simulator's own (nodes, synthetic problems). Flag
 * files work as in qgmd: one --name=value per line, # comments, nested
 * --flagfile paths relative to the including file, the command line last. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

typedef struct sim_flag {
  const char *name;
  char type; /* 's' string, 'i' whole number, 'd' number */
  size_t offset;
  double min, max;
  const char *def, *help;
} sim_flag_t;

#define S(name, field, def, help)                                             \
  {name, 's', offsetof(sim_config_t, field), 0, 0, def, help}
#define N(name, type, field, min, max, def, help)                             \
  {name, type, offsetof(sim_config_t, field), min, max, def, help}

static const sim_flag_t table[] = {
    S("algorithm", algorithm, "qg-dsgdm-n", "optimizer (as qgmd)"),
    S("topology", topology, "ring", "communication graph (as qgmd)"),
    N("hosts", 'i', hosts, 1, 4096, "1",
      "topology hier: N equal groups of consecutive nodes"),
    S("host-topology", host_topology, "ring",
      "topology hier: the graph between hosts (as qgmd)"),
    N("nodes", 'i', nodes, 1, 1 << 20, "16", "number of virtual nodes"),
    S("problem", problem, "least-squares",
      "least-squares, logistic, or dataset (--dataset with --model)"),
    N("dim", 'i', dim, 1, 4096, "20", "synthetic: parameters"),
    N("rows", 'i', rows, 1, 1e7, "64", "synthetic: samples per node"),
    N("heterogeneity", 'd', heterogeneity, 0, 1e3, "1",
      "synthetic: spread of the nodes' local models and features"),
    N("noise", 'd', noise, 0, 1e3, "0.1", "least squares: target noise"),
    N("l2", 'd', l2, 0, 1e3, "0.01",
      "synthetic: L2 term of the objective (logistic needs > 0)"),
    S("dataset", dataset, "fashion-mnist", "with --problem=dataset (as qgmd)"),
    S("data-dir", data_dir, "/usr/share/datasets/fashion-mnist",
      "directory of the IDX files"),
    S("model", model, "mlp", "model (as qgmd)"),
    S("hidden", hidden, "256", "MLP hidden widths (as qgmd)"),
    N("alpha", 'd', alpha, 1e-6, 1e6, "1", "Dirichlet concentration"),
    N("epochs", 'i', epochs, 1, 1e7, "5", "passes over each node's shard"),
    N("eval-every", 'i', eval_every, 1, 1e7, "1", "evaluate every N epochs"),
    N("batch-size", 'i', batch_size, 1, 65536, "32", "minibatch per node"),
    N("lr", 'd', lr, 0, 100, "0",
      "peak learning rate (0: 0.1 with --problem=dataset, as qgmd; 0.02 "
      "for the synthetic problems)"),
    N("momentum", 'd', momentum, 0, 0.999, "0.9", "momentum beta"),
    N("weight-decay", 'd', weight_decay, 0, 1, "1e-4",
      "L2 weight decay, added to the gradient"),
    N("warmup-epochs", 'd', warmup_epochs, 0, 1000, "0",
      "linear learning-rate warm-up, in epochs"),
    S("lr-schedule", lr_schedule, "step", "step or constant"),
    S("lr-decay-at", lr_decay_at, "0.5,0.75", "fractions of the run"),
    N("lr-decay-factor", 'd', lr_decay_factor, 1e-9, 1, "0.1",
      "what each decay multiplies the rate by"),
    N("seed", 'i', seed, 0, 4294967295.0, "1", "seed of everything random"),
    N("train-limit", 'i', train_limit, 0, 1e9, "0",
      "use only the first N training samples (0 = all)"),
    N("test-limit", 'i', test_limit, 0, 1e9, "0",
      "use only the first N test samples (0 = all)"),
    S("compress", compress, "none",
      "compressed gossip, CHOCO (as qgmd): none, topk:F, randk:F, "
      "qsgd:BITS, sign"),
    N("consensus-lr", 'd', consensus_lr, 1e-6, 1, "1",
      "with --compress: CHOCO's consensus step size gamma (as qgmd)"),
    S("metrics", metrics, "", "JSON Lines output file"),
};
#define NUM_FLAGS (sizeof table / sizeof table[0])

typedef struct where {
  const char *file; /* NULL: the command line */
  int line;
} where_t;

static int complain(char *err, size_t errlen, where_t at, const char *what,
                    const char *name, const char *value) {
  char msg[8192];
  snprintf(msg, sizeof msg, what, name, value);
  if (at.file)
    snprintf(err, errlen, "%s:%d: %s", at.file, at.line, msg);
  else
    snprintf(err, errlen, "command line: %s", msg);
  return -1;
}

static int assign(sim_config_t *cfg, const sim_flag_t *f, const char *value,
                  where_t at, char *err, size_t errlen) {
  void *field = (char *)cfg + f->offset;
  if (f->type == 's') {
    if (strlen(value) >= SIM_STR)
      return complain(err, errlen, at, "--%s: value too long%s", f->name, "");
    strcpy(field, value);
    return 0;
  }
  char *end;
  errno = 0;
  double v = strtod(value, &end);
  if (!*value || *end || errno || !isfinite(v) ||
      (f->type == 'i' && v != floor(v)))
    return complain(err, errlen, at, "--%s: '%s' is not a valid number",
                    f->name, value);
  if (v < f->min || v > f->max)
    return complain(err, errlen, at, "--%s: '%s' is out of range", f->name,
                    value);
  if (f->type == 'i')
    *(long *)field = (long)v;
  else
    *(double *)field = v;
  return 0;
}

static int read_file(sim_config_t *cfg, const char *path, where_t from,
                     int depth, char *err, size_t errlen);

static int setting(sim_config_t *cfg, const char *arg, where_t at, int depth,
                   char *err, size_t errlen) {
  const char *eq = strchr(arg, '=');
  if (strncmp(arg, "--", 2) != 0 || !eq)
    return complain(err, errlen, at, "expected --name=value, got '%s'%s", arg,
                    "");
  size_t len = (size_t)(eq - arg - 2);
  if (len == 8 && strncmp(arg + 2, "flagfile", 8) == 0)
    return read_file(cfg, eq + 1, at, depth + 1, err, errlen);
  for (size_t i = 0; i < NUM_FLAGS; i++)
    if (strlen(table[i].name) == len &&
        strncmp(table[i].name, arg + 2, len) == 0)
      return assign(cfg, &table[i], eq + 1, at, err, errlen);
  char name[128];
  snprintf(name, sizeof name, "%.*s", (int)(len < 100 ? len : 100), arg + 2);
  return complain(err, errlen, at, "unknown flag '--%s'%s (see --help)", name,
                  "");
}

static int read_file(sim_config_t *cfg, const char *path, where_t from,
                     int depth, char *err, size_t errlen) {
  char full[4096];
  const char *slash = from.file ? strrchr(from.file, '/') : NULL;
  if (path[0] != '/' && slash)
    snprintf(full, sizeof full, "%.*s/%s", (int)(slash - from.file),
             from.file, path);
  else
    snprintf(full, sizeof full, "%s", path);
  if (depth > 16)
    return complain(err, errlen, from, "flag files nest too deeply at '%s'%s",
                    full, "");
  FILE *f = fopen(full, "r");
  if (!f)
    return complain(err, errlen, from, "cannot open flag file '%s': %s", full,
                    strerror(errno));
  where_t here = {full, 0};
  char line[1024];
  int rc = 0;
  while (rc == 0 && fgets(line, sizeof line, f)) {
    here.line++;
    char *s = line + strspn(line, " \t");
    s[strcspn(s, "\r\n")] = '\0';
    for (size_t n = strlen(s); n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t');)
      s[--n] = '\0';
    if (*s && *s != '#')
      rc = setting(cfg, s, here, depth, err, errlen);
  }
  fclose(f);
  return rc;
}

static void usage(void) {
  printf("usage: qgm-sim [--flagfile=PATH]... [--name=value]...\n\n"
         "Simulates a decentralized run with n virtual nodes in one "
         "process.\n\nflags:\n");
  for (size_t i = 0; i < NUM_FLAGS; i++)
    printf("  --%-16s %s (default: %s)\n", table[i].name, table[i].help,
           *table[i].def ? table[i].def : "none");
}

int sim_config_parse(int argc, char **argv, sim_config_t *cfg, char *err,
                     size_t errlen) {
  memset(cfg, 0, sizeof *cfg);
  for (size_t i = 0; i < NUM_FLAGS; i++)
    assign(cfg, &table[i], table[i].def, (where_t){NULL, 0}, err, errlen);
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage();
      return 1;
    } else if (strcmp(argv[i], "--version") == 0) {
      printf("qgm-sim %s\n", qgm_version());
      return 1;
    }
  /* Flag files first, so that the command line overrides them. */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 1; i < argc; i++)
      if ((strncmp(argv[i], "--flagfile=", 11) == 0) == (pass == 0) &&
          setting(cfg, argv[i], (where_t){NULL, 0}, 0, err, errlen) != 0)
        return -1;
  /* The daemon's rate for the daemon's job; the synthetic problems' 2
   * steps per epoch with momentum 0.9 diverge at 0.1 on a 1024-node ring
   * and converge at 0.02 from 16 to 4096 nodes. */
  if (cfg->lr == 0.0)
    cfg->lr = strcmp(cfg->problem, "dataset") == 0 ? 0.1 : 0.02;
  return 0;
}

void sim_config_json(const sim_config_t *cfg, FILE *out) {
  for (size_t i = 0; i < NUM_FLAGS; i++) {
    const void *field = (const char *)cfg + table[i].offset;
    fprintf(out, "%s\"%s\":", i ? "," : "{", table[i].name);
    if (table[i].type == 's') {
      fputc('"', out);
      for (const char *c = (const char *)field; *c; c++)
        fprintf(out, (*c == '"' || *c == '\\') ? "\\%c" : "%c", *c);
      fputc('"', out);
    } else if (table[i].type == 'i')
      fprintf(out, "%ld", *(const long *)field);
    else {
      char number[32];
      qgm_format_double(number, sizeof number, *(const double *)field);
      fputs(number, out);
    }
  }
  fputc('}', out);
}
