"""test_cli.py - the command line as a user meets it: --help, --version,
flag values, the tools' bad-input paths, the Makefile's targets and the
README's examples. Run from the source tree (make py-check)."""

import csv
import importlib.machinery
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import types
import unittest

from support import help_entries

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = ["tools/qgmctl", "tools/qgm-topo", "tools/qgm-inspect",
         "tools/qgm-sim", "tools/qgm-trace-merge", "tools/qgm-plot",
         "tools/qgm-cluster", "tools/qgm-run", "tools/qgm-data"]


def run(args, env=None, cwd=ROOT):
    return subprocess.run(args, capture_output=True, text=True, env=env,
                          cwd=cwd, check=False)


class Help(unittest.TestCase):
    def test_every_flag_states_one_default(self):
        out = run(["daemon/qgmd", "--help"])
        self.assertEqual(out.returncode, 0)
        flags = ["  " + entry for _, entry in help_entries(out.stdout)]
        self.assertGreater(len(flags), 30)
        for line in flags:
            self.assertEqual(line.count("(default:"), 1, line)
        control = [l for l in flags if l.startswith("  --control=")][0]
        self.assertIn("(default: $XDG_RUNTIME_DIR/qgmd.sock", control)
        torus = [l for l in flags if l.startswith("  --torus=")][0]
        self.assertTrue(torus.endswith("(default: the most square)"), torus)

    def test_every_tool_has_version_and_help(self):
        version = run(["daemon/qgmd", "--version"]).stdout.split()
        self.assertEqual(version[0], "qgmd")
        for tool in TOOLS:
            out = run([tool, "--version"])
            self.assertEqual(out.returncode, 0, tool)
            self.assertEqual(out.stdout, f"{os.path.basename(tool)} "
                             f"{version[1]}\n")
            out = run([tool, "--help"])
            self.assertEqual(out.returncode, 0, tool)
            self.assertIn("usage:", out.stdout)


class Numbers(unittest.TestCase):
    def test_show_config_prints_shortest_exact_floats(self):
        out = run(["daemon/qgmd", "--show-config", "--alpha=0.1",
                   "--lr=0.3", "--momentum=0.95"])
        self.assertEqual(out.returncode, 0)
        lines = out.stdout.splitlines()
        for flag in ("--alpha=0.1", "--lr=0.3", "--momentum=0.95",
                     "--weight-decay=0.0001", "--lr-decay-factor=0.1"):
            self.assertIn(flag, lines)

    def test_simulator_config_record_has_shortest_floats(self):
        with tempfile.TemporaryDirectory() as tmp:
            metrics = os.path.join(tmp, "sim.jsonl")
            out = run(["tools/qgm-sim", "--nodes=4", "--epochs=1",
                       "--alpha=0.1", f"--metrics={metrics}"])
            self.assertEqual(out.returncode, 0, out.stderr)
            with open(metrics, encoding="utf-8") as f:
                first = f.readline()
        self.assertEqual(json.loads(first)["flags"]["alpha"], 0.1)
        self.assertIn('"alpha":0.1,', first)
        self.assertIn('"lr":0.02,"momentum":0.9,', first)
        self.assertIn('"weight-decay":0.0001,', first)


class Tools(unittest.TestCase):
    def test_png_without_graphviz_says_so(self):
        # A graph whose dot text overfills the pipe: without dot, the
        # writer used to die of SIGPIPE (status 141) without a word.
        with tempfile.TemporaryDirectory() as empty:
            env = dict(os.environ, PATH=empty)
            out = run([os.path.join(ROOT, "tools/qgm-topo"), "complete",
                       "300", "--png", os.path.join(empty, "g.png")],
                      env=env)
        self.assertEqual(out.returncode, 1)
        self.assertEqual(out.stderr, "qgm-topo: --png needs Graphviz's dot "
                         "(apt-get install graphviz)\n")

    def test_inspect_usage(self):
        self.assertEqual(run(["tools/qgm-inspect"]).returncode, 2)
        self.assertEqual(run(["tools/qgm-inspect", "frob", "x"]).returncode,
                         2)


