"""Numbers as the report reads and writes them. A cell of the runs table is
text; read as a number it is its leading numeric part (0 when there is
none, so an empty cell counts as 0), and a computed whole number is written
without a fraction."""

import math
import re

_LEADING_NUMBER = re.compile(
    r"[ \t\n]*[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def number(text):
    """The value of a cell or metrics field given as text."""
    if isinstance(text, (int, float)):
        return float(text)
    match = _LEADING_NUMBER.match(text)
    return float(match.group(0)) if match else 0.0


def computed(value):
    """A computed value as a cell: whole numbers as integers, others with
    six significant digits."""
    if math.isfinite(value) and value == int(value):  # 1e999 is inf, no int
        return "%d" % value
    return "%.6g" % value


def short(value):
    """A number read from a record, in its shortest form up to ten
    significant digits (0.10000000000000001 is 0.1)."""
    return "%.10g" % number(value)
