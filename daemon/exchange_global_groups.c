/* exchange_global_groups.c - the all-reduce's phases between groups (see
 * exchange_global.c): slot s of every group holds its group's sum of
 * slice s, and all of them end with the sum over the groups.
 *
 * The slice is cut into as many parts as there are groups, part p owned
 * by group bitrev(p). With a power of two of groups, the slots pair off as
 * recursive halving does (Rabenseifner): at step k group g and group
 * g ^ 2^k each keep one half of the parts they hold, the half whose
 * owners agree with them in bit k, and send the other, and each adds
 * what it receives to what it kept. Both held sums over adjacent aligned
 * blocks of 2^k groups, so the result is the sum over the block of
 * 2^(k+1): the tree of qgm_vec_tree_sum, level by level, which the same
 * bits on any placement need. The owners are bit-reversed so that what a
 * group holds stays one contiguous range. The gathering walks the steps
 * back, each pair swapping what it holds. A slot then exchanges with one
 * peer at a time, as Open MPI's own all-reduce does: each host link
 * carries one message each way per slot and step, and 2 (H - 1) / H of
 * the model in all.
 *
 * Another number of groups takes one step each way: every slot sends
 * every other group's slot its part, sums its own part over the groups
 * with qgm_vec_tree_sum, and sends the sum back to all. */
#include <stdlib.h>

#include "exchange_global.h"
#include "mpi_tags.h"

static qgmd_global_t *global_of(const qgmd_exchange_t *x) {
  return x->kind_state;
}

/* The first element of part p of this node's slice (p == groups: its
 * end), and the elements of parts [p, p + count). */
static size_t part_at(const qgmd_exchange_t *x, int p) {
  const qgmd_global_t *gl = global_of(x);
  if (p == gl->groups)
    return x->slice_len;
  size_t at, len;
  qgm_host_slice(x->slice_len, gl->groups, p, &at, &len);
  return at;
}

static size_t parts_len(const qgmd_exchange_t *x, int p, int count) {
  return part_at(x, p + count) - part_at(x, p);
}

/* The rank of slot s in group h. */
static int slot_of_group(const qgmd_global_t *gl, int h) {
  return h * gl->group_size + gl->slot;
}

/* Posts the exchange with peer `rank`: `recv` of recv_len floats from it,
 * `send` of send_len to it. */
static void swap(qgmd_exchange_t *x, int rank, float *recv, size_t recv_len,
                 const float *send, size_t send_len, int tag) {
  const int j = qgmd__global_peer(x, rank);
  MPI_Irecv(recv, (int)recv_len, MPI_FLOAT, rank, tag, MPI_COMM_WORLD,
            &x->requests[j]);
  MPI_Isend(send, (int)send_len, MPI_FLOAT, rank, tag, MPI_COMM_WORLD,
            &x->requests[x->degree + j]);
  qgmd__exchange_count(x, rank, (double)send_len * sizeof(float), 0);
}

int qgmd__groups_init(qgmd_exchange_t *x) {
  qgmd_global_t *gl = global_of(x);
  gl->levels = 0;
  while ((1 << gl->levels) < gl->groups)
    gl->levels++;
  if ((1 << gl->levels) != gl->groups)
    gl->levels = -1; /* not a power of two: one step each way */
  /* Halving receives at most half the slice (and one float a part of
   * rounding); one step receives the own part from every group. */
  const size_t room = gl->levels >= 0
                          ? x->slice_len / 2 + (size_t)gl->groups
                          : (size_t)gl->groups *
                                (x->slice_len / (size_t)gl->groups + 2);
  gl->parts = malloc((room + 1) * sizeof(float));
  return gl->parts ? 0 : QGM_ENOMEM;
}

