/* exchange_plan_choco.h - a node's state of compressed gossip, as the
 * daemon's transport reads it (daemon/exchange_choco.c). */
#ifndef QGMD_EXCHANGE_PLAN_CHOCO_H
#define QGMD_EXCHANGE_PLAN_CHOCO_H

#include <stdint.h>

#include "qgm.h"

typedef struct qgmd_choco_state {
  qgm_choco_t *choco; /* the public copies it and its peers keep */
  uint8_t *wire;      /* its packed message of the round
                         (qgm_choco_message_bytes) */
} qgmd_choco_state_t;

#endif /* QGMD_EXCHANGE_PLAN_CHOCO_H */
