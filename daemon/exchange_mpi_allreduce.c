/* exchange_mpi_allreduce.c - the all-reduce baseline's mean by Open MPI's
 * own non-blocking all-reduce (--allreduce=mpi), to compare qgmd's
 * (exchange_global.c) with in one run. Open MPI picks its algorithm and
 * its sum order by message size and placement, so the bits may differ
 * between placements and from qgm-sim's, by float rounding. */
#include <stdlib.h>

#include "exchange_kind.h"

static int init(qgmd_exchange_t *x) {
  return (x->kind_state = malloc(x->len * sizeof(float))) ? 0 : QGM_ENOMEM;
}

/* The bytes are counted as a ring all-reduce sends them: 2 (n - 1) / n of
 * the vector to the next rank, which is what Open MPI's ring does for a
 * large vector; its other algorithms send about as much in all. */
static int start(qgmd_exchange_t *x) {
  const int n = qgm_topology_nodes(x->topology);
  MPI_Iallreduce(x->send, x->kind_state, (int)x->len, MPI_FLOAT, MPI_SUM,
                 MPI_COMM_WORLD, &x->requests[0]);
  if (n > 1)
    qgmd__exchange_count(x, (x->rank + 1) % n,
                         2.0 * (n - 1) / n * (double)x->len * sizeof(float),
                         0);
  return x->nrequests = 1;
}

static void finish(qgmd_exchange_t *x, qgm_optim_t *o, float lr,
                   const float *base) {
  (void)base; /* overlap and local steps are refused for the mean */
  qgm_vec_scale_copy(qgm_optim_mix_buffer(o),
                     (float)(1.0 / qgm_topology_nodes(x->topology)),
                     x->kind_state, x->len);
  qgm_optim_after_gossip(o, lr);
}

static void free_sum(qgmd_exchange_t *x) { free(x->kind_state); }

const qgmd_exchange_ops_t qgmd_exchange_mpi_allreduce = {
    .init = init, .start = start, .finish = finish, .free = free_sum};
