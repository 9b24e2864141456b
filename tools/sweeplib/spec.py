"""Grid spec files and --set overrides to the list of runs (docs/SWEEP.md).

A spec line is `key = v1 v2 ...`; keys with several values are grid axes,
and the runs are their cartesian product, the first line varying slowest.
A line ending in `if KEY = VALUE` then sets its key in the runs that have
that value only. A run is a dict of settings in the order they were
written (flagfile values are absolute paths)."""

import os
import re

from .errors import SpecError

# Keys that are not qgmd flags.
RANKS = "np"
FLAG_FILE = "flagfile"
METRICS = "metrics"  # set by the sweep: every run has its own file

WHITESPACE = " \t\n\r\f\v"
_SPACE = "[ \t\n\r\f\v]"
_LINE = re.compile(rf"^{_SPACE}*([A-Za-z0-9_-]+){_SPACE}*=(.*)$", re.S)
_OVERRIDE = re.compile(r"^([A-Za-z0-9_-]+)=(.*)$", re.S)
_CONDITION = re.compile(rf"^(.*){_SPACE}if({_SPACE}.*)?$", re.S)
_CONDITION_TAIL = re.compile(
    rf"^{_SPACE}*([A-Za-z0-9_-]+){_SPACE}*={_SPACE}*([^ \t\n\r\f\v]+){_SPACE}*$", re.S)
_RANKS_VALUE = re.compile(r"^[1-9][0-9]{0,3}$")


class Setting:
    """One spec line or override: key, values, condition ((KEY, VALUE) or
    None) and where it was written."""

    def __init__(self, key, values, condition, where):
        self.key, self.values, self.condition, self.where = key, values, condition, where

    @property
    def ident(self):
        """A line is known by its key and condition."""
        if self.condition is None:
            return self.key
        return f"{self.key} if {self.condition[0]}={self.condition[1]}"


def _split_condition(where, text):
    """The values and the condition of the text after a key's '='."""
    match = _CONDITION.match(" " + text)
    if not match:
        return text, None
    tail = _CONDITION_TAIL.match(match.group(2) or "")
    if not tail:
        raise SpecError(where, "expected 'if KEY = VALUE' (one value) at the end of the line")
    return match.group(1), (tail.group(1), tail.group(2))


def _check(where, base, key, text, known_flags):
    """The setting's values, checked; relative flag files are resolved
    against base and made absolute."""
    values = [v for v in re.split("[ \t\n]+", text) if v]
    if not values:
        raise SpecError(where, f"no value for '{key}'")
    if key == METRICS:
        raise SpecError(where, "'metrics' is set by the sweep "
                        "(every run writes runs/NAME/metrics.jsonl)")
    if key not in (RANKS, FLAG_FILE) and key not in known_flags:
        raise SpecError(where, f"unknown key '{key}' (a qgmd flag without its --, np or flagfile)")
    checked = []
    for value in values:
        if value.endswith(","):
            raise SpecError(where, f"'{value}': values are separated by spaces, not commas")
        if key == RANKS and not _RANKS_VALUE.match(value):
            raise SpecError(where, f"np must be a number of ranks in [1, 9999], got '{value}'")
        if key == FLAG_FILE:
            if not value.startswith("/"):
                value = f"{base}/{value}"
            if not (os.path.isfile(value) and os.access(value, os.R_OK)):
                raise SpecError(where, f"cannot read flag file '{value}'")
            value = os.path.join(os.path.abspath(os.path.dirname(value)), os.path.basename(value))
        checked.append(value)
    return checked


def parse_override(arg, known_flags):
    """--set KEY=VALUES [if KEY = VALUE], checked against the working
    directory, where the user typed it."""
    where = f"--set {arg}"
    match = _OVERRIDE.match(arg)
    if not match:
        raise SpecError(where, "expected --set KEY=VALUE...")
    key = match.group(1)
    text, condition = _split_condition(where, match.group(2))
    return Setting(key, _check(where, os.getcwd(), key, text, known_flags), condition, where)


def _read_lines(path, known_flags):
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().split("\n")
    except OSError:
        raise SpecError(path, "cannot read the spec file") from None
    if lines and lines[-1] == "":
        lines.pop()
    base = os.path.abspath(os.path.dirname(path))
    settings, seen = [], {}
    for number, line in enumerate(lines, 1):
        where = f"{path}:{number}"
        text = line.split("#", 1)[0]
        if not text.strip(WHITESPACE):
            continue
        match = _LINE.match(text)
        if not match:
            raise SpecError(where, f"expected 'key = value ...', got '{line.strip(WHITESPACE)}'")
        key = match.group(1)
        values, condition = _split_condition(where, match.group(2))
        setting = Setting(key, None, condition, where)
        if setting.ident in seen:
            raise SpecError(where, f"'{setting.ident}' is already set on line "
                                   f"{seen[setting.ident]}")
        seen[setting.ident] = number
        setting.values = _check(where, base, key, values, known_flags)
        settings.append(setting)
    return settings, seen


def plan_spec(path, overrides, known_flags):
    """The runs of one spec file with the overrides applied."""
    settings, seen = _read_lines(path, known_flags)
    # Every value written for a key, in the file or with --set: a condition
    # must name one of them (a typo is an error; a value that --set has
    # narrowed away just matches no run).
    written = {}
    for s in settings:
        written.setdefault(s.key, []).extend(s.values)
    for override in overrides:
        written.setdefault(override.key, []).extend(override.values)
        if override.ident in seen:
            for s in settings:
                if s.key == override.key and s.condition == override.condition:
                    s.values = override.values
        else:
            settings.append(Setting(override.key, override.values, override.condition,
                                    f"--set {override.ident}"))
            seen[override.ident] = "--set"
    if RANKS not in seen:
        raise SpecError(path, "no 'np' line (the number of ranks of each run)")
    runs = [{}]
    for s in settings:
        if s.condition is None:
            runs = [{**run, s.key: v} for run in runs for v in s.values]
    # Then the conditional lines, in order, on the runs that match.
    for s in settings:
        if s.condition is None:
            continue
        key, value = s.condition
        if key not in seen:
            raise SpecError(s.where, f"'if {key} = ...': '{key}' has no line of its own "
                                     "to choose runs by")
        if key == s.key:
            raise SpecError(s.where, f"'{s.key}' cannot depend on itself")
        if value not in written[key]:
            raise SpecError(s.where, f"'{value}' is not one of the values of '{key}'")
        runs = [r for run in runs
                for r in ([{**run, s.key: v} for v in s.values]
                          if run.get(key, "") == value else [run])]
    return runs
