/* watchdog.h - what the loop's timeout means for a training node: a
 * neighbour or a collective that stays silent past --comm-timeout. */
#ifndef QGMD_WATCHDOG_H
#define QGMD_WATCHDOG_H

#include "loop.h"

struct qgmd_node;

/* Arms node's loop with --comm-timeout (0 leaves it unarmed). */
void qgmd_watchdog_arm(struct qgmd_node *node);

#endif /* QGMD_WATCHDOG_H */
