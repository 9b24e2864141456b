/* checkpoint_state.h - what a rank's checkpoint file holds: one list of
 * sections (checkpoint_state.c), which writing and reading both walk. The
 * collective part around it is checkpoint.c's. */
#ifndef QGMD_CHECKPOINT_STATE_H
#define QGMD_CHECKPOINT_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "qgm.h"

struct qgmd_node;

/* Fills ck with the node's state and `config`, the training flags as
 * JSON; "" in why, or what makes the state unfit to keep. Returns 0 or a
 * QGM_E code. */
int qgmd__checkpoint_capture(struct qgmd_node *node, const char *config,
                             qgm_checkpoint_t *ck, char *why, size_t size);

/* Restores the node from ck, the file of `step` in its folder, checking
 * that it is this rank's file of that step and every value that indexes
 * memory. QGM_ESECTION with the reason in why for a file that is sound
 * but not the one wanted, or whose content is damaged. */
int qgmd__checkpoint_restore(struct qgmd_node *node,
                             const qgm_checkpoint_t *ck, uint64_t step,
                             char *why, size_t size);

#endif /* QGMD_CHECKPOINT_STATE_H */
