# runs_table.awk - reads the metrics.jsonl of every finished run and prints
# runs.tsv: run name, np, flag file, every qgmd flag of the run (from its
# config record, so flags set in flag files are included), then results.
# -v K=evaluations covered by the stability column.

function add_column(name) {
  if (!(name in COLUMN_AT)) {
    COLUMN_AT[name] = ++NCOLUMNS
    COLUMN[NCOLUMNS] = name
  }
}

function set(name, value) {
  add_column(name)
  gsub(/[\t\n]/, " ", value)
  VALUE[RUN, name] = value
}

function dir_of(path) {
  sub(/\/[^\/]*$/, "", path)
  return path
}

# Settings from run.conf that are not qgmd flags (np, flagfile), and the
# run's own wall time from its completion marker.
function read_run_files(dir,    line, key, value) {
  while ((getline line < (dir "/run.conf")) > 0) {
    key = line
    sub(/=.*/, "", key)
    value = substr(line, length(key) + 2)
    if (key == "np")
      set("np", value)
    else if (key == "flagfile") {
      sub(/.*\//, "", value)
      set("flagfile", value)
    }
  }
  close(dir "/run.conf")
  while ((getline line < (dir "/done")) > 0)
    if (line ~ /^wall_s=/)
      set("run_wall_s", substr(line, 8))
  close(dir "/done")
}

function finish_run(    i, mean, var, n, first) {
  if (RUN == 0 || EVALS == 0)
    return
  n = EVALS
  first = n > K ? n - K + 1 : 1
  mean = var = 0
  for (i = first; i <= n; i++)
    mean += ACC[i]
  mean /= n - first + 1
  for (i = first; i <= n; i++)
    var += (ACC[i] - mean) ^ 2
  set("stability", sprintf("%.6f", sqrt(var / (n - first + 1))))
  set("epochs_done", LAST_EPOCH)
}

FNR == 1 {
  finish_run()
  RUN++
  EVALS = 0
  BEST_AVG = BEST_LOCAL = -1
  dir = dir_of(FILENAME)
  name = dir
  sub(/.*\//, "", name)
  add_column("run")
  VALUE[RUN, "run"] = name
  add_column("np")
  read_run_files(dir)
}

{
  type = json_str($0, "type")
}

type == "config" {
  n = json_object($0, "flags", keys, vals)
  for (i = 1; i <= n; i++)
    if (keys[i] != "metrics")
      set(keys[i], vals[i])
}

type == "eval" {
  acc = json_num($0, "test_acc_avg_model")
  loc = json_num($0, "test_acc_local_mean")
  ACC[++EVALS] = acc
  LAST_EPOCH = sprintf("%.10g", json_num($0, "epoch"))
  if (acc + 0 > BEST_AVG) BEST_AVG = acc + 0
  if (loc + 0 > BEST_LOCAL) BEST_LOCAL = loc + 0
  set("final_test_acc_avg_model", acc)
  set("best_test_acc_avg_model", sprintf("%.6f", BEST_AVG))
  set("final_test_acc_local_mean", loc)
  set("best_test_acc_local_mean", sprintf("%.6f", BEST_LOCAL))
  set("final_consensus_dist", json_num($0, "consensus_dist"))
}

type == "summary" {
  set("train_wall_s", json_num($0, "wall_s"))
}

# Asynchronous runs: how stale the applied gradients were and how evenly
# the workers' gradients were applied.
type == "summary" && json_str($0, "mode") == "async" {
  set("staleness_mean", json_num($0, "staleness_mean"))
  set("staleness_max", json_num($0, "staleness_max"))
  set("applied_min", json_num($0, "applied_min"))
  set("applied_max", json_num($0, "applied_max"))
  set("applied_spread", json_num($0, "applied_max") - json_num($0, "applied_min"))
}

END {
  finish_run()
  # Settings first, results last, in the order result_columns() gives.
  nres = result_columns(res)
  for (i = 1; i <= nres; i++)
    is_res[res[i]] = 1
  line = ""
  m = 0
  for (i = 1; i <= NCOLUMNS; i++)
    if (!(COLUMN[i] in is_res))
      order[++m] = COLUMN[i]
  for (i = 1; i <= nres; i++)
    if (res[i] in COLUMN_AT) # the asynchronous ones only when there are any
      order[++m] = res[i]
  for (i = 1; i <= m; i++)
    line = line (i > 1 ? "\t" : "") order[i]
  print line
  for (r = 1; r <= RUN; r++) {
    line = ""
    for (i = 1; i <= m; i++)
      line = line (i > 1 ? "\t" : "") VALUE[r, order[i]]
    print line
  }
}
