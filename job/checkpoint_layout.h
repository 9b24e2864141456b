/* checkpoint_layout.h - the sections of qgmd's checkpoint files that
 * describe the run: daemon/checkpoint.c writes them and tools/qgm-inspect
 * shows them, so the description lives in the job layer, which both may
 * include (a tool includes no daemon header). The file format itself is
 * libqgm's. */
#ifndef QGMD_CHECKPOINT_LAYOUT_H
#define QGMD_CHECKPOINT_LAYOUT_H

/* The training flags as JSON (qgmd_config_json, output flags blanked). */
#define QGMD_SECTION_CONFIG "config"
/* Who wrote the file and where the run was: QGMD_META_FIELDS u64s. */
#define QGMD_SECTION_META "meta"

enum qgmd_meta_field {
  QGMD_META_RANK,
  QGMD_META_NODES,
  QGMD_META_STEP,  /* steps done */
  QGMD_META_SHARD, /* training samples of the rank's shard */
  QGMD_META_FIELDS
};

/* Only in the files of a run resumed on fewer ranks (--resume-ranks), and
 * of the runs that continue it: which part of the data's partition the
 * rank trains on, QGMD_SHARD_FIELDS u64s. Without it the rank's part is
 * its rank of QGMD_META_NODES. */
#define QGMD_SECTION_SHARD "shard"

enum qgmd_shard_field {
  QGMD_SHARD_PART,
  QGMD_SHARD_PARTS, /* the partition's parts: the first run's nodes */
  QGMD_SHARD_FIELDS
};

#endif /* QGMD_CHECKPOINT_LAYOUT_H */
