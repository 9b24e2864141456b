"""summary.md: per table (runs that differ only in algorithm, alpha and
seed), accuracy pivots algorithm x alpha and every metric, as mean ±
standard deviation over seeds, the best in bold; with several tables, an
overview of all of them first (docs/SWEEP.md, "summary.md")."""

import re

from .groups import better

_SYNC_METRICS = ("final_test_acc_avg_model", "best_test_acc_avg_model",
                 "final_test_acc_local_mean", "best_test_acc_local_mean",
                 "final_consensus_dist", "stability", "time_to_target_s", "run_wall_s")
# An asynchronous run has one model: the local-model accuracies and the
# consensus distance say nothing there.
_ASYNC_METRICS = ("final_test_acc_avg_model", "best_test_acc_avg_model", "stability",
                  "staleness_mean", "applied_spread", "run_wall_s")
_HEADINGS = {
    "final_test_acc_avg_model": "final acc, avg model (%)",
    "best_test_acc_avg_model": "best acc, avg model (%)",
    "final_test_acc_local_mean": "final acc, local mean (%)",
    "best_test_acc_local_mean": "best acc, local mean (%)",
    "final_consensus_dist": "final consensus dist",
    "stability": "stability: std of avg-model acc over last {k} evals (pp)",
    "staleness_mean": "staleness, mean",
    "applied_spread": "applied per worker, max - min",
    "time_to_target_s": "time to target accuracy (s)",
    "run_wall_s": "wall time (s)",
}
MISSING = "–"


def _cell(column, stat):
    """"12.34 ± 0.56", in percent for accuracies; one seed's value alone,
    with no spread it does not have."""
    if "consensus" in column:
        text = "%.3g ± %.2g" % (stat.mean, stat.std)
    else:
        scale = 100 if re.search("acc|stability", column) else 1
        digits = 1 if re.search("wall|applied|time", column) else 2
        text = "%.*f ± %.*f" % (digits, stat.mean * scale, digits, stat.std * scale)
    return text.split(" ± ")[0] if stat.n == 1 else text