class Simulator(unittest.TestCase):
    def sim(self, *flags):
        with tempfile.TemporaryDirectory() as tmp:
            metrics = os.path.join(tmp, "sim.jsonl")
            out = run(["tools/qgm-sim", *flags, f"--metrics={metrics}"])
            with open(metrics, encoding="utf-8") as f:
                return out, [json.loads(line) for line in f]

    def test_defaults_converge_at_1024_nodes(self):
        out, recs = self.sim("--nodes=1024", "--epochs=20")
        self.assertEqual(out.returncode, 0, out.stderr)
        evals = [r for r in recs if r["type"] == "eval"]
        self.assertEqual(len(evals), 20)
        self.assertEqual(recs[0]["flags"]["lr"], 0.02)
        # The averaged model approaches the optimum: within 10% of ||x*||
        # after 20 epochs (from 100% at x = 0).
        self.assertLess(evals[-1]["dist_to_opt"], 0.1)
        self.assertLess(evals[-1]["loss_gap"], evals[0]["loss_gap"])
        summary = recs[-1]
        self.assertEqual(summary["type"], "summary")
        # Least squares is no classifier: no accuracies, not -1s.
        self.assertFalse([k for k in summary if "acc" in k])

    def test_daemon_job_keeps_the_daemons_rate(self):
        out, recs = self.sim("--problem=dataset", "--nodes=2",
                             "--train-limit=200", "--test-limit=100",
                             "--epochs=1", "--batch-size=50")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(recs[0]["flags"]["lr"], 0.1)

    def test_a_loss_without_bound_is_divergence(self):
        out, recs = self.sim("--nodes=1024", "--epochs=20", "--lr=0.1")
        self.assertEqual(out.returncode, 1)
        self.assertRegex(out.stderr, r"^qgm-sim: loss is \S+ at epoch \d+ "
                         r"step \d+, a million times the first step's: "
                         r"training diverged \(try a smaller --lr\)\n$")
        self.assertNotIn("summary", [r["type"] for r in recs])


def png_size(path):
    """Width and height from a PNG's IHDR chunk."""
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", head[16:24])


