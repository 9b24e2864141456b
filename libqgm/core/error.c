/* error.c - qgm_strerror and the version string. */
#include "qgm.h"

const char *qgm_strerror(int err) {
  switch (err) {
  case QGM_OK:
    return "success";
#define QGM__ERR_TEXT_(name, value, text)                                      \
  case QGM_E##name:                                                           \
    return text;
    QGM_ERRNO_MAP(QGM__ERR_TEXT_)
#undef QGM__ERR_TEXT_
  default:
    return "unknown error";
  }
}

const char *qgm_version(void) { return QGM_VERSION_STRING; }
