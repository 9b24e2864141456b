/* control.h - how a running job is steered and observed: signals on every
 * rank, per-rank status reports gathered on rank 0, and rank 0's control
 * socket served to tools/qgmctl. */
#ifndef QGMD_CONTROL_H
#define QGMD_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#include "loop.h"

struct qgmd_rank;
typedef struct qgmd_control qgmd_control_t;

/* Watches the signals (signals.h) and, on rank 0, the status receiver and the
 * control socket. Returns an exit status (2: bad --control) with err. */
int qgmd_control_start(struct qgmd_rank *rank, char *err, size_t errlen);

/* Called by every rank at every stop vote and evaluation collective (so
 * all ranks call it equally often): sends the rank's numbers to rank 0,
 * at once or, if a report is still in flight, when it has gone. */
void qgmd_control_report(qgmd_control_t *c, const struct qgmd_rank *rank);

/* Before each collective that a rank might never join (the evaluation's,
 * the checkpoint's agreement): counts it and reports to rank 0, so that
 * rank 0's watchdog can name a rank that is missing (a collective itself
 * says nothing about who). */
void qgmd_control_joining(struct qgmd_rank *rank);

/* Rank 0: the ranks that have not yet joined collective number
 * `collectives` by their reports, as a list ("2", "1, 3") in out; returns
 * how many. Any other rank: 0. */
int qgmd_control_behind(const qgmd_control_t *c, uint64_t collectives,
                        char *out, size_t size);

/* Completes the status traffic still in flight, then calls done(arg). */
void qgmd_control_finish(qgmd_control_t *c, qgmd_done_fn done, void *arg);

/* Removes the socket file and frees; call after the loop closed. */
void qgmd_control_free(qgmd_control_t *c);

/* The control socket path used when --control is not given:
 * $XDG_RUNTIME_DIR/qgmd.sock, or qgmd.sock in a per-user 0700 directory
 * under /tmp that is created when missing. Returns 0, or -1 with err. */
int qgmd_default_control_path(char *out, size_t size, char *err,
                              size_t errlen);

#endif /* QGMD_CONTROL_H */
