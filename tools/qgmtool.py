"""What the Python tools share: their version (qgmd's), bad-usage exits
and reading a run's JSON Lines metrics."""

import json
import os
import stat
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


# A metrics file larger than this is not read (a run writes a few hundred
# bytes a record; a path to /dev/zero or a huge file must not exhaust memory).
MAX_INPUT_BYTES = 1 << 30


class InputError(Exception):
    """A file that cannot be read as a tool's input, with why."""


def read_bounded(path, limit=MAX_INPUT_BYTES):
    """The bytes of the regular file at path. A FIFO, a device or a
    directory is refused without blocking (opened with O_NONBLOCK, then
    checked), and so is a file of more than limit bytes: InputError."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise InputError(e.strerror) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError("not a regular file")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise InputError(e.strerror) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise InputError(f"larger than {limit >> 20} MiB")
    return data


def gnuplot_string(text):
    """text as a gnuplot string literal that gnuplot takes as it is. In
    double quotes gnuplot runs `backquoted` commands and expands escapes;
    in single quotes it expands nothing (no commands, no @macros, no
    backslashes), and a quote is written twice. A line break would end
    the command inside the string (and let the rest run as one, `!cmd`
    too), so control characters become '?'."""
    text = "".join("?" if ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0 else c
                   for c in str(text))
    return "'" + text.replace("'", "''") + "'"


def gnuplot_path(path):
    """A file name for gnuplot (gnuplot_string), or ValueError when it holds
    a control character: gnuplot_string would name another file."""
    if any(ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0 for c in path):
        raise ValueError(f"{path!r}: a control character in the file name")
    return gnuplot_string(path)


def read_metrics(tool, path):
    """The records of a qgmd or qgm-sim --metrics file, in order. A line
    that is not a JSON object is bad input (FILE:LINE); an unfinished last
    line (a run still writing, or killed) is left out. The file must be a
    regular one (read_bounded) of UTF-8 text."""
    try:
        data = read_bounded(path)
    except InputError as e:
        usage_error(tool, f"{path}: {e}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        usage_error(tool, f"{path}: not UTF-8 text (byte {e.start})")
    lines = text.split("\n")
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
        except RecursionError:
            usage_error(tool, f"{path}:{number}: not a JSON record (nested too deeply)")
        if not isinstance(record, dict) or "type" not in record:
            usage_error(tool, f"{path}:{number}: not a qgmd metrics record")
        records.append(record)
    return records
