/* partition.c - the Dirichlet-alpha non-IID partition of
 * docs/DATA_AND_MODELS.md ("The non-IID partition").
 *
 * It follows build_non_iid_by_dirichlet and DataPartitioner of the paper's
 * official code (epfml/quasi-global-momentum, pcode/datasets/partition_data.py)
 * step by step, so that "alpha = 0.1" means the same degree of heterogeneity
 * here as in the paper. The random numbers differ (xoshiro, not numpy's
 * MT19937), so the shards are equal in distribution, not bit for bit.
 *
 * Every rank runs this with the same seed and gets the same answer, which is
 * why no rank has to broadcast the partition. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "qgm.h"

/* The official code hands each chunk of the data to at most this many
 * nodes ("n_auxi_workers"); it bounds the size of every Dirichlet draw. */
#define GROUP_NODES 10

/* The official while loop has no bound: with few classes and many nodes per
 * chunk (e.g. 2 classes, 10 nodes, small alpha) it can never reach its
 * minimum-size target. After this many rounds the last assignment is kept;
 * that is harmless because the final equal-length slicing (step 4) gives
 * every node floor(N/n) samples whatever the per-node lists look like. With
 * the paper's settings the loop ends after a handful of rounds. */
#define MAX_ROUNDS 1000

/* Redraws of a degenerate Dirichlet sample before the fallback; see
 * draw_proportions. */
#define MAX_REDRAWS 8

/* One chunk: S samples served by k nodes. */
typedef struct chunk {
  size_t size;  /* S */
  size_t k;     /* nodes serving it */
  size_t *byclass;      /* the chunk's indices grouped by class, stable */
  size_t *class_start;  /* classes + 1 offsets into byclass */
  size_t *cuts;         /* classes x (k + 1) cut positions of one round */
  size_t *sizes;        /* k per-node list lengths of one round */
  double *p;            /* k proportions */
} chunk_t;

/* Draws p ~ Dir(alpha * 1_k), zeroes the nodes that already hold >= S/k
 * samples and renormalises. Returns 0 when that is degenerate: every gamma
 * draw underflowed to 0 (tiny alpha: Gamma(a) = Gamma(a+1) * U^(1/a)), or
 * all the mass fell on full nodes. numpy would then divide by zero and split
 * at garbage positions; we report it and let the caller redraw. */
static int draw_proportions(qgm_rng_t *rng, double alpha, const chunk_t *ch) {
  size_t k = ch->k;
  double *p = ch->p;
  double gmax = 0.0;
  for (size_t j = 0; j < k; j++) {
    p[j] = qgm_rng_gamma(rng, alpha);
    if (p[j] > gmax)
      gmax = p[j];
  }
  /* Scaling by the largest draw before summing keeps the sum finite for a
   * huge alpha and in range for draws that are tiny but not zero. */
  if (!(gmax > 0.0) || !isfinite(gmax))
    return 0;
  double sum = 0.0;
  for (size_t j = 0; j < k; j++) {
    p[j] /= gmax;
    sum += p[j];
  }
  double kept = 0.0;
  for (size_t j = 0; j < k; j++) {
    p[j] /= sum;
    /* len(idx_j) < S/k, in exact integer arithmetic. */
    if (ch->sizes[j] * k >= ch->size)
      p[j] = 0.0;
    kept += p[j];
  }
  if (!(kept > 0.0) || !isfinite(kept))
    return 0;
  for (size_t j = 0; j < k; j++)
    p[j] /= kept;
  return 1;
}

/* One round of the while loop: every class of the chunk is split among the
 * k nodes, recording only the cut positions (piece j of class c is
 * byclass[class_start[c] + cuts[c][j] .. cuts[c][j+1])), so a round costs
 * O(classes * k) whatever S is. Returns the smallest node size; *drawn
 * tells whether any class was split by a Dirichlet draw rather than by the
 * deterministic fallback. */
