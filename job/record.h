/* record.h - the one writer of the JSON records a run emits: the metrics
 * file's JSON Lines (README "Metrics") of qgmd and qgm-sim, and the status
 * that rank 0's control socket serves. A record is a type name and a
 * table of fields, each with its name, its kind and number format, its
 * value and whether it is written; the writer adds the braces, quotes,
 * commas and escapes. Tools and tests parse these records, so a field's
 * name, place and format are part of the interface. MPI-free. */
#ifndef QGMD_RECORD_H
#define QGMD_RECORD_H

#include <stddef.h>
#include <stdio.h>

typedef enum qgmd_field_kind {
  QGMD_FIELD_INT,    /* value.i, printed %lld */
  QGMD_FIELD_UINT,   /* value.u, printed %llu */
  QGMD_FIELD_DOUBLE, /* value.d, printed with the field's format */
  QGMD_FIELD_STRING, /* value.s, written as a JSON string, escaped */
  QGMD_FIELD_BOOL,   /* value.i: true when nonzero */
  QGMD_FIELD_JSON,   /* value.s, already JSON: an object, an array */
  /* value.s: "name":value members already in JSON, written in the
   * field's place (its name is not used): what another part of the
   * program gathers, such as the run's provenance. */
  QGMD_FIELD_MEMBERS,
  /* value.rows: the rows of another table, written in the field's place:
   * what two records share is written once. */
  QGMD_FIELD_ROWS
} qgmd_field_kind_t;

/* What a field that is not there becomes. */
typedef enum qgmd_field_absent {
  QGMD_FIELD_PRESENT = 0, /* written (the default of an initializer) */
  QGMD_FIELD_OMITTED,     /* left out, with its comma */
  QGMD_FIELD_NULL         /* written as null: "not known yet" */
} qgmd_field_absent_t;

typedef struct qgmd_field {
  const char *name;
  qgmd_field_kind_t kind;
  const char *format; /* QGMD_FIELD_DOUBLE: one printf conversion */
  union {
    long long i;
    unsigned long long u;
    double d;
    const char *s;
    struct {
      const struct qgmd_field *at;
      size_t n;
    } rows;
  } value;
  qgmd_field_absent_t absent;
} qgmd_field_t;

/* Table rows. Each macro sets the union member that its kind reads, so a
 * value is converted to the field's kind where the row is written. */
#define QGMD_INT(name, v) \
  {(name), QGMD_FIELD_INT, NULL, {.i = (v)}, QGMD_FIELD_PRESENT}
#define QGMD_UINT(name, v) \
  {(name), QGMD_FIELD_UINT, NULL, {.u = (v)}, QGMD_FIELD_PRESENT}
#define QGMD_DOUBLE(name, format, v) \
  {(name), QGMD_FIELD_DOUBLE, (format), {.d = (v)}, QGMD_FIELD_PRESENT}
#define QGMD_STRING(name, v) \
  {(name), QGMD_FIELD_STRING, NULL, {.s = (v)}, QGMD_FIELD_PRESENT}
#define QGMD_BOOL(name, v) \
  {(name), QGMD_FIELD_BOOL, NULL, {.i = (v) != 0}, QGMD_FIELD_PRESENT}
#define QGMD_JSON(name, v) \
  {(name), QGMD_FIELD_JSON, NULL, {.s = (v)}, QGMD_FIELD_PRESENT}
#define QGMD_MEMBERS(v) \
  {"", QGMD_FIELD_MEMBERS, NULL, {.s = (v)}, QGMD_FIELD_PRESENT}
#define QGMD_ROWS(table) \
  {"", QGMD_FIELD_ROWS, NULL, {.rows = {QGMD_FIELDS(table)}}, \
   QGMD_FIELD_PRESENT}

/* A row that is written only when `present` holds: QGMD_IF(cond, row)
 * leaves it out otherwise, QGMD_OR_NULL(cond, row) writes null. (The
 * row is the variadic part: its braces do not protect its commas.) */
#define QGMD_IF(present, ...) \
  qgmd_field_when((present), QGMD_FIELD_OMITTED, (qgmd_field_t)__VA_ARGS__)
#define QGMD_OR_NULL(present, ...) \
  qgmd_field_when((present), QGMD_FIELD_NULL, (qgmd_field_t)__VA_ARGS__)

static inline qgmd_field_t qgmd_field_when(int present,
                                           qgmd_field_absent_t otherwise,
                                           qgmd_field_t row) {
  if (!present)
    row.absent = otherwise;
  return row;
}

/* An array of rows as the (fields, n) arguments below. */
#define QGMD_FIELDS(rows) (rows), (sizeof(rows) / sizeof *(rows))

/* The record as one JSON object, {"type":TYPE,...} or, with type NULL, an
 * object of the fields alone, without a newline, into buf (terminated
 * when size > 0, cut at size bytes). Returns the full length, as snprintf
 * does: buf may be NULL with size 0 to measure. */
size_t qgmd_record_format(char *buf, size_t size, const char *type,
                          const qgmd_field_t *fields, size_t n);

/* The same object in a new string (free it), or NULL when out of
 * memory. */
char *qgmd_record_json(const char *type, const qgmd_field_t *fields,
                       size_t n);

/* Appends the record to f as one JSON Lines line and flushes it, so that
 * a crash loses at most the record being written. Returns 0, or -1 when
 * it could not be written (out of memory, or f's error). */
int qgmd_record_write(FILE *f, const char *type, const qgmd_field_t *fields,
                      size_t n);

#endif /* QGMD_RECORD_H */
