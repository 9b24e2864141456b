"""The daemon's metrics files (JSON Lines, README "Metrics"), read with the
json module. Numbers keep the text the daemon wrote, so the runs table
shows 0.790000 where the daemon wrote it, not a re-printed float."""

import json

import qgmtool

from . import numtext


class Number(str):
    """A JSON number, as written."""


def _decode(line):
    try:
        record = json.loads(line, parse_float=Number, parse_int=Number)
    except ValueError:
        return None  # a line being written while the run trains
    return record if isinstance(record, dict) else None


def records(path):
    """The records of a metrics file, in order ([] when there is none)."""
    try:
        lines = qgmtool.read_bounded(path).decode("utf-8", errors="replace").splitlines()
    except qgmtool.InputError:  # missing, not a regular file, or too large
        return []
    return [r for r in map(_decode, lines) if r is not None]


def number_text(record, key):
    """A numeric field as written, or "" when it is absent or not a number."""
    value = record.get(key)
    return value if isinstance(value, Number) else ""


def string(record, key):
    value = record.get(key)
    return value if isinstance(value, str) and not isinstance(value, Number) else ""


def flag_text(value):
    """A flag of the config record as a cell: numbers in their short form,
    control characters (which the daemon writes as \\u escapes) as '?'."""
    if isinstance(value, Number):
        return numtext.short(value)
    if isinstance(value, str):
        return "".join("?" if ord(c) < 0x20 else c for c in value)
    return json.dumps(value)


def of_type(recs, kind):
    return [r for r in recs if string(r, "type") == kind]
