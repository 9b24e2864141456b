/* checkpoint_state.c - see checkpoint_state.h.
 *
 * A rank's file holds everything its next step depends on, so that a
 * resumed run continues bit for bit: every optimizer vector, the
 * exchange's state, the sampler's RNG, the step and the epoch's sample
 * order. The learning rate is a pure function of the step (qgm_lr_at;
 * asynchronous gossip's of the neighbours' rounds too, which at a
 * checkpoint are the step's) and is recomputed, not stored. The node's
 * values are staged in an image,
 * whose fields the fixed sections name; the optimizer's vectors and the
 * exchange's state are written from and read into the node's own
 * buffers. */
#include "checkpoint_state.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint_layout.h"
#include "node.h"

enum { EVAL_FIELDS = 10 };

/* The node's values as the file holds them. */
typedef struct image {
  const char *config; /* written only: a resume compares it on its own */
  uint64_t meta[QGMD_META_FIELDS];
  uint64_t rng[4];
  uint64_t *order; /* the shard's count */
  double evals[2 * EVAL_FIELDS]; /* the latest evaluation, then the best */
  double epoch_loss;
  uint64_t optim_steps; /* Adam's bias correction counts them */
  uint64_t shard[QGMD_SHARD_FIELDS];
  /* What the file holds besides the fixed sections: the exchange's state
   * (not when resumed on other ranks: it is of another graph), the shard
   * section (when the file's rank trains on another rank's part). */
  int exchange, has_shard;
} image_t;

typedef struct section {
  char name[64];
  qgm_checkpoint_type_t type;
  void *data;
  size_t count;
} section_t;

/* The fixed sections, in the file's order. */
enum {
  SECTION_CONFIG, SECTION_META, SECTION_RNG, SECTION_ORDER, SECTION_EVAL,
  SECTION_EPOCH_LOSS, SECTION_OPTIM_STEPS, FIXED_SECTIONS
};

/* Section i of the file: the fixed ones, then the optimizer's vectors
 * ("optim.NAME"), then the exchange's state (qgmd_exchange_section: none
 * for most kinds, so their files are as they were), then the shard when
 * the image has one. Returns 0 past the last. */
