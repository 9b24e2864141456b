/* check.c - qgmd_config_check: each feature's checks (feature.h), in the
 * order they have always run, so that of two mistakes the same one is
 * named. */
#include "feature.h"

static qgmd_check_fn *const checks[] = {
    qgmd_check_algorithm, qgmd_check_model,     qgmd_check_topology,
    qgmd_check_dataset,   qgmd_check_hidden,    qgmd_check_transport,
    qgmd_check_straggle,  qgmd_check_compress,  qgmd_check_schedule,
    qgmd_check_gsgm,      qgmd_check_device_time, qgmd_check_problem,
    qgmd_check_log_level, qgmd_check_async_checkpoint, qgmd_check_drop,
    qgmd_check_sync,      qgmd_check_resume_ranks, qgmd_check_kernels,
    qgmd_check_gossip_rounds,
};

int qgmd_config_check(const qgmd_config_t *cfg, char *err, size_t errlen) {
  for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
    if (checks[i](cfg, err, errlen) != 0) {
      qgmd_config_blame(err, errlen);
      return -1;
    }
  return 0;
}
