/* data_cache.h - inflated copies of gzipped data files, so that a job reads
 * a dataset's raw bytes instead of inflating them at every start (a third
 * of a second of one core for Fashion-MNIST's training images, most of
 * the start-up at 16 ranks on 2 cores).
 *
 * An entry is the inflated file, in the cache directory, named after the
 * source file and a hash of its device, inode, size and modification
 * time: a changed or replaced file misses its old entry. An entry is
 * used only if its length and CRC-32 are the ones the gzip trailer
 * records, and is written under a temporary name and renamed, so a reader
 * never sees a partial one. Writing an entry removes the other entries of
 * the same file name: the cache holds the last copy used of each. The cache is best effort: any failure falls back to
 * inflating. Shared by qgmd and qgm-sim (job.c). */
#ifndef QGMD_DATA_CACHE_H
#define QGMD_DATA_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* The directory --data-cache names: "none" -> "" (no cache); "auto" ->
 * $XDG_CACHE_HOME/qgmd, else $HOME/.cache/qgmd, else ""; any other value
 * itself. */
void qgmd_data_cache_dir(const char *flag, char *out, size_t size);

/* Maps path's inflated bytes from the cache in dir, read-only and shared
 * (the ranks of a host that map one entry share its pages): 0, or -1 when
 * there is no valid entry or path is not gzipped. verify: check the
 * entry's CRC too (once per host is enough: entries never change once
 * renamed into place). qgmd_data_cache_unmap undoes it. */
int qgmd_data_cache_map(const char *dir, const char *path, int verify,
                        const uint8_t **bytes, size_t *len);
void qgmd_data_cache_unmap(const uint8_t *bytes, size_t len);
/* Stores path's inflated bytes in dir (creating it), if path is gzipped;
 * failures are ignored. */
void qgmd_data_cache_write(const char *dir, const char *path,
                           const uint8_t *bytes, size_t len);

#endif /* QGMD_DATA_CACHE_H */
