/* fuzz_topology.c - ready for the edge-list topology reader: the input
 * becomes a file and is opened as --topology=file:PATH for 1 to 64 nodes
 * (the first byte). Until that reader lands, qgm_topology_create rejects
 * the name and this exercises only the name lookup. */
#include <stdint.h>

#include "fuzz_util.h"
#include "qgm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int nodes = 1 + data[0] % 64;
  char path[256], name[300];
  fuzz_file("graph.edges", data + 1, size - 1, path, sizeof path);
  snprintf(name, sizeof name, "file:%s", path);
  qgm_topology_t *t;
  if (qgm_topology_create(name, nodes, &t) == 0) {
    int k = qgm_topology_max_degree(t), peers[64];
    double weights[64], self;
    for (int i = 0; k <= 64 && i < nodes; i++)
      qgm_topology_neighbors(t, i, 0, peers, weights, &self);
    qgm_topology_free(t);
  }
  return 0;
}
