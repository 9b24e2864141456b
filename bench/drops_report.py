#!/usr/bin/python3
"""The table of bench/drops.sh: per algorithm and rate, the final and best
averaged-model accuracy (median over seeds), the messages lost, and the
difference in points from the same algorithm's 0% run."""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from records import cell, median, records  # noqa: E402

NAME = re.compile(r"(?P<alg>.+)-drop(?P<rate>[0-9.]+)-seed(?P<seed>\d+)\.jsonl$")


def main(out):
    runs = {}
    for path in sorted(glob.glob(os.path.join(out, "*.jsonl"))):
        m = NAME.search(os.path.basename(path))
        if not m:
            continue
        summary = [r for r in records(path) if r.get("type") == "summary"]
        evals = [r for r in records(path) if r.get("type") == "eval"]
        if not summary:
            continue
        key = (m["alg"], float(m["rate"]))
        runs.setdefault(key, []).append(
            (summary[-1]["final_test_acc_avg_model"],
             summary[-1]["best_test_acc_avg_model"],
             evals[-1].get("messages_lost", 0) if evals else None))
    print("| algorithm | dropped | final acc (avg model) | best | messages lost | final - 0% run (points) |")
    print("|---|---|---|---|---|---|")
    for (alg, rate) in sorted(runs):
        rows = runs[(alg, rate)]
        final = [r[0] for r in rows]
        base = runs.get((alg, 0.0))
        delta = "—"
        if base and rate > 0:
            d = 100 * (median(final)[0] - median([r[0] for r in base])[0])
            delta = "%+.1f" % d
        print("| %s | %g%% | %s | %s | %s | %s |" % (
            alg, 100 * rate, cell([100 * f for f in final], "%.1f"),
            cell([100 * r[1] for r in rows], "%.1f"),
            cell([r[2] for r in rows], "%.0f"), delta))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results/bench-drops")
