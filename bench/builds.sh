#!/usr/bin/env bash
# bench/builds.sh - two qgmd builds, alternated in rounds so that machine
# drift hits both, on the job of bench/epoch.sh: NP ranks on a ring, one
# epoch of Fashion-MNIST's MLP with the full training and test sets. For
# each run it takes the epoch (the summary record's wall_s, evaluation
# included) and the start-up as `make bench-epoch` counts it: the launch
# to the first step plus the teardown after the last, i.e. mpirun's whole
# time minus wall_s.
#
#   bench/builds.sh OLD_QGMD NEW_QGMD           (NP=16 ROUNDS=5)
#   NP=8 ROUNDS=7 bench/builds.sh /tmp/old/daemon/qgmd daemon/qgmd
#
# Prints each run, then per build and measure the median and the range,
# and the median over the rounds of new / old. Extra qgmd flags:
# QGMD_FLAGS="--data-cache=none".
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: bench/builds.sh OLD_QGMD NEW_QGMD" >&2; exit 2; }
for b in "$@"; do
  [ -x "$b" ] || { echo "bench/builds.sh: $b: not an executable" >&2; exit 2; }
done
NP=${NP:-16}
ROUNDS=${ROUNDS:-5}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
if [ "$(id -u)" -eq 0 ]; then as_root='s/^root: //'; else as_root='/^root:/d'; fi
set -a
# shellcheck disable=SC1090
. <(sed -e '/^#/d' -e "$as_root" tools/mpi.env)
set +a
echo "cpu:$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), $(getconf _NPROCESSORS_ONLN) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "job: $NP ranks, ring, one epoch, full data; $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
  for which in old new; do
    b=$1; [ "$which" = new ] && b=$2
    t0=$(date +%s.%N)
    mpirun --oversubscribe --bind-to none -np "$NP" "$b" --topology=ring \
      --alpha=1 --epochs=1 --batch-size=32 --lr=0.05 --lr-schedule=constant \
      --control=none --log-level=warning ${QGMD_FLAGS:-} \
      --metrics="$OUT/m.jsonl" > "$OUT/log" 2>&1 ||
      { echo "bench/builds.sh: $b failed:" >&2; tail -5 "$OUT/log" >&2; exit 1; }
    t1=$(date +%s.%N)
    /usr/bin/python3 - "$which" "$t0" "$t1" "$OUT/m.jsonl" <<'EOF'
import json, sys
which, t0, t1, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
summary = next(json.loads(l) for l in open(path) if '"summary"' in l)
print(f"{which} {t1 - t0 - summary['wall_s']:.3f} {summary['wall_s']:.3f}")
EOF
  done
done | tee "$OUT/runs" | sed 's/^/run (build, start-up s, epoch s): /'
/usr/bin/python3 - "$OUT/runs" "$1" "$2" <<'EOF'
import statistics, sys
runs = [l.split() for l in open(sys.argv[1])]
for column, measure in ((1, "start-up"), (2, "epoch")):
    by = {w: [float(r[column]) for r in runs if r[0] == w] for w in ("old", "new")}
    for which, name in (("old", sys.argv[2]), ("new", sys.argv[3])):
        v = sorted(by[which])
        print(f"{measure}, {which} ({name}): median {statistics.median(v):.2f} s "
              f"(range {v[0]:.2f}-{v[-1]:.2f})")
    pairs = [n / o for o, n in zip(by["old"], by["new"])]
    print(f"{measure}, new / old: {statistics.median(pairs):.2f} "
          f"(median of the {len(pairs)} rounds' ratios)")
EOF
