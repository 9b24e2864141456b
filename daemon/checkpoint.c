/* checkpoint.c - see checkpoint.h. What a rank's file holds, and how it
 * is written and read, is checkpoint_state.c's. */
#include "checkpoint.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint_layout.h"
#include "checkpoint_state.h"
#include "control.h"
#include "log.h"
#include "lost.h"
#include "mpi_util.h"
#include "node.h"
#include "report.h"

/* Complete steps looked at when resuming: enough to skip past a few
 * damaged ones. */
enum { RESUME_CANDIDATES = 64 };

struct qgmd_checkpoint {
  qgmd_node_t *node;
  char dir[QGMD_STR_MAX]; /* where new checkpoints go */
  uint64_t every;
  size_t keep;
  uint64_t config_hash;
  char config[16384]; /* the training flags as JSON: what the hash covers */
  uint64_t saved_step; /* written or resumed from; valid if have_saved */
  int have_saved;

  /* The save in flight. Every rank's ok goes into one allreduce, so that
   * each learns the verdict of all; a rank that never joins is named by
   * rank 0 from the status reports (qgmd_control_joining). */
  int ok, all_ok;
  char error[4400];
  MPI_Request request;
  qgmd_wait_t wait;
  qgmd_done_fn done;
  double started;

  /* Rank 0 of a resumed run: the "resume" record's lists, written once
   * the first step is done (qgmd_checkpoint_first_step). */
  char *resumed_ranks, *resumed_shards, *dropped;
  /* The lost record of the job that ended (DIR/lost.json), if any: who
   * left, when they went silent and at which step. */
  char lost_ranks[1024], lost_hosts[4096];
  double silent_since;
  uint64_t failed_step;
  int after_loss;
};

/* ------------------------------------------------------ configuration */

/* The flags, the node count and the graph itself (every W of one period,
 * so that a time-varying or file-defined graph counts too). */
static uint64_t config_hash(const qgmd_node_t *node, const char *flags) {
  uint64_t h = qgm_hash64(flags, strlen(flags), QGM_HASH_INIT);
  h = qgm_hash64(&node->rank.nodes, sizeof node->rank.nodes, h);
  uint64_t graph = qgm_topology_hash(node->topology);
  return qgm_hash64(&graph, sizeof graph, h);
}

/* The value of "name": in a flat JSON object from qgmd_config_json. */
static void json_value(const char *json, const char *name, char *out,
                       size_t size) {
  char key[128];
  snprintf(key, sizeof key, "\"%s\":", name);
  const char *v = strstr(json, key);
  out[0] = '\0';
  if (!v)
    return;
  v += strlen(key);
  const char *end = v;
  for (int quoted = 0; *end && (quoted || (*end != ',' && *end != '}'));
       end++)
    if (*end == '"' && end[-1] != '\\')
      quoted = !quoted;
  snprintf(out, size, "%.*s", (int)(end - v), v);
}

/* Names the first flag whose value differs between two flag dumps: of
 * the flags this run sets, or else of those only the saved run had (a
 * flag left out when not in use, such as --compress when it is none). */
static int first_difference(const char *saved, const char *now, char *out,
                            size_t size) {
  for (int side = 0; side < 2; side++) {
    const char *keys = side == 0 ? now : saved;
    for (const char *k = strstr(keys, "\""); k; k = strstr(k, ",\"")) {
      k += (*k == ',') + 1;
      const char *end = strchr(k, '"');
      if (!end)
        break;
      char name[128], a[300], b[300];
      snprintf(name, sizeof name, "%.*s", (int)(end - k), k);
      json_value(saved, name, a, sizeof a);
      json_value(now, name, b, sizeof b);
      if (strcmp(a, b) == 0)
        continue;
      char *end_a, *end_b;
      double x = strtod(a, &end_a), y = strtod(b, &end_b);
      if (!a[0]) /* a flag the saved run left out: at its default */
        snprintf(out, size, "--%s was the default, is now %s", name, b);
      else if (!b[0])
        snprintf(out, size, "--%s was %s, is now the default", name, a);
      else if (!*end_a && !*end_b)
        snprintf(out, size, "--%s was %g, is now %g", name, x, y);
      else
        snprintf(out, size, "--%s was %s, is now %s", name, a, b);
      return 1;
    }
  }
  return 0;
}

