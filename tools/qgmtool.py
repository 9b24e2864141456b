"""What the Python tools share: their version (qgmd's), bad-usage exits
and reading a run's JSON Lines metrics."""

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.realpath(__file__))

# qgmd beside the tools: in the source tree tools/../daemon/qgmd, once
# installed PREFIX/share/qgmd/tools/../../../bin/qgmd.
DAEMON_CANDIDATES = (
    os.path.join(HERE, "..", "daemon", "qgmd"),
    os.path.join(HERE, "..", "..", "..", "bin", "qgmd"),
)


def version():
    """The version of the qgmd these tools came with ("0.1.0")."""
    for path in DAEMON_CANDIDATES:
        if os.access(path, os.X_OK):
            out = subprocess.run([path, "--version"], capture_output=True,
                                 text=True, check=False).stdout.split()
            if len(out) == 2:
                return out[1]
    return "unknown (qgmd not found beside the tools)"


def print_version(tool):
    print(f"{tool} {version()}")


def usage_error(tool, message):
    """Bad usage or a bad input file: one line, exit status 2."""
    print(f"{tool}: {message}", file=sys.stderr)
    sys.exit(2)


def read_metrics(tool, path):
    """The records of a qgmd or qgm-sim --metrics file, in order. A line
    that is not a JSON object is bad input (FILE:LINE); an unfinished last
    line (a run still writing, or killed) is left out."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError as e:
        usage_error(tool, f"{path}: {e.strerror}")
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            if number == len(lines):
                break
            usage_error(tool, f"{path}:{number}: not a JSON record ({e.msg})")
        if not isinstance(record, dict) or "type" not in record:
            usage_error(tool, f"{path}:{number}: not a qgmd metrics record")
        records.append(record)
    return records
