"""test_collapse.py - no silent collapse: qgmd stops a run whose consensus
distance or momentum norm blows up while its loss stays finite
(synchronous and asynchronous gossip), and one whose averaged model stays
at chance (synchronous and on a parameter server), with exit status 1 and
one line naming the measure and the step; qgm-sim stops the same runs at
the same evaluation with the same line; and tools/collapse-check finds
that the rules stop none of the healthy recorded runs in docs/results.
Records are read with a JSON parser. Run under the Makefile's Open MPI
settings (make py-check)."""

import json
import os
import random
import re
import struct
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

# Asynchronous gossip (daemon/train_async.c): a node waits only for a
# neighbour more than 2 of its rounds behind.
ASYNC = ["--sync=async", "--max-staleness=2"]

# The MLP 784-256-10: 203530 parameters; the bounds of job/collapse.h.
MLP_PARAMS = 203530
CONSENSUS_BOUND = 0.04 * MLP_PARAMS
MOMENTUM_BOUND = 2 * MLP_PARAMS ** 0.5
CONSENSUS_LINE = (r"error: consensus distance (\S+) \((\S+) per parameter\) "
                  r"is above 0\.04 per parameter at epoch (\S+) step (\d+): "
                  r"training collapsed \(try a smaller --lr\); the last "
                  r"complete checkpoint, if any, is kept$")
MOMENTUM_LINE = (r"error: largest momentum norm (\S+) \((\S+) per parameter, "
                 r"root mean square\) is above 2 at epoch (\S+) step (\d+): "
                 r"training collapsed \(try a smaller --lr\); the last "
                 r"complete checkpoint, if any, is kept$")

# A run both programs stop at its first evaluation (step 5 of 15 an
# epoch), its consensus distance about 1.8e5: at lr 2 the simulator's own
# rule, a loss a million times the first step's, would stop it first.
FLYING_APART = TOO_LARGE_LR[:5] + ["--lr=1.5", "--warmup-epochs=0",
                                   "--lr-schedule=constant", "--eval-every=5"]

CSV_HEAD = "run,final_test_acc_avg_model,final_consensus_dist\n"


def write_blind_data(directory):
    """Fashion-MNIST's four IDX files, made up: 12800 training images of
    random pixels with random labels, and 1000 test images all black, 100
    of each class. Any model maps every black image to one class, so the
    averaged model scores exactly 10% (chance) at every evaluation, however
    it trains, and its loss stays finite."""
    rng = random.Random(1)

    def idx(name, magic, dims, data):
        with open(os.path.join(directory, name), "wb") as f:
            f.write(struct.pack(">I" + "I" * len(dims), magic, *dims) + data)

    idx("train-images-idx3-ubyte", 0x803, (12800, 28, 28),
        rng.randbytes(12800 * 784))
    idx("train-labels-idx1-ubyte", 0x801, (12800,),
        bytes(rng.randrange(10) for _ in range(12800)))
    idx("t10k-images-idx3-ubyte", 0x803, (1000, 28, 28), bytes(1000 * 784))
    idx("t10k-labels-idx1-ubyte", 0x801, (1000,),
        bytes(i % 10 for i in range(1000)))


# On the blind data, 4 ranks: 100 steps an epoch; with an evaluation every
# 25, at chance from step 25, the rule's 2 epochs and 200 steps are both
# exactly reached at step 225 (epoch 2.25).
AT_CHANCE = ["--hidden=32", "--lr=0.01", "--data-cache=none",
             "--control=none"]
CHANCE_LINE = (r"error: averaged-model test accuracy (\S+) is at most 0\.125 "
               r"\(chance: 1\.25 / 10 classes\) at every evaluation from "
               r"epoch (\S+) step (\d+) to epoch (\S+) step (\d+): training "
               r"collapsed \(try a smaller --lr, or --stop-at-chance=0 to "
               r"train on\); the last complete checkpoint, if any, is kept$")


