"""test_plot_inputs.py - qgm-plot on bad input: one line naming the file or
the flag and exit status 2, never a traceback or a hang (a FIFO, /dev/zero,
non-UTF-8 bytes, a field of the wrong type, deep nesting, an -o that is a
file); values gnuplot cannot draw (an infinity, 1e308) are left out and the
other points still drawn."""

import json
import os
import shutil
import subprocess
import unittest

from support import FIXTURES, ROOT, TempDirTest

PLOT = os.path.join(ROOT, "tools", "qgm-plot")
EVAL = {"type": "eval", "epoch": 1, "wall_s": 1.0, "train_loss": 0.5,
        "test_acc_avg_model": 0.7, "test_acc_local_mean": 0.6, "consensus_dist": 0.1}


class PlotInputs(TempDirTest):
    def plot(self, *args, env=None):
        return subprocess.run([PLOT, *args], capture_output=True, text=True, check=False,
                              timeout=60, env={**os.environ, **(env or {})})

    def file(self, name, data):
        path = self.path(name)
        with open(path, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
        return path

    def assert_refused(self, done, names):
        self.assertEqual(done.returncode, 2, done.stderr)
        lines = done.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, done.stderr)
        self.assertIn(names, lines[0])

    def records(self, *records):
        return "".join(json.dumps(r) + "\n" for r in records)

    def test_bad_files_are_one_line_and_status_2(self):
        fifo = self.path("fifo.jsonl")
        os.mkfifo(fifo)
        cases = {
            fifo: "not a regular file",
            "/dev/zero": "not a regular file",
            self.file("latin1.jsonl", b'{"type":"eval","epoch":1}\n\xe9\n'): "not UTF-8",
            self.file("deep.jsonl", "[" * 100000 + "]" * 100000 + "\n{}\n"): "nested too deeply",
        }
        for epoch in ("one", None, [1]):
            cases[self.file(f"epoch-{epoch!s}.jsonl", self.records(dict(EVAL, epoch=epoch)))] = \
                "epoch is not a number"
        cases[self.file("flags.jsonl", self.records(
            {"type": "config", "flags": [1, 2]}, EVAL))] = "flags are not an object"
        env = self.capturing_gnuplot()
        for path, why in cases.items():
            with self.subTest(path=path):
                done = self.plot(path, "-o", self.path("out"), env=env)
                self.assert_refused(done, path)
                self.assertIn(why, done.stderr)

    def test_an_output_that_is_a_file_or_unwritable(self):
        run = self.file("run.jsonl", self.records(EVAL))
        env = self.capturing_gnuplot()
        self.assert_refused(self.plot(run, "-o", run, env=env), "-o")
        self.assert_refused(self.plot(run, "-o", os.path.join(run, "sub"), env=env), "-o")

    @unittest.skipUnless(shutil.which("gnuplot"), "gnuplot is not installed")
    def test_values_gnuplot_cannot_draw_are_left_out(self):
        evals = [dict(EVAL, epoch=e, train_loss=v, consensus_dist=v)
                 for e, v in ((1, 0.5), (2, 1e308), (3, float("inf")), (4, 10 ** 400), (5, 0.25))]
        run = self.file("run.jsonl", "".join(json.dumps(r) + "\n" for r in evals))
        done = self.plot(run, "-o", self.path("out"))
        self.assertEqual(done.returncode, 0, done.stderr)
        for png in ("accuracy.png", "loss.png", "consensus.png"):
            self.assertGreater(os.path.getsize(self.path("out", png)), 0, png)
        # A series with no drawable value at all is left out, not handed to
        # gnuplot (which then drew no figure): the other figures still come.
        evals = [dict(EVAL, epoch=e, train_loss=float("inf"), consensus_dist=1e308)
                 for e in (1, 2)]
        for e in evals:
            e.pop("test_loss_avg_model", None)
        run = self.file("none.jsonl", "".join(json.dumps(r) + "\n" for r in evals))
        done = self.plot(run, "-o", self.path("none"))
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertGreater(os.path.getsize(self.path("none", "accuracy.png")), 0)
        self.assertFalse(os.path.exists(self.path("none", "loss.png")))


class SweepReportInputs(TempDirTest):
    def test_odd_run_directories_are_reported_without_a_traceback_or_hang(self):
        sweep = self.path("sweep")
        shutil.copytree(os.path.join(FIXTURES, "sync", "runs"), os.path.join(sweep, "runs"))
        runs = sorted(os.listdir(os.path.join(sweep, "runs")))
        os.unlink(os.path.join(sweep, "runs", runs[0], "run.conf"))
        with open(os.path.join(sweep, "runs", runs[2], "done"), "wb") as f:
            f.write(b"wall_s=\xff\xfe\n")
        metrics = os.path.join(sweep, "runs", runs[3], "metrics.jsonl")
        os.unlink(metrics)
        os.mkfifo(metrics)
        with open(os.path.join(sweep, "runs", runs[4], "metrics.jsonl"), "a") as f:
            f.write('{"type":"summary","mode":"async","applied_min":1,"applied_max":1e999}\n')
        p = subprocess.run([os.path.join(ROOT, "tools", "sweep"), "--report", sweep],
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, **self.capturing_gnuplot()}, check=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        with open(os.path.join(sweep, "runs.csv"), encoding="utf-8") as f:
            self.assertEqual(len(f.read().splitlines()), 1 + len(runs) - 1)  # one failed


if __name__ == "__main__":
    unittest.main()
