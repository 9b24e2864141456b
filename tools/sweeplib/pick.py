"""tools/sweep --pick KEY DIR: the value of one grid axis that ended best,
for each combination of the sweep's other axes, written as the spec lines
that run it on the other seeds (docs/SWEEP.md, "Tuning on a held-out
seed"). This is how lr16.grid and the tuned grids of
examples/hard-heterogeneity were made, so a rerun on another machine
derives its own picks instead of copying ones that its rounding may not
reproduce."""

import os

from . import numtext, table
from .errors import UsageError

# What the picks are judged by: the averaged model's final test accuracy,
# the figure the tables of docs/RESULTS.md compare.
JUDGED_BY = "final_test_acc_avg_model"
# Runs of one setting on several seeds count as one candidate; seed is never
# an axis of the picks.
SEED = "seed"
# The axis a spec line's condition names when there is a choice: the tuned
# grids pick a rate per algorithm.
PREFERRED_CONDITION = "algorithm"


def _sort_key(value):
    """Numbers by value, before words in their order."""
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)


class _Candidate:
    """One value of the picked key in one group: the accuracies of its
    finished runs and how many runs did not finish."""

    def __init__(self):
        self.accuracies, self.unfinished = [], 0

    @property
    def eligible(self):
        # A value that failed on one seed is not picked: on the other seeds
        # it would likely fail too.
        return self.accuracies and not self.unfinished

    @property
    def mean(self):
        return sum(self.accuracies) / len(self.accuracies)

    def describe(self):
        if self.unfinished and not self.accuracies:
            return "did not finish"
        text = "%.4f" % self.mean
        if len(self.accuracies) > 1:
            text += f" (mean of {len(self.accuracies)})"
        if self.unfinished:
            text += f", {self.unfinished} not finished"
        return text


def picks(sweep_dir, key):
    """The lines --pick prints, for the runs in sweep_dir."""
    finished, unfinished = table.run_dirs(sweep_dir)
    # Every run's flags as its config record gave them (a failed run's
    # too), so a key the flag file set is compared by its value.
    header, rows = table.build(finished + unfinished, 1)
    done = {os.path.basename(d) for d in finished}
    runs = []
    for row in rows:
        record = dict(zip(header, row))
        settings = {n: v for n, v in record.items() if n not in table.RESULTS and n != "run"}
        runs.append((settings, record.get(JUDGED_BY, "") if record["run"] in done else None))
    if key not in header:
        raise UsageError(f"--pick {key}: no run in {sweep_dir} records '{key}' "
                         "(a qgmd flag without its --, np or flagfile)")
    axes = [n for n in runs[0][0] if n not in (key, SEED)
            and len({s[n] for s, _ in runs}) > 1]
    if len({s[key] for s, _ in runs}) < 2:
        raise UsageError(f"--pick {key}: every run in {sweep_dir} has the same {key}: "
                         "nothing to pick from")
    groups = {}
    for settings, accuracy in runs:
        group = tuple(settings[n] for n in axes)
        candidate = groups.setdefault(group, {}).setdefault(settings[key], _Candidate())
        if accuracy:
            candidate.accuracies.append(numtext.number(accuracy))
        else:
            candidate.unfinished += 1
    # Spec lines take one condition: the other axes head sections.
    condition = PREFERRED_CONDITION if PREFERRED_CONDITION in axes else (axes[-1] if axes else None)
    headings = [n for n in axes if n != condition]
    lines = [f"# {key} picked by {JUDGED_BY} in {sweep_dir} ({len(finished)} finished runs, "
             f"{len(unfinished)} not)"]
    heading = None
    order = headings + ([condition] if condition else [])
    for group in sorted(groups, key=lambda g: [_sort_key(dict(zip(axes, g))[n]) for n in order]):
        values = dict(zip(axes, group))
        this_heading = " ".join(f"{n}={values[n]}" for n in headings)
        if headings and this_heading != heading:
            lines.append(f"# {this_heading}")
            heading = this_heading
        candidates = groups[group]
        tried = ", ".join(f"{v}: {candidates[v].describe()}"
                          for v in sorted(candidates, key=_sort_key))
        eligible = [v for v in sorted(candidates, key=_sort_key) if candidates[v].eligible]
        where = f" if {condition} = {values[condition]}" if condition else ""
        if not eligible:
            lines.append(f"# {key}{where}: no value finished on every run ({tried})")
            continue
        # The first of equal means: the smallest value, as they sort.
        best = max(eligible, key=lambda v: (candidates[v].mean, -eligible.index(v)))
        lines.append(f"{key} = {best}{where}  # {tried}")
    return lines
