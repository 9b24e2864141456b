"""What the Python tests share: the tree's paths, a temporary directory
per test, tools/sweep as a subprocess, and a gnuplot stand-in that keeps
the scripts it is given."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SWEEP = os.path.join(ROOT, "tools", "sweep")
QGMD = os.path.join(ROOT, "daemon", "qgmd")
FIXTURES = os.path.join(ROOT, "test", "py", "sweep-fixtures")
sys.path.insert(0, os.path.join(ROOT, "tools"))

# Runs small enough for the tests: two ranks, a subset of Fashion-MNIST.
TINY = "epochs = 2\ntrain-limit = 1000\ntest-limit = 300\ncontrol = none\n"


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class TempDirTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="qgm-sweep-test.")
        self.addCleanup(shutil.rmtree, self.tmp)

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def sweep(self, *args, env=None, cwd=None):
        """tools/sweep's exit status, stdout and stderr."""
        p = subprocess.run([SWEEP, *args], capture_output=True, text=True, cwd=cwd or ROOT,
                           env={**os.environ, **(env or {})})
        return p.returncode, p.stdout, p.stderr

    def capturing_gnuplot(self):
        """Environment in which `gnuplot` stores each script in
        DIR/gnuplot/NNN.gp (in drawing order) instead of drawing it."""
        bin_dir, capture = self.path("bin"), self.path("gnuplot")
        os.makedirs(capture)
        write(os.path.join(bin_dir, "gnuplot"),
              '#!/bin/sh\nn=$(ls "$GP_CAPTURE" | wc -l)\n'
              'cat > "$GP_CAPTURE/$(printf %03d "$n").gp"\n')
        os.chmod(os.path.join(bin_dir, "gnuplot"), 0o755)
        return {"PATH": bin_dir + os.pathsep + os.environ["PATH"], "GP_CAPTURE": capture}


def help_entries(text):
    """The flag entries of qgmd's --help: (name, the entry as one line,
    "--name=TYPE help (default: ...)"), continuation lines joined."""
    entries = []
    for line in text.splitlines():
        if re.match(r"  --[a-z0-9-]+=(STR|INT|NUM) ", line):
            entries.append(line.strip())
        elif entries and re.match(r" {25}\S", line) and entries[-1] is not None:
            entries[-1] += " " + line.strip()
        else:
            entries.append(None)
    return [(e[2:].split("=", 1)[0], e) for e in entries if e]
