#!/bin/sh
# bench/models.sh - one training step (forward, backward, momentum update;
# batch 64, one thread) of each model, qgmd's kernels against PyTorch, in
# the same run. Prints a Markdown table: medians (and quartiles) in ms and
# the speed-up of qgmd over PyTorch (PyTorch time / qgmd time).
#
#   bench/models.sh [STEPS]     (run through `make bench-models`)
set -eu
steps=${1:-300}
export OMP_NUM_THREADS=1 BLIS_NUM_THREADS=1 MKL_NUM_THREADS=1

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')," \
     "$(getconf _NPROCESSORS_ONLN) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)'), $steps steps per model (resnet20-gn: a tenth) after warm-up"
echo
echo "| model | qgmd ms (IQR) | PyTorch ms (IQR) | PyTorch / qgmd |"
echo "|---|---|---|---|"
for model in mlp lenet resnet20-gn; do
  n=$steps
  [ "$model" = resnet20-gn ] && n=$(( steps / 10 > 10 ? steps / 10 : 10 ))
  q=$(bench/bench_models --steps="$n" "$model")
  p=$(/usr/bin/python3 bench/bench_models.py --steps="$n" "$model")
  echo "$q $p" | awk '{
    printf "| %s | %.3f (%.3f-%.3f) %s | %.3f (%.3f-%.3f) | %.2fx |\n",
      $1, $3, $4, $5, "[" substr($2, 6) "]", $9, $10, $11, $9 / $3 }'
done
