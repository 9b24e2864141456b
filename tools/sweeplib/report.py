"""The aggregation of a sweep directory: runs.csv, summary.md and the
plots, from the finished runs' files alone, so it can be redone at any time
(tools/sweep --report DIR)."""

import os
import shutil
import sys

from . import plots, summary, table
from .groups import Groups


def _write_atomically(path, text):
    """Through a temporary name: a report is never half written."""
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read().rstrip("\n")


def unfinished_section(run_dirs):
    """The runs that have no completion marker, and why when known."""
    if not run_dirs:
        return ""
    lines = ["## Runs not finished\n\n"]
    for d in run_dirs:
        if os.path.isfile(f"{d}/failed"):
            why = f"failed, exit status {_read(f'{d}/failed')}; see its log"
        else:
            why = "interrupted or in progress (redone by the next sweep)"
        lines.append(f"- `{os.path.basename(d)}`: {why}\n")
    return "".join(lines) + "\n"


def report(sweep_dir, k, draw_plots=True):
    """Writes the reports of sweep_dir; k: the evaluations the stability
    column covers."""
    finished, unfinished = table.run_dirs(sweep_dir)
    if not finished:
        print(f"sweep: no finished runs in {sweep_dir} yet: nothing to report")
        return
    data = f"{sweep_dir}/plots/data"
    os.makedirs(data, exist_ok=True)
    header, rows = table.build(finished, k)
    _write_atomically(f"{data}/runs.tsv", table.tsv(header, rows))
    _write_atomically(f"{sweep_dir}/runs.csv", table.csv(header, rows))
    groups = Groups(header, rows)
    _write_atomically(f"{sweep_dir}/summary.md",
                      summary.summary(groups, k) + unfinished_section(unfinished))
    if draw_plots and not shutil.which("gnuplot"):
        print("sweep: gnuplot not found, no plots (make deps installs gnuplot-nox)",
              file=sys.stderr)
        draw_plots = False
    if draw_plots:
        series = plots.write_data(groups, finished, data)
        with open(f"{data}/manifest", "w", encoding="utf-8") as f:
            f.write(plots.manifest(series))
        plots.draw(f"{sweep_dir}/plots", series, groups.shared())
    print(f"sweep: {len(finished)} finished runs -> {sweep_dir}/runs.csv, {sweep_dir}/summary.md"
          + (f", {sweep_dir}/plots/" if draw_plots else ""))