/* ------------------------------------------------------- rank's state */

static uint64_t epoch_of(const qgmd_node_t *node) {
  return node->rank.step / node->rank.steps_per_epoch + 1;
}

int qgmd_checkpoint_writes(const qgmd_checkpoint_t *c) {
  return c && c->dir[0];
}

int qgmd_checkpoint_due(const qgmd_node_t *node) {
  const qgmd_checkpoint_t *c = node->checkpoint;
  /* Between rounds only, where no exchange is in flight; the last step
   * ends a round too, though a short one when local_steps does not
   * divide the step count. */
  int round_over = node->rank.step % node->local_steps == 0 ||
                   node->rank.step == node->rank.total_steps;
  if (!qgmd_checkpoint_writes(c) ||
      (c->have_saved && c->saved_step == node->rank.step) ||
      !round_over || node->rank.step == 0)
    return 0;
  return (c->every > 0 && node->rank.step % c->every == 0) ||
         qgmd_stop_early(&node->rank.stop) ||
         node->rank.step == node->rank.total_steps;
}

static void save_work(void *arg) {
  qgmd_checkpoint_t *c = arg;
  qgmd_node_t *node = c->node;
  char path[4096], why[256], reason[256];
  qgm_checkpoint_t *ck = NULL;
  int rc = qgm_checkpoint_create(c->config_hash, &ck);
  if (rc == 0)
    rc = qgmd__checkpoint_capture(c->node, c->config, ck, why, sizeof why);
  c->ok = 0;
  if (rc == 0 && why[0]) {
    snprintf(c->error, sizeof c->error,
             "the model is no longer finite at epoch %" PRIu64 " step %"
             PRIu64 " (%s): not writing a checkpoint of it; training "
             "diverged (try a smaller --lr)", epoch_of(node), node->rank.step,
             why);
  } else if (rc == 0 &&
             (rc = qgm_checkpoint_prepare(c->dir, node->rank.step)) != 0) {
    snprintf(c->error, sizeof c->error, "--checkpoint-dir=%s: cannot "
             "create the step's folder: %s", c->dir,
             qgmd_reason(rc, reason, sizeof reason));
  } else if (rc == 0) {
    qgm_checkpoint_path(c->dir, node->rank.step, node->rank.id, path,
                        sizeof path);
    rc = qgm_checkpoint_write(ck, path);
    if (rc != 0)
      snprintf(c->error, sizeof c->error, "%s: %s", path,
               qgmd_reason(rc, reason, sizeof reason));
    c->ok = rc == 0;
  } else {
    snprintf(c->error, sizeof c->error, "checkpoint of step %" PRIu64 ": %s",
             node->rank.step, qgm_strerror(rc));
  }
  qgm_checkpoint_free(ck);
}

static void manifest_work(void *arg) {
  qgmd_checkpoint_t *c = arg;
  qgmd_node_t *node = c->node;
  int rc = qgm_manifest_write(c->dir, node->rank.step, node->rank.nodes,
                              c->config_hash);
  c->ok = rc == 0;
  if (rc != 0) {
    char reason[256];
    snprintf(c->error, sizeof c->error, "%s: cannot write the manifest of "
             "step %" PRIu64 ": %s", c->dir, node->rank.step,
             qgmd_reason(rc, reason, sizeof reason));
  } else {
    qgm_checkpoint_prune(c->dir, node->rank.step, c->keep);
  }
}

