/* record.c - see record.h. */
#include "record.h"

#include <stdarg.h>
#include <stdlib.h>

#include "config.h" /* qgmd_json_string */

/* The text written so far: `used` counts what would have been written
 * had buf been large enough, as snprintf does. */
typedef struct text {
  char *buf;
  size_t size, used;
} text_t;

static size_t room(const text_t *t) {
  return t->used < t->size ? t->size - t->used : 0;
}

static char *end(const text_t *t) {
  return room(t) ? t->buf + t->used : NULL;
}

static void put(text_t *t, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

static void put(text_t *t, const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  int n = vsnprintf(end(t), room(t), format, ap);
  va_end(ap);
  if (n > 0)
    t->used += (size_t)n;
}

static void put_string(text_t *t, const char *s) {
  t->used += (size_t)qgmd_json_string(end(t), room(t), s);
}

static void put_value(text_t *t, const qgmd_field_t *f) {
  switch (f->kind) {
  case QGMD_FIELD_INT:
    put(t, "%lld", f->value.i);
    break;
  case QGMD_FIELD_UINT:
    put(t, "%llu", f->value.u);
    break;
  case QGMD_FIELD_DOUBLE: /* the table's format: one double conversion */
    put(t, f->format, f->value.d);
    break;
  case QGMD_FIELD_STRING:
    put_string(t, f->value.s);
    break;
  case QGMD_FIELD_BOOL:
    put(t, "%s", f->value.i ? "true" : "false");
    break;
  case QGMD_FIELD_JSON:
  case QGMD_FIELD_MEMBERS:
    put(t, "%s", f->value.s);
    break;
  case QGMD_FIELD_ROWS: /* put_rows writes them */
    break;
  }
}

/* Members that are not there at all: an omitted row, or no members. */
static int left_out(const qgmd_field_t *f) {
  return f->absent == QGMD_FIELD_OMITTED ||
         (f->kind == QGMD_FIELD_MEMBERS && f->value.s[0] == '\0');
}

/* The rows' members after the `members` already written. */
static void put_rows(text_t *t, const qgmd_field_t *fields, size_t n,
                     int *members) {
  for (size_t i = 0; i < n; i++) {
    const qgmd_field_t *f = &fields[i];
    if (left_out(f))
      continue;
    if (f->kind == QGMD_FIELD_ROWS) {
      put_rows(t, f->value.rows.at, f->value.rows.n, members);
      continue;
    }
    if ((*members)++)
      put(t, ",");
    if (f->kind != QGMD_FIELD_MEMBERS) {
      put_string(t, f->name);
      put(t, ":");
    }
    if (f->absent == QGMD_FIELD_NULL)
      put(t, "null");
    else
      put_value(t, f);
  }
}

size_t qgmd_record_format(char *buf, size_t size, const char *type,
                          const qgmd_field_t *fields, size_t n) {
  text_t t = {.buf = buf, .size = size};
  int members = 0;
  put(&t, "{");
  if (type) {
    put(&t, "\"type\":");
    put_string(&t, type);
    members++;
  }
  put_rows(&t, fields, n, &members);
  put(&t, "}");
  /* A string cut at the end is not terminated by qgmd_json_string. */
  if (size > 0)
    buf[t.used < size ? t.used : size - 1] = '\0';
  return t.used;
}

char *qgmd_record_json(const char *type, const qgmd_field_t *fields,
                       size_t n) {
  size_t len = qgmd_record_format(NULL, 0, type, fields, n);
  char *json = malloc(len + 1);
  if (json)
    qgmd_record_format(json, len + 1, type, fields, n);
  return json;
}

int qgmd_record_write(FILE *f, const char *type, const qgmd_field_t *fields,
                      size_t n) {
  char *line = qgmd_record_json(type, fields, n);
  if (!line)
    return -1;
  const int failed = fputs(line, f) == EOF || fputc('\n', f) == EOF ||
                     fflush(f) != 0 || ferror(f);
  free(line);
  return failed ? -1 : 0;
}
