"""tools/qgm-data from local files (no network): a fabricated CIFAR-10
archive installed by its checksum into the default --data-dir, which
qgm-sim then trains from without --data-dir; wrong checksums, archives
without the members and the publisher's own checksum refuse with one
line and leave the directory empty."""

import hashlib
import io
import json
import os
import subprocess
import tarfile
import unittest

from support import ROOT, TempDirTest

TOOL = os.path.join(ROOT, "tools", "qgm-data")
SIM = os.path.join(ROOT, "tools", "qgm-sim")
RECORD = 3073  # CIFAR-10: a label byte, 3 x 32 x 32 pixels
PER_FILE = 10
BATCHES = [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]


def records(seed):
    """PER_FILE CIFAR-10 records, labels 0..9, pixels a pattern."""
    return b"".join(bytes([i % 10]) + bytes((seed + i + j) % 256
                                            for j in range(RECORD - 1))
                    for i in range(PER_FILE))


def make_archive(path, members, top="cifar-10-batches-bin"):
    with tarfile.open(path, "w:gz") as tar:
        for k, name in enumerate(members):
            data = records(k)
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        info = tarfile.TarInfo(f"{top}/batches.meta.txt")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"cat\n"))
    with open(path, "rb") as f:
        return hashlib.md5(f.read()).hexdigest()


class QgmDataTest(TempDirTest):
    def run_tool(self, *args):
        env = dict(os.environ, XDG_DATA_HOME=self.path("share"))
        return subprocess.run([TOOL, *args], capture_output=True, text=True,
                              env=env, check=False)

    def refused(self, out, says):
        self.assertEqual(out.returncode, 2, out.stdout + out.stderr)
        lines = out.stderr.splitlines()
        self.assertEqual(len(lines), 1, out.stderr)
        self.assertTrue(lines[0].startswith("qgm-data: "), lines[0])
        self.assertIn(says, lines[0])

    def test_installs_into_the_default_dir_qgmd_then_reads(self):
        archive = self.path("cifar-10-binary.tar.gz")
        md5 = make_archive(archive, BATCHES)
        out = self.run_tool("install", "cifar10", archive, f"--md5={md5}")
        self.assertEqual(out.returncode, 0, out.stderr)
        target = self.path("share", "qgmd", "cifar10")
        self.assertEqual(sorted(os.listdir(target)), sorted(BATCHES))
        for k, name in enumerate(BATCHES):
            with open(os.path.join(target, name), "rb") as f:
                self.assertEqual(f.read(), records(k), name)
        # qgm-sim finds it without --data-dir: 50 training records in
        # batches of 10 on one node are 5 steps an epoch.
        metrics = self.path("m.jsonl")
        sim = subprocess.run(
            [SIM, "--problem=dataset", "--dataset=cifar10", "--nodes=1",
             "--model=softmax", "--batch-size=10", "--epochs=1",
             f"--metrics={metrics}"], capture_output=True, text=True,
            env=dict(os.environ, XDG_DATA_HOME=self.path("share")),
            check=False)
        self.assertEqual(sim.returncode, 0, sim.stderr)
        with open(metrics, encoding="utf-8") as f:
            recs = [json.loads(line) for line in f]
        config = [r for r in recs if r["type"] == "config"][0]
        self.assertEqual(config["flags"]["data-dir"], target)
        self.assertEqual([r for r in recs if r["type"] == "summary"][0]["steps"], 5)

    def test_where_names_the_checksum_and_qgmds_dir(self):
        out = self.run_tool("cifar10")
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual(lines[1].split(), [
            "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz", "md5",
            "c32a1d4ab5d03f1284b67883e8d87530"])
        self.assertEqual(lines[2], "  qgmd reads it from --data-dir=" +
                         self.path("share", "qgmd", "cifar10"))
        self.refused(self.run_tool("cifar11"), "cifar11: not a dataset")

    def test_refusals_leave_the_directory_as_it_was(self):
        target = self.path("out")
        archive = self.path("cifar-10-binary.tar.gz")
        md5 = make_archive(archive, BATCHES)
        # The publisher's checksum: the fabricated archive is not theirs.
        self.refused(self.run_tool("install", "cifar10", archive, f"--dir={target}"),
                     "md5 is %s, not the expected "
                     "c32a1d4ab5d03f1284b67883e8d87530" % md5)
        self.refused(self.run_tool("install", "cifar10", archive,
                                   f"--dir={target}", "--md5=" + "0" * 32),
                     "md5 is %s" % md5)
        short = self.path("short.tar.gz")
        md5 = make_archive(short, BATCHES[:-1])
        self.refused(self.run_tool("install", "cifar10", short, f"--dir={target}",
                                   f"--md5={md5}"),
                     "no cifar-10-batches-bin/test_batch.bin in it")
        self.refused(self.run_tool("install", "cifar10", archive, "--md5=xyz"),
                     "--md5=xyz: not 32 hex digits")
        self.assertEqual(os.listdir(target) if os.path.exists(target) else [], [])


if __name__ == "__main__":
    unittest.main()
