#!/usr/bin/python3
"""The report of bench/straggler.sh: per configuration and straggler
setting, the medians over rounds of the wall time to the target accuracy
(the first eval record at or above it), of s/epoch (rank 0's epochs) and
of the per-step split (compute, waiting), then the issue's ratios."""
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from records import cell, median, records  # noqa: E402


def to_target(recs, target):
    for r in recs:
        if r.get("type") == "eval" and r["test_acc_avg_model"] >= target:
            return r["wall_s"]
    return None


def per_epoch(recs):
    """Rank 0's seconds per epoch, to its last evaluation (a run stopped
    at the target may end before its first whole epoch)."""
    evals = [r for r in recs if r.get("type") == "eval" and r["epoch"] > 0]
    if not evals:
        return None
    return evals[-1]["wall_s"] / evals[-1]["epoch"]


def split(recs):
    s = [r for r in recs if r.get("type") == "summary"]
    if not s or not s[0].get("steps"):
        return None, None
    return (1000 * s[0]["compute_s"] / s[0]["steps"],
            1000 * s[0].get("wait_s", 0.0) / s[0]["steps"])


def main(out, target):
    rows = {}
    with open(os.path.join(out, "runs.tsv")) as f:
        for name, slow, _rep, path in csv.reader(f, delimiter="\t"):
            recs = records(path)
            c, w = split(recs)
            rows.setdefault((name, slow), []).append(
                (to_target(recs, target), per_epoch(recs), c, w))
    with open(os.path.join(out, "machine.txt")) as f:
        print("".join("    " + line for line in f))
    print(f"| configuration | straggler | s to {target:g} | s/epoch | compute ms/step | waiting ms/step |")
    print("|---|---|---|---|---|---|")
    for (name, slow) in sorted(rows):
        v = rows[(name, slow)]
        print("| %s | %s | %s | %s | %s | %s |" % (
            name, slow, cell([x[0] for x in v], "%.1f", "not reached"),
            cell([x[1] for x in v], "%.2f"), cell([x[2] for x in v], "%.2f"),
            cell([x[3] for x in v], "%.2f")))

    def med(name, slow, k):
        return median([x[k] for x in rows.get((name, slow), [])])[0]
    print()
    for asy in ("async", "async-qg", "async-qg-sgp"):
        a = med(asy, "straggler", 0)
        for sync in ("ring", "allreduce"):
            s = med(sync, "straggler", 0)
            if a and s:
                print(f"straggler: {sync} / {asy} time to {target:g}: {s / a:.2f} (asked >= 2.5)")
        # For scale: the asynchronous run's own time without a straggler,
        # against the time the target asks for with one.
        a, s = med(asy, "none", 0), med("allreduce", "straggler", 0)
        if a and s:
            print(f"for scale: {asy} without a straggler reaches {target:g} in {a:.1f} s; "
                  f"2.5x sooner than the all-reduce with one is {s / 2.5:.1f} s")
        a, r = med(asy, "none", 1), med("ring", "none", 1)
        if a and r:
            print(f"no straggler: {asy} / ring s/epoch: {a / r:.2f} (asked <= 1.1)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results/bench-straggler",
         float(sys.argv[2]) if len(sys.argv) > 2 else 0.85)
