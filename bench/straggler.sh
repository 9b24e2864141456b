#!/usr/bin/env bash
# bench/straggler.sh - asynchronous gossip against the synchronous ring
# and the all-reduce on one host, with one slow rank and without: NP ranks
# (8), emulated devices (--device-time=4: every gradient at least 4 ms of
# wall time with the core left free), Fashion-MNIST MLP at Dirichlet
# alpha 0.1, every run stopped at --target-accuracy=TARGET (0.85) of the
# averaged model or after EPOCHS. Configurations (CONFIGS, each
# NAME=FLAGS, ';'-separated):
#   ring      the synchronous ring, qg-dsgdm-n
#   allreduce the centralized baseline
#   async-qg  asynchronous gossip, qg-dsgdm-n, --max-staleness=STALENESS
#   async     asynchronous gossip, sgp (push-sum), the same bound
#   async-qg-sgp  asynchronous gossip, qg-sgp (push-sum with the
#             quasi-global momentum), the same bound
# each with --straggle=3:4 (rank 3 four times slower) and without; @RUN@
# in FLAGS is a fresh directory per run (for --checkpoint-dir). The
# configurations alternate within a round and their order rotates round
# by round (REPS rounds), so that machine drift hits all alike. The
# averaged model is evaluated every EVAL_EVERY steps (a quarter of an
# epoch: Fashion-MNIST's 60,000 images over NP ranks, batch 32), so that
# the time to TARGET is not rounded up to an epoch's end.
#
# What it reports (bench/straggler_report.py): per configuration the
# median over rounds of the wall time to TARGET and of s/epoch, the
# per-step split into compute and waiting, and the ratios the issue asks
# for: each synchronous configuration's time to TARGET over the
# asynchronous one's with the straggler (asked: >= 2.5), and the
# asynchronous s/epoch over the synchronous ring's without it (asked:
# <= 1.1). With the CPU model and the load before and after: on a loaded
# machine the numbers mean little.
#
#   bench/straggler.sh                       (builds first)
#   REPS=1 EPOCHS=3 bench/straggler.sh       (a smoke run)
#   CONFIGS="async-qg=--algorithm=qg-dsgdm-n --sync=async --max-staleness=1000;ckpt=--algorithm=qg-dsgdm-n --sync=async --max-staleness=1000 --checkpoint-every=117 --checkpoint-dir=@RUN@" bench/straggler.sh
set -euo pipefail
cd "$(dirname "$0")/.."

NP=${NP:-8}
REPS=${REPS:-3}
EPOCHS=${EPOCHS:-20}
TARGET=${TARGET:-0.85}
STALENESS=${STALENESS:-1000}
EVAL_EVERY=${EVAL_EVERY:-$((60000 / NP / 32 / 4))}
OUT=${OUT:-results/bench-straggler}
EXTRA=${EXTRA:-}
export OMP_NUM_THREADS=1 BLIS_NUM_THREADS=1 MKL_NUM_THREADS=1
COMMON="--alpha=0.1 --device-time=4 --epochs=$EPOCHS --target-accuracy=$TARGET --test-limit=2000 --eval-every=$EVAL_EVERY --control=none --log-level=warning $EXTRA"
CONFIGS=${CONFIGS:-"ring=--algorithm=qg-dsgdm-n;allreduce=--algorithm=allreduce;async=--algorithm=sgp --sync=async --max-staleness=$STALENESS;async-qg=--algorithm=qg-dsgdm-n --sync=async --max-staleness=$STALENESS;async-qg-sgp=--algorithm=qg-sgp --sync=async --max-staleness=$STALENESS"}
make -s daemon/qgmd
mkdir -p "$OUT"

{
  echo "cpu: $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p'), model $(lscpu | sed -n 's/^Model: *//p')), $(getconf _NPROCESSORS_ONLN) cores"
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "jobs: $NP ranks, $COMMON, rounds $REPS"
} | tee "$OUT/machine.txt"

IFS=';' read -r -a configs <<<"$CONFIGS"
jobs=()
for c in "${configs[@]}"; do
  jobs+=("$c|straggler" "$c|none")
done
: >"$OUT/runs.tsv"
for rep in $(seq 1 "$REPS"); do
  n=${#jobs[@]}
  for i in $(seq 0 $((n - 1))); do
    job=${jobs[$(((i + rep - 1) % n))]}
    conf=${job%|*}
    slow=${job##*|}
    name=${conf%%=*}
    flags=${conf#*=}
    straggle=""
    [ "$slow" = straggler ] && straggle="--straggle=3:4"
    metrics="$OUT/$name.$slow.$rep.jsonl"
    # @RUN@ in FLAGS: a directory of this run's own (--checkpoint-dir).
    rm -rf "$OUT/$name.$slow.$rep.d"
    flags=${flags//@RUN@/$OUT/$name.$slow.$rep.d}
    # shellcheck disable=SC2086
    mpirun --bind-to none -np "$NP" daemon/qgmd $COMMON $flags $straggle \
      --metrics="$metrics" >"$OUT/$name.$slow.$rep.log" 2>&1 || true
    printf '%s\t%s\t%s\t%s\n' "$name" "$slow" "$rep" "$metrics" | tee -a "$OUT/runs.tsv"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt"
/usr/bin/python3 bench/straggler_report.py "$OUT" "$TARGET" | tee "$OUT/report.md"