class Plot(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def sim_run(self, name, alpha, *flags):
        path = os.path.join(self.tmp.name, name)
        out = run(["tools/qgm-sim", "--problem=dataset", "--nodes=2",
                   "--train-limit=400", "--test-limit=200", "--epochs=3",
                   f"--alpha={alpha}", f"--metrics={path}", *flags])
        self.assertEqual(out.returncode, 0, out.stderr)
        with open(path, encoding="utf-8") as f:
            return path, [json.loads(l) for l in f]

    def test_two_runs_side_by_side(self):
        a, recs_a = self.sim_run("a.jsonl", 0.1)
        b, _ = self.sim_run("b.jsonl", 10)
        out_dir = os.path.join(self.tmp.name, "plots")
        out = run(["tools/qgm-plot", a, b, "-o", out_dir])
        self.assertEqual(out.returncode, 0, out.stderr)
        # qg-dsgdm-n keeps a momentum buffer: its norms get a figure.
        self.assertEqual(sorted(os.listdir(out_dir)),
                         ["a.csv", "accuracy.png", "b.csv", "consensus.png",
                          "loss.png", "momentum.png", "time.png"])
        self.assertEqual(png_size(os.path.join(out_dir, "accuracy.png")),
                         (1000, 650))
        self.assertEqual(png_size(os.path.join(out_dir, "momentum.png")),
                         (1000, 650))
        self.assertEqual(png_size(os.path.join(out_dir, "consensus.png")),
                         (1500, 560))
        self.assertEqual(png_size(os.path.join(out_dir, "time.png")),
                         (1500, 560))
        # The CSV holds the eval records, field for field.
        evals = [r for r in recs_a if r["type"] == "eval"]
        with open(os.path.join(out_dir, "a.csv"), encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), len(evals))
        for row, e in zip(rows, evals):
            self.assertEqual(set(row), set(e))
            for key, value in e.items():
                if isinstance(value, str):
                    self.assertEqual(row[key], value)
                else:
                    self.assertEqual(float(row[key]), value)
        # Titles say what the runs share; legends what tells them apart.
        loader = importlib.machinery.SourceFileLoader(
            "qgm_plot", os.path.join(ROOT, "tools/qgm-plot"))
        plot = types.ModuleType(loader.name)
        plot.__file__ = loader.path
        loader.exec_module(plot)
        title, names = plot.labels([plot.Run(a), plot.Run(b)])
        self.assertEqual(title, "qg-dsgdm-n, 2 nodes, ring, fashion-mnist")
        self.assertEqual(names, ["alpha 0.1", "alpha 10"])
        # Any other flag that differs names the run too; where the output
        # went does not.
        c, _ = self.sim_run("c.jsonl", 0.1, "--lr=0.05", "--compress=qsgd:8")
        title, names = plot.labels([plot.Run(a), plot.Run(b), plot.Run(c)])
        self.assertEqual(names, ["alpha 0.1, compress=none, lr=0.1",
                                 "alpha 10, compress=none, lr=0.1",
                                 "alpha 0.1, compress=qsgd:8, lr=0.05"])

    def test_bad_metrics_files(self):
        path = os.path.join(self.tmp.name, "bad.jsonl")
        with open(path, "w", encoding="utf-8") as f:
            f.write('{"type":"config"}\nnot json\n{"type":"eval"}\n')
        out = run(["tools/qgm-plot", path, "-o", self.tmp.name])
        self.assertEqual(out.returncode, 2)
        self.assertTrue(out.stderr.startswith(f"qgm-plot: {path}:2: "),
                        out.stderr)
        with open(path, "w", encoding="utf-8") as f:
            f.write('{"type":"config"}\n')
        out = run(["tools/qgm-plot", path, "-o", self.tmp.name])
        self.assertEqual(out.returncode, 2)
        self.assertEqual(out.stderr, f"qgm-plot: {path}: no eval records\n")


