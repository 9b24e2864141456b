/* profile.c - the layer hook (qgm_set_layer_hook): the models mark where
 * each layer starts and ends, and a benchmark that installed a hook times
 * the spans. libqgm itself reads no clock. */
#include "nn/layers.h"

static qgm_layer_hook_fn hook;
static void *hook_user;

void qgm_set_layer_hook(qgm_layer_hook_fn fn, void *user) {
  hook = fn;
  hook_user = user;
}

int qgm__layer_hooked(void) { return hook != NULL; }

void qgm__layer_mark(const qgm_layer_span_t *span, int end) {
  if (hook)
    hook(hook_user, span, end);
}
