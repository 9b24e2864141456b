/* rank.c - see rank.h. */
#include "rank.h"

#include "exchange.h"
#include "host_files.h"
#include "job.h"
#include "log.h"

/* At --log-level=debug, how many samples of each class this rank's shard
 * holds: the heterogeneity the Dirichlet partition produced, which at
 * alpha 0.01 leaves most nodes one or two classes. */
static void log_class_histogram(const qgmd_rank_t *rank) {
  if (qgmd_log_level < LOG_DEBUG)
    return;
  const uint8_t *labels = qgm_dataset_labels(rank->train);
  const size_t n = qgm_dataset_count(rank->train);
  const int classes = qgm_dataset_classes(rank->train);
  size_t count[256] = {0};
  for (size_t i = 0; i < n; i++)
    count[labels[i]]++;
  char line[4096];
  size_t at = 0;
  for (int c = 0; c < classes && at < sizeof line; c++)
    at += (size_t)snprintf(line + at, sizeof line - at, " %zu", count[c]);
  LOG(LOG_DEBUG, "shard of node %d: %zu samples, per class:%s", rank->id, n,
      line);
}

int qgmd_rank_load_data(qgmd_rank_t *rank, struct qgmd_host_files *files,
                        char *err, size_t errlen) {
  const qgmd_config_t *cfg = rank->cfg;
  int shard = rank->part, shards = rank->parts;
  if (rank->async) {
    if (rank->nodes < 2) {
      snprintf(err, errlen, "--algorithm=%s: the asynchronous mode needs at "
               "least 2 ranks (a server and a worker)", cfg->algorithm);
      return 2;
    }
    shard = rank->id > 0 ? rank->id - 1 : 0;
    shards = rank->nodes - 1;
  }
  qgmd_test_set_init(&rank->test_set, rank->placement.host);
  qgmd_host_files_share(files, rank->test_set.host);
  int rc = qgmd_job_load_data(&files->spec, shard, shards, &rank->train,
                              rank->test_set.first ? &rank->test : NULL, err,
                              errlen);
  qgmd_host_files_release(files);
  rc = qgmd_test_set_share(&rank->test_set, rc, &rank->test, err, errlen);
  if (rc == 0)
    log_class_histogram(rank);
  return rc;
}

int qgmd_rank_setup(qgmd_rank_t *rank, char *err, size_t errlen) {
  const qgmd_config_t *cfg = rank->cfg;
  int rc = qgmd_job_model(cfg, rank->train, &rank->model, err, errlen);
  if (rc != 0)
    return rc;
  int max_rank;
  double factor;
  qgmd_config_straggle(cfg, rank->id, &factor, &max_rank);
  if (max_rank >= rank->nodes) {
    char job[48];
    snprintf(err, errlen, "--straggle=%s: rank %d does not exist in %s job",
             cfg->straggle, max_rank,
             qgm_sized_text(job, sizeof job, rank->nodes, "rank"));
    return 2;
  }
  rank->steps_per_epoch =
      qgm_dataset_count(rank->train) / (size_t)cfg->batch_size;
  if (rank->async && rank->id == 0)
    rank->steps_per_epoch *= (uint64_t)(rank->nodes - 1);
  rank->total_steps = rank->steps_per_epoch * (uint64_t)cfg->epochs;
  qgmd_job_schedule(cfg, rank->steps_per_epoch, &rank->schedule);
  return 0;
}

void qgmd_rank_free(qgmd_rank_t *rank) {
  qgm_model_free(rank->model);
  qgm_dataset_free(rank->train);
  qgm_dataset_free(rank->test);
  qgmd_test_set_free(&rank->test_set);
  qgmd_placement_free(&rank->placement); /* after the test set's window */
  if (rank->metrics)
    fclose(rank->metrics);
}

qgmd_traffic_t qgmd_rank_traffic(const qgmd_rank_t *rank) {
  const qgmd_exchange_t *g = rank->exchange;
  if (!g)
    return (qgmd_traffic_t){.peers = 1};
  return (qgmd_traffic_t){.bytes_sent = g->bytes_sent,
                          .between_hosts = g->bytes_between_hosts,
                          .peers = g->max_degree > 0 ? g->max_degree : 1};
}
