/* test_set.c - see test_set.h. */
#include "test_set.h"

#include <stdio.h>
#include <string.h>

/* What the first rank tells the others of the test set. */
enum { SHAPE_STATUS, SHAPE_COUNT, SHAPE_CHANNELS, SHAPE_HEIGHT, SHAPE_WIDTH,
       SHAPE_CLASSES, SHAPE_HASH, SHAPE_FIELDS };

void qgmd_test_set_init(qgmd_test_set_t *t, MPI_Comm host) {
  t->window = MPI_WIN_NULL;
  t->host = host;
  int here;
  MPI_Comm_rank(t->host, &here);
  MPI_Comm_size(t->host, &t->ranks);
  t->first = here == 0;
}

/* The first rank's test set into the window, and every rank's view of it. */
static int share(qgmd_test_set_t *t, const uint64_t *shape,
                 qgm_dataset_t **test) {
  const size_t count = (size_t)shape[SHAPE_COUNT];
  const size_t dim = (size_t)(shape[SHAPE_CHANNELS] * shape[SHAPE_HEIGHT] *
                              shape[SHAPE_WIDTH]);
  const size_t floats = count * dim * sizeof(float);
  uint8_t *base = NULL;
  MPI_Win_allocate_shared(t->first ? (MPI_Aint)(floats + count) : 0, 1,
                          MPI_INFO_NULL, t->host, &base, &t->window);
  MPI_Aint size;
  int unit;
  MPI_Win_shared_query(t->window, 0, &size, &unit, &base);
  MPI_Win_fence(0, t->window);
  if (t->first) {
    memcpy(base, qgm_dataset_images(*test), floats);
    memcpy(base + floats, qgm_dataset_labels(*test), count);
    qgm_dataset_free(*test);
    *test = NULL;
  }
  MPI_Win_fence(0, t->window); /* the test set is written */
  return qgm_dataset_view((const float *)(const void *)base, base + floats,
                          count, (size_t)shape[SHAPE_CHANNELS],
                          (size_t)shape[SHAPE_HEIGHT],
                          (size_t)shape[SHAPE_WIDTH],
                          (int)shape[SHAPE_CLASSES], test);
}

int qgmd_test_set_share(qgmd_test_set_t *t, int status, qgm_dataset_t **test,
                        char *err, size_t errlen) {
  uint64_t shape[SHAPE_FIELDS] = {(uint64_t)status};
  if (t->first && status == 0) {
    size_t c, h, w;
    qgm_dataset_shape(*test, &c, &h, &w);
    shape[SHAPE_COUNT] = qgm_dataset_count(*test);
    shape[SHAPE_CHANNELS] = c;
    shape[SHAPE_HEIGHT] = h;
    shape[SHAPE_WIDTH] = w;
    shape[SHAPE_CLASSES] = (uint64_t)qgm_dataset_classes(*test);
    shape[SHAPE_HASH] = qgm_dataset_hash(*test);
  }
  int worst = status;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, t->host);
  MPI_Bcast(shape, SHAPE_FIELDS, MPI_UINT64_T, 0, t->host);
  if (status == 0 && shape[SHAPE_STATUS] != 0)
    snprintf(err, errlen, "the first rank of this host could not load the "
             "test set");
  if (worst != 0)
    return worst;
  t->hash = shape[SHAPE_HASH];
  if (t->ranks > 1 && share(t, shape, test) != 0) {
    snprintf(err, errlen, "the test set shared on this host is not a "
             "dataset");
    return 1;
  }
  return 0;
}

void qgmd_test_set_free(qgmd_test_set_t *t) {
  if (t->ranks == 0)
    return;
  if (t->window != MPI_WIN_NULL)
    MPI_Win_free(&t->window);
  t->ranks = 0;
}
