# summary.awk - runs.tsv to summary.md: per table (runs that differ only in
# algorithm, alpha and seed), accuracy pivots algorithm x alpha and every
# metric, as mean +- standard deviation over seeds, the best in bold; with
# several tables, an overview of all of them first.
# -v K=evaluations covered by the stability column.

{ load_row($0) }

# "12.34 ± 0.56" for the current STAT_*, in percent for accuracies.
function cell(col,    scale, digits) {
  scale = col ~ /acc|stability/ ? 100 : 1
  if (col ~ /consensus/)
    return sprintf("%.3g ± %.2g", STAT_MEAN, STAT_STD)
  digits = col ~ /wall|applied/ ? 1 : 2
  return sprintf("%." digits "f ± %." digits "f", STAT_MEAN * scale, STAT_STD * scale)
}

function bold_if(text, is_best) {
  return is_best ? "**" text "**" : text
}

# The best mean of col over algorithms in table t at alpha x ("" when the
# column ranks nothing).
function best_mean(t, x, col,    a, best, dir) {
  dir = better(col)
  best = ""
  if (!dir)
    return best
  for (a = 1; a <= NALGS; a++)
    if (stat(t, ALGS[a], x, col) && (best == "" || dir * STAT_MEAN > dir * best))
      best = STAT_MEAN
  return best
}

# The current STAT_* as a table cell, in bold when it is the best mean.
function stat_cell(col, best) {
  return bold_if(cell(col), best != "" && STAT_MEAN == best)
}

function pivot(t, col, title,    a, x, line, best) {
  printf "%s\n\n| algorithm |", title
  for (x = 1; x <= NALPHAS; x++)
    printf " alpha = %s |", ALPHAS[x]
  printf "\n|---|"
  for (x = 1; x <= NALPHAS; x++)
    printf "---:|"
  printf "\n"
  for (a = 1; a <= NALGS; a++) {
    line = "| " alg_label(ALGS[a]) " |"
    for (x = 1; x <= NALPHAS; x++) {
      best = best_mean(t, ALPHAS[x], col)
      if (stat(t, ALGS[a], ALPHAS[x], col))
        line = line " " stat_cell(col, best) " |"
      else
        line = line " – |"
    }
    print line
  }
  printf "\n"
}

function heading(col) {
  if (col == "final_test_acc_avg_model") return "final acc, avg model (%)"
  if (col == "best_test_acc_avg_model") return "best acc, avg model (%)"
  if (col == "final_test_acc_local_mean") return "final acc, local mean (%)"
  if (col == "best_test_acc_local_mean") return "best acc, local mean (%)"
  if (col == "final_consensus_dist") return "final consensus dist"
  if (col == "stability")
    return "stability: std of avg-model acc over last " K " evals (pp)"
  if (col == "staleness_mean") return "staleness, mean"
  if (col == "applied_spread") return "applied per worker, max - min"
  if (col == "run_wall_s") return "wall time (s)"
  return col
}

# The metric columns of table t: an asynchronous run has one model, so the
# local-model accuracies and the consensus distance say nothing there.
function metric_columns(t, cols) {
  if (ASYNC[t])
    return split("final_test_acc_avg_model best_test_acc_avg_model " \
                 "stability staleness_mean applied_spread run_wall_s", cols, " ")
  return split("final_test_acc_avg_model best_test_acc_avg_model " \
               "final_test_acc_local_mean best_test_acc_local_mean " \
               "final_consensus_dist stability run_wall_s", cols, " ")
}

# The heading and alignment rows: the leading columns, then one numeric
# column per metric.
function table_head(lead, align, cols, n,    i) {
  for (i = 1; i <= n; i++) {
    lead = lead " " heading(cols[i]) " |"
    align = align "---:|"
  }
  print lead
  print align
}

