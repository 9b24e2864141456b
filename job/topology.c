/* topology.c - the graph's flags: --topology and, for hier, --hosts and
 * --host-topology; the weights (--mixing) and the torus' shape. The
 * spec-like ones are parsed here once, as they are set. And the job's
 * graph built from them and checked against the algorithm
 * (qgmd_job_topology, job.h): one place, so that qgmd and qgm-sim refuse
 * the same flags with the same words and the same exit status. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature.h"
#include "job.h"

/* The library's mixing rules, in the order of qgm_mixing_t. */
static const char *mixing_names(unsigned program) {
  (void)program;
  static char names[64];
  if (!names[0])
    for (int m = QGM_MIXING_DEFAULT; m <= QGM_MIXING_LAZY; m++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
               m ? ", " : "", qgm_mixing_name((qgm_mixing_t)m));
  return names;
}

static int parse_mixing(const char *text, qgmd_config_t *cfg) {
  return qgm_mixing_parse(text, &cfg->parsed.mixing) == 0 ? 0 : -1;
}

static int parse_torus(const char *text, qgmd_config_t *cfg) {
  return qgm_torus_parse(text, &cfg->parsed.torus_rows,
                         &cfg->parsed.torus_cols) == 0 ? 0 : -1;
}

/* "auto", or a count of 1 to 4096 hosts in at most four digits. */
static int parse_hosts(const char *text, qgmd_config_t *cfg) {
  if (strcmp(text, "auto") == 0) {
    cfg->parsed.hosts = 0;
    return 0;
  }
  size_t len = strlen(text);
  if (len > 4 || strspn(text, "0123456789") != len)
    return -1;
  int n = atoi(text);
  if (n < 1 || n > 4096)
    return -1;
  cfg->parsed.hosts = n;
  return 0;
}

const flag_parse_t qgmd_parse_mixing = {parse_mixing, QGMD_UNPARSED_MIXING,
                                        NULL, mixing_names};
const flag_parse_t qgmd_parse_torus = {parse_torus, QGMD_UNPARSED_TORUS,
                                       NULL, NULL};
const flag_parse_t qgmd_parse_hosts = {parse_hosts, QGMD_UNPARSED_HOSTS,
                                       NULL, NULL};

int qgmd_check_topology(const qgmd_config_t *cfg, char *err, size_t errlen) {
  unsigned unknown = cfg->parsed.unknown;
  if (!qgmd_in_list(cfg->topology, qgm_topology_names()) &&
      (strncmp(cfg->topology, "file:", 5) != 0 || !cfg->topology[5]))
    snprintf(err, errlen, "--topology: unknown topology '%s' (known: %s)",
             cfg->topology, qgm_topology_names());
  else if (unknown & QGMD_UNPARSED_HOSTS)
    snprintf(err, errlen, "--hosts: '%s' is neither auto nor a host count "
             "from 1 to 4096", cfg->hosts);
  else if (!qgmd_in_list(cfg->host_topology, qgm_topology_graph_names()))
    snprintf(err, errlen, "--host-topology: '%s' cannot join hosts (known: "
             "%s)", cfg->host_topology, qgm_topology_graph_names());
  else if (unknown & QGMD_UNPARSED_MIXING)
    snprintf(err, errlen, "--mixing: unknown rule '%s' (%s)", cfg->mixing,
             mixing_names(cfg->program));
  else if (unknown & QGMD_UNPARSED_TORUS)
    snprintf(err, errlen, "--torus: '%s' is not RxC (e.g. 4x8)", cfg->torus);
  else if (!(unknown & QGMD_UNPARSED_ALGORITHM) && !cfg->parsed.asynchronous &&
           qgm_algorithm_combine(cfg->parsed.algorithm) ==
               QGM_COMBINE_PUSH_SUM &&
           cfg->parsed.mixing != QGM_MIXING_DEFAULT)
    snprintf(err, errlen, "--mixing=%s: not with --algorithm=%s (push-sum "
             "sends every receiver the sender's share 1 / (out-degree + 1), "
             "not the graph's weights)", cfg->mixing, cfg->algorithm);
  else
    return 0;
  return -1;
}

void qgmd_config_topology(const qgmd_config_t *cfg, int nodes,
                          const int *host_of, int hosts,
                          qgm_topology_spec_t *spec) {
  *spec = (qgm_topology_spec_t){.name = cfg->topology,
                                .nodes = nodes,
                                .mixing = cfg->parsed.mixing,
                                .torus_rows = cfg->parsed.torus_rows,
                                .torus_cols = cfg->parsed.torus_cols,
                                .hosts = cfg->parsed.hosts,
                                .host_topology = cfg->host_topology,
                                .tree_arity = (int)cfg->tree_arity};
  if (cfg->parsed.hosts == 0) { /* auto: where the ranks are */
    spec->hosts = hosts;
    spec->host_of = host_of;
  }
}

int qgmd_job_topology(const qgmd_config_t *cfg, int nodes,
                      const int *host_of, int hosts,
                      qgm_topology_t **topology, char *err, size_t errlen) {
  qgm_topology_spec_t spec;
  qgmd_config_topology(cfg, nodes, host_of, hosts, &spec);
  qgm_topology_error_t why;
  int rc = qgm_topology_create_ex(&spec, topology, &why);
  if (rc == QGM_ENOMEM) { /* no fault of the flags */
    snprintf(err, errlen, "building the topology: %s", qgm_strerror(rc));
    return 1;
  }
  if (rc != 0) {
    snprintf(err, errlen, "--topology=%s: %s", cfg->topology,
             why.text[0] ? why.text : qgm_strerror(rc));
    return 2;
  }
  qgm_algorithm_t alg; /* an asynchronous mode does not parse: no rule */
  if (qgm_algorithm_parse(cfg->algorithm, &alg) == 0 &&
      qgm_optim_refuses(alg, *topology, why.text, sizeof why.text)) {
    snprintf(err, errlen, "--algorithm=%s: not on --topology=%s: %s",
             cfg->algorithm, cfg->topology, why.text);
    qgm_topology_free(*topology);
    *topology = NULL;
    return 2;
  }
  return 0;
}

const char *qgmd_job_graph(const qgmd_config_t *cfg) {
  return qgmd_averaging_all(cfg) ? NULL : cfg->topology;
}
