"""What the benchmarks' reports share: reading a run's JSON Lines records
(qgmd's and the PyTorch peer's have the same names) and printing a median
with its range over rounds."""
import json
import statistics


def records(path):
    """The records of a metrics file; none when it is missing or cut off."""
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, json.JSONDecodeError):
        return []


def median(values):
    """(median, min, max) of the values that are not None, or Nones."""
    values = [v for v in values if v is not None]
    if not values:
        return None, None, None
    return statistics.median(values), min(values), max(values)


def cell(values, fmt="%.1f", missing="—"):
    """The median, and its range in brackets when the rounds differ."""
    m, lo, hi = median(values)
    if m is None:
        return missing
    if lo == hi:
        return fmt % m
    return (fmt + " (" + fmt + "-" + fmt + ")") % (m, lo, hi)
