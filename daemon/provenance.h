/* provenance.h - what the config record says about where a run's numbers
 * came from: the version and git revision qgmd was built from, the
 * machines, the start time and where each flag was set. */
#ifndef QGMD_PROVENANCE_H
#define QGMD_PROVENANCE_H

#include <stddef.h>

/* Collective (every rank names its host). On rank 0, fills buf with the
 * record's provenance members, without braces:
 *   "version":"0.1.0","revision":"v0.1-12-gabc","start_time":"...Z",
 *   "hosts":{"node1":16,...},"flag_origins":{...}
 * ("revision" only when built from a git checkout). Returns 0, or -1 when
 * buf is too small (rank 0). */
int qgmd_provenance_json(char *buf, size_t size);

#endif /* QGMD_PROVENANCE_H */
