/* sync.c - gossip's pace: --sync=sync (every round waits for every
 * neighbour's message of the round) or --sync=async with
 * --max-staleness=T (each node steps at its own pace and mixes the
 * newest messages its neighbours sent, waiting only for a neighbour more
 * than T of its own rounds behind; daemon/train_async.c). T = 0 waits
 * every round: it is the synchronous exchange, run as such. What the
 * asynchronous exchange cannot do is refused here, with the reason. */
#include <stdio.h>
#include <string.h>

#include "feature.h"

static const char *const sync_names[] = {"async", "sync", NULL};

static int parse_sync(const char *text, qgmd_config_t *cfg) {
  int i;
  if (qgmd_name_index(sync_names, text, &i) != 0)
    return -1;
  cfg->parsed.gossip_async = i == 0;
  return 0;
}

const flag_parse_t qgmd_parse_sync = {parse_sync, QGMD_UNPARSED_SYNC,
                                      sync_names, NULL};

/* Whether the asynchronous exchange runs: T = 0 is the synchronous one,
 * and then --sync and --max-staleness change nothing a checkpoint holds. */
int qgmd_gossip_async(const qgmd_config_t *cfg) {
  return cfg->parsed.gossip_async && cfg->max_staleness > 0;
}

/* Why the asynchronous exchange (T > 0) cannot run cfg, or NULL. It mixes
 * whole models (or push-sum's shares) with a static graph's neighbours. */
static const char *refusal(const qgmd_config_t *cfg) {
  if (cfg->parsed.asynchronous)
    return "the parameter-server modes are asynchronous already; --sync is "
           "gossip's";
  switch (cfg->parsed.algorithm) {
  case QGM_ALG_ALLREDUCE:
    return "allreduce averages over all nodes at once; it does not gossip";
  case QGM_ALG_D2:
  case QGM_ALG_GT:
  case QGM_ALG_GUT:
  case QGM_ALG_QG_GUTM:
  case QGM_ALG_MT:
    return "its correction needs every neighbour's message of the round it "
           "mixes";
  case QGM_ALG_RELAYSGD:
    return "RelaySum relays each round's sums exactly once";
  default:
    break;
  }
  if (cfg->parsed.compress.kind != QGM_COMPRESS_NONE)
    return "compressed gossip's copies need every message in order";
  if (strcmp(cfg->topology, "hier") == 0)
    return "the hierarchical exchange averages inside a host every round";
  if (strcmp(cfg->topology, "one-peer-exp") == 0)
    return "the graph changes every round; the asynchronous exchange needs "
           "a static graph (not built for time-varying ones)";
  if (cfg->parsed.overlap || cfg->local_steps > 1)
    return "the asynchronous exchange overlaps by itself: no --overlap=on "
           "or --local-steps";
  return NULL;
}

uint64_t qgmd_schedule_clock(uint64_t own, double newest, uint64_t total) {
  const double last = total > 0 ? (double)total - 1.0 : 0.0;
  const double ahead = newest < last ? newest : last;
  return ahead > (double)own ? (uint64_t)ahead : own;
}

int qgmd_check_sync(const qgmd_config_t *cfg, char *err, size_t errlen) {
  if (cfg->parsed.unknown & QGMD_UNPARSED_SYNC) {
    char names[64];
    snprintf(err, errlen, "--sync: '%s' is neither %s", cfg->sync,
             qgmd_flag_names("sync", " nor ", names, sizeof names));
    return -1;
  }
  if (!cfg->parsed.gossip_async) {
    if (cfg->max_staleness == 0)
      return 0;
    snprintf(err, errlen, "--max-staleness=%ld: only with --sync=async",
             cfg->max_staleness);
    return -1;
  }
  const char *why = qgmd_gossip_async(cfg) ? refusal(cfg) : NULL;
  if (!why)
    return 0;
  snprintf(err, errlen, "--sync=async: not with --algorithm=%s (%s)",
           cfg->algorithm, why);
  return -1;
}
