#!/usr/bin/env bash
# bench/cluster.sh - what decentralized training is for: an emulated cluster
# of 4 hosts x 2 ranks (tools/qgm-cluster) with links shaped to each RATE,
# Fashion-MNIST MLP, alpha 0.1, every configuration trained until its
# averaged model reaches TARGET test accuracy (at most EPOCHS epochs of
# a schedule for EPOCHS; evaluated every EVAL_EVERY steps and after every
# epoch): qgmd's all-reduce and Open MPI's (--allreduce=mpi), ring and one-peer-exp QG-DSGDm-N, local steps,
# overlap, 8 gossip rounds a step, plain and Chebyshev, the host-aware topology, compressed gossip (flat, and between
# the hosts of the host-aware topology), PowerSGD's all-reduce and
# PowerGossip (rank 4, with DSGDm-N: docs/COMPRESSION.md), and PyTorch over the same hosts
# (bench/peers/torch_job.py, gloo): a torch.distributed ring QG-DSGDm-N,
# and the all-reduce baseline in DistributedDataParallel with each of
# PyTorch's communication hooks (none, fp16, PowerSGD at rank 2), and
# asynchronous gossip (QG-DSGDm-N, SGP and QG-SGP on the ring, staleness
# at most 2 rounds). SLOW=RATE shapes the last host's link to RATE after
# each RATE of RATES (one slow host link). The configurations alternate
# within each of REPS rounds, so machine drift hits all of them; the
# report gives medians over rounds (bench/cluster_report.py).
#
#   bench/cluster.sh            (as root; make bench-cluster builds first)
#   REPS=3 RATES="1gbit 100mbit" EPOCHS=2 TARGET=0.85 ONLY="allreduce hier-ope"
#   SET=compression REPS=1 OUT=results/bench-compression bench/cluster.sh
#   RATES=1gbit SLOW=100mbit ONLY="allreduce ring ring-async sgp-async" bench/cluster.sh
set -euo pipefail
cd "$(dirname "$0")/.."

REPS=${REPS:-3}
RATES=${RATES:-"1gbit 100mbit"}
EPOCHS=${EPOCHS:-2}
TARGET=${TARGET:-0.85}
EVAL_EVERY=${EVAL_EVERY:-117} # steps: twice per epoch of 60000/8/32
OUT=${OUT:-results/bench-cluster}
NAME=qgmb
HOSTS=4
SLOTS=2
NP=$((HOSTS * SLOTS))
CLUSTER=(tools/qgm-cluster --name=$NAME)

# name|flags (qgmd), or name|torch:ALGORITHM [FLAGS] for the PyTorch peer
# (torch_job.py's --algorithm and its own flags).
CONFIGS=(
  "allreduce|--algorithm=allreduce"
  "allreduce-mpi|--algorithm=allreduce --allreduce=mpi"
  "allreduce-hier-qsgd4|--algorithm=allreduce --topology=hier --compress=qsgd:4"
  "allreduce-powersgd4|--algorithm=allreduce --compress=powersgd:4"
  "ring|--topology=ring"
  "one-peer-exp|--topology=one-peer-exp"
  "ring-local4|--topology=ring --local-steps=4"
  "ring-overlap|--topology=ring --overlap=on"
  "ring-rounds8|--topology=ring --gossip-rounds=8"
  "ring-chebyshev8|--topology=ring --gossip-rounds=8 --gossip-acceleration=chebyshev"
  "hier-ring|--topology=hier --host-topology=ring"
  "hier-ope|--topology=hier --host-topology=one-peer-exp"
  "ring-qsgd8|--topology=ring --compress=qsgd:8 --consensus-lr=1"
  "hier-ring-qsgd8|--topology=hier --host-topology=ring --compress=qsgd:8 --consensus-lr=1"
  "hier-ring-qsgd4|--topology=hier --host-topology=ring --compress=qsgd:4 --consensus-lr=1"
  "ring-powergossip4|--algorithm=dsgdm-n --topology=ring --compress=powersgd:4"
  "ring-async|--topology=ring --sync=async --max-staleness=2"
  "sgp-async|--algorithm=sgp --topology=ring --sync=async --max-staleness=2"
  "qg-sgp-async|--algorithm=qg-sgp --topology=ring --sync=async --max-staleness=2"
  "torch-ring|torch:qg-dsgdm-n"
  "torch-ddp|torch:ddp --ddp-hook none"
  "torch-ddp-fp16|torch:ddp --ddp-hook fp16"
  "torch-ddp-powersgd|torch:ddp --ddp-hook powersgd --powersgd-rank 2"
)
# SET=compression: every compressor with QG-DSGDm-N and DSGDm-N on the
# ring, each with the consensus step size of examples/compression/, against
# all-reduce.
if [ "${SET:-}" = compression ]; then
  CONFIGS=("allreduce|--algorithm=allreduce")
  for alg in qg-dsgdm-n dsgdm-n; do
    for c in none topk:0.01 topk:0.1 qsgd:8 qsgd:4 sign; do
      gamma=1
      case "$alg $c" in
      "qg-dsgdm-n topk:0.01") gamma=0.02 ;;
      "dsgdm-n topk:0.01") gamma=0.05 ;;
      *" topk:0.1") gamma=0.3 ;;
      "qg-dsgdm-n sign") gamma=0.01 ;;
      esac
      CONFIGS+=("$alg-$c|--algorithm=$alg --topology=ring --compress=$c --consensus-lr=$gamma")
    done
  done
