/* optim_state.c - an optimizer's state as a list of named vectors, so that
 * a checkpoint can hold every buffer without knowing the algorithm: the
 * model x first, then each buffer the algorithm keeps between steps.
 * Scratch buffers (the gradient, the message, the mix buffer) are
 * overwritten every step and are not state. */
#include "qgm.h"

int qgm_optim_num_state(const qgm_optim_t *o) {
  return qgm_optim_momentum(o) ? 2 : 1;
}

float *qgm_optim_state(qgm_optim_t *o, int i, const char **name,
                       size_t *len) {
  float *v = NULL;
  const char *n = NULL;
  if (i == 0) {
    v = qgm_optim_params(o);
    n = "x";
  } else if (i == 1) {
    /* The buffer is the optimizer's own and writable; the public getter
     * is const only to keep callers from changing it by accident. */
    v = (float *)(uintptr_t)qgm_optim_momentum(o);
    n = "m";
  }
  if (!v)
    return NULL;
  if (name)
    *name = n;
  if (len)
    *len = qgm_optim_dim(o);
  return v;
}
