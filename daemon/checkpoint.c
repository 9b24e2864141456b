/* checkpoint.c - see checkpoint.h.
 *
 * A rank's file holds everything its next step depends on, so that a
 * resumed run continues bit for bit: every optimizer vector, the sampler's
 * RNG, the step and the epoch's sample order. The learning rate is a pure
 * function of the step (qgm_lr_at) and is recomputed, not stored. */
#include "checkpoint.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint_layout.h"
#include "choco.h"
#include "log.h"
#include "mpi_util.h"
#include "node.h"

/* Complete steps looked at when resuming: enough to skip past a few
 * damaged ones. */
enum { RESUME_CANDIDATES = 64, EVAL_FIELDS = 10, META_FIELDS = 4 };
#define CHOCO_SECTION "choco.copies"
/* Point-to-point tags of the agreement (gossip and status use others). */
enum { VOTE_TAG = 31, VERDICT_TAG = 32 };

struct qgmd_checkpoint {
  qgmd_node_t *node;
  char dir[QGMD_STR_MAX]; /* where new checkpoints go */
  uint64_t every;
  size_t keep;
  uint64_t config_hash;
  char config[16384]; /* the training flags as JSON: what the hash covers */
  uint64_t saved_step; /* written or resumed from; valid if have_saved */
  int have_saved;

  /* The save in flight. The ranks agree through rank 0 rather than with
   * an allreduce, so that a rank that never reports can be named. */
  int ok, all_ok;
  char error[4400];
  int *votes;            /* rank 0: each rank's ok */
  MPI_Request *requests; /* rank 0: one per other rank; else 2 */
  qgmd_wait_t wait;
  qgmd_done_fn done;
  double started;
};

/* ------------------------------------------------------ configuration */

static void json_value(const char *json, const char *name, char *out,
                       size_t size);

/* Removes ,"name":value from a flat JSON object that is not its first key. */
static void drop_key(char *json, const char *name) {
  char key[128], value[300];
  snprintf(key, sizeof key, ",\"%s\":", name);
  char *at = strstr(json, key);
  json_value(json, name, value, sizeof value);
  if (at)
    memmove(at, at + strlen(key) + strlen(value),
            strlen(at + strlen(key) + strlen(value)) + 1);
}

/* The flags that decide what is trained. Output paths, logging, pacing
 * and fault handling are left out: a run may resume with another
 * --metrics or --comm-timeout and still continue the same training. So
 * are the flags of compressed gossip when it is off, where they change
 * nothing: a plain run hashes as it did before they existed, and its
 * older checkpoints still resume. */
static void training_flags(const qgmd_config_t *cfg, char *buf, size_t size) {
  qgmd_config_t t = *cfg;
  t.metrics[0] = t.control[0] = t.trace[0] = t.log_level[0] = '\0';
  t.straggle[0] = t.checkpoint_dir[0] = t.resume[0] = '\0';
  t.checkpoint_every = t.checkpoint_keep = t.log_every = 0;
  t.comm_timeout = 0;
  if (qgmd_config_json(&t, buf, size) < 0) {
    buf[0] = '\0';
    return;
  }
  if (strcmp(cfg->compress, "none") == 0) {
    drop_key(buf, "compress");
    drop_key(buf, "consensus-lr");
  }
}

/* The flags, the node count and the graph itself (every W of one period,
 * so that a time-varying or file-defined graph counts too). */
