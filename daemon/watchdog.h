/* watchdog.h - what the loop's timeout means for the synchronous node: a
 * neighbour that stays silent in a step's exchange past --lost-after step
 * times (lost.h), or a collective past --comm-timeout. It
 * knows that node's waits (the exchange, the stop vote, the evaluation,
 * the checkpoint's agreement). The asynchronous ranks arm their own
 * (async_server.c, async_worker.c), which know their waits, and end the
 * job the same way: qgmd_watchdog_abort_soon. */
#ifndef QGMD_WATCHDOG_H
#define QGMD_WATCHDOG_H

#include "loop.h"

struct qgmd_node;

/* Arms node's loop with --comm-timeout (0 leaves it unarmed). */
void qgmd_watchdog_arm(struct qgmd_node *node);

/* A step of `seconds` is done: the exchange's deadline follows the step
 * time (--lost-after, lost.h); the other waits keep --comm-timeout. */
void qgmd_watchdog_step(struct qgmd_node *node, double seconds);

/* Whether a watchdog has said it aborts the job: a later timeout on this
 * rank says nothing more. */
int qgmd_watchdog_aborting(void);

/* After a line that names what went silent: aborts the job after a short
 * grace, in which the other ranks' watchdogs say what they wait for (the
 * ranks next to a silent one name it). */
void qgmd_watchdog_abort_soon(qgmd_loop_t *loop);

/* After the loop: if the watchdog said it aborts the job and the run
 * ended within the grace first, aborts it now (the lines said so, and a
 * rank that timed out did not train as it should). */
void qgmd_watchdog_keep_word(void);

#endif /* QGMD_WATCHDOG_H */
