/* exchange.c - see exchange.h: the table of the kinds' transports, and
 * what every kind holds. */
#include "exchange.h"

#include <stdlib.h>
#include <string.h>

#include "exchange_kind.h"

static const qgmd_exchange_ops_t *const kinds[QGMD_EXCHANGE_KINDS] = {
    [QGMD_EXCHANGE_NEIGHBOURS] = &qgmd_exchange_neighbours,
    [QGMD_EXCHANGE_HOSTS] = &qgmd_exchange_hosts,
    [QGMD_EXCHANGE_GLOBAL_MEAN] = &qgmd_exchange_global_mean,
    [QGMD_EXCHANGE_CHOCO] = &qgmd_exchange_choco,
    [QGMD_EXCHANGE_RELAY] = &qgmd_exchange_relay,
    [QGMD_EXCHANGE_MPI_ALLREDUCE] = &qgmd_exchange_mpi_allreduce,
    [QGMD_EXCHANGE_COMPRESSED_MEAN] = &qgmd_exchange_compressed_mean,
    [QGMD_EXCHANGE_POWERSGD] = &qgmd_exchange_powersgd,
    [QGMD_EXCHANGE_POWERGOSSIP] = &qgmd_exchange_powergossip,
    [QGMD_EXCHANGE_ROUNDS] = &qgmd_exchange_rounds,
};

void qgmd__exchange_count(qgmd_exchange_t *x, int to, double bytes,
                          int in_place) {
  x->bytes_sent += bytes;
  if (x->host_of && x->host_of[to] != x->host_of[x->rank])
    x->bytes_between_hosts += bytes;
  if (in_place)
    x->bytes_in_place += bytes;
}

int qgmd__exchange_alloc_recv(qgmd_exchange_t *x, size_t bytes) {
  for (int j = 0; j < x->max_degree; j++)
    if (!(x->recv[j] = malloc(bytes)))
      return QGM_ENOMEM;
  return 0;
}

qgmd_message_t qgmd__exchange_floats(const float *v, size_t n) {
  return (qgmd_message_t){v, (int)n, (int)n, MPI_FLOAT,
                          (double)n * sizeof(float), NULL};
}

int qgmd_exchange_init(qgmd_exchange_t *x, const qgmd_exchange_plan_t *plan,
                       int rank, const float *x0, const int *host_of) {
  memset(x, 0, sizeof *x);
  x->ops = kinds[plan->kind];
  x->def = qgmd_exchange_def(plan->kind);
  x->plan = *plan;
  x->topology = plan->topology;
  x->combine = plan->combine;
  x->rank = rank;
  x->len = plan->len;
  x->host_of = host_of;
  x->messages_lost = -1.0;
  x->max_degree = qgm_topology_max_degree(plan->topology);
  /* Room for every other node: a kind may have any of them as a peer of a
   * phase (the global mean all of them). */
  const int n = qgm_topology_nodes(plan->topology);
  const int k = n > 1 ? n - 1 : 1;
  x->recv = calloc((size_t)k, sizeof *x->recv);
  x->peers = calloc((size_t)k, sizeof *x->peers);
  x->send_peers = calloc((size_t)k, sizeof *x->send_peers);
  x->weights = calloc((size_t)k, sizeof *x->weights);
  x->requests = calloc(2 * (size_t)k, sizeof *x->requests);
  x->mix_peers = calloc((size_t)k, sizeof *x->mix_peers);
  x->mix_from = calloc((size_t)k, sizeof *x->mix_from);
  x->mix_weights = calloc((size_t)k, sizeof *x->mix_weights);
  if (!x->recv || !x->peers || !x->send_peers || !x->weights ||
      !x->requests || !x->mix_peers || !x->mix_from || !x->mix_weights)
    return QGM_ENOMEM;
  if (x->def->create) {
    int rc = x->def->create(plan, rank, x0, &x->state);
    if (rc != 0)
      return rc;
  }
  return x->ops->init(x);
}

void qgmd_exchange_free(qgmd_exchange_t *x) {
  qgmd__exchange_shared_free(x);
  if (x->ops && x->ops->free)
    x->ops->free(x);
  if (x->def && x->def->free)
    x->def->free(x->state);
  if (x->recv)
    for (int j = 0; j < x->max_degree; j++)
      free(x->recv[j]);
  free(x->recv);
  free(x->peers);
  free(x->send_peers);
  free(x->weights);
  free(x->requests);
  free(x->mix_peers);
  free(x->mix_from);
  free(x->mix_weights);
  memset(x, 0, sizeof *x);
}

int qgmd_exchange_start(qgmd_exchange_t *x, uint64_t round,
                        const void *send) {
  x->send = send;
  x->round = round;
  x->ready_out = round; /* the last round's sends of it have completed */
  return x->ops->start(x);
}

int qgmd_exchange_advance(qgmd_exchange_t *x) {
  int n = x->ops->advance ? x->ops->advance(x) : 0;
  if (n == 0)
    x->nrequests = 0;
  return n;
}

void qgmd_exchange_finish(qgmd_exchange_t *x, qgm_optim_t *o, float lr,
                          const float *base) {
  x->ops->finish(x, o, lr, base);
}

int qgmd_exchange_section(qgmd_exchange_t *x, int i, char *name,
                          float **data, size_t *len) {
  return x->def->section ? x->def->section(x->state, i, name, data, len)
                         : 0;
}