static uint64_t config_hash(const qgmd_node_t *node, const char *flags) {
  uint64_t h = qgm_hash64(flags, strlen(flags), QGM_HASH_INIT);
  h = qgm_hash64(&node->nodes, sizeof node->nodes, h);
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

/* Names the first flag whose value differs between two flag dumps. */
static int first_difference(const char *saved, const char *now, char *out,
                            size_t size) {
  for (const char *k = strstr(now, "\""); k; k = strstr(k, ",\"")) {
    k += (*k == ',') + 1;
    const char *end = strchr(k, '"');
    if (!end)
      break;
    char name[128], a[300], b[300];
    snprintf(name, sizeof name, "%.*s", (int)(end - k), k);
    json_value(saved, name, a, sizeof a);
    json_value(now, name, b, sizeof b);
    if (strcmp(a, b) != 0) {
      char *end_a, *end_b;
      double x = strtod(a, &end_a), y = strtod(b, &end_b);
      if (!a[0]) /* a flag the saved run left out: at its default */
        snprintf(out, size, "--%s was the default, is now %s", name, b);
      else if (b[0] && !*end_a && !*end_b)
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
  return node->step / node->steps_per_epoch + 1;
}

/* Timings are left out: they differ from run to run, and a checkpoint is
 * a pure function of the training (two runs that trained alike write
 * byte-identical files). */
static void pack_eval(const qgmd_evaluation_t *e, double *out) {
  const double v[EVAL_FIELDS] = {
      (double)e->epoch, (double)e->step, e->lr, e->train_loss,
      e->acc_local_mean, e->acc_avg_model, e->consensus, 0.0, 0.0, 0.0};
  memcpy(out, v, sizeof v);
}

static void unpack_eval(const double *in, qgmd_evaluation_t *e) {
  *e = (qgmd_evaluation_t){.epoch = in[0], .step = (uint64_t)in[1],
                           .lr = in[2], .train_loss = in[3],
                           .acc_local_mean = in[4], .acc_avg_model = in[5],
                           .consensus = in[6]};
}

/* Fills ck with the node's state; "" in why, or what makes it unfit. */
static int capture(qgmd_checkpoint_t *c, qgm_checkpoint_t *ck, char *why,
                   size_t size) {
  qgmd_node_t *node = c->node;
  const size_t shard = qgm_dataset_count(node->train);
  const uint64_t meta[QGMD_META_FIELDS] = {(uint64_t)node->rank,
                                      (uint64_t)node->nodes, node->step,
                                      shard};
  double evals[2 * EVAL_FIELDS];
  pack_eval(&node->last, evals);
  pack_eval(&node->best, evals + EVAL_FIELDS);
  uint64_t *order = malloc(shard * sizeof *order);
  if (!order)
    return QGM_ENOMEM;
  for (size_t i = 0; i < shard; i++)
    order[i] = node->order[i];
  int rc = qgm_checkpoint_put(ck, QGMD_SECTION_CONFIG, QGM_CHECKPOINT_BYTES,
                              c->config, strlen(c->config));
  if (rc == 0)
    rc = qgm_checkpoint_put(ck, QGMD_SECTION_META, QGM_CHECKPOINT_U64, meta,
                            QGMD_META_FIELDS);
  if (rc == 0)
    rc = qgm_checkpoint_put(ck, "rng", QGM_CHECKPOINT_U64, node->rng.s, 4);
  if (rc == 0)
    rc = qgm_checkpoint_put(ck, "order", QGM_CHECKPOINT_U64, order, shard);
  if (rc == 0)
    rc = qgm_checkpoint_put(ck, "eval", QGM_CHECKPOINT_F64, evals,
                            2 * EVAL_FIELDS);
  if (rc == 0)
    rc = qgm_checkpoint_put(ck, "epoch_loss", QGM_CHECKPOINT_F64,
                            &node->epoch_loss, 1);
  free(order);
  why[0] = '\0';
  /* Adam's bias correction counts the optimizer's own steps. */
  uint64_t optim_steps = qgm_optim_steps(node->optim);
  if (rc == 0)
    rc = qgm_checkpoint_put(ck, "optim_steps", QGM_CHECKPOINT_U64,
                            &optim_steps, 1);
  for (size_t i = 0; rc == 0 && i < qgm_optim_state_count(node->optim); i++) {
    qgm_optim_state_t st;
    qgm_optim_state_get(node->optim, i, &st);
    for (size_t k = 0; k < st.len && !why[0]; k++)
      if (!isfinite(st.data[k]))
        snprintf(why, size, "optimizer vector %s[%zu] is %g", st.name, k,
                 (double)st.data[k]);
    char section[64];
    snprintf(section, sizeof section, "optim.%s", st.name);
    rc = qgm_checkpoint_put(ck, section, QGM_CHECKPOINT_F32, st.data, st.len);
  }
  /* Compressed gossip's public copies are state too; the section exists
   * only with --compress, so other checkpoints are as they were. */
  if (rc == 0 && node->choco) {
    size_t len;
    const float *copies = qgmd_choco_copies(node->choco, &len);
    rc = qgm_checkpoint_put(ck, CHOCO_SECTION, QGM_CHECKPOINT_F32, copies,
                            len);
  }
  return rc;
}

/* Restores the node from ck, checking every value that indexes memory. */
static int restore(qgmd_node_t *node, const qgm_checkpoint_t *ck) {
  const size_t shard = qgm_dataset_count(node->train);
  uint64_t meta[QGMD_META_FIELDS], rng[4];
  double evals[2 * EVAL_FIELDS], epoch_loss;
  int rc = qgm_checkpoint_get(ck, QGMD_SECTION_META, QGM_CHECKPOINT_U64,
                              meta, QGMD_META_FIELDS);
  if (rc == 0 && (meta[QGMD_META_RANK] != (uint64_t)node->rank ||
                  meta[QGMD_META_NODES] != (uint64_t)node->nodes ||
                  meta[QGMD_META_SHARD] != shard ||
                  meta[QGMD_META_STEP] > node->total_steps))
    rc = QGM_ESECTION;
  if (rc == 0)
    rc = qgm_checkpoint_get(ck, "rng", QGM_CHECKPOINT_U64, rng, 4);
  if (rc == 0)
    rc = qgm_checkpoint_get(ck, "eval", QGM_CHECKPOINT_F64, evals,
                            2 * EVAL_FIELDS);
  if (rc == 0)
    rc = qgm_checkpoint_get(ck, "epoch_loss", QGM_CHECKPOINT_F64,
                            &epoch_loss, 1);
  uint64_t *order = rc == 0 ? malloc(shard * sizeof *order) : NULL;
  unsigned char *seen = rc == 0 ? calloc(shard ? shard : 1, 1) : NULL;
  if (rc == 0 && (!order || !seen))
    rc = QGM_ENOMEM;
  if (rc == 0)
    rc = qgm_checkpoint_get(ck, "order", QGM_CHECKPOINT_U64, order, shard);
  /* The order indexes the shard: it must be a permutation of it. */
  for (size_t i = 0; rc == 0 && i < shard; i++) {
    if (order[i] >= shard || seen[order[i]])
      rc = QGM_ESECTION;
    else
      seen[order[i]] = 1;
  }
  uint64_t optim_steps = 0;
  if (rc == 0)
    rc = qgm_checkpoint_get(ck, "optim_steps", QGM_CHECKPOINT_U64,
                            &optim_steps, 1);
  for (size_t i = 0; rc == 0 && i < qgm_optim_state_count(node->optim); i++) {
    qgm_optim_state_t st;
    qgm_optim_state_get(node->optim, i, &st);
    char section[64];
    snprintf(section, sizeof section, "optim.%s", st.name);
    rc = qgm_checkpoint_get(ck, section, QGM_CHECKPOINT_F32, st.data, st.len);
  }
  if (rc == 0 && node->choco) {
    size_t len;
    float *copies = qgmd_choco_copies(node->choco, &len);
    rc = qgm_checkpoint_get(ck, CHOCO_SECTION, QGM_CHECKPOINT_F32, copies,
                            len);
  }
  if (rc == 0) {
    qgm_optim_set_steps(node->optim, optim_steps);
    for (size_t i = 0; i < shard; i++)
      node->order[i] = (size_t)order[i];
    memcpy(node->rng.s, rng, sizeof rng);
    node->step = meta[QGMD_META_STEP];
    node->epoch_loss = epoch_loss;
    unpack_eval(evals, &node->last);
    unpack_eval(evals + EVAL_FIELDS, &node->best);
  }
  free(order);
  free(seen);
  return rc;
}

/* ------------------------------------------------------------- saving */

int qgmd_checkpoint_due(const qgmd_node_t *node) {
  const qgmd_checkpoint_t *c = node->checkpoint;
  if (!c || !c->dir[0] || (c->have_saved && c->saved_step == node->step) ||
      node->step % node->local_steps != 0 || node->step == 0)
    return 0;
  return (c->every > 0 && node->step % c->every == 0) || node->stopped ||
         node->step == node->total_steps;
}

static void save_work(void *arg) {
  qgmd_checkpoint_t *c = arg;
  qgmd_node_t *node = c->node;
  char path[4096], why[256];
  qgm_checkpoint_t *ck = NULL;
  int rc = qgm_checkpoint_create(c->config_hash, &ck);
  if (rc == 0)
    rc = capture(c, ck, why, sizeof why);
  c->ok = 0;
  if (rc == 0 && why[0]) {
    snprintf(c->error, sizeof c->error,
             "the model is no longer finite at epoch %" PRIu64 " step %"
             PRIu64 " (%s): not writing a checkpoint of it; training "
             "diverged (try a smaller --lr)", epoch_of(node), node->step,
             why);
  } else if (rc == 0 &&
             (rc = qgm_checkpoint_prepare(c->dir, node->step)) != 0) {
    snprintf(c->error, sizeof c->error, "--checkpoint-dir=%s: cannot "
             "create the step's folder", c->dir);
  } else if (rc == 0) {
    qgm_checkpoint_path(c->dir, node->step, node->rank, path, sizeof path);
    rc = qgm_checkpoint_write(ck, path);
    if (rc != 0)
      snprintf(c->error, sizeof c->error, "%s: %s", path, qgm_strerror(rc));
    c->ok = rc == 0;
  } else {
    snprintf(c->error, sizeof c->error, "checkpoint of step %" PRIu64 ": %s",
             node->step, qgm_strerror(rc));
  }
  qgm_checkpoint_free(ck);
}

static void manifest_work(void *arg) {
  qgmd_checkpoint_t *c = arg;
  qgmd_node_t *node = c->node;
  int rc = qgm_manifest_write(c->dir, node->step, node->nodes,
                              c->config_hash);
  c->ok = rc == 0;
  if (rc != 0)
    snprintf(c->error, sizeof c->error, "%s: cannot write the manifest of "
             "step %" PRIu64 ": %s", c->dir, node->step, qgm_strerror(rc));
  else
    qgm_checkpoint_prune(c->dir, c->keep);
}

static void manifest_done(void *arg) {
  qgmd_checkpoint_t *c = arg;
  qgmd_node_t *node = c->node;
  if (!c->ok) {
    /* Only rank 0 knows: it asks for a stop at the next vote. */
    LOG(LOG_ERROR, "%s; the previous checkpoint is kept", c->error);
    node->status = 1;
    node->stop_requested = 1;
  } else {
    LOG(LOG_DEBUG, "checkpoint of step %" PRIu64 " complete in %.3f s",
        node->step, qgmd_now() - c->started);
  }
  c->done(node);
}

static void agreed(void *arg) {
  qgmd_checkpoint_t *c = arg;
  qgmd_node_t *node = c->node;
  if (!c->all_ok) {
    if (node->rank == 0)
      LOG(LOG_ERROR, "the checkpoint of step %" PRIu64 " failed; the "
          "previous complete one is kept; stopping", node->step);
    node->status = 1;
    node->stopped = 1;
    c->done(node);
    return;
  }
  c->saved_step = node->step;
  c->have_saved = 1;
  if (node->rank == 0) {
    qgmd_loop_work(&node->loop, manifest_work, manifest_done, c);
    return;
  }
  c->done(node);
}

static void verdict_sent(void *arg) { agreed(arg); }

/* Rank 0: every vote is in; tell everyone the verdict. */
static void votes_in(void *arg) {
  qgmd_checkpoint_t *c = arg;
  qgmd_node_t *node = c->node;
  c->all_ok = c->ok;
  for (int r = 1; r < node->nodes; r++) {
    c->all_ok = c->all_ok && c->votes[r];
    MPI_Isend(&c->all_ok, 1, MPI_INT, r, VERDICT_TAG, MPI_COMM_WORLD,
              &c->requests[r - 1]);
  }
  qgmd_loop_wait(&node->loop, &c->wait, c->requests, node->nodes - 1,
                 verdict_sent, c);
}

static void written(void *arg) {
  qgmd_checkpoint_t *c = arg;
  qgmd_node_t *node = c->node;
  if (!c->ok)
    LOG(LOG_ERROR, "%s", c->error);
  if (node->rank == 0) {
    for (int r = 1; r < node->nodes; r++)
      MPI_Irecv(&c->votes[r], 1, MPI_INT, r, VOTE_TAG, MPI_COMM_WORLD,
                &c->requests[r - 1]);
    qgmd_loop_wait(&node->loop, &c->wait, c->requests, node->nodes - 1,
                   votes_in, c);
    return;
  }
  MPI_Isend(&c->ok, 1, MPI_INT, 0, VOTE_TAG, MPI_COMM_WORLD, &c->requests[0]);
  MPI_Irecv(&c->all_ok, 1, MPI_INT, 0, VERDICT_TAG, MPI_COMM_WORLD,
            &c->requests[1]);
  qgmd_loop_wait(&node->loop, &c->wait, c->requests, 2, agreed, c);
}

void qgmd_checkpoint_save(qgmd_node_t *node, qgmd_done_fn done) {
  qgmd_checkpoint_t *c = node->checkpoint;
  c->done = done;
  c->started = qgmd_now();
  /* A failure stops the run at this step, so it is not tried again. */
  c->saved_step = node->step;
  c->have_saved = 1;
  qgmd_loop_work(&node->loop, save_work, written, c);
}

/* ------------------------------------------------------------ resuming */

/* Rank 0: whether the step's manifest matches this run (0), or 2 with the
 * reason in err. */
static int check_manifest(qgmd_checkpoint_t *c, const char *dir,
                          uint64_t step, char *err, size_t errlen) {
  char path[4096];
  uint64_t s, h;
  int n;
  qgm_checkpoint_path(dir, step, -1, path, sizeof path);
  int rc = qgm_manifest_read(path, &s, &n, &h);
  if (rc != 0) {
    snprintf(err, errlen, "%s: %s", path, qgm_strerror(rc));
    return 2;
  }
  if (n != c->node->nodes) {
    snprintf(err, errlen, "%s: written by a %d-node run; this run has %d "
             "nodes (resume with mpirun -np %d)", path, n, c->node->nodes, n);
    return 2;
  }
  if (h == c->config_hash)
    return 0;
  /* Name the flag that differs, from rank 0's file. */
  char diff[800] = "the flags or the topology differ";
  qgm_checkpoint_t *ck = NULL;
  qgm_checkpoint_path(dir, step, 0, path, sizeof path);
  if (qgm_checkpoint_read(path, &ck) == 0) {
    char saved[sizeof c->config] = "";
    const char *name;
    size_t len = 0;
    for (size_t i = 0; i < qgm_checkpoint_num_sections(ck); i++)
      if (qgm_checkpoint_section(ck, i, &name, NULL, &len) == 0 &&
          strcmp(name, QGMD_SECTION_CONFIG) == 0 && len < sizeof saved &&
          qgm_checkpoint_get(ck, QGMD_SECTION_CONFIG, QGM_CHECKPOINT_BYTES,
                             saved, len) == 0)
        saved[len] = '\0';
    if (!first_difference(saved, c->config, diff, sizeof diff) && saved[0])
      snprintf(diff, sizeof diff, "the topology's graph differs");
  }
  qgm_checkpoint_free(ck);
  qgm_checkpoint_path(dir, step, -1, path, sizeof path);
  snprintf(err, errlen, "%s: written by a run with other settings (%s); "
           "resume with the flags it was written with", path, diff);
  return 2;
}

/* Every rank: reads and restores its own file of step; 0 or a qgm error. */
static int load_step(qgmd_checkpoint_t *c, const char *dir, uint64_t step,
                     char *path, size_t size) {
  qgm_checkpoint_path(dir, step, c->node->rank, path, size);
  qgm_checkpoint_t *ck = NULL;
  int rc = qgm_checkpoint_read(path, &ck);
  if (rc == 0 && qgm_checkpoint_config_hash(ck) != c->config_hash)
    rc = QGM_ESECTION;
  if (rc == 0)
    rc = restore(c->node, ck);
  qgm_checkpoint_free(ck);
  return rc;
}

static int resume(qgmd_checkpoint_t *c, const char *dir, char *err,
                  size_t errlen) {
  qgmd_node_t *node = c->node;
  uint64_t steps[RESUME_CANDIDATES];
  size_t n = 0;
  int listed = 0;
  if (node->rank == 0)
    listed = qgm_checkpoint_list(dir, steps, RESUME_CANDIDATES, &n);
  unsigned long long count = listed == 0 ? n : 0;
  MPI_Bcast(&listed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Bcast(&count, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  MPI_Bcast(steps, (int)count, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (listed != 0 || count == 0) {
    snprintf(err, errlen, "--resume: %s: %s", dir,
             listed ? "cannot read the directory"
                    : "no complete checkpoint to resume from");
    return 2;
  }
  for (size_t i = 0; i < count; i++) {
    int verdict = node->rank == 0
                      ? check_manifest(c, dir, steps[i], err, errlen)
                      : 0;
    MPI_Bcast(&verdict, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (verdict != 0)
      return verdict;
    char path[4096];
    int rc = load_step(c, dir, steps[i], path, sizeof path);
    if (rc != 0)
      LOG(LOG_ERROR, "%s: %s; trying an older checkpoint", path,
          rc == QGM_ESECTION ? "does not belong to this run's checkpoint"
                             : qgm_strerror(rc));
    int ok = rc == 0, all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all_ok) {
      c->saved_step = steps[i];
      c->have_saved = 1;
      if (node->rank == 0)
        LOG(LOG_INFO, "resuming from step %" PRIu64 " (epoch %" PRIu64
            ") of %s", node->step, epoch_of(node), dir);
      return 0;
    }
  }
  snprintf(err, errlen, "--resume: %s: every complete checkpoint is damaged "
           "on some rank", dir);
  return 2;
}

int qgmd_checkpoint_init(qgmd_node_t *node, char *err, size_t errlen) {
  const qgmd_config_t *cfg = node->cfg;
  int resuming = strcmp(cfg->resume, "no") != 0 && cfg->resume[0];
  const char *from = strcmp(cfg->resume, "yes") == 0 ? cfg->checkpoint_dir
                                                      : cfg->resume;
  if (resuming && !from[0]) {
    snprintf(err, errlen, "--resume needs --checkpoint-dir=DIR, or name "
             "the directory: --resume=DIR");
    return 2;
  }
  if (!resuming && !cfg->checkpoint_dir[0]) {
    if (cfg->checkpoint_every > 0) {
      snprintf(err, errlen, "--checkpoint-every needs --checkpoint-dir");
      return 2;
    }
    return 0;
  }
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
  size_t n = (size_t)node->nodes + 1;
  c->votes = calloc(n, sizeof *c->votes);
  c->requests = calloc(n, sizeof *c->requests);
  if (!c->votes || !c->requests) {
    snprintf(err, errlen, "out of memory");
    return 1;
  }
  training_flags(cfg, c->config, sizeof c->config);
  c->config_hash = config_hash(node, c->config);
  int rc = resuming ? resume(c, from, err, errlen) : 0;
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
  free(c->votes);
  free(c->requests);
  free(c);
}

int qgmd_checkpoint_silent(const qgmd_checkpoint_t *c, const qgmd_wait_t *w,
                           char *out, size_t size) {
  if (!c || w != &c->wait)
    return 0;
  size_t used = 0;
  out[0] = '\0';
  if (c->node->rank != 0) {
    snprintf(out, size, "0");
    return 1;
  }
  /* Rank 0 gathering votes: the ranks whose vote has not come. */
  for (int r = 1; r < c->node->nodes && used < size; r++)
    if (c->requests[r - 1] != MPI_REQUEST_NULL && w->done == votes_in) {
      int n = snprintf(out + used, size - used, "%s%d", used ? ", " : "", r);
      used += n > 0 ? (size_t)n : 0;
    }
  return 1;
}
