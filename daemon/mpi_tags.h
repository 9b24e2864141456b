/* mpi_tags.h - every point-to-point MPI tag the daemon uses, in one place,
 * so that two kinds of message can never share a tag by accident. The
 * collectives (start-up agreement, evaluation, the checkpoint vote) use
 * none. */
#ifndef QGMD_MPI_TAGS_H
#define QGMD_MPI_TAGS_H

enum qgmd_mpi_tag {
  /* The exchange of neighbours (exchange_neighbours.c and the kinds that
   * post its phase): a model, or a slice of one, to a graph neighbour;
   * within a host under --topology=hier (exchange_hosts.c), the slices of
   * the host's mean and the mean shared back. */
  QGMD_GOSSIP_TAG = 17,
  QGMD_HOST_MEAN_TAG = 18,
  QGMD_HOST_SHARE_TAG = 19,
  /* The global mean (exchange_global.c): within a group, a slice of a
   * message to the node that sums it, and the summed slice back; between
   * groups, a sub-slice of a group's sum to its owner, and the summed
   * sub-slice back. */
  QGMD_SUM_SLICE_TAG = 20,
  QGMD_SUM_SHARE_TAG = 21,
  QGMD_SUM_REDUCE_TAG = 24,
  QGMD_SUM_GATHER_TAG = 25,
  /* A rank that found a neighbour lost, to rank 0 (lost.c). */
  QGMD_LOST_TAG = 26,
  /* A rank's status report to rank 0 (control.c). */
  QGMD_STATUS_TAG = 23,
  /* The asynchronous parameter server (async_server.c, async_worker.c):
   * a worker's gradient with its trailer, and the model sent back. */
  QGMD_ASYNC_GRAD_TAG = 41,
  QGMD_ASYNC_MODEL_TAG = 42,
  /* Asynchronous gossip (train_async.c): a message to a neighbour (or a
   * finished rank's one-float marker), rank 0's commands, and the ranks'
   * reports to it. */
  QGMD_ASYNC_GOSSIP_TAG = 43,
  QGMD_ASYNC_CMD_TAG = 44,
  QGMD_ASYNC_REPORT_TAG = 45,
};

#endif /* QGMD_MPI_TAGS_H */
