"""Each run's directory name and its label in the progress lines."""

import os
import re

from .cksum import cksum
from .spec import FLAG_FILE

# The settings a run's directory name spells out, in this order.
NAMED_KEYS = ("topology", "np", "straggle", "algorithm", "alpha", "seed")


def _lines(run):
    return [f"{key}={value}" for key, value in run.items()]


def run_name(run):
    """The usual axes spelled out for people, then a hash of every setting
    (sorted, so line order does not matter; flag files by content, so
    editing one gives new runs instead of stale "finished" ones)."""
    parts = []
    if run.get(FLAG_FILE):
        parts.append(os.path.basename(run[FLAG_FILE]).rsplit(".", 1)[0])
    parts += [f"{key}-{run[key]}" for key in NAMED_KEYS if run.get(key)]
    hashed = bytearray()
    # The empty line is part of the hashed text since the first version.
    for line in sorted(_lines(run) + [""], key=lambda s: s.encode()):
        if line.startswith(FLAG_FILE + "="):
            path = line[len(FLAG_FILE) + 1:]
            hashed += f"{FLAG_FILE}={os.path.basename(path)}\n".encode()
            with open(path, "rb") as f:
                hashed += f.read()
        else:
            hashed += (line + "\n").encode(errors="surrogateescape")
    name = re.sub(r"[^A-Za-z0-9.+=_-]", "_", "_".join(p for p in parts if p))
    return f"{name}_{cksum(bytes(hashed)):08x}"


def axes(runs):
    """Keys whose value differs between runs, or that only some runs have
    (a conditional line's): they label progress."""
    values, counts = {}, {}
    for run in runs:
        for key, value in run.items():
            values.setdefault(key, set()).add(value)
            counts[key] = counts.get(key, 0) + 1
    return sorted((k for k in values if len(values[k]) > 1 or counts[k] < len(runs)),
                  key=lambda s: s.encode())


def run_label(run, axis_keys):
    """"alpha=0.1 algorithm=dsgd": the run's values of the axes."""
    parts = []
    for key in axis_keys:
        value = run.get(key, "")
        if value:
            parts.append(f"{key}={os.path.basename(value) if key == FLAG_FILE else value}")
    return " ".join(parts) or run_name(run)


class Plan:
    """The runs of a sweep with their names and labels, in order."""

    def __init__(self, runs):
        self.runs = runs
        axis_keys = axes(runs)
        self.names = [run_name(r) for r in runs]
        self.labels = [run_label(r, axis_keys) for r in runs]
