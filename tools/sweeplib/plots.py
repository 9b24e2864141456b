"""The plots: their data (one file per table, alpha and algorithm with,
per evaluation, its epoch and the mean / min / max over seeds of the
avg-model test accuracy (%) and of the consensus distance; one file per
table and algorithm with the final accuracy per alpha) and the gnuplot
scripts that draw them. Evaluations are matched across seeds by their rank
in the run: one per epoch, or ten per epoch in an asynchronous run, whose
epochs are fractions (the mean over seeds is plotted)."""

import os
import subprocess
import sys

import qgmtool

from . import metrics, numtext
from .cksum import cksum
from .groups import file_part

# One colour per algorithm, the same in every figure (the asynchronous
# modes, never in a figure with the others, reuse the first three).
COLORS = {"dsgd": 1, "asgd": 1, "dsgdm-n": 2, "asgd-m": 2, "qg-dsgdm-n": 3, "gsgm": 3,
          "d2": 4, "gt": 5, "allreduce": 8, "dsgdm": 6, "qg-dsgdm": 7}
# Whole epochs as ticks up to this many: short runs would get ticks at 1.5.
MAX_EPOCH_TICKS = 12


def color(algorithm):
    if algorithm in COLORS:
        return COLORS[algorithm]
    return 9 + int(str(cksum((algorithm + "\n").encode()))[0])


class _Range:
    def __init__(self):
        self.n, self.total, self.low, self.high = 0, 0.0, None, None

    def add(self, v):
        self.low = v if self.low is None or v < self.low else self.low
        self.high = v if self.high is None or v > self.high else self.high
        self.n += 1
        self.total += v

    @property
    def mean(self):
        return self.total / self.n


class Series:
    """A plot's line: the data file of one table, alpha (None for the final
    accuracy against alpha) and algorithm."""

    def __init__(self, kind, table, alpha, algorithm, path, seeds):
        self.kind, self.table, self.alpha, self.algorithm, self.path = \
            kind, table, alpha, algorithm, path
        self.seeds = seeds  # the most runs a point of the line is over


def _table_part(table):
    return file_part(table) if table else "all"


def write_data(groups, run_dirs, data_dir):
    """Writes the data files into data_dir; returns their Series, in the
    order the figures list them."""
    row_of = {groups.value(row, "run"): r for r, row in enumerate(groups.rows)}
    points = {}  # (table, alpha, algorithm) -> per evaluation, its ranges
    for run_dir in run_dirs:
        r = row_of.get(os.path.basename(run_dir))
        if r is None:
            continue
        line = points.setdefault((groups.table[r], groups.alpha[r], groups.alg[r]), [])
        evals = metrics.of_type(metrics.records(f"{run_dir}/metrics.jsonl"), "eval")
        for e, rec in enumerate(evals):
            if e == len(line):
                line.append((_Range(), _Range(), _Range()))
            epoch, acc, cons = line[e]
            epoch.add(numtext.number(metrics.number_text(rec, "epoch")))
            acc.add(numtext.number(metrics.number_text(rec, "test_acc_avg_model")) * 100)
            cons.add(numtext.number(metrics.number_text(rec, "consensus_dist")))
    series = []
    for t in groups.tables:
        for x in groups.alphas:
            for a in groups.algorithms:
                if (t, x, a) not in points:
                    continue
                path = f"{data_dir}/epoch_{_table_part(t)}_alpha-{file_part(x)}_{file_part(a)}.dat"
                with open(path, "w", encoding="utf-8") as f:
                    f.write("# epoch acc_mean acc_min acc_max cons_mean cons_min cons_max\n")
                    for epoch, acc, cons in points[t, x, a]:
                        f.write("%.6g %.4f %.4f %.4f %.6g %.6g %.6g\n" % (
                            epoch.mean, acc.mean, acc.low, acc.high,
                            cons.mean, cons.low, cons.high))
                seeds = max((acc.n for _, acc, _ in points[t, x, a]), default=0)
                series.append(Series("epoch", t, x, a, path, seeds))
    for t in groups.tables:
        for a in groups.algorithms:
            lines, seeds = [], 0
            for x in reversed(groups.alphas):
                s = groups.stat(t, a, x, "final_test_acc_avg_model")
                if s.n:
                    lines.append("%s %.4f %.4f %d\n" % (x, s.mean * 100, s.std * 100, s.n))
                    seeds = max(seeds, s.n)
            if lines:
                path = f"{data_dir}/final_{_table_part(t)}_{file_part(a)}.dat"
                with open(path, "w", encoding="utf-8") as f:
                    f.write("# alpha acc_mean acc_std seeds\n" + "".join(lines))
                series.append(Series("final", t, "", a, path, seeds))
    return series


def manifest(series):
    """The list of data files (kind, table, alpha, algorithm, path)."""
    return "".join("\037".join((s.kind, s.table, s.alpha, s.algorithm, s.path)) + "\n"
                   for s in series)


def _data_rows(path):
    with open(path, encoding="utf-8") as f:
        return [line.split() for line in f if not line.startswith("#")]


def _column(rows, i):
    return [numtext.number(row[i]) if i < len(row) else 0.0 for row in rows]


