#!/usr/bin/python3
"""The report of bench/cluster.sh: one table per link rate, medians over
rounds (with their range), and how much sooner the best decentralized
configuration reaches the target than qgmd's all-reduce, PyTorch's ring
and PyTorch's best DDP hook.

"MB/step sent per rank" is the records' bytes_per_step: qgmd counts its
exchanges' payload (its last eval record); the PyTorch peer computes it
from the model's shapes (its summary; bench/peers/torch_job.py). "MB/step
on the links" is what the hosts' links carried, headers included.

    bench/cluster_report.py DIR    (DIR holds runs.tsv and the metrics)
"""
import csv
import os
import sys

from records import cell as _cell, median as med, records


def measure(path, target, link_bytes):
    rs = records(path)
    evals = [r for r in rs if r["type"] == "eval"]
    summary = next((r for r in rs if r["type"] == "summary"), {})
    if not evals:
        return None
    hit = next((e for e in evals if e["test_acc_avg_model"] >= target), None)
    steps = evals[-1]["step"]
    epochs = evals[-1]["epoch"]
    m = {"s_epoch": evals[-1]["wall_s"] / epochs,
         "to_target": hit["wall_s"] if hit else None,
         "acc": evals[-1]["test_acc_avg_model"],
         "link_mb_step": link_bytes / steps / 1e6 if steps else None}
    sent = evals[-1].get("bytes_per_step", summary.get("bytes_per_step"))
    m["sent_mb_step"] = sent / 1e6 if sent is not None else None
    if "steps_s" in summary and summary.get("steps"):
        n = summary["steps"]
        m["step_ms"] = 1e3 * summary["steps_s"] / n
        m["compute_ms"] = 1e3 * summary["compute_s"] / n
        m["wait_ms"] = 1e3 * summary["wait_s"] / n
    return m


FAMILIES = ("none", "qsgd", "powersgd")


def family(name):
    """The compressor family of a configuration, from its name."""
    if "qsgd" in name:
        return "qsgd"
    if "powersgd" in name or "powergossip" in name:
        return "powersgd"
    return "fp16" if "fp16" in name else "none"


def cell(values, fmt="%.1f"):
    return _cell(values, fmt, "not reached")


def main():
    out = sys.argv[1]
    target = 0.85
    with open(os.path.join(out, "machine.txt")) as f:
        machine = f.read()
        for line in machine.splitlines():
            if " target " in line:
                target = float(line.split(" target ")[1].split(",")[0])
    runs = {}
    with open(os.path.join(out, "runs.tsv")) as f:
        for rate, name, rep, path, link in csv.reader(f, delimiter="\t"):
            m = measure(path, target, int(link))
            runs.setdefault(rate, {}).setdefault(name, []).append(m)
    print("```\n" + machine.strip() + "\n```\n")
    for rate, by_name in runs.items():
        print("### %s links\n" % rate)
        print("| configuration | s/epoch | s to %.0f%% | final acc | "
              "MB/step on the links | MB/step sent per rank | "
              "step ms (compute / waiting) |" % (100 * target))
        print("|---|---|---|---|---|---|---|")
        for name, ms in by_name.items():
            ok = [m for m in ms if m]
            if not ok:
                print("| %s | failed | | | | | |" % name)
                continue
            split = ""
            if "step_ms" in ok[0]:
                split = "%.1f (%.1f / %.1f)" % tuple(
                    med([m[k] for m in ok])[0]
                    for k in ("step_ms", "compute_ms", "wait_ms"))
            print("| %s | %s | %s | %s | %s | %s | %s |" % (
                name, cell([m["s_epoch"] for m in ok]),
                cell([m["to_target"] for m in ok]),
                cell([m["acc"] for m in ok], "%.4f"),
                cell([m["link_mb_step"] for m in ok], "%.2f"),
                _cell([m["sent_mb_step"] for m in ok], "%.3f"), split))
        times = {name: med([m["to_target"] for m in ms if m])[0]
                 for name, ms in by_name.items()}
        # Every all-reduce (qgmd's, Open MPI's) is centralized, and so is
        # every DDP configuration; only the torch ring gossips, and it is
        # compared apart.
        decentral = {n: t for n, t in times.items()
                     if t and not n.startswith(("allreduce", "torch"))}
        ddp = {n: t for n, t in times.items()
               if t and n.startswith("torch-ddp")}
        central = {n: t for n, t in times.items()
                   if t and n.startswith("allreduce")}
        others = ["torch-ring"]
        if central:  # the best all-reduce, compressed or not
            others.insert(0, min(central, key=central.get))
        if ddp:
            others.append(min(ddp, key=ddp.get))  # the best DDP hook
        if decentral:
            best = min(decentral, key=decentral.get)
            line = "\nbest decentralized: %s, %.1f s to %.0f%%" % (
                best, decentral[best], 100 * target)
            for other in others:
                if times.get(other):
                    line += "; %.2fx sooner than %s" % (
                        times[other] / decentral[best], other)
            print(line + "\n")
        # Each compressor family apart: the best decentralized against the
        # best centralized (qgmd's all-reduces and the DDP hooks).
        for fam in FAMILIES:
            dec = {n: t for n, t in decentral.items() if family(n) == fam}
            cen = {n: t for n, t in {**central, **ddp}.items()
                   if family(n) == fam}
            if dec and cen:
                d, c = min(dec, key=dec.get), min(cen, key=cen.get)
                print("%s: %s %.1f s against %s %.1f s: %.2fx sooner\n" % (
                    fam, d, dec[d], c, cen[c], cen[c] / dec[d]))


if __name__ == "__main__":
    main()
