"""test_plot_injection.py - text from a metrics file never runs as a
command when it is plotted: qgm-plot and tools/sweep --report pass every
string to gnuplot in single quotes, where gnuplot expands nothing, with no
line break in it. A run whose topology, algorithm, dataset and file name
hold backquoted commands and a line break followed by `!cmd` is plotted
with real gnuplot (when installed) and must create no file; every script
given to a capturing stand-in must hold no backquote, `!` or `@` outside
single-quoted strings, and no double-quoted string at all."""

import json
import os
import shutil
import subprocess
import unittest

from support import FIXTURES, ROOT, TempDirTest, read

PLOT = os.path.join(ROOT, "tools", "qgm-plot")
# Each creates a file named PWNED* in the working directory if run.
EVIL = {"topology": "file:x`touch PWNED1`.edges",
        "algorithm": "ds`touch PWNED2`gd'\"`touch PWNED3`",
        "dataset": "fmnist\n!touch PWNED4\nprint `touch PWNED5`",
        "model": "@GPVAL_PWD `touch PWNED6`"}
EVIL_NAME = "run`touch PWNED7`'x\".jsonl"


def unquoted(script):
    """script with its single-quoted strings (gnuplot's '' inside one is a
    quote) removed, and the number of double-quoted strings."""
    out, i, doubles = [], 0, 0
    while i < len(script):
        c = script[i]
        if c == "'":
            j = i + 1
            while True:
                j = script.index("'", j)  # an unclosed string: ValueError
                if script[j + 1:j + 2] != "'":
                    break
                j += 2
            body = script[i + 1:j]
            if "\n" in body:
                raise AssertionError(f"a line break in a string: {body!r}")
            out.append("''")
            i = j + 1
        else:
            doubles += c == '"'
            out.append(c)
            i += 1
    return "".join(out), doubles


class PlotInjection(TempDirTest):
    def setUp(self):
        super().setUp()
        self.work = self.path("work")
        os.makedirs(self.work)

    def assert_inert(self, scripts):
        self.assertTrue(scripts)
        for script in scripts:
            rest, doubles = unquoted(script)
            self.assertEqual(doubles, 0, script)
            for c in "`!@":
                self.assertNotIn(c, rest, script)

    def assert_nothing_ran(self):
        self.assertEqual([f for f in os.listdir(self.work) if f.startswith("PWNED")], [])

    def captured(self, env):
        d = env["GP_CAPTURE"]
        return [read(os.path.join(d, f)) for f in sorted(os.listdir(d))]

    def metrics(self, name, flags):
        path = os.path.join(self.work, name)
        config = {"type": "config", "nodes": 2, "flags": flags}
        evals = [{"type": "eval", "epoch": e, "wall_s": 0.5 * e, "train_loss": 1.0 / e,
                  "test_acc_avg_model": 0.5 + 0.1 * e, "test_acc_local_mean": 0.5,
                  "test_acc_local_min": 0.4, "test_acc_local_max": 0.6,
                  "consensus_dist": 0.01 / e} for e in (1, 2, 3)]
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(r) + "\n" for r in [config] + evals))
        return path

    def plot(self, paths, env=None, out="plots"):
        return subprocess.run([PLOT, *paths, "-o", out], cwd=self.work, capture_output=True,
                              text=True, env={**os.environ, **(env or {})}, check=False,
                              timeout=120)

    def evil_runs(self):
        # Two runs that differ in every field: each is in the legend.
        return [self.metrics(EVIL_NAME, EVIL),
                self.metrics("plain.jsonl", {k: "plain" for k in EVIL})]

    def test_qgm_plot_script_holds_the_text_as_data(self):
        env = self.capturing_gnuplot()
        for runs in (self.evil_runs(), self.evil_runs()[:1]):
            done = self.plot(runs, env)
            self.assertEqual(done.returncode, 0, done.stderr)
        scripts = self.captured(env)
        self.assert_inert(scripts)
        # The strings are there, only quoted: the legend names the topology.
        self.assertIn("file:x`touch PWNED1`.edges", scripts[0])
        self.assert_nothing_ran()

    @unittest.skipUnless(shutil.which("gnuplot"), "gnuplot is not installed")
    def test_qgm_plot_with_gnuplot_runs_nothing_and_draws(self):
        done = self.plot(self.evil_runs())
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assert_nothing_ran()
        for png in ("accuracy.png", "loss.png", "consensus.png"):
            self.assertGreater(os.path.getsize(os.path.join(self.work, "plots", png)), 0, png)

    def test_qgm_plot_refuses_an_output_name_with_a_line_break(self):
        done = self.plot(self.evil_runs()[1:], self.capturing_gnuplot(), out="p\n!touch PWNED8")
        self.assertEqual(done.returncode, 2)
        self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
        self.assert_nothing_ran()

    def evil_sweep(self):
        """The synchronous fixture's runs, the 3-rank ones with EVIL's
        topology (in a table's name, in titles), one of them with its
        algorithm (a label)."""
        sweep = os.path.join(self.work, "sweep")
        shutil.copytree(os.path.join(FIXTURES, "sync", "runs"), os.path.join(sweep, "runs"))
        for name, evil in (("np-3_algorithm-dsgd_alpha-1_e59ea796", ("topology", "algorithm")),
                           ("np-3_algorithm-qg-dsgdm-n_alpha-1_6458c594", ("topology",))):
            run = os.path.join(sweep, "runs", name, "metrics.jsonl")
            with open(run, encoding="utf-8") as f:
                records = [json.loads(line) for line in f]
            for r in records:
                if r["type"] == "config":
                    r["flags"].update({k: EVIL[k] for k in evil})
            with open(run, "w", encoding="utf-8") as f:
                f.write("".join(json.dumps(r) + "\n" for r in records))
        return sweep

    def test_sweep_report_script_holds_the_text_as_data(self):
        env = self.capturing_gnuplot()
        status, _, err = self.sweep("--report", self.evil_sweep(), env=env, cwd=self.work)
        self.assertEqual(status, 0, err)
        scripts = self.captured(env)
        self.assert_inert(scripts)
        self.assertTrue(any("touch PWNED1" in s for s in scripts))
        self.assertTrue(any("touch PWNED2" in s for s in scripts))
        self.assert_nothing_ran()

    @unittest.skipUnless(shutil.which("gnuplot"), "gnuplot is not installed")
    def test_sweep_report_with_gnuplot_runs_nothing(self):
        sweep = self.evil_sweep()
        status, _, err = self.sweep("--report", sweep, cwd=self.work)
        self.assertEqual(status, 0, err)
        self.assert_nothing_ran()
        self.assertTrue([f for f in os.listdir(os.path.join(sweep, "plots"))
                         if f.endswith(".png")])


if __name__ == "__main__":
    unittest.main()