class Collapse(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="qgm-collapse.")
        self.addCleanup(self.tmp.cleanup)

    def check(self, *paths):
        return subprocess.run([CHECK, *paths], capture_output=True, text=True,
                              cwd=ROOT, check=False)

    def stopped_by(self, out, line, records):
        """The match of the one error line of a run a bound stopped (exit
        status 1, no summary), and its evaluation records; the line's step
        is the last evaluation's, whose loss, like every one before, is
        finite."""
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        lines = [l for l in out.stderr.splitlines() if "error:" in l]
        self.assertEqual(len(lines), 1, out.stderr)
        m = re.search(line, lines[0])
        self.assertIsNotNone(m, lines[0])
        self.assertNotIn("summary", [r["type"] for r in records])
        evals = [r for r in records if r["type"] == "eval"]
        self.assertEqual(int(m.group(4)), evals[-1]["step"])
        # the line's epoch to 4 digits
        self.assertAlmostEqual(float(m.group(3)), evals[-1]["epoch"],
                               delta=5e-4 * evals[-1]["epoch"])
        self.assertTrue(all(abs(r["train_loss"]) < float("inf") for r in evals))
        return m, evals

    def consensus_blown_up(self, out, records):
        m, evals = self.stopped_by(out, CONSENSUS_LINE, records)
        last = evals[-1]
        self.assertGreater(last["consensus_dist"], CONSENSUS_BOUND)
        self.assertTrue(all(r["consensus_dist"] <= CONSENSUS_BOUND
                            for r in evals[:-1]))
        self.assertAlmostEqual(float(m.group(1)) / last["consensus_dist"], 1,
                               places=3)
        self.assertAlmostEqual(float(m.group(2)) * MLP_PARAMS /
                               last["consensus_dist"], 1, places=2)
        return last

    def test_too_large_lr_stops_with_the_measure_and_step(self):
        out, records = self.run_qgmd(*TOO_LARGE_LR)
        self.consensus_blown_up(out, records)

    def test_asynchronous_gossip_too_large_lr_stops(self):
        # The same run, each node at its own pace: stopped at rank 0's
        # first evaluation (15 steps an epoch), where the synchronous
        # run's rule stops it.
        out, records = self.run_qgmd(*TOO_LARGE_LR, *ASYNC)
        last = self.consensus_blown_up(out, records)
        self.assertEqual((last["epoch"], last["step"]), (1, 15))
        self.assertEqual(records[0]["flags"]["sync"], "async")

    def test_asynchronous_gossip_momentum_blown_up_stops(self):
        # One node of asynchronous gossip: its consensus distance is 0,
        # so the momentum bound is the one it passes. At lr 2 its largest
        # momentum norm is about 100 per parameter at step 10 (of 62 an
        # epoch), with the loss near 2e7.
        out, records = self.run_qgmd(*TOO_LARGE_LR, *ASYNC, "--eval-every=10",
                                     ranks=1)
        m, evals = self.stopped_by(out, MOMENTUM_LINE, records)
        last = evals[-1]
        self.assertEqual(last["step"], 10)
        self.assertEqual(last["consensus_dist"], 0)
        self.assertGreater(last["momentum_norm_max"], MOMENTUM_BOUND)
        self.assertTrue(all(r["momentum_norm_max"] <= MOMENTUM_BOUND
                            for r in evals[:-1]))
        self.assertAlmostEqual(float(m.group(1)) / last["momentum_norm_max"],
                               1, places=3)
        self.assertAlmostEqual(float(m.group(2)) * MLP_PARAMS ** 0.5 /
                               last["momentum_norm_max"], 1, places=2)

    def run_sim(self, *flags):
        """qgm-sim with 4 nodes (qgmd's daemon-only --control left out):
        its completed process and its records."""
        metrics = os.path.join(self.tmp.name, "sim.jsonl")
        out = subprocess.run(
            ["tools/qgm-sim", "--problem=dataset", "--nodes=4",
             *(f for f in flags if f != "--control=none"),
             f"--metrics={metrics}"],
            capture_output=True, text=True, cwd=ROOT, check=False)
        with open(metrics, encoding="utf-8") as f:
            return out, [json.loads(l) for l in f]

    def assert_the_simulator_stops_alike(self, *flags):
        """qgmd and qgm-sim on the same flags: both exit 1 with the same
        one line (the program's prefix aside) after the same evaluations,
        and neither writes a summary."""
        q_out, q_records = self.run_qgmd(*flags)
        s_out, s_records = self.run_sim(*flags)
        self.assertEqual((q_out.returncode, s_out.returncode), (1, 1),
                         q_out.stderr + s_out.stderr)
        q_line = [l for l in q_out.stderr.splitlines() if "error:" in l]
        s_line = s_out.stderr.splitlines()
        self.assertEqual(len(q_line), 1, q_out.stderr)
        self.assertEqual(len(s_line), 1, s_out.stderr)
        self.assertTrue(s_line[0].startswith("qgm-sim: "), s_line[0])
        self.assertEqual(q_line[0].split("error: ", 1)[1],
                         s_line[0][len("qgm-sim: "):])
        steps = [[r["step"] for r in recs if r["type"] == "eval"]
                 for recs in (q_records, s_records)]
        self.assertEqual(steps[0], steps[1])
        for recs in (q_records, s_records):
            self.assertNotIn("summary", [r["type"] for r in recs])
        return s_line[0]

    def test_the_simulator_stops_a_run_flying_apart_as_qgmd(self):
        line = self.assert_the_simulator_stops_alike(*FLYING_APART)
        m = re.search(CONSENSUS_LINE[len("error: "):], line)
        self.assertIsNotNone(m, line)
        self.assertEqual(int(m.group(4)), 5)
        self.assertGreater(float(m.group(1)), CONSENSUS_BOUND)

    def test_the_simulator_stops_a_run_at_chance_as_qgmd(self):
        line = self.assert_the_simulator_stops_alike(
            self.blind_data(), *AT_CHANCE, "--eval-every=25", "--epochs=5")
        m = re.search(CHANCE_LINE[len("error: "):], line)
        self.assertIsNotNone(m, line)
        self.assertEqual((int(m.group(3)), int(m.group(5))), (25, 225))

    def run_qgmd(self, *flags, ranks=4):
        """qgmd on `ranks` ranks: its completed process and its records."""
        metrics = os.path.join(self.tmp.name, "m.jsonl")
        out = subprocess.run(
            ["mpirun", "--bind-to", "none", "-np", str(ranks), "daemon/qgmd",
             *flags, f"--metrics={metrics}"],
            capture_output=True, text=True, cwd=ROOT, check=False)
        with open(metrics, encoding="utf-8") as f:
            return out, [json.loads(l) for l in f]

    def blind_data(self):
        data = os.path.join(self.tmp.name, "data")
        os.mkdir(data)
        write_blind_data(data)
        return f"--data-dir={data}"

    def stopped_at_chance(self, out):
        """The match of the one error line of a run the accuracy rule
        stopped (exit status 1)."""
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        lines = [l for l in out.stderr.splitlines() if "error:" in l]
        self.assertEqual(len(lines), 1, out.stderr)
        m = re.search(CHANCE_LINE, lines[0])
        self.assertIsNotNone(m, lines[0])
        return m

    def test_a_run_at_chance_stops_after_two_epochs(self):
        out, records = self.run_qgmd(self.blind_data(), *AT_CHANCE,
                                     "--eval-every=25", "--epochs=5")
        m = self.stopped_at_chance(out)
        evals = [r for r in records if r["type"] == "eval"]
        self.assertNotIn("summary", [r["type"] for r in records])
        self.assertEqual([r["step"] for r in evals], list(range(25, 226, 25)))
        self.assertTrue(all(r["test_acc_avg_model"] == 0.1 for r in evals))
        self.assertTrue(all(abs(r["train_loss"]) < float("inf") for r in evals))
        # from the first evaluation to the last, which is the stop's
        self.assertEqual(float(m.group(1)), 0.1)
        self.assertEqual((float(m.group(2)), int(m.group(3))),
                         (evals[0]["epoch"], evals[0]["step"]))
        self.assertEqual((float(m.group(4)), int(m.group(5))),
                         (evals[-1]["epoch"], evals[-1]["step"]))
        self.assertEqual(evals[-1]["epoch"], 2.25)

    def test_stop_at_chance_0_trains_on(self):
        flags = (self.blind_data(), *AT_CHANCE, "--eval-every=25",
                 "--epochs=3", "--stop-at-chance=0")
        for program, run in (("qgmd", self.run_qgmd),
                             ("qgm-sim", self.run_sim)):
            with self.subTest(program=program):
                out, records = run(*flags)
                self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
                summary = [r for r in records if r["type"] == "summary"]
                self.assertEqual(len(summary), 1)
                self.assertEqual(summary[0]["steps"], 300)
                self.assertEqual(summary[0]["final_test_acc_avg_model"], 0.1)

    def test_the_parameter_server_at_chance_stops(self):
        # 3 workers on 3840 samples: 120 updates an epoch, an evaluation
        # every 40; at chance from update 40, stopped at 280 (200 steps
        # and 2 epochs: 240).
        out, records = self.run_qgmd(self.blind_data(), *AT_CHANCE,
                                     "--algorithm=gsgm", "--epochs=5",
                                     "--train-limit=3840", "--eval-every=40")
        m = self.stopped_at_chance(out)
        evals = [r for r in records if r["type"] == "eval"]
        self.assertEqual((int(m.group(3)), int(m.group(5))), (40, 280))
        self.assertEqual(evals[-1]["step"], 280)

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

    def write_evals(self, name, accuracies, resume_at=None):
        """A run's metrics: an evaluation every 50 steps, 100 an epoch,
        with these accuracies, and a resume record before step resume_at;
        a summary when the last is healthy."""
        run = os.path.join(self.tmp.name, "sweep", "runs", name)
        os.makedirs(run)
        with open(os.path.join(run, "metrics.jsonl"), "w",
                  encoding="utf-8") as f:
            for i, acc in enumerate(accuracies):
                step = 50 * (i + 1)
                if step == resume_at:
                    f.write(json.dumps({"type": "resume"}) + "\n")
                f.write(json.dumps({"type": "eval", "epoch": step / 100,
                                    "step": step, "consensus_dist": 0.0,
                                    "test_acc_avg_model": acc}) + "\n")
            if accuracies[-1] >= 0.5:
                f.write(json.dumps({"type": "summary",
                                    "final_test_acc_avg_model":
                                        accuracies[-1]}) + "\n")
        return os.path.join(self.tmp.name, "sweep")

    def test_the_accuracy_rule_on_every_evaluation(self):
        # at chance from step 50 to 250 (2 epochs, 200 steps), then healthy:
        # qgmd would have stopped it at step 250
        sweep = self.write_evals("slow", [0.1] * 5 + [0.8])
        out = self.check(sweep)
        self.assertEqual(out.returncode, 1, out.stdout)
        self.assertIn("healthy run slow would stop at chance at epoch 2.5 "
                      "step 250", out.stdout)
        # a resume starts the streak again: 50-150, then 200-250
        os.rename(os.path.join(sweep, "runs", "slow"),
                  os.path.join(self.tmp.name, "slow"))
        self.write_evals("resumed", [0.1] * 5 + [0.8], resume_at=200)
        # one evaluation above 0.125 breaks the streak; a collapsed run is
        # listed where the rule stops it
        self.write_evals("broken", [0.1, 0.1, 0.1, 0.126, 0.1, 0.1, 0.8])
        self.write_evals("collapsed", [0.1] * 8)
        out = self.check(sweep)
        self.assertEqual(out.returncode, 0, out.stdout)
        self.assertIn("stopped: collapsed (epoch 2.5 step 250)", out.stdout)


if __name__ == "__main__":
    unittest.main()
