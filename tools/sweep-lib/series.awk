# series.awk - the data behind the plots. Reads runs.tsv, then the runs'
# metrics.jsonl files; writes into DATA (-v) one file per table, alpha and
# algorithm with, per evaluation, its epoch and the mean / min / max over
# seeds of the avg-model test accuracy (%) and of the consensus distance,
# and one file per table and algorithm with final accuracy (mean, std) per
# alpha. Prints a manifest line per file for plot.sh: kind, table, alpha,
# algorithm, path. Evaluations are matched across seeds by their rank in
# the run: one per epoch, or ten per epoch in an asynchronous run, whose
# epochs are fractions (the mean over seeds is plotted).

FNR == NR { load_row($0); next }

FNR == 1 && !CLASSIFIED {
  classify()
  CLASSIFIED = 1
  for (r = 1; r <= ROWS; r++)
    ROW_OF[CELL[r, COL["run"]]] = r
}

FNR == 1 {
  run = FILENAME
  sub(/\/[^\/]*$/, "", run)
  sub(/.*\//, "", run)
  row = (run in ROW_OF) ? ROW_OF[run] : 0
  e = 0
}

row && json_str($0, "type") == "eval" {
  e++
  k = TABLE[row] SUBSEP ALPHA[row] SUBSEP ALG[row]
  SERIES[k] = 1
  if (e > LAST[k]) LAST[k] = e
  add(k SUBSEP e SUBSEP "epoch", json_num($0, "epoch") + 0)
  add(k SUBSEP e SUBSEP "acc", json_num($0, "test_acc_avg_model") * 100)
  add(k SUBSEP e SUBSEP "cons", json_num($0, "consensus_dist") + 0)
}

function add(k, v) {
  if (!(k in N) || v < MIN[k]) MIN[k] = v
  if (!(k in N) || v > MAX[k]) MAX[k] = v
  N[k]++
  SUM[k] += v
}

function table_name(t) {
  return t == "" ? "all" : file_part(t)
}

# Manifest fields are separated by \037: table names may be empty.
END {
  for (t = 1; t <= NTABLES; t++)
    for (x = 1; x <= NALPHAS; x++)
      for (a = 1; a <= NALGS; a++)
        write_series(TABLES[t], ALPHAS[x], ALGS[a])
  for (t = 1; t <= NTABLES; t++)
    for (a = 1; a <= NALGS; a++)
      write_finals(TABLES[t], ALGS[a])
}

function write_series(t, x, alg,    k, file, e, a, c, p) {
  k = t SUBSEP x SUBSEP alg
  if (!(k in SERIES))
    return
  file = DATA "/epoch_" table_name(t) "_alpha-" file_part(x) "_" \
         file_part(alg) ".dat"
  print "# epoch acc_mean acc_min acc_max cons_mean cons_min cons_max" > file
  for (e = 1; e <= LAST[k]; e++) {
    p = k SUBSEP e SUBSEP "epoch"
    a = k SUBSEP e SUBSEP "acc"
    c = k SUBSEP e SUBSEP "cons"
    if (a in N)
      printf "%.6g %.4f %.4f %.4f %.6g %.6g %.6g\n", SUM[p] / N[p], SUM[a] / N[a],
             MIN[a], MAX[a], SUM[c] / N[c], MIN[c], MAX[c] > file
  }
  close(file)
  printf "epoch\037%s\037%s\037%s\037%s\n", t, x, alg, file
}

function write_finals(t, alg,    file, x, lines) {
  file = DATA "/final_" table_name(t) "_" file_part(alg) ".dat"
  lines = 0
  for (x = NALPHAS; x >= 1; x--)
    if (stat(t, alg, ALPHAS[x], "final_test_acc_avg_model")) {
      if (!lines++)
        print "# alpha acc_mean acc_std seeds" > file
      printf "%s %.4f %.4f %d\n", ALPHAS[x], STAT_MEAN * 100, STAT_STD * 100,
             STAT_N > file
    }
  if (lines) {
    close(file)
    printf "final\037%s\037\037%s\037%s\n", t, alg, file
  }
}
