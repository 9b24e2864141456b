"""Every flag's category (--show-flags=json) is what the checkpoint acts
on: a checkpoint holds the training flags of the run, a resume refuses a
changed training flag and accepts changed output and pacing flags. And
the enumerations list their values, which are what the flags accept.
Run from the source tree under the Makefile's Open MPI settings (make
py-check)."""

import json
import os
import subprocess
import tempfile
import unittest

from support import QGMD, ROOT

MPIRUN = ["mpirun", "--bind-to", "none", "-np", "2", QGMD]
# 400 samples / 2 nodes / batch 32: 6 steps.
TINY = ["--train-limit=400", "--test-limit=100", "--epochs=1",
        "--control=none", "--log-level=error"]
# Output and pacing flags that the first form of the checkpoint's flags
# held with their value; the form is kept, so that older checkpoints
# resume.
KEPT = {"shared-memory", "stability-k"}


def show_flags(program):
    p = subprocess.run([program, "--show-flags=json"], capture_output=True,
                       text=True, check=True)
    return {f["name"]: f for f in json.loads(p.stdout)["flags"]}


def run(args):
    return subprocess.run(args, capture_output=True, text=True, cwd=ROOT,
                          check=False)


class Categories(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.flags = show_flags(QGMD)

    def test_every_flag_has_a_category(self):
        for name, flag in self.flags.items():
            self.assertIn(flag["category"], ("training", "output", "pacing"),
                          name)

    def test_known_categories(self):
        expect = {"lr": "training", "compress": "training",
                  "topology": "training", "overlap": "training",
                  "metrics": "output", "trace": "output",
                  "log-level": "output", "checkpoint-dir": "output",
                  "comm-timeout": "pacing", "straggle": "pacing",
                  "device-time": "pacing", "data-cache": "pacing"}
        for name, category in expect.items():
            self.assertEqual(self.flags[name]["category"], category, name)

    def test_enumerations_list_their_values(self):
        self.assertEqual(self.flags["overlap"]["values"], ["on", "off"])
        self.assertEqual(self.flags["log-level"]["values"],
                         ["error", "warning", "info", "debug"])
        self.assertIn("gsgm", self.flags["algorithm"]["values"])
        self.assertNotIn("values", self.flags["compress"])  # a spec
        self.assertIn("topk:F", self.flags["compress"]["forms"])
        self.assertIn("file:PATH", self.flags["topology"]["forms"])
        self.assertIn("chain", self.flags["host-topology"]["values"])
        for name, flag in self.flags.items():
            if "values" in flag:
                self.assertIn(flag["default"], flag["values"], name)

    def test_every_value_is_accepted_and_others_are_not(self):
        for name in ("overlap", "shared-memory", "lr-schedule", "mixing",
                     "gsgm-rule", "log-level"):
            for value in self.flags[name]["values"]:
                p = run([QGMD, f"--{name}={value}", "--show-config"])
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn(f"--{name}={value}\n", p.stdout)
            p = run([QGMD, f"--{name}=no-such-value", "--show-config"])
            self.assertEqual(p.returncode, 2, name)
            self.assertTrue(p.stderr.startswith(f"command line: --{name}:")
                            or f"--{name}: " in p.stderr, p.stderr)

    def test_the_simulator_lists_only_its_algorithms(self):
        sim = show_flags(os.path.join(ROOT, "tools", "qgm-sim"))
        self.assertIn("dsgd", sim["algorithm"]["values"])
        self.assertNotIn("gsgm", sim["algorithm"]["values"])


class Checkpoint(unittest.TestCase):
    """One small run with checkpoints, then resumes from its last one."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="qgm-categories.")
        cls.ckpt = os.path.join(cls.tmp.name, "ckpt")
        metrics = os.path.join(cls.tmp.name, "m.jsonl")
        p = run(MPIRUN + TINY + [f"--checkpoint-dir={cls.ckpt}",
                                 f"--metrics={metrics}"])
        assert p.returncode == 0, p.stdout + p.stderr
        with open(metrics, encoding="utf-8") as f:
            recs = [json.loads(line) for line in f]
        cls.config = next(r for r in recs if r["type"] == "config")["flags"]
        steps = next(r for r in recs if r["type"] == "summary")["steps"]
        path = os.path.join(cls.ckpt, f"step-{steps:012d}", "rank-00000.qgmc")
        out = run(["tools/qgm-inspect", "checkpoint", path])
        assert out.returncode == 0, out.stderr
        line = next(l for l in out.stdout.splitlines()
                    if l.startswith("  flags {"))
        cls.saved = json.loads(line[len("  flags "):])

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_holds_the_training_flags_in_use(self):
        flags = show_flags(QGMD)
        # Compression is off, the all-reduce's choice has no use but in
        # the all-reduce, the asynchronous mode's own flags none in a
        # synchronous run, no message is lost, and the gossip is
        # synchronous, the algorithm does not track the global update
        # (--gut-scaling), and the gossip has one round a step (with
        # nothing to accelerate).
        unused = {"compress", "consensus-lr", "allreduce", "gsgm-rule",
                  "gsgm-window", "dc-lambda", "drop-rate", "sync",
                  "max-staleness", "gut-scaling", "gossip-rounds",
                  "gossip-acceleration"}
        for name, flag in flags.items():
            if flag["category"] == "training" and name not in unused:
                self.assertEqual(self.saved[name], self.config[name], name)
            elif name in KEPT:
                self.assertEqual(self.saved[name], self.config[name], name)
            elif name in self.saved:  # in the first form: held empty
                self.assertIn(self.saved[name], ("", 0), name)
        for name in unused:
            self.assertNotIn(name, self.saved)

    def resume(self, *flags):
        return run(MPIRUN + TINY + [f"--checkpoint-dir={self.ckpt}",
                                    "--resume", *flags])

    def test_resume_accepts_changed_output_and_pacing_flags(self):
        p = self.resume(f"--metrics={self.tmp.name}/other.jsonl",
                        "--log-every=1", "--checkpoint-keep=5",
                        "--comm-timeout=60", "--device-time=1",
                        "--data-cache=none")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_resume_refuses_a_changed_training_flag(self):
        p = self.resume("--momentum=0.5")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("written by a run with other settings (--momentum was "
                      "0.9, is now 0.5)", p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main()
