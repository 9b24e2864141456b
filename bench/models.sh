#!/bin/sh
# bench/models.sh - one training step (forward, backward, momentum update;
# batch 64, one thread) of each model, qgmd's kernels against PyTorch, in
# the same run. Prints a Markdown table: for each side the median step in
# ms, and the speed-up of qgmd over PyTorch (PyTorch time / qgmd time).
#
# The two sides alternate in ROUNDS rounds of STEPS/ROUNDS steps each (after
# a warm-up per round), so that a change in the machine's speed during the
# run hits both alike; the table gives the median over rounds and, in
# brackets, the range of the per-round values. Before the table: the CPU
# and the kernel plan libqgm chose for it (KERNELS=PLAN sets another, as
# qgmd's --kernels); after it: the GEMM's peak, measured in every MLP
# round, and the MLP step against its products' time at that round's
# peak (the median of the rounds' ratios), and LeNet and
# resnet20-gn per layer with the path each took (bench_models --layers,
# the thread's CPU time).
#
#   bench/models.sh [STEPS [ROUNDS]]     (run through `make bench-models`)
set -eu
steps=${1:-300}
rounds=${2:-5}
export OMP_NUM_THREADS=1 BLIS_NUM_THREADS=1 MKL_NUM_THREADS=1
plan=${KERNELS:+--kernels=$KERNELS}
# Both sides run on one CPU, the last: left to the scheduler, a thread that
# moves between the two CPUs of these machines mid-run loses its caches,
# and the GEMM peak read 95 or 140 GFLOP/s from run to run where pinned it
# reads 140-150 every time.
cpu=$(( $(getconf _NPROCESSORS_ONLN) - 1 ))
pin="taskset -c $cpu"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')," \
     "$(getconf _NPROCESSORS_ONLN) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); both sides on CPU $cpu"
$pin bench/bench_models $plan --cpu
echo "torch $(/usr/bin/python3 -c 'import torch; print(torch.__version__)'), $steps steps per model (the MLP: ten times as many, resnet20-gn: a tenth) in $rounds alternating rounds"
echo
# The median of a[1..n], with its range in lo and hi: both tables' awk.
MEDIAN='
  function med(a, n,    i, j, t, s) {
    for (i = 1; i <= n; i++) s[i] = a[i]
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
      if (s[j] < s[i]) { t = s[i]; s[i] = s[j]; s[j] = t }
    lo = s[1]; hi = s[n]
    return (n % 2) ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2
  }'

echo "| model | qgmd ms [rounds] | PyTorch ms [rounds] | PyTorch / qgmd [rounds] |"
echo "|---|---|---|---|"
for model in mlp lenet resnet20-gn; do
  n=$steps
  [ "$model" = resnet20-gn ] && n=$(( steps / 10 > 10 ? steps / 10 : 10 ))
  # The MLP's step is half a millisecond: at STEPS a round would last
  # 30 ms, shorter than the scheduler's noise on these machines.
  [ "$model" = mlp ] && n=$(( steps * 10 ))
  n=$(( n / rounds > 5 ? n / rounds : 5 ))
  : > "$out/$model"
  for r in $(seq "$rounds"); do
    q=$($pin bench/bench_models $plan --steps="$n" "$model")
    p=$($pin /usr/bin/python3 bench/bench_models.py --steps="$n" "$model")
    echo "$q $p" >> "$out/$model"
    # The MLP's products against the GEMM peak, measured in the same
    # round: the peak drifts with the machine as the step does.
    [ "$model" = mlp ] && echo "$q $($pin bench/bench_models $plan --peak)" >> "$out/peak"
  done
  # Fields per line: model kernel median q1 q3 params, then the same for
  # PyTorch (median in $9).
  awk -v m="$model" "$MEDIAN"'
    { q[NR] = $3; p[NR] = $9; ratio[NR] = $9 / $3 }
    END {
      mq = med(q, NR); lq = lo; hq = hi
      mp = med(p, NR); lp = lo; hp = hi
      mr = med(ratio, NR); lr = lo; hr = hi
      printf "| %s | %.3f [%.3f-%.3f] | %.3f [%.3f-%.3f] | %.2fx [%.2f-%.2f] |\n",
        m, mq, lq, hq, mp, lp, hp, mr, lr, hr }' "$out/$model"
done

# The MLP step against the GEMM peak for its products, round by round
# (fields: the step's line, then --peak's GFLOP/s and the FLOPs of one
# MLP step's products); medians over the rounds.
echo
awk "$MEDIAN"'
  { q[NR] = $3; peak[NR] = $7; flops = $8; ratio[NR] = $3 / (flops / ($7 * 1e6)) }
  END {
    mp = med(peak, NR); lp = lo; hp = hi
    mq = med(q, NR)
    mr = med(ratio, NR); lr = lo; hr = hi
    printf "GEMM peak %.1f GFLOP/s [%.1f-%.1f]; mlp step: %.1f MFLOP of products, %.3f ms measured, %.2fx its time at the round'"'"'s peak [%.2f-%.2f]\n",
      mp, lp, hp, flops / 1e6, mq, mr, lr, hr }' "$out/peak"
echo
$pin bench/bench_models $plan --layers --steps="$steps" lenet
echo
lsteps=$(( steps / 30 > 6 ? steps / 30 : 6 ))
$pin bench/bench_models $plan --layers --steps="$lsteps" resnet20-gn