function details(t,    cols, n, i, x, a, line, best) {
  n = metric_columns(t, cols)
  print "All metrics (best per alpha in bold):\n"
  table_head("| alpha | algorithm | seeds |", "|---:|---|---:|", cols, n)
  for (x = 1; x <= NALPHAS; x++)
    for (a = 1; a <= NALGS; a++) {
      if (!stat(t, ALGS[a], ALPHAS[x], cols[1]))
        continue
      line = "| " ALPHAS[x] " | " alg_label(ALGS[a]) " | " STAT_N " |"
      for (i = 1; i <= n; i++) {
        best = best_mean(t, ALPHAS[x], cols[i])
        stat(t, ALGS[a], ALPHAS[x], cols[i])
        line = line " " stat_cell(cols[i], best) " |"
      }
      print line
    }
  printf "\n"
}

# One row per group, alpha slowest: the whole sweep in one table.
function overview(    cols, n, i, x, t, a, line, any_async, best) {
  for (t = 1; t <= NTABLES; t++)
    if (ASYNC[TABLES[t]])
      any_async = 1
  n = split("final_test_acc_avg_model stability" \
            (any_async ? " staleness_mean applied_spread" : ""), cols, " ")
  print "## All groups\n"
  print "Best per alpha and settings in bold.\n"
  table_head("| alpha | settings | algorithm | seeds |", "|---:|---|---|---:|",
             cols, n)
  for (x = 1; x <= NALPHAS; x++)
    for (t = 1; t <= NTABLES; t++)
      for (a = 1; a <= NALGS; a++) {
        if (!stat(TABLES[t], ALGS[a], ALPHAS[x], cols[1]))
          continue
        line = "| " ALPHAS[x] " | " TABLES[t] " | " alg_label(ALGS[a]) " | " \
               STAT_N " |"
        for (i = 1; i <= n; i++) {
          best = best_mean(TABLES[t], ALPHAS[x], cols[i])
          if (stat(TABLES[t], ALGS[a], ALPHAS[x], cols[i]))
            line = line " " stat_cell(cols[i], best) " |"
          else
            line = line " – |"
        }
        print line
      }
  printf "\n"
}

END {
  classify()
  print "# Sweep summary\n"
  printf "%d finished runs. Cells are mean ± standard deviation over seeds " \
         "(sample std, n-1; 0 for a single seed).\n", ROWS
  printf "Accuracies are on the test set, in percent: *avg model* is the " \
         "model whose parameters are the mean of all nodes', *local mean* " \
         "the mean over nodes of each node's own model.\n"
  printf "**Stability** is the standard deviation (population, n) of the " \
         "avg-model test accuracy over the last %d evaluations of a run " \
         "(fewer if the run has fewer), in percentage points: lower is " \
         "steadier.\n", K
  for (t = 1; t <= NTABLES; t++)
    if (ASYNC[TABLES[t]]) {
      printf "Asynchronous runs (parameter server) have one model, the " \
             "server's: it is the avg model. *Staleness* is the mean over " \
             "applied gradients of the updates made since the model they " \
             "were computed on; *applied per worker, max - min* the spread " \
             "of the number of gradients applied per worker (0-1: even).\n"
      break
    }
  for (a = 1; a <= NALGS; a++)
    if (ALG_NOTE[ALGS[a]] != "") {
      printf "Settings in parentheses after an algorithm go with it (they " \
             "have one value per algorithm), so they do not split tables.\n"
      break
    }
  printf "\n"
  if (NTABLES > 1)
    overview()
  for (t = 1; t <= NTABLES; t++) {
    printf "## %s\n\n", TABLES[t] == "" ? "All runs" : TABLES[t]
    pivot(TABLES[t], "final_test_acc_avg_model",
          "Final test accuracy of the averaged model (%):")
    if (ASYNC[TABLES[t]])
      pivot(TABLES[t], "stability",
            "Stability, std of the accuracy over the last " K \
            " evaluations (pp, lower is steadier):")
    else
      pivot(TABLES[t], "final_test_acc_local_mean",
            "Final test accuracy of the local models, mean over nodes (%):")
    details(TABLES[t])
  }
}
