"""--consensus-lr left unset takes the compressor's default for the
algorithm's momentum (job/compress.c, docs/COMPRESSION.md "Default gamma"),
the value the records and --show-config then show; a given one is kept;
and the start-up warns, once, for a compressor whose default is known to
train poorly, and not when the step size is given."""

import os
import subprocess
import unittest

from support import QGMD, ROOT

SIM = os.path.join(ROOT, "tools", "qgm-sim")


def consensus_lr(*flags):
    out = subprocess.run([QGMD, "--show-config", *flags], capture_output=True,
                         text=True, check=True).stdout
    (line,) = [l for l in out.splitlines() if l.startswith("--consensus-lr=")]
    return float(line.split("=", 1)[1])


class ConsensusDefault(unittest.TestCase):
    def test_the_operators_defaults(self):
        expect = {
            # quasi-global momentum (the default algorithm): top-k 2F,
            # rand-k F/2, 4 bits and more 1, fewer 0.02, sign 0.01
            ("--compress=topk:0.01",): 0.02,
            ("--compress=topk:0.1",): 0.2,
            ("--compress=topk:0.5",): 0.3,  # capped: 0.5 diverged
            ("--compress=randk:0.1",): 0.05,
            ("--compress=qsgd:4",): 1,
            ("--compress=qsgd:2",): 0.02,
            ("--compress=sign",): 0.01,
            # local momentum: top-k 5F, rand-k F, sign 1
            ("--algorithm=dsgdm-n", "--compress=topk:0.01"): 0.05,
            ("--algorithm=dsgdm-n", "--compress=randk:0.1"): 0.1,
            ("--algorithm=dsgdm-n", "--compress=sign"): 1,
            # PowerGossip's paper rule; the all-reduce has no consensus step
            ("--compress=powersgd:2",): 1,
            ("--algorithm=allreduce", "--topology=hier", "--compress=qsgd:4"): 1,
            # given, or no compression: as it is
            ("--compress=topk:0.01", "--consensus-lr=0.5"): 0.5,
            (): 1,
        }
        for flags, gamma in expect.items():
            self.assertEqual(consensus_lr(*flags), gamma, flags)

    def test_known_poor_defaults_warn_once(self):
        def run(*flags):
            return subprocess.run([SIM, "--nodes=4", "--epochs=1", *flags],
                                  capture_output=True, text=True, check=False)
        warned = run("--compress=randk:0.01")
        self.assertEqual(warned.returncode, 0, warned.stderr)
        lines = [l for l in warned.stderr.splitlines() if "warning" in l]
        self.assertEqual(lines, [
            "qgm-sim: warning: --compress=randk:0.01 (--consensus-lr=0.005): "
            "at its default --consensus-lr it ended more than 2 points of "
            "test accuracy below uncompressed gossip in 3 epochs of the "
            "default job; docs/COMPRESSION.md (\"Default gamma\") has the "
            "measured table"])
        for flags in (["--compress=randk:0.01", "--consensus-lr=0.005"],
                      ["--compress=topk:0.1"], ["--compress=qsgd:4"]):
            quiet = run(*flags)
            self.assertEqual(quiet.returncode, 0, quiet.stderr)
            self.assertNotIn("warning", quiet.stderr, flags)


if __name__ == "__main__":
    unittest.main()