static void manifest_done(void *arg) {
  qgmd_checkpoint_t *c = arg;
  qgmd_node_t *node = c->node;
  if (!c->ok) {
    /* Only rank 0 knows: it asks for a stop at the next vote. */
    LOG(LOG_ERROR, "%s; the previous checkpoint is kept", c->error);
    node->rank.status = 1;
    qgmd_stop_ask(&node->rank.stop);
  } else {
    LOG(LOG_DEBUG, "checkpoint of step %" PRIu64 " complete in %.3f s",
        node->rank.step, qgmd_now() - c->started);
  }
  c->done(node);
}

static void agreed(void *arg) {
  qgmd_checkpoint_t *c = arg;
  qgmd_node_t *node = c->node;
  if (!c->all_ok) {
    if (node->rank.id == 0)
      LOG(LOG_ERROR, "the checkpoint of step %" PRIu64 " failed; the "
          "previous complete one is kept; stopping", node->rank.step);
    node->rank.status = 1;
    if (node->rank.step < node->rank.total_steps)
      node->rank.stop.reason = QGMD_STOP_FAILED;
    c->done(node);
    return;
  }
  c->saved_step = node->rank.step;
  c->have_saved = 1;
  if (node->rank.id == 0) {
    qgmd_loop_work(&node->rank.loop, manifest_work, manifest_done, c);
    return;
  }
  c->done(node);
}

static void written(void *arg) {
  qgmd_checkpoint_t *c = arg;
  qgmd_node_t *node = c->node;
  if (!c->ok)
    LOG(LOG_ERROR, "%s", c->error);
  /* c->ok stays as it is until the vote completes (agreed). */
  qgmd_control_joining(&node->rank);
  MPI_Iallreduce(&c->ok, &c->all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD,
                 &c->request);
  qgmd_loop_wait(&node->rank.loop, &c->wait, &c->request, 1, agreed, c);
}

void qgmd_checkpoint_save(qgmd_node_t *node, qgmd_done_fn done) {
  qgmd_checkpoint_t *c = node->checkpoint;
  c->done = done;
  c->started = qgmd_now();
  /* A failure stops the run at this step, so it is not tried again. */
  c->saved_step = node->rank.step;
  c->have_saved = 1;
  qgmd_loop_work(&node->rank.loop, save_work, written, c);
}

/* ------------------------------------------------------------ resuming */

/* Whether the run resumes, and from which directory. */
static int resuming(const qgmd_config_t *cfg, const char **from) {
  *from = strcmp(cfg->resume, "yes") == 0 ? cfg->checkpoint_dir
                                          : cfg->resume;
  return strcmp(cfg->resume, "no") != 0 && cfg->resume[0];
}

/* Rank 0: the newest step whose manifest is sound, and its node count;
 * 0 when there is none (resume() then says why). */
static uint64_t newest_manifest(const char *dir, int *nodes) {
  uint64_t steps[RESUME_CANDIDATES];
  size_t n = 0;
  *nodes = 0;
  if (qgm_checkpoint_folders(dir, steps, RESUME_CANDIDATES, &n) != 0)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char path[4096];
    uint64_t s, h;
    qgm_checkpoint_path(dir, steps[i], -1, path, sizeof path);
    if (qgm_manifest_read(path, &s, nodes, &h) == 0 && s == steps[i])
      return s;
  }
  *nodes = 0;
  return 0;
}

/* The shard a checkpoint file's rank trained on: its shard section, or
 * its own rank of its run (when the file cannot be read, resume() reports
 * it). */
static void file_shard(const char *path, int rank, int nodes, int *part,
                       int *parts) {
  qgm_checkpoint_t *ck = NULL;
  uint64_t shard[QGMD_SHARD_FIELDS];
  *part = rank;
  *parts = nodes;
  if (qgm_checkpoint_read(path, &ck) == 0 &&
      qgm_checkpoint_get(ck, QGMD_SECTION_SHARD, QGM_CHECKPOINT_U64, shard,
                         QGMD_SHARD_FIELDS) == 0 &&
      shard[QGMD_SHARD_PART] < shard[QGMD_SHARD_PARTS] &&
      shard[QGMD_SHARD_PARTS] <= (uint64_t)1 << 20) {
    *part = (int)shard[QGMD_SHARD_PART];
    *parts = (int)shard[QGMD_SHARD_PARTS];
  }
  qgm_checkpoint_free(ck);
}