class Install(unittest.TestCase):
    def test_install_is_complete(self):
        with tempfile.TemporaryDirectory() as dest:
            out = run(["make", "--no-print-directory", "install",
                       f"DESTDIR={dest}", "PREFIX=/usr/local"])
            self.assertEqual(out.returncode, 0, out.stderr)
            prefix = os.path.join(dest, "usr/local")
            for tool in ["qgmd"] + [os.path.basename(t) for t in TOOLS] + \
                    ["qgm-sweep"]:
                self.assertTrue(os.access(os.path.join(prefix, "bin", tool),
                                          os.X_OK), tool)
            # Installed tools know their version (found beside qgmd).
            for tool in ("qgm-plot", "qgm-trace-merge"):
                out = run([os.path.join(prefix, "bin", tool), "--version"])
                self.assertEqual(out.stdout.split()[0], tool)
                self.assertNotIn("unknown", out.stdout)
            # The man pages: qgmd's lists every flag --help lists.
            man = os.path.join(prefix, "share/man/man1")
            page = run(["man", "-l", "-P", "cat",
                        os.path.join(man, "qgmd.1")],
                       env=dict(os.environ, MANWIDTH="200")).stdout
            helped = re.findall(r"^  (--[a-z-]+)=",
                                run(["daemon/qgmd", "--help"]).stdout, re.M)
            for flag in helped:
                self.assertIn(flag + "=", page)
            for tool in ("qgmctl", "qgm-plot", "qgm-sweep"):
                self.assertEqual(os.path.realpath(os.path.join(
                    man, tool + ".1")), os.path.join(man, "qgm-tools.1"))
            # The flag files are found from any directory.
            out = run([os.path.join(prefix, "bin/qgmd"), "--show-config",
                       "--flagfile=topologies/social32.flags"], cwd=dest)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("--topology=social", out.stdout.splitlines())
            grid = os.path.join(prefix, "share/qgmd/examples/quick-compare/"
                                "quick.grid")
            self.assertTrue(os.path.isfile(grid))
            self.check_one_version(prefix)

    def check_one_version(self, prefix):
        """The version is written once (include/qgm.h); qgmd, the library,
        its pkg-config file, its file name and the man page all say it."""
        with open(os.path.join(ROOT, "include/qgm.h"), encoding="utf-8") as f:
            parts = dict(re.findall(
                r"^#define QGM_VERSION_(MAJOR|MINOR|PATCH) (\d+)$", f.read(), re.M))
        version = "%s.%s.%s" % (parts["MAJOR"], parts["MINOR"], parts["PATCH"])
        out = run([os.path.join(prefix, "bin/qgmd"), "--version"])
        self.assertEqual(out.stdout, f"qgmd {version}\n")
        lib = os.path.join(prefix, "lib", f"libqgm.so.{version}")
        self.assertEqual(library_version(lib), version)
        out = run(["pkg-config", "--modversion", "libqgm"],
                  env=dict(os.environ, PKG_CONFIG_PATH=os.path.join(
                      prefix, "lib/pkgconfig")))
        self.assertEqual(out.stdout, version + "\n", out.stderr)
        with open(os.path.join(prefix, "share/man/man1/qgmd.1"),
                  encoding="utf-8") as f:
            self.assertIn(f'"qgmd {version}"', f.readline())


def library_version(lib):
    """qgm_version() of the shared library at lib, called through ctypes in
    a Python of its own. A library built with AddressSanitizer (make
    SANITIZE=address) loads only after the sanitizer's runtime: that
    Python starts with it preloaded."""
    env = dict(os.environ)
    with open(lib, "rb") as f:
        if b"__asan_init" in f.read():
            asan = subprocess.run(["gcc", "-print-file-name=libasan.so"],
                                  capture_output=True, text=True,
                                  check=True).stdout.strip()
            env.update(LD_PRELOAD=asan, ASAN_OPTIONS="detect_leaks=0")
    code = ("import ctypes, sys\n"
            "f = ctypes.CDLL(sys.argv[1]).qgm_version\n"
            "f.restype = ctypes.c_char_p\n"
            "print(f().decode())\n")
    out = subprocess.run([sys.executable, "-c", code, lib],
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise AssertionError("qgm_version() of %s: %s" % (lib, out.stderr))
    return out.stdout.strip()


class Makefile(unittest.TestCase):
    def phony_targets(self):
        with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as f:
            text = f.read()
        phony = re.search(r"^\.PHONY:((?:.*\\\n)*.*)$", text, re.M).group(1)
        return phony.replace("\\\n", " ").split()

    def test_help_lists_every_target(self):
        out = run(["make", "--no-print-directory", "help"])
        self.assertEqual(out.returncode, 0)
        listed = set(re.findall(r"^make ([a-z-]+)", out.stdout, re.M))
        targets = set(self.phony_targets()) - {"all"}
        self.assertEqual(targets - listed, set())

    def test_run_builds_the_tools(self):
        # -B: as if nothing were built; -n: only print the commands.
        out = run(["make", "--no-print-directory", "-n", "-B", "run"])
        self.assertEqual(out.returncode, 0, out.stderr)
        for binary in ("daemon/qgmd", "tools/qgmctl", "tools/qgm-topo",
                       "tools/qgm-inspect", "tools/qgm-sim"):
            self.assertRegex(out.stdout, r"-o " + re.escape(binary) + r"\b")


if __name__ == "__main__":
    unittest.main(verbosity=2)
