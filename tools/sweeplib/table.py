"""The runs table: one row per finished run, its settings (np, the flag
file and every qgmd flag from the run's config record, so flags set in flag
files are included, then the CPU and the kernel plan the record names),
then its results. runs.tsv holds it for the plots,
runs.csv for people and spreadsheets."""

import math
import os

import qgmtool

from . import metrics, numtext
from .spec import FLAG_FILE, METRICS, RANKS

# The result columns, in order; time_to_target_s only for runs with a
# --target-accuracy, and the last five from the summary of asynchronous
# runs only.
RESULTS = ("final_test_acc_avg_model", "best_test_acc_avg_model",
           "final_test_acc_local_mean", "best_test_acc_local_mean",
           "final_consensus_dist", "stability", "time_to_target_s", "epochs_done",
           "train_wall_s",
           "run_wall_s", "staleness_mean", "staleness_max", "applied_min",
           "applied_max", "applied_spread")


def stability(accuracies, k):
    """The population standard deviation of the last k accuracies (all of
    them if there are fewer)."""
    last = [numtext.number(a) for a in accuracies[-k:]]
    mean = 0.0
    for a in last:
        mean += a
    mean /= len(last)
    var = 0.0
    for a in last:
        var += (a - mean) * (a - mean)
    return math.sqrt(var / len(last))


def _lines(path):
    """The lines of a run's small text file; none when it is missing or
    is no regular file (a run dir edited by hand), bytes that are not
    UTF-8 as U+FFFD."""
    try:
        return qgmtool.read_bounded(path).decode("utf-8", errors="replace").splitlines()
    except qgmtool.InputError:
        return []


def run_dirs(sweep_dir):
    """The run directories of a sweep, by name: those with a completion
    marker, and the others (failed, interrupted or in progress)."""
    finished, unfinished = [], []
    runs = f"{sweep_dir}/runs"
    for name in sorted(os.listdir(runs)):
        d = f"{runs}/{name}"
        if name.startswith(".") or not os.path.isdir(d):
            continue
        (finished if os.path.isfile(f"{d}/done") else unfinished).append(d)
    return finished, unfinished


def run_conf(run_dir):
    """The settings the spec gave a run (its run.conf), in their order."""
    settings = {}
    for line in _lines(f"{run_dir}/run.conf"):
        key, _, value = line.partition("=")
        settings[key] = value
    return settings


def _read_settings(run_dir, row):
    """np and the flag file from run.conf, the run's wall time from its
    completion marker."""
    settings = run_conf(run_dir)
    if RANKS in settings:
        row.set(RANKS, settings[RANKS])
    if FLAG_FILE in settings:
        row.set(FLAG_FILE, os.path.basename(settings[FLAG_FILE]))
    for line in _lines(f"{run_dir}/done"):
        if line.startswith("wall_s="):
            row.set("run_wall_s", line[len("wall_s="):])


class _Row:
    def __init__(self, columns):
        self.columns, self.values = columns, {}

    def set(self, name, value):
        self.columns.setdefault(name, None)
        self.values[name] = value.replace("\t", " ").replace("\n", " ")


def _read_run(run_dir, columns, k):
    row = _Row(columns)
    row.set("run", os.path.basename(run_dir))
    columns.setdefault(RANKS, None)
    _read_settings(run_dir, row)
    accuracies, best_avg, best_local, last_epoch = [], -1.0, -1.0, None
    target = 0.0
    for rec in metrics.records(f"{run_dir}/metrics.jsonl"):
        kind = metrics.string(rec, "type")
        if kind == "config" and isinstance(rec.get("flags"), dict):
            for key, value in rec["flags"].items():
                if key != METRICS:
                    row.set(key, metrics.flag_text(value))
            # The flag may say auto: the record says what it resolved to
            # on the machine that ran it (rank 0's), which a replay needs.
            for key, column in (("cpu", "cpu"), ("kernels", "kernel_plan")):
                value = metrics.string(rec, key)
                if value:
                    row.set(column, value)
            target = numtext.number(metrics.number_text(rec["flags"], "target-accuracy") or "0")
            if target > 0:
                row.set("time_to_target_s", "")  # not reached, so far
        elif kind == "eval":
            acc = metrics.number_text(rec, "test_acc_avg_model")
            local = metrics.number_text(rec, "test_acc_local_mean")
            accuracies.append(acc)
            last_epoch = numtext.short(metrics.number_text(rec, "epoch"))
            best_avg = max(best_avg, numtext.number(acc))
            best_local = max(best_local, numtext.number(local))
            row.set("final_test_acc_avg_model", acc)
            row.set("best_test_acc_avg_model", "%.6f" % best_avg)
            row.set("final_test_acc_local_mean", local)
            row.set("best_test_acc_local_mean", "%.6f" % best_local)
            row.set("final_consensus_dist", metrics.number_text(rec, "consensus_dist"))
            # Time to accuracy: the first evaluation at the run's target.
            if target > 0 and numtext.number(acc) >= target and \
                    not row.values["time_to_target_s"]:
                row.set("time_to_target_s", metrics.number_text(rec, "wall_s"))
        elif kind == "summary":
            row.set("train_wall_s", metrics.number_text(rec, "wall_s"))
            # Asynchronous runs: how stale the applied gradients were and
            # how evenly the workers' gradients were applied.
            if metrics.string(rec, "mode") == "async":
                for key in ("staleness_mean", "staleness_max", "applied_min", "applied_max"):
                    row.set(key, metrics.number_text(rec, key))
                row.set("applied_spread", numtext.computed(
                    numtext.number(metrics.number_text(rec, "applied_max"))
                    - numtext.number(metrics.number_text(rec, "applied_min"))))
    if accuracies:
        row.set("stability", "%.6f" % stability(accuracies, k))
        row.set("epochs_done", last_epoch)
    return row


def build(run_dirs, k):
    """The header and rows (lists of text) of the finished runs run_dirs;
    k: the evaluations the stability column covers."""
    columns = {"run": None}
    rows = [_read_run(d, columns, k) for d in run_dirs]
    # Settings first, results last, in RESULTS' order (the asynchronous
    # ones only when there are any).
    header = [c for c in columns if c not in RESULTS] + [c for c in RESULTS if c in columns]
    return header, [[row.values.get(c, "") for c in header] for row in rows]


def tsv(header, rows):
    return "".join("\t".join(line) + "\n" for line in [header] + rows)


def _csv_field(value):
    """RFC 4180: fields with commas or quotes are quoted, quotes doubled."""
    if '"' in value or "," in value:
        return '"' + value.replace('"', '""') + '"'
    return value


def csv(header, rows):
    return "".join(",".join(map(_csv_field, line)) + "\n" for line in [header] + rows)
