/* fuzz_topology.c - the edge-list reader (libqgm/graph/topology_file.c) on
 * arbitrary file contents, through --topology=file:PATH as the daemon
 * opens it. The first byte picks the run: 1 + byte % 64 nodes, and the
 * mixing rule (default, uniform, metropolis) from its top bits. A graph
 * that is accepted must give a W whose rows sum to 1, symmetric, with no
 * negative entry: anything else aborts, as silent garbage. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_util.h"
#include "qgm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_w(const qgm_topology_t *t, int n) {
  static double w[64 * 64];
  qgm_topology_weights(t, 0, w);
  for (int i = 0; i < n; i++) {
    double sum = 0.0;
    for (int j = 0; j < n; j++) {
      if (w[i * n + j] < -1e-9 || fabs(w[i * n + j] - w[j * n + i]) > 1e-9)
        abort();
      sum += w[i * n + j];
    }
    if (fabs(sum - 1.0) > 1e-9)
      abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int nodes = 1 + data[0] % 64;
  char path[256], name[300];
  fuzz_file("graph.edges", data + 1, size - 1, path, sizeof path);
  snprintf(name, sizeof name, "file:%s", path);
  qgm_topology_spec_t spec = {.name = name, .nodes = nodes,
                              .mixing = (qgm_mixing_t)((data[0] >> 6) % 3)};
  qgm_topology_t *t = NULL;
  qgm_topology_error_t why;
  if (qgm_topology_create_ex(&spec, &t, &why) != 0) {
    if (t || why.text[0] == '\0')
      abort(); /* a failure leaves no graph and says why */
    return 0;
  }
  int peers[64];
  double weights[64], self;
  for (int i = 0; i < nodes; i++)
    if (qgm_topology_neighbors(t, i, 0, peers, weights, &self) >
        qgm_topology_max_degree(t))
      abort();
  check_w(t, nodes);
  (void)qgm_topology_hash(t);
  qgm_topology_free(t);
  return 0;
}
