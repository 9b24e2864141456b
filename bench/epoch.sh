#!/usr/bin/env bash
# bench/epoch.sh - the whole job on one machine, qgmd against a PyTorch
# torch.distributed (gloo, loopback) implementation of the same job
# (bench/peers/torch_job.py): ring or all-reduce, Fashion-MNIST MLP
# 784-256-10, batch 32 per node, lr 0.05 constant, alpha 1, every local
# model and the averaged model evaluated on the 10,000 test images after
# every epoch. Jobs: NPS ranks x ALGORITHMS. The two programs alternate
# job by job, and the order of the jobs rotates every one of REPS rounds,
# so that machine drift hits both.
#
# What it reports (bench/epoch_report.py): s/epoch, start-up (mpirun or
# the first process to the first step) and time to TARGET, each the median
# over rounds, with qgmd's speed-up; and the floor: the job's GEMM work
# (training and evaluation FLOPs of the model) at the GEMM rate of both
# cores, measured in the same run (bench/bench_models --peak), with
# qgmd's distance to it.
#
#   make bench-epoch             (builds first, and exports tools/mpi.env)
#   REPS=3 EPOCHS=5 NPS="8 16" ALGORITHMS="qg-dsgdm-n allreduce" make bench-epoch
set -euo pipefail
cd "$(dirname "$0")/.."

REPS=${REPS:-3}
EPOCHS=${EPOCHS:-5}
NPS=${NPS:-"8 16"}
ALGORITHMS=${ALGORITHMS:-"qg-dsgdm-n allreduce"}
TARGET=${TARGET:-0.85}
OUT=${OUT:-results/bench-epoch}
DATA=/usr/share/datasets/fashion-mnist
export OMP_NUM_THREADS=1 BLIS_NUM_THREADS=1 MKL_NUM_THREADS=1

/usr/bin/python3 -c 'import torch' 2>/dev/null ||
  { echo "bench/epoch.sh: needs python3-torch (make bench-epoch installs it)" >&2; exit 2; }
COMMON="--topology=ring --alpha=1 --epochs=$EPOCHS --batch-size=32 --lr=0.05 --lr-schedule=constant --hidden=256 --control=none --log-level=warning"
mkdir -p "$OUT"
now() { date +%s.%N; }

port=29700
run_torch() { # ranks algorithm metrics
  local pids=() r rc=0
  port=$((port + 1))
  for r in $(seq 0 $(($1 - 1))); do
    /usr/bin/python3 bench/peers/torch_job.py --rank "$r" --world "$1" \
      --master "127.0.0.1:$port" --algorithm "$2" --alpha 1 --epochs "$EPOCHS" \
      --batch-size 32 --lr 0.05 --lr-schedule constant --data-dir "$DATA" \
      $([ "$r" -eq 0 ] && echo --metrics "$3") &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  return $rc
}

{
  echo "$(bench/bench_models --cpu), $(getconf _NPROCESSORS_ONLN) cores"
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "jobs: ranks $NPS x $ALGORITHMS, epochs $EPOCHS, target $TARGET, rounds $REPS"
  echo "gemm: $(bench/bench_models --peak | cut -d' ' -f1) GFLOP/s per core (qgmd's kernel at its best shape)"
} | tee "$OUT/machine.txt"

jobs=()
for np in $NPS; do for alg in $ALGORITHMS; do jobs+=("$np|$alg"); done; done
: >"$OUT/runs.tsv"
for rep in $(seq 1 "$REPS"); do
  n=${#jobs[@]}
  for i in $(seq 0 $((n - 1))); do
    job=${jobs[$(((i + rep - 1) % n))]}
    np=${job%%|*}
    alg=${job#*|}
    # The two programs alternate which goes first, round by round.
    order="qgmd torch"
    [ $((rep % 2)) -eq 0 ] && order="torch qgmd"
    for prog in $order; do
      metrics="$OUT/$prog.$np.$alg.$rep.jsonl"
      t0=$(now)
      if [ "$prog" = qgmd ]; then
        # shellcheck disable=SC2086
        mpirun --bind-to none -np "$np" daemon/qgmd $COMMON --algorithm="$alg" \
          --metrics="$metrics" >"$OUT/$prog.$np.$alg.$rep.log" 2>&1 || true
      else
        run_torch "$np" "$alg" "$metrics" >"$OUT/$prog.$np.$alg.$rep.log" 2>&1 || true
      fi
      t1=$(now)
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$prog" "$np" "$alg" "$rep" "$metrics" \
        "$(echo "$t1 - $t0" | bc)" | tee -a "$OUT/runs.tsv"
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt"
/usr/bin/python3 bench/epoch_report.py "$OUT" "$TARGET" | tee "$OUT/report.md"
