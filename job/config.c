/* config.c - the flags of a job from the command line and flag files, by
 * the one table (flags.c), and what is printed of them: --help,
 * --show-config, --show-flags=json and the JSON records. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "feature.h"
#include "flag.h"
#include "qgm.h"

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

static const char *closest_flag(unsigned program, const char *name) {
  const char *best = NULL;
  size_t best_d = 3; /* suggest only near misses */
  for (size_t i = 0; i < qgmd_flag_count; i++) {
    if (!takes(program, &qgmd_flags[i]))
      continue;
    size_t d = edit_distance(name, qgmd_flags[i].name);
    if (d < best_d) {
      best_d = d;
      best = qgmd_flags[i].name;
    }
  }
  return best;
}

/* Where each flag was last set from a file ("" for the command line or
 * the default), so that a value the table's bounds accept but
 * qgmd_config_check rejects is still blamed on its file and line. */
static char flag_origin[QGMD_FLAG_ROOM][QGMD_STR_MAX + 16];
/* Whether the command line set it last (for the config record). */
static int flag_from_command_line[QGMD_FLAG_ROOM];

/* Defaults are set from this origin, which leaves the records of where
 * the flags were set alone. */
static const origin_t DEFAULT_ORIGIN = {NULL, -1};

static int set_value(parser_t *p, origin_t at, const flag_t *f,
                     const char *value) {
  void *field = (char *)p->cfg + f->offset;
  if (at.line >= 0) {
    flag_from_command_line[f - qgmd_flags] = !at.file;
    if (at.file)
      snprintf(flag_origin[f - qgmd_flags], sizeof flag_origin[0], "%.*s:%d",
               QGMD_STR_MAX - 1, at.file, at.line);
    else
      flag_origin[f - qgmd_flags][0] = '\0';
  }
  if (f->type == FLAG_STRING) {
    if (strlen(value) >= QGMD_STR_MAX) {
      char start[40]; /* enough to recognise it, not the whole of it */
      snprintf(start, sizeof start, "%.32s...", value);
      return fail(p, at, "value of --%s is too long: '%s'", f->name, start);
    }
    strcpy(field, value);
    if (f->parse) {
      /* Parsed once, here; a text that names nothing is refused by
       * qgmd_config_check, after every file, as a later setting may
       * replace it. */
      unsigned *unknown = &p->cfg->parsed.unknown;
      *unknown = f->parse->parse(value, p->cfg) == 0
                     ? *unknown & ~f->parse->unknown
                     : *unknown | f->parse->unknown;
    }
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
  const flag_t *f = qgmd_flag_find(name, len);
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
  for (size_t i = 0; i < qgmd_flag_count; i++)
    set_value(&p, DEFAULT_ORIGIN, &qgmd_flags[i], qgmd_flags[i].def);
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
  const flag_t *f = qgmd_flag_find(name, strlen(name));
  if (!f)
    return 0;
  size_t i = (size_t)(f - qgmd_flags);
  return flag_origin[i][0] || flag_from_command_line[i];
}

int qgmd_config_origins_json(char *buf, size_t size) {
  size_t used = 0;
  for (size_t i = 0; i < qgmd_flag_count; i++) {
    if (!takes(parsed_program, &qgmd_flags[i]))
      continue;
    const char *from = flag_origin[i][0]          ? flag_origin[i]
                       : flag_from_command_line[i] ? "command line"
                                                   : "default";
    int n = snprintf(used < size ? buf + used : NULL,
                     used < size ? size - used : 0, "%s\"%s\":",
                     used ? "," : "{", qgmd_flags[i].name);
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
  for (size_t i = 0; i < qgmd_flag_count && used < size; i++) {
    if (!takes(cfg->program, &qgmd_flags[i]))
      continue;
    char now[QGMD_STR_MAX], then[QGMD_STR_MAX];
    const flag_t *f = &qgmd_flags[i];
    const char *v = value_text(f, cfg, now, sizeof now);
    if (strcmp(v, value_text(f, &defaults, then, sizeof then)) != 0)
      used += (size_t)snprintf(buf + used, size - used, "%s--%s=%s",
                               used ? " " : "", qgmd_flags[i].name, v);
  }
  if (used == 0)
    snprintf(buf, size, "all defaults");
}

static int show_flags(unsigned program, const char *format, FILE *out,
                      char *err, size_t errlen);

/* For the flags that name things the library knows, the library's list
 * of those names (", "-separated), else NULL: the library's tables are
 * the only lists of them, which --help and --show-flags=json both print. */
static const char *library_names(const flag_t *f) {
  static const struct {
    size_t offset;
    const char *(*names)(void);
  } lists[] = {
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
    if (lists[i].offset == f->offset)
      return lists[i].names();
  return NULL;
}

/* A flag's help with, for the flags that name things, the names the
 * library knows (where the help has "{}", else after it). */
static const char *help_text(unsigned program, const flag_t *f, char *buf,
                             size_t size) {
  const int algorithm = f->offset == offsetof(qgmd_config_t, algorithm);
  const char *names = algorithm ? qgm_algorithm_names() : library_names(f);
  if (!names)
    return f->help;
  const char *at = strstr(f->help, "{}");
  int n = at ? snprintf(buf, size, "%.*s%s%s", (int)(at - f->help), f->help,
                        names, at + 2)
             : snprintf(buf, size, "%s: %s", f->help, names);
  if (algorithm && program == QGMD_PROGRAM_DAEMON && n > 0 &&
      (size_t)n < size)
    snprintf(buf + n, size - (size_t)n, "; asynchronous parameter "
             "server (rank 0 serves): %s", qgm_async_rule_names());
  return buf;
}
/* What --help says a flag's default is: its value, or for the flags
 * whose empty default stands for a rule, the rule. */
static const char *default_text(const flag_t *f) {
  static char data_dir[512];
  if (!data_dir[0])
    qgmd_data_dir_rule(data_dir, sizeof data_dir);
  static const struct {
    size_t offset;
    const char *text;
  } rules[] = {
      {offsetof(qgmd_config_t, torus), "the most square"},
      {offsetof(qgmd_config_t, control),
       "$XDG_RUNTIME_DIR/qgmd.sock, else /tmp/qgmd-UID/qgmd.sock"},
      {offsetof(qgmd_config_t, data_dir), data_dir},
      {offsetof(qgmd_config_t, consensus_lr),
       "the compressor's for the algorithm, docs/COMPRESSION.md"},
  };
  for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
    if (rules[i].offset == f->offset)
      return rules[i].text;
  /* An empty default is no value at all: "none" would read as one that
   * --straggle or --metrics could be given. */
  return *f->def ? f->def : "not set";
}

/* The categories (config.h): their names, for --show-flags=json, and
 * what each means, for the headings of --help's groups. */
static const struct {
  const char *name, *meaning;
} categories[] = {
    [QGMD_FLAG_TRAINING] = {"training", "what is trained; a resumed run "
                                        "keeps its values"},
    [QGMD_FLAG_OUTPUT] = {"output", "what is written, and where"},
    [QGMD_FLAG_PACING] = {"pacing", "how fast or how patiently, not what"},
};

/* --help's lines: a flag's help starts at HELP_INDENT and wraps before
 * HELP_WIDTH, each continuation at HELP_INDENT (flags.awk reads them). */
#define HELP_WIDTH 80
#define HELP_INDENT 25

/* text, word by word from column `col`, a new line at HELP_INDENT
 * before a word that would reach HELP_WIDTH. */
static void print_wrapped(FILE *out, const char *text, int col) {
  for (const char *s = text + strspn(text, " "); *s; s += strspn(s, " ")) {
    const int w = (int)strcspn(s, " ");
    if (col > HELP_INDENT && col + 1 + w >= HELP_WIDTH) {
      fprintf(out, "\n%*s", HELP_INDENT, "");
      col = HELP_INDENT;
    } else if (col > HELP_INDENT) {
      fputc(' ', out);
      col++;
    }
    fprintf(out, "%.*s", w, s);
    col += w;
    s += w;
  }
  fputc('\n', out);
}

static void print_entry(FILE *out, const char *left, const char *help) {
  int col = fprintf(out, "  %-*s", HELP_INDENT - 3, left);
  if (col > HELP_INDENT - 1) { /* a long name: the help on its own lines */
    fprintf(out, "\n%*s", HELP_INDENT, "");
    col = HELP_INDENT;
  } else {
    col += fprintf(out, " ");
  }
  print_wrapped(out, help, col);
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
  fprintf(out, "\n");
  print_entry(out, "--flagfile=PATH",
              "read flags from PATH (one --name=value per line, # comments; "
              "may nest; the command line overrides files)");
  /* Grouped by the table's categories, in the table's order within each. */
  for (size_t c = 0; c < sizeof categories / sizeof categories[0]; c++) {
    fprintf(out, "\n%s flags (%s):\n", categories[c].name,
            categories[c].meaning);
    for (size_t i = 0; i < qgmd_flag_count; i++) {
      const flag_t *f = &qgmd_flags[i];
      if (!takes(program, f) || f->category != (enum qgmd_flag_category)c)
        continue;
      char left[64], help[1024], text[1400];
      snprintf(left, sizeof left, "--%s=%s", f->name,
               f->type == FLAG_STRING ? "STR"
               : f->type == FLAG_INT  ? "INT"
                                      : "NUM");
      snprintf(text, sizeof text, "%s (default: %s)",
               help_text(program, f, help, sizeof help), default_text(f));
      print_entry(out, left, text);
    }
  }
  fprintf(out, "\nother:\n");
  print_entry(out, "--show-flags=json", "print this table as JSON (for "
              "tools) and exit");
  print_entry(out, "--show-config", "print the effective flags (after "
              "every file) and exit");
  print_entry(out, "--help, --version", "this text; the version");
  fprintf(out, "\nexit status: 0 success, 2 bad usage or bad input, 1 "
          "runtime failure%s\n", program == QGMD_PROGRAM_DAEMON
          ? ";\nunder mpirun, mpirun's own when it ends the job (man qgmd, "
            "EXIT STATUS)" : "");
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
  qgmd_config_resolve(cfg);
    }
  if (!show)
    return QGMD_PARSE_RUN;
  if (qgmd_config_check(cfg, err, errlen) != 0)
    return QGMD_PARSE_ERROR;
  for (size_t i = 0; out && i < qgmd_flag_count; i++) {
    if (!takes(program, &qgmd_flags[i]))
      continue;
    char value[QGMD_STR_MAX];
    fprintf(out, "--%s=%s\n", qgmd_flags[i].name,
            value_text(&qgmd_flags[i], cfg, value, sizeof value));
  }
  return QGMD_PARSE_SHOWN;
}

void qgmd_config_blame(char *err, size_t errlen) {
  for (size_t i = 0; i < qgmd_flag_count; i++) {
    const char *name = qgmd_flags[i].name;
    size_t len = strlen(name);
    if (flag_origin[i][0] && strncmp(err, "--", 2) == 0 &&
        strncmp(err + 2, name, len) == 0 && err[2 + len] == ':') {
      char copy[1024];
      snprintf(copy, sizeof copy, "%s", err);
      snprintf(err, errlen, "%s: %s", flag_origin[i], copy);
      return;
    }
  }
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

/* How a JSON dump holds a flag. */
enum json_form { JSON_LEFT_OUT, JSON_VALUE, JSON_EMPTY };

/* The flags of cfg's program as one JSON object in table order, each in
 * the form form() gives it. Returns the length, or -1 if buf is too
 * small. */
static int config_json(const qgmd_config_t *cfg,
                       enum json_form (*form)(const flag_t *,
                                              const qgmd_config_t *),
                       char *buf, size_t size) {
  size_t used = 0;
  for (size_t i = 0; i < qgmd_flag_count; i++) {
    const flag_t *f = &qgmd_flags[i];
    enum json_form how = form(f, cfg);
    if (!takes(cfg->program, f) || how == JSON_LEFT_OUT)
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
      n = qgmd_json_string(at, room, how == JSON_EMPTY ? "" : field);
    } else {
      char number[64];
      n = snprintf(at, room, "%s",
                   how == JSON_EMPTY
                       ? "0"
                       : value_text(f, cfg, number, sizeof number));
    }
    used += (size_t)n;
  }
  if (used + 2 > size)
    return -1;
  buf[used++] = '}';
  buf[used] = '\0';
  return (int)used;
}

static enum json_form every_flag(const flag_t *f, const qgmd_config_t *cfg) {
  (void)f;
  (void)cfg;
  return JSON_VALUE;
}

int qgmd_config_json(const qgmd_config_t *cfg, char *buf, size_t size) {
  return config_json(cfg, every_flag, buf, size);
}

/* The form of the checkpoint's training flags (flag.h). */
static enum json_form training_form(const flag_t *f,
                                    const qgmd_config_t *cfg) {
  if (f->in_use && !f->in_use(cfg))
    return JSON_LEFT_OUT;
  return f->hash == HASH_VALUE   ? JSON_VALUE
         : f->hash == HASH_EMPTY ? JSON_EMPTY
                                 : JSON_LEFT_OUT;
}

int qgmd_config_training_json(const qgmd_config_t *cfg, char *buf,
                              size_t size) {
  int n = config_json(cfg, training_form, buf, size);
  if (n < 0 && size)
    buf[0] = '\0';
  return n;
}

/* s as a terminated JSON string literal in buf ("" if it does not fit). */
static const char *json_quoted(const char *s, char *buf, size_t size) {
  size_t n = (size_t)qgmd_json_string(buf, size - 1, s);
  snprintf(buf + (n < size - 1 ? n : 0), size, "%s", n < size - 1 ? "" : "\"\"");
  return buf;
}

/* An enumeration's names as "values":[...]: its own, or the library's
 * ", "-separated list. A list with a spec's form in it ("topk:F",
 * "file:PATH") is "forms":[...] instead: "values" are only ever names a
 * tool may pass as they are. */
static void print_values(unsigned program, const flag_t *f, FILE *out) {
  const flag_parse_t *p = f->parse;
  const char *library = library_names(f);
  if (!library && (!p || (!p->names && !p->list)))
    return;
  char list[1024], name[128];
  if (p && p->names)
    qgmd_flag_names(f->name, ", ", list, sizeof list);
  else
    snprintf(list, sizeof list, "%s", p && p->list ? p->list(program) : library);
  fprintf(out, ",\"%s\":[", strchr(list, ':') ? "forms" : "values");
  for (const char *s = list; *s; s += strspn(s, ", ")) {
    const size_t n = strcspn(s, ","), kept = n < sizeof name ? n : 0;
    char quoted[160];
    memcpy(name, s, kept); /* a name longer than the room is left out */
    name[kept] = '\0';
    fprintf(out, "%s%s", s == list ? "" : ",",
            json_quoted(name, quoted, sizeof quoted));
    s += n;
  }
  fputs("]", out);
}

/* --show-flags=json: the flag table itself, one flag per line, for tools
 * (tools/sweep) that must know the flags without scraping --help. Numbers
 * carry their bounds, enumerations their values; defaults are the values
 * the daemon starts from; the category says what a change of the flag
 * changes (config.h). */
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
  for (size_t i = 0; i < qgmd_flag_count; i++)
    if (takes(program, &qgmd_flags[i]))
      last = i;
  for (size_t i = 0; i < qgmd_flag_count; i++) {
    const flag_t *f = &qgmd_flags[i];
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
    print_values(program, f, out);
    char help[1024];
    fprintf(out, ",\"category\":\"%s\",\"help\":%s}%s\n",
            categories[f->category].name,
            json_quoted(help_text(program, f, help, sizeof help), text,
                        sizeof text),
            i < last ? "," : "");
  }
  fputs("]}\n", out);
  return QGMD_PARSE_SHOWN;
}
