/* flag.h - a row of the flag table (flags.c), for the job layer's own
 * files: the parser and the dumps (config.c) and the features that parse
 * and check their flags (feature.h). */
#ifndef QGMD_FLAG_H
#define QGMD_FLAG_H

#include <stddef.h>

#include "config.h"

enum flag_type { FLAG_STRING, FLAG_INT, FLAG_DOUBLE };

/* How the checkpoint's training flags (qgmd_config_training_json) hold a
 * flag. The category decides it, but for the flags that the first form of
 * those flags held otherwise: the form may never change, or every older
 * checkpoint would be refused. */
enum flag_hash {
  HASH_VALUE, /* the flag and its value */
  HASH_EMPTY, /* the flag with an empty value ("" or 0) */
  HASH_NONE,  /* left out */
};

/* An enumeration or spec flag: its text is parsed once, as it is set, into
 * cfg->parsed, where the features read it. */
typedef struct flag_parse {
  /* Writes cfg->parsed's field for text; 0, or -1 for text that names
   * nothing, which sets `unknown` in cfg->parsed.unknown. */
  int (*parse)(const char *text, qgmd_config_t *cfg);
  unsigned unknown; /* a QGMD_UNPARSED_ bit */
  /* An enumeration's names (NULL-terminated), or NULL when they are the
   * library's: then `list` gives those that `program` takes as one ", "-
   * separated text. A spec (--compress=topk:0.1) has neither. */
  const char *const *names;
  const char *(*list)(unsigned program);
} flag_parse_t;

typedef struct flag {
  unsigned programs; /* the QGMD_PROGRAM_ bits of those that take it */
  const char *name;
  enum flag_type type;
  size_t offset;   /* of the value (for an enumeration, its text) */
  double min, max; /* inclusive bounds for numbers */
  const char *def;
  enum qgmd_flag_category category;
  enum flag_hash hash;
  /* A training flag of a feature: whether this run uses the feature (a
   * flag of a feature not in use changes nothing, and the checkpoint leaves
   * it out); NULL for the flags that always count. */
  int (*in_use)(const qgmd_config_t *cfg);
  const char *help;
  const flag_parse_t *parse; /* NULL: the value is used as it is */
} flag_t;

/* At most this many flags: what the parser's records of where each was
 * set have room for. */
#define QGMD_FLAG_ROOM 96

extern const flag_t qgmd_flags[];
extern const size_t qgmd_flag_count;

/* The row of the flag called name (len bytes of it), of any program, or
 * NULL. */
const flag_t *qgmd_flag_find(const char *name, size_t len);

/* The names of an enumeration flag joined by sep ("on nor off"), into
 * buf; "" for a flag that has none of its own. Returns buf. */
const char *qgmd_flag_names(const char *flag, const char *sep, char *buf,
                            size_t size);

/* Prefixes err, which starts with the flag at fault ("--mixing: ..."),
 * with the file and line that set the flag in the last qgmd_config_parse,
 * if a file did. */
void qgmd_config_blame(char *err, size_t errlen);

/* Whether text is one of the names in a ", "-separated list (the
 * library's lists of names). */
int qgmd_in_list(const char *text, const char *list);

/* The index of text in a NULL-terminated list of names into *index; 0, or
 * -1 when it is not one of them. */
int qgmd_name_index(const char *const *names, const char *text, int *index);

#endif /* QGMD_FLAG_H */
