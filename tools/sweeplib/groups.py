"""How the runs of the table group. Runs that differ only in seed form a
group; groups share a table when they differ only in algorithm and alpha
(and in settings that go with the algorithm, such as a conditional line's
lr). Statistics are over the seeds of a group."""

import math
import re

from . import numtext
from .table import RESULTS

# The paper's order first; other algorithms follow in the order of the runs.
ALGORITHM_ORDER = ("dsgd", "dsgdm", "dsgdm-n", "qg-dsgdm", "qg-dsgdm-n", "d2", "gt",
                   "dadam", "qg-dadam", "allreduce", "asgd", "asgd-m", "gsgm")
# Columns that never split tables: they are what a table compares.
COMPARED = ("seed", "algorithm", "alpha")
# What plot titles name when every run shares it.
TITLED = ("np", "topology", "dataset", "model")


def better(column):
    """Which way is better for a result column: 1 higher, -1 lower, 0
    neither (staleness and update counts describe a run rather than rank
    it)."""
    if "acc" in column:
        return 1
    if re.search("consensus|stability|wall|time_to", column):
        return -1
    return 0


def file_part(text):
    """A name usable in a file name."""
    return re.sub(r"[^A-Za-z0-9.=+-]+", "_", text)


class Stat:
    """Mean and sample standard deviation (0 for one value) over seeds."""

    def __init__(self, values):
        self.n = len(values)
        total = squares = 0.0
        for v in values:
            total += v
            squares += v * v
        self.mean = total / self.n if self.n else 0.0
        var = (squares - total * total / self.n) / (self.n - 1) if self.n > 1 else 0.0
        self.std = math.sqrt(var) if var > 0 else 0.0


class Groups:
    """The runs table, classified: for every row its table (the varying
    settings but the compared ones, as "name=value ..."), algorithm and
    alpha; the distinct tables, algorithms and alphas in order; the
    settings that go with each algorithm; which tables hold asynchronous
    runs."""

    def __init__(self, header, rows):
        self.header, self.rows = header, rows
        self.col = {name: i for i, name in enumerate(header)}
        vary = [i for i, name in enumerate(header)
                if name != "run" and name not in RESULTS
                and any(self.cell(r, i) != self.cell(rows[0], i) for r in rows[1:])]
        self.alg = [self.value(r, "algorithm") for r in rows]
        self.alpha = [self.value(r, "alpha") for r in rows]
        self.alg_note = {}
        with_alg = self._algorithm_settings(vary)
        self.table, self.tables, self.is_async = [], [], set()
        for r, row in enumerate(rows):
            t = " ".join(f"{header[i]}={self.cell(row, i)}" for i in vary
                         if header[i] not in COMPARED and i not in with_alg)
            self.table.append(t)
            if t not in self.tables:
                self.tables.append(t)
            if "staleness_mean" in self.col and self.value(row, "staleness_mean") != "":
                self.is_async.add(t)
        present = list(dict.fromkeys(self.alg))
        self.algorithms = ([a for a in ALGORITHM_ORDER if a in present]
                           + [a for a in present if a not in ALGORITHM_ORDER])
        # Descending; equal values keep their order.
        self.alphas = sorted(dict.fromkeys(self.alpha), key=lambda x: -numtext.number(x))

    @staticmethod
    def cell(row, i):
        return row[i] if i < len(row) else ""

    def value(self, row, name):
        return self.cell(row, self.col[name]) if name in self.col else ""

    def _algorithm_settings(self, vary):
        """A varying setting that has one value per algorithm goes with the
        algorithm: it must not split the comparison into tables. Returns
        such columns and fills alg_note."""
        with_alg = set()
        for i in vary:
            if self.header[i] in COMPARED:
                continue
            value, fixed = {}, True
            for r, row in enumerate(self.rows):
                a = self.alg[r]
                if a in value and value[a] != self.cell(row, i):
                    fixed = False
                    break
                value[a] = self.cell(row, i)
            if not fixed:
                continue
            with_alg.add(i)
            for a, v in value.items():
                note = f"{self.header[i]}={v}"
                self.alg_note[a] = f"{self.alg_note[a]} {note}" if self.alg_note.get(a) else note
        return with_alg

    def shared(self):
        """The TITLED settings that every run shares, as "np=8, ..."."""
        return ", ".join(f"{name}={self.value(self.rows[0], name)}" for name in TITLED
                         if name in self.col and self.value(self.rows[0], name) != ""
                         and all(self.value(r, name) == self.value(self.rows[0], name)
                                 for r in self.rows))

    def alg_label(self, a):
        """An algorithm's name in a table, with the settings that go with it."""
        note = self.alg_note.get(a, "")
        return f"{a} ({note})" if note else a

    def stat(self, t, a, x, column):
        """Column's statistics over the rows of table t, algorithm a and
        alpha x (rows where it is empty are left out)."""
        c = self.col.get(column)
        values = [numtext.number(row[c]) for r, row in enumerate(self.rows)
                  if self.table[r] == t and self.alg[r] == a and self.alpha[r] == x
                  and c is not None and self.cell(row, c) != ""]
        return Stat(values)