static int section_at(qgmd_node_t *node, image_t *im, size_t shard, int i,
                      section_t *s) {
  static const struct {
    const char *name;
    qgm_checkpoint_type_t type;
  } fixed[FIXED_SECTIONS] = {
      [SECTION_CONFIG] = {QGMD_SECTION_CONFIG, QGM_CHECKPOINT_BYTES},
      [SECTION_META] = {QGMD_SECTION_META, QGM_CHECKPOINT_U64},
      [SECTION_RNG] = {"rng", QGM_CHECKPOINT_U64},
      [SECTION_ORDER] = {"order", QGM_CHECKPOINT_U64},
      [SECTION_EVAL] = {"eval", QGM_CHECKPOINT_F64},
      [SECTION_EPOCH_LOSS] = {"epoch_loss", QGM_CHECKPOINT_F64},
      [SECTION_OPTIM_STEPS] = {"optim_steps", QGM_CHECKPOINT_U64},
  };
  if (i < FIXED_SECTIONS) {
    void *const data[FIXED_SECTIONS] = {
        (void *)im->config, im->meta, im->rng, im->order, im->evals,
        &im->epoch_loss, &im->optim_steps};
    const size_t count[FIXED_SECTIONS] = {
        im->config ? strlen(im->config) : 0, QGMD_META_FIELDS, 4, shard,
        2 * EVAL_FIELDS, 1, 1};
    *s = (section_t){.type = fixed[i].type, .data = data[i],
                     .count = count[i]};
    snprintf(s->name, sizeof s->name, "%s", fixed[i].name);
    return 1;
  }
  i -= FIXED_SECTIONS;
  const int states = (int)qgm_optim_state_count(node->optim);
  if (i < states) {
    qgm_optim_state_t st;
    qgm_optim_state_get(node->optim, (size_t)i, &st);
    *s = (section_t){.type = QGM_CHECKPOINT_F32, .data = st.data,
                     .count = st.len};
    snprintf(s->name, sizeof s->name, "optim.%s", st.name);
    return 1;
  }
  i -= states;
  float *data;
  size_t len;
  char name[QGMD_SECTION_NAME_MAX];
  int exchanges = 0;
  while (im->exchange &&
         qgmd_exchange_section(&node->exchange, exchanges, name, &data, &len))
    exchanges++;
  if (i < exchanges) {
    qgmd_exchange_section(&node->exchange, i, name, &data, &len);
    *s = (section_t){.type = QGM_CHECKPOINT_F32, .data = data, .count = len};
    snprintf(s->name, sizeof s->name, "%s", name);
    return 1;
  }
  if (i > exchanges || !im->has_shard)
    return 0;
  *s = (section_t){.type = QGM_CHECKPOINT_U64, .data = im->shard,
                   .count = QGMD_SHARD_FIELDS};
  snprintf(s->name, sizeof s->name, "%s", QGMD_SECTION_SHARD);
  return 1;
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

/* A vector that is no longer finite: the state is unfit to keep, or to
 * resume from. */
static void check_finite(qgm_optim_t *o, char *why, size_t size) {
  for (size_t i = 0; !why[0] && i < qgm_optim_state_count(o); i++) {
    qgm_optim_state_t st;
    qgm_optim_state_get(o, i, &st);
    for (size_t k = 0; k < st.len && !why[0]; k++)
      if (!isfinite(st.data[k]))
        snprintf(why, size, "optimizer vector %s[%zu] is %g", st.name, k,
                 (double)st.data[k]);
  }
}

int qgmd__checkpoint_capture(qgmd_node_t *node, const char *config,
                             qgm_checkpoint_t *ck, char *why, size_t size) {
  const size_t shard = qgm_dataset_count(node->rank.train);
  image_t im = {.config = config,
                .meta = {(uint64_t)node->rank.id, (uint64_t)node->rank.nodes,
                         node->rank.step, shard},
                .epoch_loss = node->epoch_loss,
                .optim_steps = qgm_optim_steps(node->optim),
                .shard = {(uint64_t)node->rank.part,
                          (uint64_t)node->rank.parts},
                .exchange = 1,
                .has_shard = node->rank.part != node->rank.id ||
                             node->rank.parts != node->rank.nodes};
  memcpy(im.rng, node->minibatch.rng.s, sizeof im.rng);
  pack_eval(&node->rank.last, im.evals);
  pack_eval(&node->rank.best, im.evals + EVAL_FIELDS);
  if (!(im.order = malloc((shard ? shard : 1) * sizeof *im.order)))
    return QGM_ENOMEM;
  for (size_t i = 0; i < shard; i++)
    im.order[i] = node->minibatch.order[i];
  why[0] = '\0';
  check_finite(node->optim, why, size);
  int rc = 0;
  section_t s;
  for (int i = 0; rc == 0 && section_at(node, &im, shard, i, &s); i++)
    rc = qgm_checkpoint_put(ck, s.name, s.type, s.data, s.count);
  free(im.order);
  return rc;
}

/* The meta section names the file's rank, run and step: the file wanted? */
static int check_meta(const qgmd_node_t *node, const uint64_t *meta,
                      uint64_t step, size_t shard, char *why, size_t size) {
  if (meta[QGMD_META_RANK] != (uint64_t)node->rank.from_rank ||
      meta[QGMD_META_NODES] != (uint64_t)node->rank.from_nodes)
  {
    char of[48];
    snprintf(why, size, "is rank %" PRIu64 "'s file of %s run, not rank %d's",
             meta[QGMD_META_RANK],
             qgm_sized_text(of, sizeof of, (long long)meta[QGMD_META_NODES],
                            "node"),
             node->rank.from_rank);
  }
  else if (meta[QGMD_META_STEP] != step)
    snprintf(why, size, "holds step %" PRIu64 ", not step %" PRIu64 " of "
             "its folder's manifest (copied from another step)",
             meta[QGMD_META_STEP], step);
  else if (meta[QGMD_META_SHARD] != shard ||
           meta[QGMD_META_STEP] > node->rank.total_steps)
    snprintf(why, size, "holds a shard of %" PRIu64 " samples at step %"
             PRIu64 "; this rank has %zu samples and %" PRIu64 " steps "
             "(damaged content)", meta[QGMD_META_SHARD],
             meta[QGMD_META_STEP], shard, node->rank.total_steps);
  else
    return 0;
  return QGM_ESECTION;
}

/* The order indexes the shard: it must be a permutation of it. */
static int check_order(const uint64_t *order, size_t shard, char *why,
                       size_t size) {
  unsigned char *seen = calloc(shard ? shard : 1, 1);
  if (!seen)
    return QGM_ENOMEM;
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < shard; i++) {
    if (order[i] >= shard || seen[order[i]]) {
      snprintf(why, size, "its sample order is not a permutation of the "
               "shard (damaged content)");
      rc = QGM_ESECTION;
    } else {
      seen[order[i]] = 1;
    }
  }
  free(seen);
  return rc;
}