static size_t assign_round(qgm_rng_t *rng, double alpha, int classes,
                           chunk_t *ch, int *drawn) {
  size_t k = ch->k;
  *drawn = 0;
  memset(ch->sizes, 0, k * sizeof *ch->sizes);
  for (int c = 0; c < classes; c++) {
    size_t len = ch->class_start[c + 1] - ch->class_start[c];
    size_t *cut = ch->cuts + (size_t)c * (k + 1);
    int ok = 0;
    /* The official code draws for every class, present or not; so do we,
     * to keep the stream of draws independent of which classes a chunk
     * happens to miss. */
    for (int t = 0; t < MAX_REDRAWS && !ok; t++)
      ok = draw_proportions(rng, alpha, ch);
    cut[0] = 0;
    cut[k] = len;
    if (ok) {
      *drawn = 1;
      double cum = 0.0;
      for (size_t j = 1; j < k; j++) {
        cum += ch->p[j - 1];
        double pos = cum * (double)len;
        /* Rounding can push the cumulative sum a hair past 1; clamp so the
         * pieces stay inside the class and in order. */
        size_t at = pos >= (double)len ? len : (size_t)pos;
        cut[j] = at < cut[j - 1] ? cut[j - 1] : at;
      }
    } else {
      /* Still degenerate after MAX_REDRAWS draws: give the whole class to
       * the node holding the fewest samples (lowest id on ties). That is
       * what a Dirichlet with vanishing alpha does anyway (all mass on one
       * node), and choosing the emptiest node keeps the balancing intent of
       * the p_j = 0 rule. */
      size_t m = 0;
      for (size_t j = 1; j < k; j++)
        if (ch->sizes[j] < ch->sizes[m])
          m = j;
      for (size_t j = 1; j < k; j++)
        cut[j] = j <= m ? 0 : len;
    }
    for (size_t j = 0; j < k; j++)
      ch->sizes[j] += cut[j + 1] - cut[j];
  }
  size_t min = ch->sizes[0];
  for (size_t j = 1; j < k; j++)
    if (ch->sizes[j] < min)
      min = ch->sizes[j];
  return min;
}

/* Partitions the chunk idx[0..S) in place: on return idx holds node 0's
 * list, then node 1's, ..., which is this chunk's part of the concatenation
 * of step 4. */
static void partition_chunk(qgm_rng_t *rng, const uint8_t *labels,
                            int classes, double alpha, size_t *idx,
                            chunk_t *ch) {
  size_t S = ch->size, k = ch->k;

  /* Group by class keeping chunk order (a counting sort), as
   * np.where(targets == c) does. */
  memset(ch->class_start, 0, ((size_t)classes + 1) * sizeof *ch->class_start);
  for (size_t i = 0; i < S; i++)
    ch->class_start[labels[idx[i]] + 1]++;
  for (int c = 0; c < classes; c++)
    ch->class_start[c + 1] += ch->class_start[c];
  for (size_t i = 0; i < S; i++)
    ch->byclass[ch->class_start[labels[idx[i]]]++] = idx[i];
  /* The fill advanced every start to the next class's start; shift back. */
  memmove(ch->class_start + 1, ch->class_start,
          (size_t)classes * sizeof *ch->class_start);
  ch->class_start[0] = 0;

  /* int(0.5 * S / k) in exact integer arithmetic. Python skips the loop
   * entirely when this is 0 (S < 2k) and then reuses a stale or undefined
   * list; we always run at least one round instead. */
  size_t target = S / (2 * k);
  for (int round = 0; round < MAX_ROUNDS; round++) {
    int drawn;
    if (assign_round(rng, alpha, classes, ch, &drawn) >= target)
      break;
    /* A round decided entirely by the fallback is the vanishing-alpha
     * limit (e.g. alpha = 1e-300, where every gamma draw underflows); the
     * next rounds would almost surely repeat it at the cost of
     * MAX_REDRAWS * k draws per class, so keep it. */
    if (!drawn)
      break;
  }

  size_t out = 0;
  for (size_t j = 0; j < k; j++)
    for (int c = 0; c < classes; c++) {
      const size_t *cut = ch->cuts + (size_t)c * (k + 1);
      size_t n = cut[j + 1] - cut[j];
      memcpy(idx + out, ch->byclass + ch->class_start[c] + cut[j],
             n * sizeof *idx);
      out += n;
    }
}

