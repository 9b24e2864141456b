"""test_async.py - the asynchronous mode's rank set-up and accounting: an
asynchronous job builds no gossip topology (nor the gossip state made from
it), its workers draw the synchronous mode's training batches (CIFAR
augmentation included), the summary's staleness histogram accounts for
every applied gradient, and the flags of the emulated device and of the
GSGM variants are checked. Every record is read with a JSON parser. Run
from the source tree under the Makefile's Open MPI settings (make
py-check)."""

import json
import os
import random
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MPIRUN = ["mpirun", "--bind-to", "none"]
# 600 samples over the workers, batch 16, one epoch: small and quick.
TINY = ["--train-limit=600", "--test-limit=100", "--epochs=1",
        "--batch-size=16", "--control=none"]


def records(path, kind):
    with open(path, encoding="utf-8") as f:
        return [r for r in map(json.loads, f) if r["type"] == kind]


def qgmd(np, *flags):
    return subprocess.run(MPIRUN + ["-np", str(np), "daemon/qgmd", *flags],
                          capture_output=True, text=True, cwd=ROOT,
                          check=False)


def write_cifar(directory, seed):
    """CIFAR-10 binary files: 5 training batches of 60 records and a test
    batch of 40, each a label byte then 3072 pixel bytes. Class k is
    bright in channel k % 3 within the k/3-th band of 8 rows."""
    rng = random.Random(seed)

    def batch(name, n):
        out = bytearray()
        for _ in range(n):
            label = rng.randrange(10)
            out.append(label)
            for k in range(3072):
                bright = k // 1024 == label % 3 and (k % 1024) // 256 == label // 3
                out.append((200 if bright else 40) + rng.randrange(25) - 12)
        with open(os.path.join(directory, name), "wb") as f:
            f.write(out)

    for i in range(1, 6):
        batch(f"data_batch_{i}.bin", 60)
    batch("test_batch.bin", 40)


class AsyncRanks(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def run_ok(self, np, *flags):
        metrics = os.path.join(self.tmp.name, f"m{len(os.listdir(self.tmp.name))}.jsonl")
        out = qgmd(np, *flags, f"--metrics={metrics}")
        if out.returncode != 0:
            self.fail(f"exit {out.returncode}:\n{out.stdout}{out.stderr}")
        return metrics, out

    def test_no_gossip_topology_is_built_or_checked(self):
        # The social graph has 32 nodes and the file does not exist: a
        # gossip job of 3 ranks is refused with either (exit 2), an
        # asynchronous one gossips nothing and trains.
        for topology in ("social", "file:/nonexistent/graph.edges"):
            metrics, out = self.run_ok(3, "--algorithm=gsgm",
                                       f"--topology={topology}", *TINY)
            summary = records(metrics, "summary")[0]
            self.assertEqual(summary["mode"], "async")
            # 600 / 2 workers / 16 = 18 gradients each, 36 updates.
            self.assertEqual(summary["steps"], 36)
        refused = qgmd(3, "--algorithm=dsgd", "--topology=social", *TINY)
        self.assertEqual(refused.returncode, 2)

    def test_workers_draw_augmented_cifar_batches(self):
        # One worker: the arrival order is fixed, so a run is repeatable
        # and augmentation is the only difference between the two.
        data = os.path.join(self.tmp.name, "cifar")
        os.mkdir(data)
        write_cifar(data, 8)
        flags = ["--algorithm=asgd", "--dataset=cifar10", f"--data-dir={data}",
                 "--model=mlp", "--hidden=16", "--epochs=2",
                 "--batch-size=10", "--lr=0.01", "--eval-every=5",
                 "--control=none"]

        def losses(augment):
            metrics, _ = self.run_ok(2, *flags, f"--augment={augment}")
            return [e["train_loss"] for e in records(metrics, "eval")]

        on, again, off = losses(1), losses(1), losses(0)
        # 300 samples / batch 10 = 30 updates an epoch, 60 in all.
        self.assertEqual(len(on), 12)
        self.assertEqual(on, again)
        # The batches' samples are the same, their crops and flips not.
        self.assertNotEqual(on, off)
        self.assertEqual(len(off), 12)

    def test_staleness_histogram_counts_every_update(self):
        # One worker: every gradient is computed on the current model.
        metrics, _ = self.run_ok(2, "--algorithm=asgd", "--device-time=1",
                                 *TINY)
        summary = records(metrics, "summary")[0]
        self.assertEqual(summary["staleness_hist"], [summary["steps"]])
        self.assertEqual(summary["staleness_max"], 0)
        self.assertEqual(summary["staleness_hist_last"], 8)
        # Four workers with a spread of device times: whatever the arrival
        # order, the histogram holds every update, and its mean and last
        # bucket are the summary's staleness mean and max.
        metrics, _ = self.run_ok(5, "--algorithm=dc-asgd",
                                 "--device-time=20:0.5", "--straggle=1:3",
                                 *TINY)
        summary = records(metrics, "summary")[0]
        hist = summary["staleness_hist"]
        self.assertEqual(summary["steps"], 4 * (150 // 16))
        self.assertEqual(sum(hist), summary["steps"])
        self.assertEqual(len(hist) - 1, summary["staleness_max"])
        self.assertGreater(hist[-1], 0)
        mean = sum(t * n for t, n in enumerate(hist)) / sum(hist)
        self.assertAlmostEqual(mean, summary["staleness_mean"], delta=5e-4)
        self.assertEqual(summary["staleness_hist_last"], 32)

    def test_bad_flags_name_the_flag(self):
        cases = [
            ("--device-time=fast", "--device-time: 'fast' is not MS[:JITTER]"),
            ("--device-time=10:4", "--device-time: '10:4' is not MS[:JITTER]"),
            ("--gsgm-rule=rounds",
             "--gsgm-rule: unknown rule 'rounds' (known: round, window, "
             "weighted, fresh)"),
            ("--gsgm-window=0", "--gsgm-window"),
            ("--algorithm=dc-sgd", "asynchronous: asgd, asgd-m, gsgm, "
             "sa-asgd, dc-asgd"),
        ]
        for flag, says in cases:
            out = subprocess.run(["daemon/qgmd", flag], capture_output=True,
                                 text=True, cwd=ROOT, check=False)
            self.assertEqual(out.returncode, 2, flag)
            lines = (out.stdout + out.stderr).strip().splitlines()
            self.assertEqual(len(lines), 1, lines)
            self.assertIn(says, lines[0])


if __name__ == "__main__":
    unittest.main()
