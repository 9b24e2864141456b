"""test_allreduce.py - the two all-reduces of --algorithm=allreduce:
qgmd's own (--allreduce=qgmd, the default: a fixed tree, so qgm-sim
follows it bit for bit) and Open MPI's (--allreduce=mpi, to compare
with in one run). Both average the same gradients, so their records agree
to float rounding; both send 2 (n - 1) / n of the model a rank and step;
a value that is neither is refused with exit status 2. Every record is
read with a JSON parser. Run from the source tree under the Makefile's
Open MPI settings (make py-check)."""

import json
import os
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NP = 4
HIDDEN = 32
MODEL_BYTES = 4 * (HIDDEN * (784 + 1) + 10 * (HIDDEN + 1))
SMALL = ["--algorithm=allreduce", "--train-limit=2000", "--test-limit=500",
         "--epochs=2", "--batch-size=16", "--lr=0.05", f"--hidden={HIDDEN}",
         "--seed=5"]


def records(path):
    with open(path, encoding="utf-8") as f:
        return [r for r in map(json.loads, f) if r["type"] != "config"]


class AllReduce(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def qgmd(self, name, *flags):
        metrics = os.path.join(self.tmp.name, name + ".jsonl")
        args = ["mpirun", "--bind-to", "none", "-np", str(NP), "daemon/qgmd",
                *SMALL, "--control=none", "--log-level=warning", *flags,
                f"--metrics={metrics}"]
        out = subprocess.run(args, capture_output=True, text=True, cwd=ROOT,
                             check=False)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        return records(metrics)

    def test_mpi_agrees_to_rounding(self):
        own = self.qgmd("own")
        mpi = self.qgmd("mpi", "--allreduce=mpi")
        self.assertEqual(len(own), len(mpi))
        for a, b in zip(own, mpi):
            self.assertEqual(a["type"], b["type"])
            if a["type"] != "eval":
                continue
            # Float rounding in the sum's order, carried over 2 epochs.
            self.assertAlmostEqual(a["train_loss"], b["train_loss"],
                                   delta=1e-3 * a["train_loss"])
            self.assertAlmostEqual(a["test_acc_avg_model"],
                                   b["test_acc_avg_model"], delta=0.01)
            for r in (a, b):
                self.assertEqual(r["bytes_per_step"],
                                 round(2 * (NP - 1) / NP * MODEL_BYTES))

    def test_qgm_sim_follows_qgmds_own(self):
        own = [r for r in self.qgmd("own") if r["type"] == "eval"]
        metrics = os.path.join(self.tmp.name, "sim.jsonl")
        out = subprocess.run(["tools/qgm-sim", f"--nodes={NP}",
                              "--problem=dataset", *SMALL,
                              f"--metrics={metrics}"], capture_output=True,
                             text=True, cwd=ROOT, check=False)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        sim = [r for r in records(metrics) if r["type"] == "eval"]
        self.assertEqual(len(sim), len(own))
        for a, b in zip(own, sim):
            for key in ("train_loss", "test_acc_avg_model", "consensus_dist"):
                self.assertEqual(a[key], b[key], key)

    def test_unknown_value_refused(self):
        out = subprocess.run(["daemon/qgmd", "--allreduce=ring"],
                             capture_output=True, text=True, cwd=ROOT,
                             check=False)
        self.assertEqual(out.returncode, 2)
        self.assertEqual(out.stderr.count("\n"), 1, out.stderr)
        self.assertIn("--allreduce: 'ring' is neither mpi nor qgmd",
                      out.stderr)


if __name__ == "__main__":
    unittest.main()
