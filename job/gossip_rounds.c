/* gossip_rounds.c - --gossip-rounds=R: R exchanges with the neighbours in
 * every step, each mixing what the one before mixed, so that the model
 * moves by W^R msg where one round moves it by W msg. On a ring of n the
 * second eigenvalue of W is about 1 - c/n^2, and W^R's is its R-th power:
 * R rounds buy the mixing of a denser graph with R times the messages and
 * R latencies a step (docs/ALGORITHMS.md, "Several gossip rounds a
 * step"). --gossip-acceleration=chebyshev combines the same R rounds into
 * the polynomial of W that mixes most (libqgm/graph/chebyshev.c). What R
 * rounds cannot be composed with is refused here, with the reason; the
 * exchange itself is exchange_plan_rounds.c's and
 * daemon/exchange_rounds.c's. */
#include <stdio.h>
#include <string.h>

#include "feature.h"

static const char *const acceleration_names[] = {"none", "chebyshev", NULL};

static int parse_acceleration(const char *text, qgmd_config_t *cfg) {
  return qgmd_name_index(acceleration_names, text,
                         &cfg->parsed.gossip_chebyshev);
}

const flag_parse_t qgmd_parse_gossip_acceleration = {
    parse_acceleration, QGMD_UNPARSED_GOSSIP_ACCELERATION, acceleration_names,
    NULL};

int qgmd_gossip_rounds(const qgmd_config_t *cfg) {
  return cfg->gossip_rounds > 1;
}

/* Why cfg's exchange cannot repeat its rounds, or NULL, with the flag
 * at fault written into what. Only the plain neighbour average W msg
 * composes with itself. */
static const char *refusal(const qgmd_config_t *cfg, char *what,
                           size_t size) {
  snprintf(what, size, "--algorithm=%s", cfg->algorithm);
  if (cfg->parsed.asynchronous)
    return "the parameter-server modes do not gossip";
  switch (qgm_algorithm_combine(cfg->parsed.algorithm)) {
  case QGM_COMBINE_GLOBAL_MEAN:
    return "the all-reduce's mean is exact in one round";
  case QGM_COMBINE_RELAY:
    return "RelaySum relays each round's sums exactly once";
  case QGM_COMBINE_PUSH_SUM:
    return "push-sum's shares are not repeated; not built";
  case QGM_COMBINE_NEIGHBOURS:
    break;
  }
  snprintf(what, size, "--topology=%s", cfg->topology);
  if (strcmp(cfg->topology, "hier") == 0)
    return "the hierarchical exchange averages inside a host already; not "
           "built";
  if (strcmp(cfg->topology, "one-peer-exp") == 0)
    return "the graph changes every round; not built for time-varying "
           "graphs";
  snprintf(what, size, "--compress=%s", cfg->compress);
  if (cfg->parsed.compress.kind != QGM_COMPRESS_NONE)
    return "compressed gossip updates its copies once a step; not built";
  snprintf(what, size, "--sync=%s", cfg->sync);
  if (cfg->parsed.gossip_async && cfg->max_staleness > 0)
    return "the asynchronous exchange mixes each neighbour's newest message "
           "once";
  snprintf(what, size, "--overlap=%s", cfg->overlap);
  if (cfg->parsed.overlap)
    return "the overlapped step mixes into the next step's model; not built";
  snprintf(what, size, "--drop-rate=%g", cfg->drop_rate);
  if (cfg->drop_rate > 0.0)
    return "lost messages are drawn once a step; not built";
  return NULL;
}

int qgmd_check_gossip_rounds(const qgmd_config_t *cfg, char *err,
                             size_t errlen) {
  if (cfg->parsed.unknown & QGMD_UNPARSED_GOSSIP_ACCELERATION) {
    char names[64];
    snprintf(err, errlen, "--gossip-acceleration: '%s' is neither %s",
             cfg->gossip_acceleration,
             qgmd_flag_names("gossip-acceleration", " nor ", names,
                             sizeof names));
    return -1;
  }
  if (cfg->parsed.gossip_chebyshev && !qgmd_gossip_rounds(cfg)) {
    snprintf(err, errlen,
             "--gossip-acceleration=%s: needs --gossip-rounds=2 or more (it "
             "combines the rounds; one round is W itself)",
             cfg->gossip_acceleration);
    return -1;
  }
  char what[QGMD_STR_MAX + 16];
  const char *why =
      qgmd_gossip_rounds(cfg) ? refusal(cfg, what, sizeof what) : NULL;
  if (!why)
    return 0;
  snprintf(err, errlen, "--gossip-rounds=%ld: not with %s (%s)",
           cfg->gossip_rounds, what, why);
  return -1;
}
