#!/usr/bin/env bash
# The asynchronous modes compared (docs/RESULTS.md, "Asynchronous training:
# GSGM"): asgd, asgd-m and gsgm on non-IID Fashion-MNIST, Dirichlet alpha
# 0.1 and 1, 10/20/30 workers, with and without a 4x straggler (rank 1),
# over seeds. One line per run in OUT/runs.tsv; `bench/async_grid.sh
# --report OUT` prints the table of means over seeds.
#
# Fairness on a small machine: every run does the same total work (EPOCHS
# passes over the same TRAIN samples, whatever the number of workers, so
# 10 workers do 3x more gradients each than 30), and asgd-m runs at
# lr x (1 - momentum), the same effective step as the others' lr.
# Environment knobs: SEEDS, WORKERS, ALPHAS, ALGS, STRAGGLE, EPOCHS,
# TRAIN, TEST, LR, DATA (a directory of IDX files: an uncompressed copy
# spares every rank the decompression, which dominates start-up at 31
# ranks on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."

report() { # mean and std over seeds per configuration; stability ratios
  awk -F'\t' '
    NR == 1 { next }
    { key = $1 "\t" $2 "\t" $3 "\t" $4
      if (!(key in n)) order[++keys] = key
      n[key]++; acc[key] += $6; acc2[key] += $6 * $6
      stab[key] += $8; stale[key] += $9; spread[key] += $12 - $11 }
    END {
      print "| alpha | workers | straggler | algorithm | runs | final acc (mean +- std) | stability std (mean) | staleness mean | applied max-min |"
      print "|---|---|---|---|---|---|---|---|---|"
      for (i = 1; i <= keys; i++) {
        k = order[i]; split(k, f, "\t"); m = acc[k] / n[k]
        sd = acc2[k] / n[k] - m * m; sd = sd > 0 ? sqrt(sd) : 0
        printf "| %s | %s | %s | %s | %d | %.4f +- %.4f | %.4f | %.2f | %.1f |\n",
          f[1], f[2], f[3], f[4], n[k], m, sd, stab[k] / n[k],
          stale[k] / n[k], spread[k] / n[k]
      }
    }' "$1/runs.tsv"
}

if [[ ${1:-} == --report ]]; then
  report "$2"
  exit 0
fi

OUT=${1:-results/async-grid}
SEEDS=${SEEDS:-"1 2 3"}
WORKERS=${WORKERS:-"10 20 30"}
ALPHAS=${ALPHAS:-"0.1 1"}
ALGS=${ALGS:-"asgd asgd-m gsgm"}
STRAGGLE=${STRAGGLE:-"none 1:4"}
EPOCHS=${EPOCHS:-4}
TRAIN=${TRAIN:-6000}
TEST=${TEST:-2000}
LR=${LR:-0.05}
DATA=${DATA:-/usr/share/datasets/fashion-mnist}
MOMENTUM=0.9

mkdir -p "$OUT"
runs=$OUT/runs.tsv
[[ -s $runs ]] || printf 'alpha\tworkers\tstraggle\talgorithm\tseed\tfinal_acc\tbest_acc\tstability\tstaleness_mean\tstaleness_max\tapplied_min\tapplied_max\twall_s\n' > "$runs"

field() { # field NAME FILE: a number from the summary record
  grep '"type":"summary"' "$2" | grep -o "\"$1\":[-0-9.e+]*" | cut -d: -f2
}

for seed in $SEEDS; do
  for alpha in $ALPHAS; do
    for workers in $WORKERS; do
      for straggle in $STRAGGLE; do
        for alg in $ALGS; do
          name="a${alpha}-w${workers}-s${straggle/:/x}-${alg}-seed${seed}"
          grep -q "^$alpha	$workers	$straggle	$alg	$seed	" "$runs" && continue
          lr=$LR
          [[ $alg == asgd-m ]] && lr=$(awk -v l="$LR" -v m=$MOMENTUM 'BEGIN { print l * (1 - m) }')
          flags=(--algorithm="$alg" --alpha="$alpha" --seed="$seed" --lr="$lr"
                 --epochs="$EPOCHS" --train-limit="$TRAIN" --test-limit="$TEST"
                 --data-dir="$DATA" --batch-size=16 --control=none --metrics="$OUT/$name.jsonl")
          [[ $straggle != none ]] && flags+=(--straggle="$straggle")
          if ! mpirun --bind-to none -np $((workers + 1)) daemon/qgmd "${flags[@]}" \
               > "$OUT/$name.log" 2>&1; then
            echo "$name: failed (see $OUT/$name.log)" >&2
            continue
          fi
          m=$OUT/$name.jsonl
          printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
            "$alpha" "$workers" "$straggle" "$alg" "$seed" \
            "$(field final_test_acc_avg_model "$m")" "$(field best_test_acc_avg_model "$m")" \
            "$(field stability_std_last_k "$m")" "$(field staleness_mean "$m")" \
            "$(field staleness_max "$m")" "$(field applied_min "$m")" \
            "$(field applied_max "$m")" "$(field wall_s "$m")" >> "$runs"
          echo "$name: $(tail -1 "$runs" | cut -f6,8)"
        done
      done
    done
  done
done
report "$OUT"
