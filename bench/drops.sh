#!/usr/bin/env bash
# bench/drops.sh - the accuracy grid of lost gossip messages (--drop-rate):
# ring of NODES nodes, Fashion-MNIST MLP, Dirichlet alpha ALPHA, EPOCHS
# epochs, each algorithm of ALGORITHMS at each rate of RATES, each seed of
# SEEDS, in qgm-sim (which follows qgmd bit for bit with lost messages,
# test/mpi_sim.c). Accuracy, not time: nothing here is timed, so it may
# run on a busy machine. bench/drops_report.py prints the table: the final
# and best averaged-model accuracy, the lost messages, and each rate's
# difference from the same algorithm's 0% run (the issue's "within 1
# point").
#
#   bench/drops.sh
#   SEEDS="1 2" RATES="0 0.1" ALGORITHMS=sgp bench/drops.sh
set -euo pipefail
cd "$(dirname "$0")/.."

NODES=${NODES:-16}
ALPHA=${ALPHA:-0.1}
EPOCHS=${EPOCHS:-10}
ALGORITHMS=${ALGORITHMS:-"sgp qg-dsgdm-n dsgdm-n"}
RATES=${RATES:-"0 0.01 0.1"}
SEEDS=${SEEDS:-1}
OUT=${OUT:-results/bench-drops}
export OMP_NUM_THREADS=1 BLIS_NUM_THREADS=1 MKL_NUM_THREADS=1
mkdir -p "$OUT"
make -s tools/qgm-sim

{
  echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(getconf _NPROCESSORS_ONLN) cores"
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "grid: ring-$NODES alpha $ALPHA, $EPOCHS epochs, $ALGORITHMS x rates $RATES x seeds $SEEDS"
} | tee "$OUT/machine.txt"

for seed in $SEEDS; do
  for alg in $ALGORITHMS; do
    for rate in $RATES; do
      m="$OUT/$alg-drop$rate-seed$seed.jsonl"
      tools/qgm-sim --problem=dataset --nodes="$NODES" --topology=ring \
        --alpha="$ALPHA" --epochs="$EPOCHS" --algorithm="$alg" \
        --drop-rate="$rate" --seed="$seed" --metrics="$m" >/dev/null
      echo "done: $m"
    done
  done
done
/usr/bin/python3 bench/drops_report.py "$OUT" | tee "$OUT/report.txt"