fi
if [ -n "${ONLY:-}" ]; then
  kept=()
  for c in "${CONFIGS[@]}"; do
    for o in $ONLY; do [ "${c%%|*}" = "$o" ] && kept+=("$c"); done
  done
  CONFIGS=("${kept[@]}")
fi

[ "$(id -u)" -eq 0 ] || { echo "bench/cluster.sh: needs root (network namespaces)" >&2; exit 2; }
/usr/bin/python3 -c 'import torch' 2>/dev/null ||
  { echo "bench/cluster.sh: needs python3-torch (make bench-cluster installs it)" >&2; exit 2; }

COMMON="--alpha=0.1 --epochs=$EPOCHS --target-accuracy=$TARGET --eval-every=$EVAL_EVERY --control=none --log-level=warning"
mkdir -p "$OUT"
"${CLUSTER[@]}" down >/dev/null 2>&1 || true
trap '"${CLUSTER[@]}" down >/dev/null 2>&1 || true' EXIT
"${CLUSTER[@]}" up "$HOSTS" --slots="$SLOTS" >/dev/null
SUBNET=$(sed -n 's/^SUBNET=//p' "/run/qgm-cluster/$NAME/cluster")

# Bytes that crossed the links: the sum of what every host's veth sent.
link_bytes() {
  local total=0 h b
  for h in $(seq 1 "$HOSTS"); do
    b=$(ip netns exec "$NAME-$h" cat /sys/class/net/eth0/statistics/tx_bytes)
    total=$((total + b))
  done
  echo "$total"
}

port=29600
run_torch() { # "algorithm [flags]" metrics
  local pids=() r h spec
  read -r -a spec <<<"$1"
  port=$((port + 1))
  for r in $(seq 0 $((NP - 1))); do
    h=$((r / SLOTS + 1))
    "${CLUSTER[@]}" exec "$NAME-$h" -- env GLOO_SOCKET_IFNAME=eth0 \
      /usr/bin/python3 bench/peers/torch_job.py --rank "$r" --world "$NP" \
      --master "$SUBNET.1:$port" --algorithm "${spec[@]}" --alpha 0.1 \
      --epochs "$EPOCHS" --target-accuracy "$TARGET" --eval-every "$EVAL_EVERY" \
      $([ "$r" -eq 0 ] && echo --metrics "$2") &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  return $rc
}

{
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(getconf _NPROCESSORS_ONLN) cores, $(grep -o -w -m1 -E 'avx512f|avx2' /proc/cpuinfo | sort -u | tail -1)"
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "hosts: $HOSTS x $SLOTS ranks, epochs $EPOCHS, target $TARGET, evaluations every $EVAL_EVERY steps, rounds $REPS"
} | tee "$OUT/machine.txt"

: >"$OUT/runs.tsv"
for link in $RATES; do
  "${CLUSTER[@]}" rate "$link"
  rate=$link
  if [ -n "${SLOW:-}" ]; then
    "${CLUSTER[@]}" rate "$SLOW" "$NAME-$HOSTS"
    rate=$link-$NAME-$HOSTS-$SLOW
  fi
  for rep in $(seq 1 "$REPS"); do
    # Rotate the order every round: no configuration always runs first.
    n=${#CONFIGS[@]}
    for i in $(seq 0 $((n - 1))); do
      c=${CONFIGS[$(((i + rep - 1) % n))]}
      name=${c%%|*}
      flags=${c#*|}
      metrics="$OUT/$rate.$name.$rep.jsonl"
      before=$(link_bytes)
      if [[ $flags == torch:* ]]; then
        run_torch "${flags#torch:}" "$metrics" >"$OUT/$rate.$name.$rep.log" 2>&1 || true
      else
        # shellcheck disable=SC2086
        "${CLUSTER[@]}" run -- -np "$NP" daemon/qgmd $COMMON $flags \
          --metrics="$metrics" >"$OUT/$rate.$name.$rep.log" 2>&1 || true
      fi
      after=$(link_bytes)
      printf '%s\t%s\t%s\t%s\t%s\n' "$rate" "$name" "$rep" "$metrics" \
        "$((after - before))" | tee -a "$OUT/runs.tsv"
    done
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/machine.txt"
/usr/bin/python3 bench/cluster_report.py "$OUT" | tee "$OUT/report.md"
