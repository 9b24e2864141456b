/* data_cache.h - inflated copies of gzipped data files, so that a job reads
 * a dataset's raw bytes instead of inflating them at every start (a third
 * of a second of one core for Fashion-MNIST's training images, most of
 * the start-up at 16 ranks on 2 cores).
 *
 * An entry is the inflated file, in the cache directory, named after the
 * source file and a hash of its device, inode, size and modification
 * time: a changed or replaced file misses its old entry. An entry holds
 * the inflated bytes, then their SHA-256 (recorded as it is written) and a
 * magic; it is used only if its length and CRC-32 are the ones the gzip
 * trailer records and its bytes hash to the recorded digest, and is
 * written under a temporary name of its own (O_EXCL) and renamed, so a
 * reader never sees a partial one. Writing an entry removes the other
 * entries of the same file name: the cache holds the last copy used of
 * each. The cache is best effort: any failure falls back to inflating.
 *
 * Only a directory this user owns and no one else may write is used (one
 * line on stderr says why another is not, once): whoever can write the
 * cache decides what is trained on, so the cache is private, and an
 * entry that is not this user's regular file, or does not hash to its
 * digest, is a miss that is rebuilt (docs/RELIABILITY.md, the threat
 * model). Shared by qgmd and qgm-sim (job.c). */
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
 * entry's CRC and SHA-256 too (once per host is enough: entries never
 * change once renamed into place, and no one else may write the
 * directory), saying so on stderr when they differ.
 * qgmd_data_cache_unmap undoes it, with the len it gave. */
int qgmd_data_cache_map(const char *dir, const char *path, int verify,
                        const uint8_t **bytes, size_t *len);
void qgmd_data_cache_unmap(const uint8_t *bytes, size_t len);
/* Stores path's inflated bytes in dir (creating it), if path is gzipped;
 * failures are ignored. */
void qgmd_data_cache_write(const char *dir, const char *path,
                           const uint8_t *bytes, size_t len);

#endif /* QGMD_DATA_CACHE_H */
