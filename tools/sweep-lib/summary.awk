# summary.awk - runs.tsv to summary.md: per table (runs that differ only in
# algorithm, alpha and seed), accuracy pivots algorithm x alpha and every
# metric, as mean +- standard deviation over seeds, the best in bold.
# -v K=evaluations covered by the stability column.

{ load_row($0) }

# "12.34 ± 0.56" for the current STAT_*, in percent for accuracies.
function cell(col,    scale, digits) {
  scale = col ~ /acc|stability/ ? 100 : 1
  if (col ~ /consensus/)
    return sprintf("%.3g ± %.2g", STAT_MEAN, STAT_STD)
  digits = col ~ /wall/ ? 1 : 2
  return sprintf("%." digits "f ± %." digits "f", STAT_MEAN * scale, STAT_STD * scale)
}

function bold_if(text, is_best) {
  return is_best ? "**" text "**" : text
}

# The best mean of col over algorithms in table t at alpha x.
function best_mean(t, x, col,    a, best, dir) {
  dir = better(col)
  best = ""
  for (a = 1; a <= NALGS; a++)
    if (stat(t, ALGS[a], x, col) && (best == "" || dir * STAT_MEAN > dir * best))
      best = STAT_MEAN
  return best
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
    line = "| " ALGS[a] " |"
    for (x = 1; x <= NALPHAS; x++) {
      best = best_mean(t, ALPHAS[x], col)
      if (stat(t, ALGS[a], ALPHAS[x], col))
        line = line " " bold_if(cell(col), STAT_MEAN == best) " |"
      else
        line = line " – |"
    }
    print line
  }
  printf "\n"
}

function details(t,    cols, n, i, x, a, line, header, best) {
  n = split("final_test_acc_avg_model best_test_acc_avg_model " \
            "final_test_acc_local_mean best_test_acc_local_mean " \
            "final_consensus_dist stability run_wall_s", cols, " ")
  header = "| alpha | algorithm | seeds | final acc, avg model (%) | " \
           "best acc, avg model (%) | final acc, local mean (%) | " \
           "best acc, local mean (%) | final consensus dist | " \
           "stability: std of avg-model acc over last " K " evals (pp) | " \
           "wall time (s) |"
  print "All metrics (best per alpha in bold):\n"
  print header
  print "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  for (x = 1; x <= NALPHAS; x++)
    for (a = 1; a <= NALGS; a++) {
      if (!stat(t, ALGS[a], ALPHAS[x], cols[1]))
        continue
      line = "| " ALPHAS[x] " | " ALGS[a] " | " STAT_N " |"
      for (i = 1; i <= n; i++) {
        best = best_mean(t, ALPHAS[x], cols[i])
        stat(t, ALGS[a], ALPHAS[x], cols[i])
        line = line " " bold_if(cell(cols[i]), STAT_MEAN == best) " |"
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
         "steadier.\n\n", K
  for (t = 1; t <= NTABLES; t++) {
    printf "## %s\n\n", TABLES[t] == "" ? "All runs" : TABLES[t]
    pivot(TABLES[t], "final_test_acc_avg_model",
          "Final test accuracy of the averaged model (%):")
    pivot(TABLES[t], "final_test_acc_local_mean",
          "Final test accuracy of the local models, mean over nodes (%):")
    details(TABLES[t])
  }
}
