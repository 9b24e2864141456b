#!/usr/bin/env bash
# The event loop's benchmark: overlapped vs plain steps, and what waiting
# costs. Run with `make bench-loop` (it sets up Open MPI's environment).
#
#   overlap: 2 ranks, MLP, --overlap=off and --overlap=on alternated in
#            the same run, REPS runs each. Per-step medians come from the
#            ranks' --trace timelines (rank 0): step = time between the
#            starts of successive gradients; compute = the gradient on the
#            worker thread; exchange = posting to noticed completion, from
#            the off runs, where nothing overlaps it; update = the local
#            step and the mixing, which follow both and overlap nothing.
#            efficiency = (compute + exchange - step_on) / min(compute,
#            exchange): 1 when the shorter of the two is hidden entirely.
#            Rows: the gradient on the CPU (two ranks' gradients fill the
#            2 cores), and an accelerator-like gradient (--straggle=0,1:4:
#            the worker sleeps 3x its compute time, leaving the core free,
#            as a GPU or a second machine would).
#   idle:    2 ranks, rank 1 computing 10x slower: rank 0's CPU time while
#            it waits, per second of waiting.
set -euo pipefail
cd "$(dirname "$0")/.."

REPS=${REPS:-3}
BATCHES=${BATCHES:-"16 64"}
TRAIN=${TRAIN:-60000}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

field() { # field NAME FILE: a number from the summary record
  grep '"type":"summary"' "$2" | grep -o "\"$1\":[-0-9.e+]*" | cut -d: -f2
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# spans TRACE: "name start_us duration_us" per span of a rank's timeline
spans() {
  awk -F'"' '/"ph":"X"/ {
    ts = $0; sub(/.*"ts":/, "", ts); sub(/,.*/, "", ts)
    dur = $0; sub(/.*"dur":/, "", dur); sub(/}.*/, "", dur)
    print $4, ts, dur }' "$1"
}

# per_step TRACE KIND: one value (ms) per step of the given kind
per_step() {
  case $2 in
    step) spans "$1" | awk '$1 == "compute" { print $2 }' | sort -g |
            awk 'NR > 1 { print ($1 - last) / 1000 } { last = $1 }' ;;
    *) spans "$1" | awk -v k="$2" '$1 == k { print $3 / 1000 }' ;;
  esac
}

run() { # run NAME FLAGS...: one 2-rank job, metrics and traces into $out
  local name=$1
  shift
  mpirun --bind-to none -np 2 daemon/qgmd --control=none --epochs=1 \
    --train-limit="$TRAIN" --test-limit=1000 --metrics="$out/$name.jsonl" \
    --trace="$out/$name.trace" "$@" > "$out/$name.log" 2>&1
}

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(getconf _NPROCESSORS_ONLN) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| gradient | batch | compute ms | exchange ms | update ms | step off ms | step on ms | on / off | on / max(compute, exchange) | overlap efficiency |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for where in cpu accelerator; do
  extra=()
  [ $where = accelerator ] && extra=(--straggle=0,1:4)
  for batch in $BATCHES; do
    for k in compute exchange update off on; do : > "$out/$k"; done
    for rep in $(seq "$REPS"); do
      for mode in off on; do
        run "$mode" --batch-size="$batch" --overlap=$mode "${extra[@]}"
        t="$out/$mode.trace.0"
        per_step "$t" step >> "$out/$mode"
        if [ $mode = off ]; then
          per_step "$t" compute >> "$out/compute"
          per_step "$t" exchange >> "$out/exchange"
          # local step + mix of the same step: pair them in order
          spans "$t" | awk '$1 == "local-step" { l = $3 } $1 == "mix" { print (l + $3) / 1000 }' \
            >> "$out/update"
        fi
      done
    done
    awk -v w=$where -v b="$batch" -v c="$(median < "$out/compute")" \
        -v m="$(median < "$out/exchange")" -v u="$(median < "$out/update")" \
        -v off="$(median < "$out/off")" -v on="$(median < "$out/on")" 'BEGIN {
      big = c > m ? c : m; small = c < m ? c : m
      printf "| %s | %d | %.3f | %.3f | %.3f | %.3f | %.3f | %.2f | %.2f | %.2f |\n",
        w, b, c, m, u, off, on, on / off, on / big, (c + m - on) / small
    }'
  done
done

echo
run idle --batch-size=16 --straggle=1:10
f="$out/idle.jsonl"
awk -v cpu="$(field wait_cpu_s "$f")" -v wait="$(field wait_s "$f")" \
    -v wall="$(field wall_s "$f")" 'BEGIN {
  printf "idle cost: rank 0 waited %.2f s of %.2f s for a 10x slower neighbour, using %.3f s of CPU meanwhile: %.1f ms of CPU per second of waiting (%.2f%% of a core)\n", wait, wall, cpu, 1000 * cpu / wait, 100 * cpu / wait
}'