class _Writer:
    def __init__(self, groups, k):
        self.g, self.k, self.out = groups, k, []

    def line(self, text=""):
        self.out.append(text + "\n")

    def heading(self, column):
        return _HEADINGS.get(column, column).format(k=self.k)

    def best_mean(self, t, x, column):
        """The best mean of column over the algorithms of table t at alpha
        x (None when the column ranks nothing)."""
        way = better(column)
        best = None
        if not way:
            return best
        for a in self.g.algorithms:
            s = self.g.stat(t, a, x, column)
            if s.n and (best is None or way * s.mean > way * best):
                best = s.mean
        return best

    def stat_cell(self, t, a, x, column):
        """The statistic as a cell, in bold when it is the best mean."""
        best = self.best_mean(t, x, column)
        s = self.g.stat(t, a, x, column)
        text = _cell(column, s)
        return f"**{text}**" if best is not None and s.mean == best else text

    def cell_or_missing(self, t, a, x, column):
        if not self.g.stat(t, a, x, column).n:
            return MISSING
        return self.stat_cell(t, a, x, column)

    def detail_cell(self, t, a, x, column, seeds):
        """The cell of the details table; for the time to target, how many
        of the seeds reached it when not all did."""
        if column != "time_to_target_s":
            return self.stat_cell(t, a, x, column)
        reached = self.g.stat(t, a, x, column).n
        if not reached:
            return "not reached"
        text = self.stat_cell(t, a, x, column)
        return text if reached == seeds else f"{text} ({reached} of {seeds} seeds)"

    def table_head(self, lead, align, columns):
        self.line(lead + "".join(f" {self.heading(c)} |" for c in columns))
        self.line(align + "---:|" * len(columns))

    def pivot(self, t, column, title):
        self.line(title)
        self.line()
        self.line("| algorithm |" + "".join(f" alpha = {x} |" for x in self.g.alphas))
        self.line("|---|" + "---:|" * len(self.g.alphas))
        for a in self.g.algorithms:
            self.line(f"| {self.g.alg_label(a)} |" + "".join(
                f" {self.cell_or_missing(t, a, x, column)} |" for x in self.g.alphas))
        self.line()

    def details(self, t):
        columns = _ASYNC_METRICS if t in self.g.is_async else _SYNC_METRICS
        # A run reaches its --target-accuracy, or not: the column only
        # when some run has one, a cell only for the seeds that reached it.
        columns = tuple(c for c in columns if c != "time_to_target_s" or c in self.g.col)
        self.line("All metrics (best per alpha in bold):")
        self.line()
        self.table_head("| alpha | algorithm | seeds |", "|---:|---|---:|", columns)
        for x in self.g.alphas:
            for a in self.g.algorithms:
                seeds = self.g.stat(t, a, x, columns[0]).n
                if not seeds:
                    continue
                self.line(f"| {x} | {self.g.alg_label(a)} | {seeds} |"
                          + "".join(f" {self.detail_cell(t, a, x, c, seeds)} |" for c in columns))
        self.line()

    def overview(self):
        """One row per group, alpha slowest: the whole sweep in one table."""
        columns = ("final_test_acc_avg_model", "stability")
        if self.g.is_async:
            columns += ("staleness_mean", "applied_spread")
        self.line("## All groups")
        self.line()
        self.line("Best per alpha and settings in bold.")
        self.line()
        self.table_head("| alpha | settings | algorithm | seeds |", "|---:|---|---|---:|", columns)
        for x in self.g.alphas:
            for t in self.g.tables:
                for a in self.g.algorithms:
                    seeds = self.g.stat(t, a, x, columns[0]).n
                    if not seeds:
                        continue
                    self.line(f"| {x} | {t} | {self.g.alg_label(a)} | {seeds} |" + "".join(
                        f" {self.cell_or_missing(t, a, x, c)} |" for c in columns))
        self.line()

    def write(self):
        g = self.g
        self.line("# Sweep summary")
        self.line()
        self.out.append(
            f"{len(g.rows)} finished runs. Cells are mean ± standard deviation over seeds "
            "(sample std, n-1); a cell of a single seed is its value alone.\n"
            "Accuracies are on the test set, in percent: *avg model* is the model whose "
            "parameters are the mean of all nodes', *local mean* the mean over nodes of each "
            "node's own model.\n"
            "**Stability** is the standard deviation (population, n) of the avg-model test "
            f"accuracy over the last {self.k} evaluations of a run (fewer if the run has "
            "fewer), in percentage points: lower is steadier.\n")
        if g.is_async:
            self.out.append(
                "Asynchronous runs (parameter server) have one model, the server's: it is the "
                "avg model. *Staleness* is the mean over applied gradients of the updates made "
                "since the model they were computed on; *applied per worker, max - min* the "
                "spread of the number of gradients applied per worker (0-1: even).\n")
        if any(g.alg_note.get(a) for a in g.algorithms):
            self.out.append(
                "Settings in parentheses after an algorithm go with it (they have one value "
                "per algorithm), so they do not split tables.\n")
        self.line()
        if len(g.tables) > 1:
            self.overview()
        for t in g.tables:
            self.line(f"## {t or 'All runs'}")
            self.line()
            self.pivot(t, "final_test_acc_avg_model",
                       "Final test accuracy of the averaged model (%):")
            if t in g.is_async:
                self.pivot(t, "stability", f"Stability, std of the accuracy over the last "
                           f"{self.k} evaluations (pp, lower is steadier):")
            else:
                self.pivot(t, "final_test_acc_local_mean",
                           "Final test accuracy of the local models, mean over nodes (%):")
            self.details(t)
        return "".join(self.out)


def summary(groups, k):
    """The text of summary.md for the classified runs table, without the
    list of unfinished runs; k: the stability column's evaluations."""
    return _Writer(groups, k).write()
