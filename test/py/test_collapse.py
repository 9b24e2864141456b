"""test_collapse.py - no silent collapse: qgmd stops a run whose consensus
distance blows up while its loss stays finite (exit status 1, one line
naming the measure and the step), and tools/collapse-check finds that the
bounds stop none of the healthy recorded runs in docs/results. Records are
read with a JSON parser. Run under the Makefile's Open MPI settings (make
py-check)."""

import json
import os
import re
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tools", "collapse-check")

# A dsgdm-n run at lr 2 on 4 ranks: its models fly apart within the first
# epoch (consensus distance about 1e12, the bound 0.04 per parameter is
# 8141 for the MLP) before the loss is infinite.
TOO_LARGE_LR = ["--algorithm=dsgdm-n", "--alpha=0.1", "--train-limit=2000",
                "--test-limit=500", "--epochs=3", "--lr=2",
                "--warmup-epochs=0", "--lr-schedule=constant",
                "--control=none"]

CSV_HEAD = "run,final_test_acc_avg_model,final_consensus_dist\n"


class Collapse(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="qgm-collapse.")
        self.addCleanup(self.tmp.cleanup)

    def check(self, *paths):
        return subprocess.run([CHECK, *paths], capture_output=True, text=True,
                              cwd=ROOT, check=False)

    def test_too_large_lr_stops_with_the_measure_and_step(self):
        metrics = os.path.join(self.tmp.name, "m.jsonl")
        out = subprocess.run(
            ["mpirun", "--bind-to", "none", "-np", "4", "daemon/qgmd",
             *TOO_LARGE_LR, f"--metrics={metrics}"],
            capture_output=True, text=True, cwd=ROOT, check=False)
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        lines = [l for l in out.stderr.splitlines() if "error:" in l]
        self.assertEqual(len(lines), 1, out.stderr)
        m = re.search(r"error: consensus distance (\S+) \((\S+) per parameter\) "
                      r"is above 0.04 per parameter at epoch (\S+) step (\d+): "
                      r"training collapsed", lines[0])
        self.assertIsNotNone(m, lines[0])
        with open(metrics, encoding="utf-8") as f:
            records = [json.loads(l) for l in f]
        evals = [r for r in records if r["type"] == "eval"]
        self.assertNotIn("summary", [r["type"] for r in records])
        last = evals[-1]
        # the MLP 784-256-10: 203530 parameters
        bound = 0.04 * 203530
        self.assertGreater(last["consensus_dist"], bound)
        self.assertTrue(all(r["consensus_dist"] <= bound for r in evals[:-1]))
        self.assertEqual(int(m.group(4)), last["step"])
        self.assertAlmostEqual(float(m.group(1)) / last["consensus_dist"], 1,
                               places=3)
        self.assertAlmostEqual(float(m.group(2)) * 203530 /
                               last["consensus_dist"], 1, places=2)
        self.assertTrue(all(abs(r["train_loss"]) < float("inf") for r in evals))

    def test_recorded_runs_pass(self):
        out = self.check()
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def test_a_healthy_run_past_the_bound_fails_the_check(self):
        path = os.path.join(self.tmp.name, "runs.csv")
        with open(path, "w", encoding="utf-8") as f:
            # 1e4 over the MLP's 203530 parameters: 0.049 each
            f.write(CSV_HEAD + "a,0.88,0.01\nb,0.87,1e4\n")
        self.assertEqual(self.check(path).returncode, 1)
        # the same measure on a run that ended at chance is a collapse
        with open(path, "w", encoding="utf-8") as f:
            f.write(CSV_HEAD + "a,0.88,0.01\nb,0.10,1e4\n")
        self.assertEqual(self.check(path).returncode, 0)

    def test_metrics_of_every_evaluation_are_read(self):
        run = os.path.join(self.tmp.name, "sweep", "runs", "r1")
        os.makedirs(run)
        with open(os.path.join(run, "metrics.jsonl"), "w",
                  encoding="utf-8") as f:
            for rec in ({"type": "eval", "consensus_dist": 0.5,
                         "momentum_norm_max": 1500.0,
                         "test_acc_avg_model": 0.8},
                        {"type": "eval", "consensus_dist": 0.01,
                         "momentum_norm_max": 3.0,
                         "test_acc_avg_model": 0.88},
                        {"type": "summary", "final_test_acc_avg_model": 0.88}):
                f.write(json.dumps(rec) + "\n")
        # healthy at the end, but one evaluation's momentum norm was past
        # 2 sqrt(203530) = 902: qgmd would have stopped it there
        self.assertEqual(self.check(os.path.dirname(os.path.dirname(run)))
                         .returncode, 1)


if __name__ == "__main__":
    unittest.main()
