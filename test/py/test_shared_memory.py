"""test_shared_memory.py - neighbours on one host read each other's
messages in place (--shared-memory=auto, the default) and nothing else
changes: for each way a round's message is made and mixed, a run with
auto and a run with off give the same eval records and summary, all but
the times, and the records say which bytes were read in place (all of
them with auto on one host, none with off or on a time-varying graph).
Every record is read with a JSON parser. Run from the source tree under
the Makefile's Open MPI settings (make py-check)."""

import json
import os
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MPIRUN = ["mpirun", "--bind-to", "none"]
NP = 4
SMALL = ["--train-limit=2000", "--test-limit=500", "--epochs=2",
         "--batch-size=16", "--lr=0.05", "--hidden=32", "--seed=5",
         "--control=none", "--log-level=warning"]
# What may differ between two runs of the same job: the times, and where
# the bytes went.
VARIES = ("bytes_in_place_per_step",)


def run(metrics, *flags):
    args = MPIRUN + ["-np", str(NP), "daemon/qgmd", *SMALL, *flags,
                     f"--metrics={metrics}"]
    out = subprocess.run(args, capture_output=True, text=True, cwd=ROOT,
                         check=False)
    if out.returncode != 0:
        raise AssertionError(f"{args} exited {out.returncode}:\n"
                             f"{out.stdout}{out.stderr}")
    with open(metrics, encoding="utf-8") as f:
        return [r for r in map(json.loads, f) if r["type"] != "config"]


def without_times(records):
    return [{k: v for k, v in r.items()
             if not k.endswith("_s") and k not in VARIES} for r in records]


class SharedMemory(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def both(self, name, *flags):
        auto = run(os.path.join(self.tmp.name, name + ".auto.jsonl"),
                   "--shared-memory=auto", *flags)
        off = run(os.path.join(self.tmp.name, name + ".off.jsonl"),
                  "--shared-memory=off", *flags)
        self.assertEqual([r["type"] for r in auto].count("eval"), 2)
        self.assertEqual(without_times(auto), without_times(off), name)
        return ([r for r in auto if r["type"] == "eval"],
                [r for r in off if r["type"] == "eval"])

    def assert_all_in_place(self, name, *flags):
        auto, off = self.both(name, *flags)
        for a, o in zip(auto, off):
            self.assertGreater(a["bytes_per_step"], 0)
            self.assertEqual(a["bytes_in_place_per_step"],
                             a["bytes_per_step"])
            self.assertEqual(o["bytes_in_place_per_step"], 0)

    def test_quasi_global_momentum(self):
        self.assert_all_in_place("qg", "--algorithm=qg-dsgdm-n")

    def test_plain_rule_on_a_torus(self):
        self.assert_all_in_place("dsgd", "--algorithm=dsgd",
                                 "--topology=torus")

    def test_rule_that_reads_its_message_after_the_gossip(self):
        # D^2 keeps using its message after the mix.
        self.assert_all_in_place("d2", "--algorithm=d2", "--mixing=lazy")

    def test_message_that_is_the_model_buffer(self):
        # Gradient tracking sends [x, y], its model buffer.
        self.assert_all_in_place("gt", "--algorithm=gt")

    def test_global_mean(self):
        # The all-reduce baseline: every node's slice of the message, and
        # the summed slices, read in place; the sum in rank order.
        self.assert_all_in_place("allreduce", "--algorithm=allreduce")

    def test_overlap_and_local_steps(self):
        # The round's message is x_s, copied into the slot; the mix is
        # applied to the half-step model.
        self.assert_all_in_place("overlap", "--overlap=on")
        self.assert_all_in_place("local", "--local-steps=3")
        self.assert_all_in_place("both", "--overlap=on", "--local-steps=3")

    def test_time_varying_graph_keeps_messages(self):
        # The one-peer exponential graph is directed and changes every
        # round: two slots would not be safe, so every message travels.
        auto, _ = self.both("one-peer", "--topology=one-peer-exp")
        for a in auto:
            self.assertGreater(a["bytes_per_step"], 0)
            self.assertEqual(a["bytes_in_place_per_step"], 0)


if __name__ == "__main__":
    unittest.main()
