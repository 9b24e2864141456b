# runs.awk - the runs table (runs.tsv: one row per finished run, its
# settings then its results) and how runs group: seeds of one setting form
# a group; groups share a table when they differ only in algorithm and alpha
# (and in settings that go with the algorithm).

# The result columns, in order; the last five come from the summary of
# asynchronous runs only.
function result_columns(cols) {
  return split("final_test_acc_avg_model best_test_acc_avg_model " \
               "final_test_acc_local_mean best_test_acc_local_mean " \
               "final_consensus_dist stability epochs_done train_wall_s " \
               "run_wall_s staleness_mean staleness_max applied_min " \
               "applied_max applied_spread", cols, " ")
}

# Which way is better for a result column: 1 higher, -1 lower, 0 neither
# (staleness and update counts describe a run rather than rank it).
function better(col) {
  if (col ~ /acc/)
    return 1
  if (col ~ /consensus|stability|wall/)
    return -1
  return 0
}

# Loads one line of runs.tsv: the header names COL[name] and NAME[i],
# rows go to CELL[row, i]; ROWS and COLS count them.
function load_row(line,    f, i, n) {
  n = split(line, f, "\t")
  if (ROWS == 0 && COLS == 0) {
    COLS = n
    for (i = 1; i <= n; i++) {
      COL[f[i]] = i
      NAME[i] = f[i]
    }
    ROWS = 0
    return
  }
  ROWS++
  for (i = 1; i <= n; i++)
    CELL[ROWS, i] = f[i]
}

function is_result(name,    cols, n, i) {
  n = result_columns(cols)
  for (i = 1; i <= n; i++)
    if (cols[i] == name)
      return 1
  return 0
}

# After loading: TABLE[r] (every varying setting but seed, algorithm, alpha
# and the settings that go with the algorithm), ALG[r], ALPHA[r];
# TABLES[1..NTABLES], ALGS[1..NALGS] (the paper's order first) and
# ALPHAS[1..NALPHAS] (descending) list the distinct values; ALG_NOTE[a]
# holds the settings that go with algorithm a ("lr=0.005"), ASYNC[t] is
# set for tables of asynchronous runs.
function classify(    r, i, name, seen, vary, key, t) {
  for (i = 1; i <= COLS; i++) {
    name = NAME[i]
    if (name == "run" || is_result(name))
      continue
    for (r = 2; r <= ROWS; r++)
      if (CELL[r, i] != CELL[1, i]) {
        vary[i] = 1
        break
      }
  }
  for (r = 1; r <= ROWS; r++)
    ALG[r] = CELL[r, COL["algorithm"]]
  note_algorithm_settings(vary)
  for (r = 1; r <= ROWS; r++) {
    t = ""
    for (i = 1; i <= COLS; i++) {
      name = NAME[i]
      if (!(i in vary) || name == "seed" || name == "algorithm" ||
          name == "alpha" || (i in WITH_ALG))
        continue
      t = t (t == "" ? "" : " ") name "=" CELL[r, i]
    }
    TABLE[r] = t
    ALPHA[r] = CELL[r, COL["alpha"]]
    if (!((t) in seen)) {
      seen[t] = 1
      TABLES[++NTABLES] = t
    }
    if ("staleness_mean" in COL && CELL[r, COL["staleness_mean"]] != "")
      ASYNC[t] = 1
  }
  order_algorithms()
  order_alphas()
}

# A varying setting that has one value per algorithm (a spec line `lr =
# 0.005 if algorithm = asgd-m`) goes with the algorithm: it must not split
# the comparison into tables. Marks such columns in WITH_ALG and fills
# ALG_NOTE.
function note_algorithm_settings(vary,    i, r, value, fixed, a) {
  for (i = 1; i <= COLS; i++) {
    if (!(i in vary) || NAME[i] == "seed" || NAME[i] == "algorithm" ||
        NAME[i] == "alpha")
      continue
    split("", value)
    fixed = 1
    for (r = 1; r <= ROWS && fixed; r++) {
      if ((ALG[r] in value) && value[ALG[r]] != CELL[r, i])
        fixed = 0
      value[ALG[r]] = CELL[r, i]
    }
    if (!fixed)
      continue
    WITH_ALG[i] = 1
    for (a in value)
      ALG_NOTE[a] = ALG_NOTE[a] (ALG_NOTE[a] == "" ? "" : " ") NAME[i] "=" value[a]
  }
}

# An algorithm's name in a table, with the settings that go with it.
function alg_label(a) {
  return ALG_NOTE[a] == "" ? a : a " (" ALG_NOTE[a] ")"
}

function order_algorithms(    known, n, i, r, have, j, tmp) {
  n = split("dsgd dsgdm dsgdm-n qg-dsgdm qg-dsgdm-n d2 gt dadam qg-dadam " \
            "allreduce asgd asgd-m gsgm", known, " ")
  for (r = 1; r <= ROWS; r++)
    have[ALG[r]] = 1
  NALGS = 0
  for (i = 1; i <= n; i++)
    if (known[i] in have) {
      ALGS[++NALGS] = known[i]
      delete have[known[i]]
    }
  for (r = 1; r <= ROWS; r++)
    if (ALG[r] in have) {
      ALGS[++NALGS] = ALG[r]
      delete have[ALG[r]]
    }
}

function order_alphas(    r, have, i, j, tmp) {
  NALPHAS = 0
  for (r = 1; r <= ROWS; r++)
    if (!(ALPHA[r] in have)) {
      have[ALPHA[r]] = 1
      ALPHAS[++NALPHAS] = ALPHA[r]
    }
  for (i = 2; i <= NALPHAS; i++)
    for (j = i; j > 1 && ALPHAS[j] + 0 > ALPHAS[j - 1] + 0; j--) {
      tmp = ALPHAS[j]
      ALPHAS[j] = ALPHAS[j - 1]
      ALPHAS[j - 1] = tmp
    }
}

# Mean and sample standard deviation (0 for one value) of column col over
# the rows of table t, algorithm a and alpha x; sets STAT_N, STAT_MEAN,
# STAT_STD and returns STAT_N.
function stat(t, a, x, col,    r, c, n, s, ss, v) {
  c = COL[col]
  n = s = ss = 0
  for (r = 1; r <= ROWS; r++)
    if (TABLE[r] == t && ALG[r] == a && ALPHA[r] == x && CELL[r, c] != "") {
      v = CELL[r, c] + 0
      n++
      s += v
      ss += v * v
    }
  STAT_N = n
  STAT_MEAN = n ? s / n : 0
  v = n > 1 ? (ss - s * s / n) / (n - 1) : 0
  STAT_STD = v > 0 ? sqrt(v) : 0
  return n
}

# A name usable in a file name.
function file_part(s) {
  gsub(/[^A-Za-z0-9.=+-]+/, "_", s)
  return s
}