/* The steps, each posted by post_ and finished by its partner. */
static int post_reduce(qgmd_exchange_t *x) {
  qgmd_global_t *gl = global_of(x);
  float *sum = qgmd__global_sum(x);
  qgmd__global_clear(x);
  if (gl->levels < 0) { /* every other group's part of the slice to it */
    const int mine = gl->group;
    const size_t len = parts_len(x, mine, 1);
    for (int h = 0; h < gl->groups; h++)
      if (h != mine)
        swap(x, slot_of_group(gl, h), gl->parts + (size_t)h * (len + 1), len,
             sum + part_at(x, h), parts_len(x, h, 1), QGMD_SUM_REDUCE_TAG);
    return qgmd__global_posted(x, 1);
  }
  const int k = gl->step, half = gl->count / 2;
  const int upper = (gl->group >> k) & 1; /* keeps the upper half */
  const int keep = gl->lo + (upper ? half : 0);
  const int give = gl->lo + (upper ? 0 : half);
  swap(x, slot_of_group(gl, gl->group ^ (1 << k)), gl->parts,
       parts_len(x, keep, half), sum + part_at(x, give),
       parts_len(x, give, half), QGMD_SUM_REDUCE_TAG);
  gl->lo = keep;
  gl->count = half;
  return qgmd__global_posted(x, 1);
}

/* Adds what came to what this node kept; whether another step follows. */
static int reduced(qgmd_exchange_t *x) {
  qgmd_global_t *gl = global_of(x);
  float *sum = qgmd__global_sum(x);
  if (gl->levels < 0) {
    const int mine = gl->group;
    const size_t len = parts_len(x, mine, 1);
    float *own = sum + part_at(x, mine);
    const float *from[gl->groups];
    for (int h = 0; h < gl->groups; h++)
      from[h] = h == mine ? own : gl->parts + (size_t)h * (len + 1);
    /* qgm_vec_tree_sum reads a block of every input before it writes. */
    qgm_vec_tree_sum(own, from, gl->groups, len);
    return 0;
  }
  qgm_vec_axpy(sum + part_at(x, gl->lo), 1.0f, gl->parts,
               parts_len(x, gl->lo, gl->count));
  return ++gl->step < gl->levels;
}

static int post_gather(qgmd_exchange_t *x) {
  qgmd_global_t *gl = global_of(x);
  float *sum = qgmd__global_sum(x);
  qgmd__global_clear(x);
  if (gl->levels < 0) { /* the summed own part to every other group */
    const int mine = gl->group;
    for (int h = 0; h < gl->groups; h++)
      if (h != mine)
        swap(x, slot_of_group(gl, h), sum + part_at(x, h),
             parts_len(x, h, 1), sum + part_at(x, mine),
             parts_len(x, mine, 1), QGMD_SUM_GATHER_TAG);
    return qgmd__global_posted(x, 1);
  }
  const int k = gl->step - 1; /* the steps back, from the last */
  const int upper = (gl->group >> k) & 1;
  const int theirs = upper ? gl->lo - gl->count : gl->lo + gl->count;
  swap(x, slot_of_group(gl, gl->group ^ (1 << k)), sum + part_at(x, theirs),
       parts_len(x, theirs, gl->count), sum + part_at(x, gl->lo),
       parts_len(x, gl->lo, gl->count), QGMD_SUM_GATHER_TAG);
  gl->lo = upper ? theirs : gl->lo;
  gl->count *= 2;
  return qgmd__global_posted(x, 1);
}

/* Whether another gathering step follows. */
static int gathered(qgmd_exchange_t *x) {
  qgmd_global_t *gl = global_of(x);
  return gl->levels > 0 && --gl->step > 0;
}

int qgmd__groups_start(qgmd_exchange_t *x) {
  qgmd_global_t *gl = global_of(x);
  if (gl->groups == 1)
    return 0;
  gl->step = gl->gathering = 0;
  gl->lo = 0;
  gl->count = gl->groups;
  return post_reduce(x);
}

int qgmd__groups_advance(qgmd_exchange_t *x) {
  qgmd_global_t *gl = global_of(x);
  if (gl->groups == 1)
    return 0;
  if (!gl->gathering) {
    if (reduced(x))
      return post_reduce(x);
    gl->gathering = 1;
    return post_gather(x);
  }
  return gathered(x) ? post_gather(x) : 0;
}