int qgmd_checkpoint_plan(qgmd_rank_t *rank, char *err, size_t errlen) {
  const qgmd_config_t *cfg = rank->cfg;
  const char *from;
  if (!resuming(cfg, &from) || !from[0])
    return 0;
  int *list = malloc((size_t)rank->nodes * sizeof *list);
  if (!list) {
    snprintf(err, errlen, "out of memory");
    return 1;
  }
  const int listed = qgmd_config_resume_ranks(cfg, list, rank->nodes);
  if (listed > 0 && listed != rank->nodes) {
    char names[48];
    snprintf(err, errlen, "--resume-ranks=%s: names %s; this run has %d "
             "(mpirun -np %d)", cfg->resume_ranks,
             qgm_count_text(names, sizeof names, listed, "rank"), rank->nodes,
             listed);
    free(list);
    return 2;
  }
  int nodes = 0;
  unsigned long long step = 0;
  if (rank->id == 0)
    step = newest_manifest(from, &nodes);
  MPI_Bcast(&step, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  MPI_Bcast(&nodes, 1, MPI_INT, 0, MPI_COMM_WORLD);
  int rc = 0;
  if (step == 0 || nodes <= 0) {
    rc = 0; /* nothing to resume from: resume() says so */
  } else if (listed > 0) {
    for (int i = 0; i < listed && rc == 0; i++)
      if (list[i] >= nodes) {
        char of[48];
        snprintf(err, errlen, "--resume-ranks=%s: rank %d is not in the "
                 "checkpoint of step %llu, which is of %s",
                 cfg->resume_ranks, list[i], step,
                 qgm_count_text(of, sizeof of, nodes, "rank"));
        rc = 2;
      }
    if (rc == 0) {
      rank->from_rank = list[rank->id];
      rank->from_nodes = nodes;
    }
  }
  if (rc == 0 && step > 0 && nodes == rank->from_nodes) {
    char path[4096];
    qgm_checkpoint_path(from, step, rank->from_rank, path, sizeof path);
    file_shard(path, rank->from_rank, nodes, &rank->part, &rank->parts);
  }
  free(list);
  return rc;
}

/* Rank 0: the saved training flags of a checkpoint file, "" if unknown,
 * and its configuration hash into *hash (0 if unreadable). */
static void saved_config(const char *path, char *saved, size_t size,
                         uint64_t *hash) {
  qgm_checkpoint_t *ck = NULL;
  saved[0] = '\0';
  *hash = 0;
  if (qgm_checkpoint_read(path, &ck) != 0)
    return;
  *hash = qgm_checkpoint_config_hash(ck);
  const char *name;
  size_t len = 0;
  for (size_t i = 0; i < qgm_checkpoint_num_sections(ck); i++)
    if (qgm_checkpoint_section(ck, i, &name, NULL, &len) == 0 &&
        strcmp(name, QGMD_SECTION_CONFIG) == 0 && len < size &&
        qgm_checkpoint_get(ck, QGMD_SECTION_CONFIG, QGM_CHECKPOINT_BYTES, saved,
                           len) == 0)
      saved[len] = '\0';
  qgm_checkpoint_free(ck);
}

/* What rank 0 makes of a step folder's manifest. */
enum { LOAD = 0, SKIP = 1, REFUSE = 2 };

/* Rank 0: LOAD if the step's manifest is sound and of this run (with
 * --resume-ranks: of the run it continues, whose flags were these), its
 * configuration hash into *hash; SKIP (said why, unless the step is
 * merely unfinished) for a missing or damaged one; REFUSE, with the
 * reason in err, for a checkpoint of other flags, graph or node count. */
static int check_manifest(qgmd_checkpoint_t *c, const char *dir,
                          uint64_t step, uint64_t *hash, char *err,
                          size_t errlen) {
  char path[4096];
  uint64_t s, h;
  int n;
  qgm_checkpoint_path(dir, step, -1, path, sizeof path);
  errno = 0;
  int rc = qgm_manifest_read(path, &s, &n, &h);
  if (rc == QGM_EOPEN && errno == ENOENT) {
    LOG(LOG_DEBUG, "step %" PRIu64 " has no manifest (its checkpoint was "
        "never completed)", step);
    return SKIP;
  }
  if (rc == 0 && s != step) {
    LOG(LOG_WARN, "%s: names step %" PRIu64 ", not its folder's: step %"
        PRIu64 " is skipped", path, s, step);
    return SKIP;
  }
  if (rc != 0) {
    char reason[256];
    qgmd_reason(rc, reason, sizeof reason);
    LOG(LOG_WARN, "%s: %s: step %" PRIu64 " is skipped", path, reason, step);
    return SKIP;
  }
  const qgmd_rank_t *rank = &c->node->rank;
  if (n != rank->from_nodes) {
    char by[48], has[48];
    qgm_sized_text(by, sizeof by, n, "node");
    qgm_count_text(has, sizeof has, rank->nodes, "node");
    if (rank->cfg->resume_ranks[0])
      snprintf(err, errlen, "%s: written by %s run, not the %d-node run "
               "--resume-ranks=%s continues", path, by, rank->from_nodes,
               rank->cfg->resume_ranks);
    else
      snprintf(err, errlen, "%s: written by %s run; this run has %s "
               "(resume with mpirun -np %d, or on fewer ranks with "
               "--resume-ranks)", path, by, has, n);
    return REFUSE;
  }
  *hash = h;
  if (h == c->config_hash)
    return LOAD;
  /* Rank 0's file says whose checkpoint this is: another run's (name the
   * flag that differs), or this run's under a damaged manifest. */
  char file[4096], saved[sizeof c->config], diff[800];
  uint64_t file_hash;
  qgm_checkpoint_path(dir, step, 0, file, sizeof file);
  saved_config(file, saved, sizeof saved, &file_hash);
  /* Another run of as many nodes or more, resumed on these ranks: its
   * graph was another, so only the flags must be the same. */
  if (rank->cfg->resume_ranks[0] && file_hash == h && saved[0] &&
      !first_difference(saved, c->config, diff, sizeof diff))
    return LOAD;
  if (file_hash == c->config_hash) {
    LOG(LOG_WARN, "%s: its configuration hash is not its files' (a damaged "
        "manifest): step %" PRIu64 " is skipped", path, step);
    return SKIP;
  }
  if (!saved[0])
    snprintf(diff, sizeof diff, "the flags or the topology differ");
  else if (!first_difference(saved, c->config, diff, sizeof diff))
    snprintf(diff, sizeof diff, "the topology's graph differs");
  snprintf(err, errlen, "%s: written by a run with other settings (%s); "
           "resume with the flags it was written with", path, diff);
  return REFUSE;
}

/* Every rank: reads and restores its own file of step (with
 * --resume-ranks, the file of the rank it continues), which must be of
 * this run (its configuration hash is the manifest's, `hash`, which rank 0
 * checked is this run's) and of this step. 0, or a qgm error with why. */
static int load_step(qgmd_checkpoint_t *c, const char *dir, uint64_t step,
                     uint64_t hash, char *path, size_t size, char *why,
                     size_t whylen) {
  qgm_checkpoint_path(dir, step, c->node->rank.from_rank, path, size);
  qgm_checkpoint_t *ck = NULL;
  why[0] = '\0';
  errno = 0;
  int rc = qgm_checkpoint_read(path, &ck);
  if (rc != 0) {
    qgmd_reason(rc, why, whylen);
  } else if (qgm_checkpoint_config_hash(ck) != hash) {
    snprintf(why, whylen, "written by a run with other settings than its "
             "manifest's (copied from another run)");
    rc = QGM_ESECTION;
  } else {
    rc = qgmd__checkpoint_restore(c->node, ck, step, why, whylen);
    if (rc != 0 && !why[0])
      qgmd_reason(rc, why, whylen);
  }
  qgm_checkpoint_free(ck);
  return rc;
}

static int resume(qgmd_checkpoint_t *c, const char *dir, char *err,
                  size_t errlen) {
  qgmd_node_t *node = c->node;
  uint64_t steps[RESUME_CANDIDATES];
  size_t n = 0;
  int listed = 0;
  if (node->rank.id == 0)
    listed = qgm_checkpoint_folders(dir, steps, RESUME_CANDIDATES, &n);
  unsigned long long count = listed == 0 ? n : 0;
  MPI_Bcast(&listed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Bcast(&count, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  MPI_Bcast(steps, (int)count, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (listed != 0) {
    snprintf(err, errlen, "--resume: %s: cannot read the directory", dir);
    return 2;
  }
  int complete = 0;
  for (size_t i = 0; i < count; i++) {
    uint64_t hash = c->config_hash;
    int verdict = node->rank.id == 0
                      ? check_manifest(c, dir, steps[i], &hash, err, errlen)
                      : LOAD;
    MPI_Bcast(&verdict, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(&hash, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (verdict == REFUSE)
      return 2;
    if (verdict == SKIP)
      continue;
    complete++;
    char path[4096], why[512];
    int rc = load_step(c, dir, steps[i], hash, path, sizeof path, why,
                       sizeof why);
    if (rc != 0)
      LOG(LOG_ERROR, "%s: %s; trying an older checkpoint", path, why);
    int ok = rc == 0, all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all_ok) {
      c->saved_step = steps[i];
      c->have_saved = 1;
      if (node->rank.id == 0)
        LOG(LOG_INFO, "resuming from step %" PRIu64 " (epoch %" PRIu64
            ") of %s", node->rank.step, epoch_of(node), dir);
      if (node->rank.id == 0 && node->rank.cfg->resume_ranks[0])
        LOG(LOG_INFO, "--resume-ranks=%s: %d of the checkpoint's %d ranks "
            "go on; their exchange state starts afresh on the new graph",
            node->rank.cfg->resume_ranks, node->rank.nodes,
            node->rank.from_nodes);
      return 0;
    }
  }
  snprintf(err, errlen, "--resume: %s: %s", dir,
           complete ? "every complete checkpoint is damaged on some rank"
                    : "no complete checkpoint to resume from");
  return 2;
}

/* A JSON array of the n ints in v, or of those in 0..n-1 that are not in
 * held[0..held_n) when held is given; NULL when out of memory. */
static char *int_array(const int *v, int n, const int *held, int held_n) {
  size_t size = 16 + 12 * (size_t)n, used = 1;
  char *out = malloc(size);
  if (!out)
    return NULL;
  out[0] = '[';
  for (int i = 0; i < n; i++) {
    int in = 0;
    for (int j = 0; held && j < held_n && !in; j++)
      in = held[j] == i;
    if (held && in)
      continue;
    used += (size_t)snprintf(out + used, size - used, "%s%d",
                             used > 1 ? "," : "", held ? i : v[i]);
  }
  snprintf(out + used, size - used, "]");
  return out;
}

/* Collective, once resumed: rank 0 learns which checkpoint rank and which
 * shard every rank took, and which shards no rank holds any more. */
static int gather_resumed(qgmd_checkpoint_t *c) {
  const qgmd_rank_t *rank = &c->node->rank;
  const int n = rank->nodes;
  int mine[2] = {rank->from_rank, rank->part};
  int *all = rank->id == 0 ? malloc(2 * (size_t)n * sizeof *all) : NULL;
  int ok = rank->id != 0 || all, all_ok;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok) {
    free(all);
    return 1;
  }
  MPI_Gather(mine, 2, MPI_INT, all, 2, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank->id != 0)
    return 0;
  int *from = all, *parts = all + n;
  int *pairs = malloc(2 * (size_t)n * sizeof *pairs);
  if (!pairs) {
    free(all);
    return 1;
  }
  memcpy(pairs, all, 2 * (size_t)n * sizeof *pairs);
  for (int i = 0; i < n; i++) {
    from[i] = pairs[2 * i];
    parts[i] = pairs[2 * i + 1];
  }
  free(pairs);
  c->resumed_ranks = int_array(from, n, NULL, 0);
  c->resumed_shards = int_array(parts, n, NULL, 0);
  c->dropped = int_array(NULL, rank->parts, parts, n);
  free(all);
  return c->resumed_ranks && c->resumed_shards && c->dropped ? 0 : 1;
}

/* "name":[...] of a record qgmd wrote (lost.c), verbatim; "" if absent. */
static void json_array(const char *json, const char *name, char *out,
                       size_t size) {
  char key[64];
  snprintf(key, sizeof key, "\"%s\":[", name);
  const char *v = strstr(json, key);
  const char *end = v ? strchr(v, ']') : NULL;
  out[0] = '\0';
  if (v && end && (size_t)(end - v) < size + strlen(key))
    snprintf(out, size, "%.*s", (int)(end + 1 - (v + strlen(key) - 1)),
             v + strlen(key) - 1);
}

/* Rank 0 of a resumed run: the record of the lost ranks that ended the
 * job before, which qgm-run relaunched this one after. It is renamed
 * (lost-step-N.json), so that the next loss writes a fresh one. */
static void read_lost(qgmd_checkpoint_t *c, const char *dir) {
  char path[4096], kept[4096], json[8192], value[64];
  snprintf(path, sizeof path, "%s/%s", dir, QGMD_LOST_FILE);
  FILE *f = fopen(path, "r");
  if (!f)
    return;
  size_t n = fread(json, 1, sizeof json - 1, f);
  fclose(f);
  json[n] = '\0';
  json_value(json, "silent_since", value, sizeof value);
  c->silent_since = strtod(value, NULL);
  json_value(json, "step", value, sizeof value);
  c->failed_step = strtoull(value, NULL, 10);
  json_array(json, "lost_ranks", c->lost_ranks, sizeof c->lost_ranks);
  json_array(json, "lost_hosts", c->lost_hosts, sizeof c->lost_hosts);
  c->after_loss = c->lost_ranks[0] && c->lost_hosts[0] && c->silent_since > 0;
  snprintf(kept, sizeof kept, "%s/lost-step-%" PRIu64 ".json", dir,
           c->failed_step);
  if (rename(path, kept) != 0)
    LOG(LOG_WARN, "%s: cannot rename it to %s: %s", path, kept,
        strerror(errno));
}

void qgmd_checkpoint_first_step(const qgmd_node_t *node) {
  const qgmd_checkpoint_t *c = node->checkpoint;
  const qgmd_rank_t *rank = &node->rank;
  if (!c || !c->resumed_ranks || rank->id != 0)
    return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  const double done = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
  const int loss = c->after_loss;
  const qgmd_field_t fields[] = {
      QGMD_UINT("step", rank->first_step),
      QGMD_INT("from_nodes", rank->from_nodes),
      QGMD_INT("nodes", rank->nodes),
      QGMD_JSON("ranks", c->resumed_ranks),
      QGMD_INT("parts", rank->parts),
      QGMD_JSON("shards", c->resumed_shards),
      QGMD_JSON("shards_dropped", c->dropped),
      QGMD_BOOL("exchange_reset", rank->cfg->resume_ranks[0] != '\0'),
      QGMD_DOUBLE("first_step_done", "%.3f", done),
      QGMD_IF(loss, QGMD_JSON("lost_ranks", c->lost_ranks)),
      QGMD_IF(loss, QGMD_JSON("lost_hosts", c->lost_hosts)),
      QGMD_IF(loss, QGMD_UINT("failed_at_step", c->failed_step)),
      QGMD_IF(loss, QGMD_INT("steps_lost", (long long)c->failed_step -
                                               (long long)rank->first_step)),
      QGMD_IF(loss, QGMD_DOUBLE("silent_since", "%.3f", c->silent_since)),
      QGMD_IF(loss, QGMD_DOUBLE("recovery_s", "%.3f",
                                done - c->silent_since)),
  };
  qgmd_report_write(rank->metrics, "resume", QGMD_FIELDS(fields));
}

/* Rank 0: a directory that this run writes to but does not resume from
 * must hold no complete checkpoint: another run's newer steps would count
 * toward --checkpoint-keep and push this run's out, and a later --resume
 * would find theirs. */
static int check_unused(const qgmd_checkpoint_t *c, char *err,
                        size_t errlen) {
  uint64_t newest;
  size_t n = 0;
  if (c->node->rank.id != 0 ||
      qgm_checkpoint_list(c->dir, &newest, 1, &n) != 0 ||
      n == 0)
    return 0;
  snprintf(err, errlen, "--checkpoint-dir=%s: holds the checkpoints of an "
           "earlier run (up to step %" PRIu64 "); continue that run with "
           "--resume, or give this one an empty directory", c->dir, newest);
  return 2;
}

int qgmd_checkpoint_check_flags(const qgmd_config_t *cfg, char *err,
                                size_t errlen) {
  const char *from;
  const int resumes = resuming(cfg, &from);
  if (resumes && !from[0]) {
    snprintf(err, errlen, "--resume needs --checkpoint-dir=DIR, or name "
             "the directory: --resume=DIR");
    return 2;
  }
  if (!resumes && !cfg->checkpoint_dir[0] && cfg->checkpoint_every > 0) {
    snprintf(err, errlen, "--checkpoint-every needs --checkpoint-dir");
    return 2;
  }
  return 0;
}

int qgmd_checkpoint_init(qgmd_node_t *node, char *err, size_t errlen) {
  const qgmd_config_t *cfg = node->rank.cfg;
  const char *from;
  const int resumes = resuming(cfg, &from);
  int rc = qgmd_checkpoint_check_flags(cfg, err, errlen);
  if (rc != 0 || (!resumes && !cfg->checkpoint_dir[0]))
    return rc;
  qgmd_checkpoint_t *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(err, errlen, "out of memory");
    return 1;
  }
  node->checkpoint = c;
  c->node = node;
  snprintf(c->dir, sizeof c->dir, "%s",
           cfg->checkpoint_dir[0] ? cfg->checkpoint_dir : from);
  c->every = (uint64_t)cfg->checkpoint_every;
  c->keep = (size_t)cfg->checkpoint_keep;
  /* The flags that decide what is trained (their category, config.h): a
   * run may resume with another --metrics or --comm-timeout and still
   * continue the same training. */
  qgmd_config_training_json(cfg, c->config, sizeof c->config);
  c->config_hash = config_hash(node, c->config);
  rc = resumes ? resume(c, from, err, errlen) : 0;
  if (rc == 0 && resumes && node->rank.id == 0)
    read_lost(c, from);
  if (rc == 0 && resumes && gather_resumed(c) != 0) {
    snprintf(err, errlen, "out of memory");
    rc = 1;
  }
  if (rc == 0 && !(resumes && strcmp(from, c->dir) == 0))
    rc = check_unused(c, err, errlen);
  /* Found out now, not an interval of training later. */
  if (rc == 0 && ((mkdir(c->dir, 0755) != 0 && errno != EEXIST) ||
                  access(c->dir, W_OK | X_OK) != 0)) {
    snprintf(err, errlen, "--checkpoint-dir=%s: cannot create or write the "
             "directory: %s", c->dir, strerror(errno));
    rc = 2;
  }
  return rc;
}

void qgmd_checkpoint_free(qgmd_checkpoint_t *c) {
  if (!c)
    return;
  free(c->resumed_ranks);
  free(c->resumed_shards);
  free(c->dropped);
  free(c);
}

int qgmd_checkpoint_waits(const qgmd_checkpoint_t *c, const qgmd_wait_t *w) {
  return c && w == &c->wait;
}
