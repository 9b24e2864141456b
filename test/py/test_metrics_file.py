"""test_metrics_file.py - the --metrics file of a resumed run stays one
whole JSON record a line, each step's once: a line cut by the kill and the
records of the steps redone after the checkpoint are cut before the
resumed run appends; a lost record (why the run before ended) is kept. And --metrics may name a device or the run's own
output. Every line is read with a JSON parser. Run from the source tree
under the Makefile's Open MPI settings (make py-check)."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from support import ROOT

# 2000 / 2 / 32 = 31 steps per epoch; a checkpoint and an evaluation at
# the end of each of the 3 epochs: steps 31, 62 and 93.
FLAGS = ["--train-limit=2000", "--test-limit=200", "--epochs=3",
         "--control=none", "--log-level=error"]
CHECKPOINTS = ["--checkpoint-every=31", "--checkpoint-keep=3"]
STEPS = [31, 62, 93]


def qgmd(*flags):
    p = subprocess.run(["mpirun", "--bind-to", "none", "-np", "2", "daemon/qgmd",
                        *FLAGS, *flags], cwd=ROOT, capture_output=True, text=True,
                       timeout=300, check=False)
    return p.returncode, p.stdout + p.stderr


def parsed(text):
    return [json.loads(line) for line in text.splitlines()]


class ResumedMetrics(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="qgm-metrics-test.")
        self.addCleanup(shutil.rmtree, self.tmp)

    def test_a_resumed_run_cuts_the_torn_line_and_the_redone_steps(self):
        ckpt, metrics = os.path.join(self.tmp, "ckpt"), os.path.join(self.tmp, "m.jsonl")
        rc, out = qgmd(*CHECKPOINTS, f"--checkpoint-dir={ckpt}", f"--metrics={metrics}")
        self.assertEqual(rc, 0, out)
        with open(metrics, encoding="utf-8") as f:
            first = parsed(f.read())
        # As if the run had been killed after step 62's evaluation, before
        # its checkpoint was complete, in the middle of a record.
        for step in (62, 93):
            shutil.rmtree(os.path.join(ckpt, f"step-{step:012d}"))
        lost = {"type": "lost", "step": 70, "nodes": 2, "lost_ranks": [1],
                "lost_hosts": ["h2"]}
        with open(metrics, "a", encoding="utf-8") as f:
            f.write(json.dumps(lost, separators=(",", ":")) + "\n")
            f.write('{"type":"eval","epoch":2.5,"st')
        rc, out = qgmd(*CHECKPOINTS, f"--checkpoint-dir={ckpt}", f"--metrics={metrics}", "--resume")
        self.assertEqual(rc, 0, out)
        with open(metrics, encoding="utf-8") as f:
            text = f.read()
        self.assertTrue(text.endswith("\n"))
        records = parsed(text)  # every line whole: json.loads raises otherwise
        kinds = [r["type"] for r in records]
        self.assertEqual(kinds, ["config", "eval", "lost", "config", "resume", "eval",
                                 "eval", "summary"])
        self.assertEqual(records[2], lost)
        evals = [r for r in records if r["type"] == "eval"]
        self.assertEqual([r["step"] for r in evals], STEPS)
        (resume,) = [r for r in records if r["type"] == "resume"]
        self.assertEqual(resume["step"], 31)
        # The resumed run trains as the first did: the same evaluations.
        before = {r["step"]: r for r in first if r["type"] == "eval"}
        for r in evals:
            self.assertEqual(r["test_acc_avg_model"], before[r["step"]]["test_acc_avg_model"])
        # Its clock goes on from the record kept at step 31.
        self.assertGreaterEqual(evals[1]["wall_s"], evals[0]["wall_s"])

    def test_metrics_to_a_device_or_the_runs_output(self):
        rc, out = qgmd("--metrics=/dev/null")
        self.assertEqual(rc, 0, out)
        rc, out = qgmd("--metrics=/dev/stdout")
        self.assertEqual(rc, 0, out)
        records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        self.assertEqual([r["type"] for r in records], ["config", "eval", "eval", "eval",
                                                        "summary"])
        self.assertEqual([r["step"] for r in records if r["type"] == "eval"], STEPS)


if __name__ == "__main__":
    unittest.main()