int qgm_partition_dirichlet(const uint8_t *labels, size_t count, int classes,
                            int nodes, double alpha, uint64_t seed,
                            size_t **shards, size_t *shard_len) {
  if (shards)
    *shards = NULL;
  if (shard_len)
    *shard_len = 0;
  if (!shards || !shard_len || !labels || nodes < 1 ||
      classes < 1 || classes > 256 || !(alpha > 0.0) || !isfinite(alpha))
    return QGM_EINVAL;
  for (size_t i = 0; i < count; i++)
    if (labels[i] >= classes)
      return QGM_EINVAL;
  if (count < (size_t)nodes)
    return QGM_ETOOSMALL;

  size_t n = (size_t)nodes, N = count;
  size_t group = n < GROUP_NODES ? n : GROUP_NODES;
  size_t bytes = qgm__mul_size(N, sizeof(size_t));
  size_t cut_bytes =
      qgm__mul_size((size_t)classes * (group + 1), sizeof(size_t));
  if (bytes == 0 || cut_bytes == 0)
    return QGM_ENOMEM;

  size_t *idx = malloc(bytes);
  chunk_t ch = {0};
  ch.byclass = malloc(bytes);
  ch.class_start = malloc(((size_t)classes + 1) * sizeof *ch.class_start);
  ch.cuts = malloc(cut_bytes);
  ch.sizes = malloc(group * sizeof *ch.sizes);
  ch.p = malloc(group * sizeof *ch.p);
  int rc = QGM_ENOMEM;
  if (!idx || !ch.byclass || !ch.class_start || !ch.cuts || !ch.sizes ||
      !ch.p)
    goto done;

  qgm_rng_t rng;
  qgm_rng_seed(&rng, seed, 0);
  /* Shuffling the indices is shuffling the (index, label) pairs: the label
   * is looked up through the index. */
  for (size_t i = 0; i < N; i++)
    idx[i] = i;
  qgm_rng_shuffle(&rng, idx, N);

  /* int(10 / n * N), computed as the official code does (in doubles), so
   * that chunk boundaries agree with it exactly. For n <= 10 it is >= N and
   * there is a single chunk. */
  size_t nchunks = (n + GROUP_NODES - 1) / GROUP_NODES;
  size_t step = (size_t)((double)GROUP_NODES / (double)n * (double)N);
  size_t left = n;
  for (size_t c = 0; c < nchunks; c++) {
    size_t from = c * step;
    size_t to = c + 1 == nchunks ? N : from + step;
    if (from > N)
      from = N;
    if (to > N)
      to = N;
    ch.size = to - from;
    ch.k = left < GROUP_NODES ? left : GROUP_NODES;
    left -= ch.k;
    partition_chunk(&rng, labels, classes, alpha, idx + from, &ch);
  }

  /* Step 4: the concatenation is idx itself; node i's shard is its slice
   * [i*L, (i+1)*L), which makes idx[0..n*L) the row-major result. */
  size_t L = N / n;
  size_t *shrunk = realloc(idx, n * L * sizeof *idx);
  if (shrunk)
    idx = shrunk; /* otherwise the larger block serves just as well */
  *shards = idx;
  *shard_len = L;
  idx = NULL;
  rc = QGM_OK;

done:
  free(idx);
  free(ch.byclass);
  free(ch.class_start);
  free(ch.cuts);
  free(ch.sizes);
  free(ch.p);
  return rc;
}
