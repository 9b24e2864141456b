/* fuzz_flagfile.c - the daemon's flag-file parser (job/config.c, which
 * has no MPI in it) on arbitrary file contents, then the checks and the
 * JSON dump of whatever parsed. */
#include <stdint.h>
#include <string.h>

#include "../../job/config.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* Includes are fuzzed within the scratch directory only: an absolute
   * or parent path could name a FIFO or a device and block. */
  if (memmem(data, size, "flagfile=/", 10) || memmem(data, size, "..", 2))
    return 0;
  char path[256], arg[300];
  fuzz_file("input.flags", data, size, path, sizeof path);
  snprintf(arg, sizeof arg, "--flagfile=%s", path);
  char *argv[] = {"qgmd", arg, NULL};
  static qgmd_config_t cfg;
  char err[1024];
  if (qgmd_config_parse(2, argv, QGMD_PROGRAM_DAEMON, &cfg, NULL, err,
                        sizeof err) == QGMD_PARSE_RUN &&
      qgmd_config_check(&cfg, err, sizeof err) == 0) {
    static char json[16384];
    qgmd_config_json(&cfg, json, sizeof json);
  }
  return 0;
}