int qgmd__checkpoint_restore(qgmd_node_t *node, const qgm_checkpoint_t *ck,
                             uint64_t step, char *why, size_t size) {
  const size_t shard = qgm_dataset_count(node->rank.train);
  const qgmd_rank_t *r = &node->rank;
  /* The file's rank trained on another's part if it says so: the part
   * this rank loaded (qgmd_checkpoint_plan read it from there). */
  image_t im = {.exchange = !r->cfg->resume_ranks[0],
                .has_shard = r->part != r->from_rank ||
                             r->parts != r->from_nodes};
  if (!(im.order = malloc((shard ? shard : 1) * sizeof *im.order)))
    return QGM_ENOMEM;
  int rc = 0;
  section_t s;
  for (int i = SECTION_META; rc == 0 && section_at(node, &im, shard, i, &s);
       i++) {
    rc = qgm_checkpoint_get(ck, s.name, s.type, s.data, s.count);
    if (rc == QGM_ESECTION)
      snprintf(why, size, "its section '%s' is missing or of the wrong "
               "size (damaged content)", s.name);
    else if (rc == 0 && i == SECTION_META)
      rc = check_meta(node, im.meta, step, shard, why, size);
    else if (rc == 0 && i == SECTION_ORDER)
      rc = check_order(im.order, shard, why, size);
  }
  if (rc == 0 && im.has_shard &&
      (im.shard[QGMD_SHARD_PART] != (uint64_t)r->part ||
       im.shard[QGMD_SHARD_PARTS] != (uint64_t)r->parts)) {
    snprintf(why, size, "trained on part %" PRIu64 " of %" PRIu64 ", not "
             "the part %d of %d this rank loaded (the newest checkpoint's)",
             im.shard[QGMD_SHARD_PART], im.shard[QGMD_SHARD_PARTS], r->part,
             r->parts);
    rc = QGM_ESECTION;
  }
  /* A file with intact checksums may still hold a model that diverged
   * (written by another build, or by hand): resuming it would only repeat
   * the failure. */
  if (rc == 0) {
    check_finite(node->optim, why, size);
    if (why[0]) {
      strncat(why, " (damaged content)", size - strlen(why) - 1);
      rc = QGM_ESECTION;
    }
  }
  if (rc == 0) {
    qgm_optim_set_steps(node->optim, im.optim_steps);
    for (size_t i = 0; i < shard; i++)
      node->minibatch.order[i] = (size_t)im.order[i];
    memcpy(node->minibatch.rng.s, im.rng, sizeof im.rng);
    node->rank.step = im.meta[QGMD_META_STEP];
    node->epoch_loss = im.epoch_loss;
    unpack_eval(im.evals, &node->rank.last);
    unpack_eval(im.evals + EVAL_FIELDS, &node->rank.best);
  }
  free(im.order);
  return rc;
}
