/* memory_limit.h - how much memory this process's control group still
 * lets it use: a job in a container or a systemd slice is bounded by its
 * cgroup, whatever the host's MemAvailable says. */
#ifndef QGMD_MEMORY_LIMIT_H
#define QGMD_MEMORY_LIMIT_H

/* Bytes the memory cgroups of this process leave it, or -1 if none
 * limits it (or none can be read). For each level of its cgroup, from its
 * own up to the hierarchy's root, the limit less the usage: cgroup v2's
 * memory.max and memory.current, or v1's memory.limit_in_bytes and
 * memory.usage_in_bytes; the smallest counts. A level whose directory is
 * not there (another cgroup namespace's path) is skipped. root is
 * prepended to /proc/self/cgroup and /sys/fs/cgroup: "" on a real
 * system, a directory of hand-made files in tests. */
double qgmd_cgroup_memory_left(const char *root);

#endif /* QGMD_MEMORY_LIMIT_H */
