/* qgm-inspect - says what a qgm file holds, or exactly what is wrong
 * with it: a checkpoint (sections and sizes), a checkpoint manifest, or
 * an IDX label or image file. Uses the public libqgm API, and the job
 * layer's names for the sections qgmd adds (checkpoint_layout.h).
 *
 *   qgm-inspect checkpoint FILE
 *   qgm-inspect manifest FILE
 *   qgm-inspect labels FILE
 *   qgm-inspect images FILE LABELS
 *
 * Exit status: 0 a valid file, 2 bad usage or a malformed file (one line
 * on stderr naming the file), 1 out of memory. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint_layout.h"
#include "qgm.h"

static int usage(FILE *out, int status) {
  fprintf(out, "usage: qgm-inspect checkpoint|manifest|labels FILE\n"
               "       qgm-inspect images FILE LABELS\n"
               "       qgm-inspect --help | --version\n");
  return status;
}

static int bad(const char *path, int rc) {
  fprintf(stderr, "qgm-inspect: %s: %s\n", path, qgm_strerror(rc));
  return rc == QGM_ENOMEM ? 1 : 2;
}

/* The size of a section, or 0 when there is none of that name. */
static size_t section_count(const qgm_checkpoint_t *c, const char *want) {
  for (size_t i = 0; i < qgm_checkpoint_num_sections(c); i++) {
    const char *name;
    size_t count;
    if (qgm_checkpoint_section(c, i, &name, NULL, &count) == 0 &&
        strcmp(name, want) == 0)
      return count;
  }
  return 0;
}

/* What qgmd stored about the run (checkpoint_layout.h): who wrote the
 * file, at which step and epoch, with which training flags. Files of
 * other writers have no such sections and are shown without. */
static void describe_run(const qgm_checkpoint_t *c) {
  uint64_t meta[QGMD_META_FIELDS];
  if (qgm_checkpoint_get(c, QGMD_SECTION_META, QGM_CHECKPOINT_U64, meta,
                         QGMD_META_FIELDS) != 0)
    return;
  size_t len = section_count(c, QGMD_SECTION_CONFIG);
  char *flags = calloc(len + 1, 1);
  if (flags && len > 0 &&
      qgm_checkpoint_get(c, QGMD_SECTION_CONFIG, QGM_CHECKPOINT_BYTES, flags,
                         len) != 0)
    flags[0] = '\0';
  /* Steps per epoch, as qgmd counts them: the shard in whole batches. */
  static const char key[] = "\"batch-size\":";
  const char *at = flags ? strstr(flags, key) : NULL;
  const uint64_t batch = at ? strtoull(at + strlen(key), NULL, 10) : 0;
  const uint64_t per_epoch = batch ? meta[QGMD_META_SHARD] / batch : 0;
  printf("  rank %" PRIu64 " of %" PRIu64 ", step %" PRIu64,
         meta[QGMD_META_RANK], meta[QGMD_META_NODES], meta[QGMD_META_STEP]);
  if (per_epoch > 0)
    printf(", epoch %.4g (%" PRIu64 " steps per epoch)",
           (double)meta[QGMD_META_STEP] / (double)per_epoch, per_epoch);
  printf(", shard of %" PRIu64 " samples\n", meta[QGMD_META_SHARD]);
  if (flags && flags[0])
    printf("  flags %s\n", flags);
  free(flags);
}

static int checkpoint(const char *path) {
  qgm_checkpoint_t *c;
  int rc = qgm_checkpoint_read(path, &c);
  if (rc != 0)
    return bad(path, rc);
  static const char *const types[] = {"bytes", "f32", "u64", "f64"};
  printf("%s: qgm checkpoint, config %016" PRIx64 ", %zu sections\n", path,
         qgm_checkpoint_config_hash(c), qgm_checkpoint_num_sections(c));
  describe_run(c);
  for (size_t i = 0; i < qgm_checkpoint_num_sections(c); i++) {
    const char *name;
    qgm_checkpoint_type_t type;
    size_t count;
    qgm_checkpoint_section(c, i, &name, &type, &count);
    printf("  %-16s %-5s %zu\n", name, types[type], count);
  }
  qgm_checkpoint_free(c);
  return 0;
}

static int manifest(const char *path) {
  uint64_t step, hash;
  int nodes;
  int rc = qgm_manifest_read(path, &step, &nodes, &hash);
  if (rc != 0)
    return bad(path, rc);
  char on[48];
  printf("%s: step %" PRIu64 " complete on %s, config %016" PRIx64 "\n",
         path, step, qgm_count_text(on, sizeof on, nodes, "node"), hash);
  return 0;
}

static int labels(const char *path) {
  uint8_t *y;
  size_t n;
  int rc = qgm_idx_read_labels(path, 10, &y, &n);
  if (rc != 0)
    return bad(path, rc);
  printf("%s: %zu labels\n", path, n);
  free(y);
  return 0;
}

static int images(const char *path, const char *labels_path) {
  qgm_dataset_t *ds;
  int rc = qgm_dataset_load_idx(path, labels_path, 10, NULL, 0, 0.0f, 1.0f,
                                &ds);
  if (rc != 0) {
    /* The pair's error may lie in either file: blame the labels only
     * when they are bad on their own. */
    uint8_t *y;
    size_t n;
    int lrc = qgm_idx_read_labels(labels_path, 10, &y, &n);
    if (lrc == 0)
      free(y);
    return bad(lrc != 0 ? labels_path : path, lrc != 0 ? lrc : rc);
  }
  size_t c, h, w;
  qgm_dataset_shape(ds, &c, &h, &w);
  printf("%s: %zu images of %zux%zu\n", path, qgm_dataset_count(ds), h, w);
  qgm_dataset_free(ds);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && (strcmp(argv[1], "--help") == 0 ||
                    strcmp(argv[1], "-h") == 0))
    return usage(stdout, 0);
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    printf("qgm-inspect %s\n", qgm_version());
    return 0;
  }
  if (argc == 3 && strcmp(argv[1], "checkpoint") == 0)
    return checkpoint(argv[2]);
  if (argc == 3 && strcmp(argv[1], "manifest") == 0)
    return manifest(argv[2]);
  if (argc == 3 && strcmp(argv[1], "labels") == 0)
    return labels(argv[2]);
  if (argc == 4 && strcmp(argv[1], "images") == 0)
    return images(argv[2], argv[3]);
  return usage(stderr, 2);
}