# Every string of a script is written by these: labels and file names come
# from the spec and the runs, and gnuplot takes them as they are
# (qgmtool.gnuplot_string). A file name with a control character is no
# figure (ValueError).
_gp_string = qgmtool.gnuplot_string
_gp_path = qgmtool.gnuplot_path


def figure_script(kind, title, png, lines):
    """The gnuplot script of one figure. kind: accuracy, consensus or
    final; lines: (algorithm, data file) in order."""
    out = [f"set terminal pngcairo size 900,560 font {_gp_string(',11')}\n",
           f"set output {_gp_path(png)}\n",
           f"set title {_gp_string(title)} noenhanced\nset key bottom right noenhanced\nset grid\n"]
    if kind in ("accuracy", "consensus"):
        out.append(f"set xlabel {_gp_string('epoch')}\n")
        epochs = _column(_data_rows(lines[0][1]), 0)
        if int(epochs[-1] if epochs else 0) <= MAX_EPOCH_TICKS:
            out.append("set xtics 1\n")
    if kind == "accuracy":
        out.append(f"set ylabel {_gp_string('test accuracy, averaged model (%)')}\n")
    elif kind == "consensus":
        out.append(f"set ylabel {_gp_string('consensus distance, mean ||x_i - x̄||²')}\n"
                   "set key top right\n")
        # It falls by orders of magnitude, but is exactly 0 when every node
        # sees every other (2 nodes): log scale only when it can be drawn.
        if all(v > 0 for _, path in lines for v in _column(_data_rows(path), 5)):
            out.append(f"set logscale y\nset format y {_gp_string('%.0e')}\n")
    else:
        out.append(f"set xlabel {_gp_string('Dirichlet alpha (log scale; small = non-IID)')}\n"
                   f"set ylabel {_gp_string('final test accuracy, averaged model (%)')}\n"
                   "set logscale x\nset offsets graph 0.05, graph 0.05, 0, 0\n")
    using = {"accuracy": ("1:3:4", "1:2"), "consensus": ("1:6:7", "1:5")}
    plots = []
    for algorithm, path in lines:
        c, file, label = color(algorithm), _gp_path(path), _gp_string(algorithm)
        if kind == "final":
            plots.append(f"{file} using 1:2:3 with yerrorlines lc {c} pt 7 title {label}")
        else:
            band, mean = using[kind]
            plots.append(f"{file} using {band} with filledcurves fs transparent solid 0.2 "
                         f"noborder lc {c} notitle, \\\n  {file} using {mean} with linespoints "
                         f"lc {c} pt 7 ps 0.6 title {label}")
    out.append("plot " + ", \\\n  ".join(plots) + "\n")
    return "".join(out)


def has_consensus(lines):
    """Whether any data file has a non-zero consensus distance (an
    asynchronous run's is 0: one model)."""
    return any(v != 0 for _, path in lines for v in _column(_data_rows(path), 4))


def figures(plot_dir, series, shared=""):
    """(kind, title, PNG path, lines) of every figure, in drawing order;
    shared: the settings all runs share, which every title names."""
    keyed, seeds = {}, {}
    for s in series:
        key = (s.kind, s.table, s.alpha)
        keyed.setdefault(key, []).append((s.algorithm, s.path))
        seeds[key] = max(seeds.get(key, 0), s.seeds)
    result = []
    for (kind, table, alpha), lines in keyed.items():
        name = file_part(table)
        name = f"_{name}" if name else ""
        what = ", ".join(p for p in (shared, table) if p)
        what = what + ", " if what else ""
        several = seeds[kind, table, alpha] > 1
        if kind == "epoch":
            band = "band: min-max over seeds" if several else "one seed"
            title = f"{what}alpha = {alpha} ({band})"
            result.append(("accuracy", title,
                           f"{plot_dir}/accuracy-vs-epoch{name}_alpha-{file_part(alpha)}.png", lines))
            if has_consensus(lines):
                result.append(("consensus", title,
                               f"{plot_dir}/consensus-vs-epoch{name}_alpha-{file_part(alpha)}.png", lines))
        else:
            bars = "error bars: std over seeds" if several else "one seed"
            title = f"{what}final accuracy vs alpha ({bars})"
            result.append(("final", title, f"{plot_dir}/final-accuracy-vs-alpha{name}.png", lines))
    return result


def draw(plot_dir, series, shared=""):
    """Draws every figure with gnuplot; its chatter goes to
    data/gnuplot.log, and a figure that fails is reported while the others
    are still drawn."""
    log_path = f"{plot_dir}/data/gnuplot.log"
    with open(log_path, "w", encoding="utf-8") as log:
        for kind, title, png, lines in figures(plot_dir, series, shared):
            try:
                script = figure_script(kind, title, png, lines)
                ok = subprocess.run(["gnuplot"], input=script.encode(), stderr=log).returncode == 0
            except (OSError, ValueError) as e:
                print(f"sweep: {e}", file=log)
                ok = False
            if not ok:
                print(f"sweep: gnuplot could not draw {png}; see {log_path}", file=sys.stderr)
