# shellcheck shell=bash
# runner.sh - runs one planned run in its own directory, shows its progress
# and leaves a completion marker. Sourced by tools/sweep.
#
# A run directory holds run.conf (its settings), command, log,
# metrics.jsonl, exit_status and, once the summary record exists, `done` (renamed into
# place, so its presence means the run is complete). A failed run leaves
# `failed` (the exit status) instead; anything without `done` is redone.

FINISHED_WALL=0   # seconds spent by the runs this invocation completed
FINISHED_COUNT=0
CURRENT_PID=""    # mpirun of the run in progress, for the interrupt handler
RUN_FD=""         # where the run's exit status will be read from

format_duration() {
  local s=${1%.*}
  if ((s < 10)); then
    printf '%.1fs' "$1"
  elif ((s >= 3600)); then
    printf '%dh%02dm' $((s / 3600)) $((s % 3600 / 60))
  elif ((s >= 60)); then
    printf '%dm%02ds' $((s / 60)) $((s % 60))
  else
    printf '%ds' "$s"
  fi
}

# Seconds since the epoch with a fraction, from bash itself.
now() {
  printf '%s\n' "$EPOCHREALTIME"
}

# Estimated seconds left: the mean wall time of the runs finished so far
# (or, before any, the current run's pace per epoch) times the runs left,
# minus what the current run has already used.
estimate_left() {
  local left_runs=$1 elapsed=$2 epoch=$3 epochs=$4
  awk -v n="$FINISHED_COUNT" -v total="$FINISHED_WALL" -v runs="$left_runs" \
    -v el="$elapsed" -v e="$epoch" -v E="$epochs" 'BEGIN {
      if (n > 0) per = total / n
      else if (e > 0 && E > 0) per = el / e * E
      else { print "?"; exit }
      eta = per * runs - el
      printf "%d\n", eta < 0 ? 0 : eta
    }'
}

# Epochs finished and planned, read from the metrics file as it grows: the
# whole epochs of the last evaluation (asynchronous runs evaluate ten times
# per epoch, so counting evaluations would overshoot).
read_epochs() {
  local metrics=$1 done_epochs=0 total=0
  if [[ -f $metrics ]]; then
    done_epochs=$(grep '"type":"eval"' "$metrics" | tail -n 1 |
      grep -o '"epoch":[0-9]*' | cut -d: -f2 || true)
    total=$(grep -o '"epochs":[0-9]*' "$metrics" | head -n 1 | cut -d: -f2 || true)
  fi
  printf '%s %s\n' "${done_epochs:-0}" "${total:-0}"
}

show_progress() {
  local k=$1 n=$2 label=$3 dir=$4 started=$5 last=$6 epoch epochs elapsed eta
  read -r epoch epochs < <(read_epochs "$dir/metrics.jsonl")
  elapsed=$(awk -v a="$started" -v b="$(now)" 'BEGIN { print b - a }')
  eta=$(estimate_left $((n - k + 1)) "$elapsed" "$epoch" "$epochs")
  [[ $eta != "?" ]] && eta=$(format_duration "$eta")
  ((epochs > 0)) || epochs="?"
  local line="run $k/$n: $label epoch $epoch/$epochs, ETA $eta"
  if [[ -t 1 ]]; then
    printf '\r\033[K%s' "$line"
  elif [[ $epoch != "$last" ]]; then
    printf '%s\n' "$line"
  fi
  LAST_EPOCH=$epoch
}

# Runs the k-th of n runs; returns 1 if it failed.
run_one() {
  local k=$1 n=$2 run=$3 dir=$4 label=$5 started rc got wall
  rm -f "$dir/metrics.jsonl" "$dir/log" "$dir/failed" "$dir/done.tmp" "$dir/exit_status"
  mkdir -p "$dir"
  printf '%s' "$run" >"$dir/run.conf"
  local -a cmd
  mapfile -t cmd < <(run_command "$run" "$dir")
  printf '%q ' "${cmd[@]}" >"$dir/command" && echo >>"$dir/command"
  started=$(now)
  # The subshell reports mpirun's pid, stores its exit status when it ends
  # and exits: the end of its output both tells that the run is over and,
  # read with a timeout, paces the progress display. (Only the end of file
  # is waited for with a timeout, so no data can be cut in two.)
  exec {RUN_FD}< <(
    "${cmd[@]}" >"$dir/log" 2>&1 </dev/null &
    echo "$!"
    status=0
    wait "$!" || status=$?
    echo "$status" >"$dir/exit_status"
  )
  read -r CURRENT_PID <&"$RUN_FD"
  LAST_EPOCH=""
  while :; do
    show_progress "$k" "$n" "$label" "$dir" "$started" "$LAST_EPOCH"
    got=0
    read -r -t 1 _ <&"$RUN_FD" || got=$?
    ((got > 128)) || break # not a timeout: the subshell has exited
  done
  exec {RUN_FD}<&-
  rc=$(cat "$dir/exit_status" 2>/dev/null || echo "unknown")
  CURRENT_PID=""
  [[ -t 1 ]] && printf '\r\033[K'
  wall=$(awk -v a="$started" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
  if [[ $rc == 0 ]] && grep -q '"type":"summary"' "$dir/metrics.jsonl" 2>/dev/null; then
    printf 'wall_s=%s\n' "$wall" >"$dir/done.tmp"
    mv "$dir/done.tmp" "$dir/done"
    FINISHED_COUNT=$((FINISHED_COUNT + 1))
    FINISHED_WALL=$(awk -v a="$FINISHED_WALL" -v b="$wall" 'BEGIN { print a + b }')
    printf 'run %d/%d: %s done in %s, test accuracy %s\n' "$k" "$n" "$label" \
      "$(format_duration "$wall")" "$(final_accuracy "$dir/metrics.jsonl")"
    return 0
  fi
  [[ $rc == 0 ]] && rc="0 but no summary record"
  printf '%s\n' "$rc" >"$dir/failed"
  printf 'run %d/%d: %s FAILED (exit status %s); last lines of %s:\n' \
    "$k" "$n" "$label" "$rc" "$dir/log"
  log_tail "$dir/log" | sed 's/^/    /'
  return 1
}

# The last lines of a run's log without Open MPI's boxed notices (between
# dashed lines), which would otherwise push the daemon's message out.
log_tail() {
  [[ -f $1 ]] || return 0
  awk '/^-+$/ { boxed = !boxed; next } !boxed' "$1" | tail -n 5
}

# For the interrupt handler: the run in progress is stopped (and will be
# redone by the next sweep, having no completion marker).
stop_current_run() {
  [[ -n $CURRENT_PID ]] || return 0
  kill -TERM "$CURRENT_PID" 2>/dev/null || true
  # The end of file comes once mpirun has taken its ranks down: leave no
  # process behind.
  while read -r -u "$RUN_FD" _; do :; done
}

final_accuracy() {
  grep '"type":"summary"' "$1" | grep -o '"final_test_acc_avg_model":[0-9.eE+-]*' |
    cut -d: -f2
}
