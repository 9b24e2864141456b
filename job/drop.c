/* drop.c - lost gossip messages (--drop-rate): which algorithms and
 * exchanges can lose a message and keep training, and why the others are
 * refused. The draw that loses a message and the mix without it are
 * libqgm's (libqgm/graph/lossy.c); the exchange plan carries the rate. */
#include <stdio.h>
#include <string.h>

#include "feature.h"

int qgmd_dropping(const qgmd_config_t *cfg) { return cfg->drop_rate > 0.0; }

/* Why a run of cfg's algorithm and exchange cannot lose messages, or
 * NULL. Neighbour mixing renormalises over what arrived (the lost weight
 * goes to the node's own message) and push-sum keeps a lost share at its
 * sender; what follows needs every message. */
static const char *refusal(const qgmd_config_t *cfg) {
  if (cfg->parsed.asynchronous)
    return "the asynchronous server modes send gradients to a server; they "
           "do not gossip";
  if (cfg->parsed.compress.kind != QGM_COMPRESS_NONE)
    return "compressed gossip's public copies stay equal on every holder "
           "only if every message arrives";
  if (strcmp(cfg->topology, "hier") == 0)
    return "the hierarchical exchange cannot lose a message: a host's mean "
           "and its slices need every one (not built)";
  switch (cfg->parsed.algorithm) {
  case QGM_ALG_ALLREDUCE:
    return "allreduce averages over all nodes; it has no gossip message to "
           "lose";
  case QGM_ALG_D2:
    return "D^2's correction stays mean-free only while every round's W is "
           "doubly stochastic, and feeds each round's error back divided by "
           "lr: it diverges with 1% lost (Vogels et al. 2021, Table 5)";
  case QGM_ALG_GUT:
  case QGM_ALG_QG_GUTM:
    return "GUT's correction feeds each round's consensus move back divided "
           "by lr, as D^2's, and is mean-free only while every round's W is "
           "doubly stochastic (not measured with lost messages)";
  case QGM_ALG_MT:
  case QGM_ALG_GT:
    return "a tracker (gt's of the gradients, mt's of the momenta) keeps "
           "their mean only while every round's W is column-stochastic; "
           "each lost message shifts that mean for good";
  case QGM_ALG_RELAYSGD:
    return "RelaySum relays each sum and its count exactly once along the "
           "tree; a lost one would need to be relayed again (not built)";
  default:
    return NULL;
  }
}

int qgmd_check_drop(const qgmd_config_t *cfg, char *err, size_t errlen) {
  const char *why = qgmd_dropping(cfg) ? refusal(cfg) : NULL;
  if (!why)
    return 0;
  snprintf(err, errlen, "--drop-rate=%g: not with --algorithm=%s%s%s (%s)",
           cfg->drop_rate, cfg->algorithm,
           strcmp(cfg->topology, "hier") == 0 ? " --topology=hier" : "",
           cfg->parsed.compress.kind != QGM_COMPRESS_NONE ? " --compress"
                                                          : "",
           why);
  return -1;
}
