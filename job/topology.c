/* topology.c - the job's gossip graph: qgmd_job_topology (job.h). One
 * place builds and checks it, so that qgmd and qgm-sim refuse the same
 * flags with the same words and the same exit status. */
#include <stdio.h>

#include "job.h"

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
