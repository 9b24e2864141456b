/* resolve.c - the defaults that follow other flags. A flag left unset
 * (qgmd_config_was_set) whose right value depends on another takes the
 * value that one calls for, once every file and the command line are
 * read: --data-dir the dataset's directory, --consensus-lr the compressor's
 * step size (compress.c). What is resolved is what runs, and what the
 * records and --show-config show. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "feature.h"

/* The datasets whose files no Debian package holds: each in a directory
 * of its own under $XDG_DATA_HOME/qgmd (tools/qgm-data puts them there).
 * The others keep the flag table's default, Debian's Fashion-MNIST
 * (dataset-fashion-mnist; synthetic reads no files). */
static const struct {
  const char *dataset, *dir;
} user_data[] = {
    {"mnist-idx", "mnist"},
    {"cifar10", "cifar10"},
    {"cifar100", "cifar100"},
};

int qgmd_default_data_dir(const char *dataset, char *buf, size_t size) {
  for (size_t i = 0; i < sizeof user_data / sizeof user_data[0]; i++) {
    if (strcmp(dataset, user_data[i].dataset) != 0)
      continue;
    /* The XDG base directory rule: an absolute $XDG_DATA_HOME, else
     * ~/.local/share. */
    const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    int n = xdg && xdg[0] == '/'
                ? snprintf(buf, size, "%s/qgmd/%s", xdg, user_data[i].dir)
                : snprintf(buf, size, "%s/.local/share/qgmd/%s",
                           home ? home : "", user_data[i].dir);
    return n > 0 && (size_t)n < size ? 1 : 0;
  }
  return 0;
}

void qgmd_data_dir_rule(char *buf, size_t size) {
  size_t used = (size_t)snprintf(buf, size, "%s; ", qgmd_flag_find(
      "data-dir", 8)->def);
  for (size_t i = 0; i < sizeof user_data / sizeof user_data[0]; i++)
    used += (size_t)snprintf(buf + (used < size ? used : size),
                             used < size ? size - used : 0,
                             "%s%s: $XDG_DATA_HOME/qgmd/%s", i ? ", " : "",
                             user_data[i].dataset, user_data[i].dir);
  if (used < size)
    snprintf(buf + used, size - used, " (XDG_DATA_HOME unset: "
             "~/.local/share)");
}

void qgmd_config_resolve(qgmd_config_t *cfg) {
  char dir[QGMD_STR_MAX];
  if (!qgmd_config_was_set("data-dir") &&
      qgmd_default_data_dir(cfg->dataset, dir, sizeof dir))
    snprintf(cfg->data_dir, sizeof cfg->data_dir, "%s", dir);
  if (!qgmd_config_was_set("consensus-lr") && qgmd_compressing(cfg) &&
      !(cfg->parsed.unknown &
        (QGMD_UNPARSED_COMPRESS | QGMD_UNPARSED_ALGORITHM)))
    cfg->consensus_lr = qgmd_default_consensus_lr(cfg);
}
