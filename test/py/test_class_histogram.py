"""test_class_histogram.py - the class histogram every node logs at
--log-level=debug: one line per node, counts that add up to the node's
shard, and, summed over the nodes, exactly the class counts of the
training samples used (read from the IDX labels file here), at alpha 0.01
where the Dirichlet partition is at its most skewed. Run from the source
tree under the Makefile's Open MPI settings (make py-check)."""

import collections
import gzip
import os
import re
import subprocess
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = "/usr/share/datasets/fashion-mnist"
NODES, LIMIT = 4, 2000
LINE = re.compile(r"shard of node (\d+): (\d+) samples, per class:((?: \d+)+)$")


def first_labels(n):
    """The first n training labels (IDX: 8-byte header, then one byte each)."""
    for name in ("train-labels-idx1-ubyte.gz", "train-labels-idx1-ubyte"):
        path = os.path.join(DATA, name)
        if os.path.exists(path):
            opener = gzip.open if name.endswith(".gz") else open
            with opener(path, "rb") as f:
                return list(f.read()[8:8 + n])
    raise unittest.SkipTest(f"no Fashion-MNIST labels in {DATA}")


class ClassHistogram(unittest.TestCase):
    def test_histograms_add_up_to_the_training_labels(self):
        labels = first_labels(LIMIT)
        out = subprocess.run(
            ["mpirun", "--bind-to", "none", "-np", str(NODES), "daemon/qgmd",
             "--alpha=0.01", "--epochs=1", f"--train-limit={LIMIT}",
             "--test-limit=100", "--log-level=debug", f"--data-dir={DATA}"],
            capture_output=True, text=True, cwd=ROOT, check=False)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        shards = {}
        for line in (out.stdout + out.stderr).splitlines():
            m = LINE.search(line)
            if m:
                counts = [int(c) for c in m.group(3).split()]
                self.assertNotIn(int(m.group(1)), shards)
                self.assertEqual(len(counts), 10)
                self.assertEqual(sum(counts), int(m.group(2)))
                shards[int(m.group(1))] = counts
        self.assertEqual(sorted(shards), list(range(NODES)))
        # 2000 samples over 4 nodes: every sample is in exactly one shard.
        total = [sum(s[c] for s in shards.values()) for c in range(10)]
        expected = collections.Counter(labels)
        self.assertEqual(total, [expected[c] for c in range(10)])
        # alpha 0.01: no shard holds every class.
        self.assertTrue(all(0 in s for s in shards.values()))


if __name__ == "__main__":
    unittest.main()
