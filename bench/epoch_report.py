#!/usr/bin/python3
"""The report of bench/epoch.sh: for every job, qgmd's and PyTorch's
s/epoch, start-up and time to the target accuracy (medians over rounds,
with their range), qgmd's speed-up, and the floor of the job: its GEMM
FLOPs at the GEMM rate of every core, measured in the same run.

    bench/epoch_report.py DIR TARGET   (DIR holds runs.tsv, machine.txt)

The FLOPs of one epoch, for the MLP 784-256-10 on n nodes (shard
floor(60000 / n) samples, batch 32): each trained sample costs the forward
products (2 x 203,264 multiply-adds), the weight gradients of both layers
(as many again) and the input gradient of the second layer (2 x 2,560; the
first layer's is not needed); each evaluation scores the n local models
and the averaged one on the 10,000 test images (forward only).
"""
import csv
import os
import re
import sys

from records import cell, median, records

INPUT, HIDDEN, CLASSES, BATCH, TRAIN, TEST = 784, 256, 10, 32, 60000, 10000


def epoch_flops(nodes):
    macs = INPUT * HIDDEN + HIDDEN * CLASSES
    trained = nodes * ((TRAIN // nodes) // BATCH) * BATCH
    train = trained * (2 * macs + 2 * macs + 2 * HIDDEN * CLASSES)
    evaluation = (nodes + 1) * TEST * 2 * macs
    return train + evaluation


def measure(path, total_s, target):
    rs = records(path)
    evals = [r for r in rs if r.get("type") == "eval"]
    summary = next((r for r in rs if r.get("type") == "summary"), None)
    if not evals or not summary:
        return None
    startup = total_s - summary["wall_s"]
    hit = next((e for e in evals if e["test_acc_avg_model"] >= target), None)
    return {"s_epoch": evals[-1]["wall_s"] / evals[-1]["epoch"],
            "startup": startup,
            "to_target": startup + hit["wall_s"] if hit else None,
            "acc": evals[-1]["test_acc_avg_model"]}


def med(values):
    return median(values)[0]


def ratio(a, b):
    return "%.2f×" % (a / b) if a and b else "—"


def main():
    out, target = sys.argv[1], float(sys.argv[2])
    with open(os.path.join(out, "machine.txt")) as f:
        machine = f.read()
    rate = float(re.search(r"^gemm: ([0-9.]+)", machine, re.M).group(1))
    cores = int(re.search(r"(\d+) cores", machine).group(1))
    runs = {}
    with open(os.path.join(out, "runs.tsv")) as f:
        for prog, np_, alg, _rep, path, total in csv.reader(f, delimiter="\t"):
            runs.setdefault((int(np_), alg), {}).setdefault(prog, []).append(
                measure(path, float(total), target))
    print("```\n" + machine.strip() + "\n```\n")
    print("s/epoch includes the evaluation after every epoch; start-up is "
          "from the launch to the first step; the floor is the job's GEMM "
          "FLOPs at %.1f GFLOP/s x %d cores.\n" % (rate, cores))
    print("| job | qgmd s/epoch | PyTorch s/epoch | speed-up | floor s/epoch "
          "| qgmd / floor | qgmd start-up s | PyTorch start-up s | "
          "qgmd s to %.0f%% | PyTorch s to %.0f%% | final acc qgmd / PyTorch |"
          % (100 * target, 100 * target))
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (nodes, alg), by_prog in sorted(runs.items()):
        q = [m for m in by_prog.get("qgmd", []) if m]
        t = [m for m in by_prog.get("torch", []) if m]
        floor = epoch_flops(nodes) / (rate * 1e9 * cores)
        qs, ts = med([m["s_epoch"] for m in q]), med([m["s_epoch"] for m in t])
        print("| %d ranks %s | %s | %s | %s | %.2f | %s | %s | %s | %s | %s "
              "| %s / %s |" % (
                  nodes, alg, cell([m["s_epoch"] for m in q], "%.2f"),
                  cell([m["s_epoch"] for m in t], "%.2f"), ratio(ts, qs), floor,
                  ratio(qs, floor), cell([m["startup"] for m in q], "%.2f"),
                  cell([m["startup"] for m in t], "%.2f"),
                  cell([m["to_target"] for m in q], "%.1f"),
                  cell([m["to_target"] for m in t], "%.1f"),
                  cell([m["acc"] for m in q], "%.4f"),
                  cell([m["acc"] for m in t], "%.4f")))


if __name__ == "__main__":
    main()
