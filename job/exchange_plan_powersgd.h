/* exchange_plan_powersgd.h - PowerSGD's all-reduce (--algorithm=allreduce
 * --compress=powersgd:R): a node's state, which qgmd's ranks and qgm-sim
 * share, so that both compute the same bits. The arithmetic is libqgm's
 * (qgm_powersgd_*); between its halves the nodes sum two messages over
 * all nodes, as the all-reduce sums its gradients (qgm_vec_tree_sum over
 * the nodes in order): first every matrix's M Q and the other
 * coordinates, then every matrix's M^T P. */
#ifndef QGMD_EXCHANGE_PLAN_POWERSGD_H
#define QGMD_EXCHANGE_PLAN_POWERSGD_H

#include "qgm.h"

typedef struct qgmd_powersgd_state {
  qgm_powersgd_t *powersgd; /* its error feedback and warm start */
  float *first, *second;    /* its two messages of the round */
} qgmd_powersgd_state_t;

#endif /* QGMD_EXCHANGE_PLAN_POWERSGD_H */
