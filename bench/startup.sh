#!/usr/bin/env bash
# bench/startup.sh - the start-up of two qgmd builds, alternated in rounds
# so that machine drift hits both: the launch to the first step plus the
# teardown after the last, i.e. mpirun's whole time minus the run's own
# wall time (the summary record's wall_s), as `make bench-epoch` counts
# it. The job: NP ranks on a ring, one epoch of Fashion-MNIST's MLP with
# the full training and test sets, the flags of bench/epoch.sh.
#
#   bench/startup.sh OLD_QGMD NEW_QGMD          (NP=16 ROUNDS=5)
#   NP=8 ROUNDS=7 bench/startup.sh /tmp/old/daemon/qgmd daemon/qgmd
#
# Prints each run's start-up, then per build the median and the range, and
# the ratio of the medians. Extra qgmd flags: QGMD_FLAGS="--data-cache=none".
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: bench/startup.sh OLD_QGMD NEW_QGMD" >&2; exit 2; }
for b in "$@"; do
  [ -x "$b" ] || { echo "bench/startup.sh: $b: not an executable" >&2; exit 2; }
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
      { echo "bench/startup.sh: $b failed:" >&2; tail -5 "$OUT/log" >&2; exit 1; }
    t1=$(date +%s.%N)
    /usr/bin/python3 - "$which" "$t0" "$t1" "$OUT/m.jsonl" <<'EOF'
import json, sys
which, t0, t1, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
summary = next(json.loads(l) for l in open(path) if '"summary"' in l)
print(f"{which} {t1 - t0 - summary['wall_s']:.3f}")
EOF
  done
done | tee "$OUT/runs" | sed 's/^/run: /'
/usr/bin/python3 - "$OUT/runs" "$1" "$2" <<'EOF'
import statistics, sys
runs = [l.split() for l in open(sys.argv[1])]
med = {}
for which, name in (("old", sys.argv[2]), ("new", sys.argv[3])):
    v = sorted(float(s) for w, s in runs if w == which)
    med[which] = statistics.median(v)
    print(f"{which} ({name}): median {med[which]:.2f} s (range {v[0]:.2f}-{v[-1]:.2f})")
print(f"new / old: {med['new'] / med['old']:.2f}")
EOF
