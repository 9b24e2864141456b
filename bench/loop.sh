#!/usr/bin/env bash
# The event loop's benchmark: overlapped vs plain steps, and what waiting
# costs. Run with `make bench-loop` (it sets up Open MPI's environment).
#
#   overlap: 2 ranks (one per core), MLP, --overlap=off and --overlap=on
#            alternated in the same run; medians over REPS runs each.
#            compute and exchange times come from the off runs, where they
#            do not overlap; efficiency = (compute + comm - step_on) /
#            min(compute, comm).
#   idle:    2 ranks, rank 1 computing 10x slower: rank 0's CPU time while
#            it waits, per second of waiting.
set -euo pipefail
cd "$(dirname "$0")/.."

REPS=${REPS:-5}
BATCHES=${BATCHES:-"8 16 64"}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

field() { # field NAME FILE: a number from the summary record
  grep '"type":"summary"' "$2" | grep -o "\"$1\":[-0-9.e+]*" | cut -d: -f2
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

run() { # run NAME FLAGS...: one 2-rank job, metrics into $out/NAME.jsonl
  local name=$1
  shift
  mpirun --bind-to none -np 2 daemon/qgmd --control=none --epochs=1 \
    --train-limit=16000 --test-limit=1000 --metrics="$out/$name.jsonl" "$@" \
    > "$out/$name.log" 2>&1
}

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(getconf _NPROCESSORS_ONLN) cores"
echo
echo "| batch | compute ms | exchange ms | step off ms | step on ms | on / max(compute, comm) | overlap efficiency |"
echo "|---|---|---|---|---|---|---|"
for batch in $BATCHES; do
  : > "$out/compute" ; : > "$out/comm" ; : > "$out/off" ; : > "$out/on"
  for rep in $(seq "$REPS"); do
    for mode in off on; do
      run "$mode-$batch-$rep" --batch-size="$batch" --overlap=$mode
      f="$out/$mode-$batch-$rep.jsonl"
      steps=$(field steps "$f")
      awk -v s="$(field steps_s "$f")" -v n="$steps" 'BEGIN { print 1000 * s / n }' >> "$out/$mode"
      if [ $mode = off ]; then
        awk -v s="$(field compute_s "$f")" -v n="$steps" 'BEGIN { print 1000 * s / n }' >> "$out/compute"
        awk -v s="$(field comm_s "$f")" -v n="$steps" 'BEGIN { print 1000 * s / n }' >> "$out/comm"
      fi
    done
  done
  awk -v b="$batch" -v c="$(median < "$out/compute")" -v m="$(median < "$out/comm")" \
      -v off="$(median < "$out/off")" -v on="$(median < "$out/on")" 'BEGIN {
    big = c > m ? c : m; small = c < m ? c : m
    printf "| %d | %.3f | %.3f | %.3f | %.3f | %.2f | %.2f |\n", b, c, m, off, on, on / big, (c + m - on) / small
  }'
done

echo
run idle --batch-size=16 --straggle=1:10
f="$out/idle.jsonl"
awk -v cpu="$(field wait_cpu_s "$f")" -v wait="$(field wait_s "$f")" \
    -v wall="$(field wall_s "$f")" 'BEGIN {
  printf "idle cost: rank 0 waited %.2f s of %.2f s for a 10x slower neighbour, using %.3f s of CPU meanwhile: %.1f ms of CPU per second of waiting (%.2f%% of a core)\n", wait, wall, cpu, 1000 * cpu / wait, 100 * cpu / wait
}'
