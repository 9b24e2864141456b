/* watchdog.h - what the loop's timeout means for the synchronous node: a
 * neighbour or a collective that stays silent past --comm-timeout. It
 * knows that node's waits (the exchange, the stop vote, the evaluation,
 * the checkpoint's agreement); the asynchronous ranks arm none. */
#ifndef QGMD_WATCHDOG_H
#define QGMD_WATCHDOG_H

#include "loop.h"

struct qgmd_node;

/* Arms node's loop with --comm-timeout (0 leaves it unarmed). */
void qgmd_watchdog_arm(struct qgmd_node *node);

/* After the loop: if the watchdog said it aborts the job and the run
 * ended within the grace first, aborts it now (the lines said so, and a
 * rank that timed out did not train as it should). */
void qgmd_watchdog_keep_word(void);

#endif /* QGMD_WATCHDOG_H */
