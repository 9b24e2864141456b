"""test_data_cache.py - the inflated copies of gzipped data files that
--data-cache keeps (job/data_cache.h): what an entry holds, that a
run reads it and trains exactly as one that inflates, that a damaged entry
or a changed file is not used, and where "auto" and "none" put them; that
the cache cannot be poisoned: an entry altered with its length and CRC-32
kept is caught by its SHA-256 and rebuilt, a directory another user owns
or others may write is not used, a symlink planted at an entry's name is
not followed, and a FIFO there hangs neither qgmd nor qgm-sim. Runs
2 ranks on one host (the host's first rank reads the files for both) on a
copy of Fashion-MNIST's files, so that the test controls their times.
Run from the source tree under the Makefile's Open MPI settings (make
py-check)."""

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import unittest
import zlib

from support import QGMD, ROOT, TempDirTest

SIM = os.path.join(ROOT, "tools", "qgm-sim")
# An entry: the inflated bytes, their SHA-256, then this magic.
MAGIC = b"QGMDSHA2"
TRAILER = 32 + len(MAGIC)

DATA = "/usr/share/datasets/fashion-mnist"
FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
# Timings differ between runs; everything else in an eval record must not.
TIMES = {"wall_s", "compute_s", "comm_s"}


class DataCache(TempDirTest):
    def setUp(self):
        super().setUp()
        if not all(os.path.exists(os.path.join(DATA, f + ".gz")) for f in FILES):
            self.skipTest(f"no gzipped Fashion-MNIST in {DATA}")
        self.data = self.path("data")
        os.makedirs(self.data)
        for f in FILES:
            shutil.copy(os.path.join(DATA, f + ".gz"), self.data)
        self.runs = 0

    def run_qgmd(self, cache, env=None, stderr=None):
        """The eval records of a 2-rank run reading self.data (and its
        stderr appended to the list stderr, if given)."""
        self.runs += 1
        metrics = self.path(f"run{self.runs}.jsonl")
        args = ["mpirun", "--bind-to", "none", "-np", "2", QGMD,
                "--epochs=1", "--train-limit=600", "--test-limit=200",
                "--control=none", "--log-level=warning",
                f"--data-dir={self.data}", f"--metrics={metrics}"]
        if cache is not None:
            args.append(f"--data-cache={cache}")
        out = subprocess.run(args, capture_output=True, text=True, cwd=ROOT,
                             env=env, check=False, timeout=300)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        if stderr is not None:
            stderr.append(out.stderr)
        with open(metrics) as f:
            records = [json.loads(line) for line in f]
        evals = [{k: v for k, v in r.items() if k not in TIMES}
                 for r in records if r["type"] == "eval"]
        self.assertTrue(evals)
        return evals

    def entries(self, cache):
        """{source file name: (entry name, inflated bytes)} of the cache
        directory, each entry's digest checked."""
        if not os.path.isdir(cache):
            return {}
        found = {}
        for name in sorted(os.listdir(cache)):
            stem = name.rsplit("-", 1)[0]
            self.assertIn(stem, FILES, name)
            self.assertNotIn(stem, found, "two entries for one file")
            # A FIFO left in place would block the open.
            self.assertTrue(os.path.isfile(os.path.join(cache, name)), name)
            with open(os.path.join(cache, name), "rb") as f:
                data = f.read()
            body, digest = data[:-TRAILER], data[-TRAILER:-len(MAGIC)]
            self.assertEqual(data[-len(MAGIC):], MAGIC, name)
            self.assertEqual(digest, hashlib.sha256(body).digest(), name)
            found[stem] = (name, body)
        return found

    def inflated(self, stem):
        with gzip.open(os.path.join(self.data, stem + ".gz"), "rb") as f:
            return f.read()

    def test_entries_hold_the_inflated_files_and_train_the_same(self):
        cache = self.path("cache")
        first = self.run_qgmd(cache)
        entries = self.entries(cache)
        self.assertEqual(sorted(entries), sorted(FILES))
        for stem, (_, data) in entries.items():
            self.assertEqual(data, self.inflated(stem), stem)
        # Read from the cache, the run is the same, and nothing is rewritten.
        stamps = {n: os.stat(os.path.join(cache, n)).st_mtime_ns
                  for n, _ in entries.values()}
        self.assertEqual(self.run_qgmd(cache), first)
        self.assertEqual({n: os.stat(os.path.join(cache, n)).st_mtime_ns
                          for n in stamps}, stamps)
        # Without the cache: the same again.
        self.assertEqual(self.run_qgmd("none"), first)

    def test_a_damaged_entry_is_not_used_and_is_replaced(self):
        cache = self.path("cache")
        first = self.run_qgmd(cache)
        name, data = self.entries(cache)["train-images-idx3-ubyte"]
        damaged = bytearray(read_bytes(os.path.join(cache, name)))
        damaged[len(data) // 2] ^= 0x40  # a pixel: same length, bad CRC
        with open(os.path.join(cache, name), "wb") as f:
            f.write(damaged)
        self.assertEqual(self.run_qgmd(cache), first)
        self.assertEqual(self.entries(cache)["train-images-idx3-ubyte"],
                         (name, data))

    def test_a_changed_file_gets_a_new_entry_in_place_of_the_old(self):
        cache = self.path("cache")
        self.run_qgmd(cache)
        before = self.entries(cache)
        path = os.path.join(self.data, "t10k-labels-idx1-ubyte.gz")
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        self.run_qgmd(cache)
        after = self.entries(cache)  # one entry per file name
        self.assertEqual(sorted(after), sorted(FILES))
        for stem in FILES:
            changed = stem == "t10k-labels-idx1-ubyte"
            self.assertEqual(after[stem][0] != before[stem][0], changed, stem)
            self.assertEqual(after[stem][1], before[stem][1], stem)

    def test_auto_follows_xdg_cache_home_and_none_writes_nothing(self):
        env = dict(os.environ, XDG_CACHE_HOME=self.path("xdg"))
        self.run_qgmd("none", env)
        self.assertFalse(os.path.exists(self.path("xdg")))
        self.run_qgmd(None, env)  # the default is auto
        self.assertEqual(sorted(self.entries(self.path("xdg", "qgmd"))),
                         sorted(FILES))
        mode = os.stat(self.path("xdg", "qgmd")).st_mode & 0o777
        self.assertEqual(mode, 0o700)

    def test_an_entry_altered_with_its_crc_kept_is_caught_and_rebuilt(self):
        cache = self.path("cache")
        first = self.run_qgmd(cache)
        stem = "t10k-images-idx3-ubyte"
        name, data = self.entries(cache)[stem]
        path = os.path.join(cache, name)
        whole = read_bytes(path)
        # Pixels of the first test images turned white, and four bytes
        # further on chosen so that the CRC-32 is the gzip trailer's again.
        poisoned = bytearray(data)
        poisoned[16:16 + 784 * 8] = b"\xff" * (784 * 8)
        fix_crc(poisoned, 16 + 784 * 8, zlib.crc32(data))
        self.assertEqual(zlib.crc32(poisoned), zlib.crc32(data))
        self.assertNotEqual(bytes(poisoned), data)
        with open(path, "wb") as f:
            f.write(bytes(poisoned) + whole[len(data):])  # the old digest
        err = []
        self.assertEqual(self.run_qgmd(cache, stderr=err), first)
        self.assertIn(f"entry {name} does not match what was written", err[0])
        self.assertEqual(self.entries(cache)[stem], (name, data))

    def test_a_directory_others_may_write_or_own_is_not_used(self):
        first = self.run_qgmd("none")
        shared = self.path("shared")
        os.mkdir(shared)
        os.chmod(shared, 0o1777)  # sticky too: still refused
        err = []
        self.assertEqual(self.run_qgmd(shared, stderr=err), first)
        self.assertIn(f"--data-cache={shared}: group or others may write it", err[0])
        self.assertEqual(os.listdir(shared), [])
        if os.geteuid() == 0:
            theirs = self.path("theirs")
            os.mkdir(theirs, 0o700)
            os.chown(theirs, 65534, 65534)
            err = []
            self.assertEqual(self.run_qgmd(theirs, stderr=err), first)
            self.assertIn(f"--data-cache={theirs}: owned by uid 65534", err[0])
            self.assertEqual(os.listdir(theirs), [])

    def test_a_symlink_at_an_entry_is_not_followed(self):
        cache = self.path("cache")
        first = self.run_qgmd(cache)
        name, data = self.entries(cache)["train-labels-idx1-ubyte"]
        victim = self.path("victim")
        with open(victim, "wb") as f:
            f.write(b"precious")
        os.unlink(os.path.join(cache, name))
        os.symlink(victim, os.path.join(cache, name))
        self.assertEqual(self.run_qgmd(cache), first)
        self.assertEqual(read_bytes(victim), b"precious")
        self.assertFalse(os.path.islink(os.path.join(cache, name)))
        self.assertEqual(self.entries(cache)["train-labels-idx1-ubyte"], (name, data))

    def test_a_fifo_at_an_entry_hangs_neither_qgmd_nor_qgm_sim(self):
        cache = self.path("cache")
        first = self.run_qgmd(cache)
        name, data = self.entries(cache)["t10k-labels-idx1-ubyte"]
        entry = os.path.join(cache, name)
        os.unlink(entry)
        os.mkfifo(entry, 0o600)
        # A hang is a failure: run_qgmd's subprocess timeout.
        self.assertEqual(self.run_qgmd(cache), first)
        self.assertEqual(self.entries(cache)["t10k-labels-idx1-ubyte"], (name, data))
        os.unlink(entry)
        os.mkfifo(entry, 0o600)
        sim = subprocess.run([SIM, "--problem=dataset", "--nodes=2", "--epochs=1", "--train-limit=600",
                              "--test-limit=200", f"--data-dir={self.data}",
                              f"--data-cache={cache}", f"--metrics={self.path('sim.jsonl')}"],
                             capture_output=True, text=True, cwd=ROOT, timeout=300,
                             check=False)
        self.assertEqual(sim.returncode, 0, sim.stderr)
        self.assertEqual(self.entries(cache)["t10k-labels-idx1-ubyte"], (name, data))


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def fix_crc(data, at, crc):
    """Sets data[at:at + 4] so that zlib.crc32(data) == crc. CRC-32 is
    affine in the data: each of the 32 bits there flips a fixed set of
    the CRC's bits, so the bits to flip solve a linear system over GF(2)."""
    base = zlib.crc32(data)
    columns = []
    for bit in range(32):
        data[at + bit // 8] ^= 1 << (bit % 8)
        columns.append((zlib.crc32(data) ^ base, 1 << bit))
        data[at + bit // 8] ^= 1 << (bit % 8)
    want, rows = base ^ crc, []
    for effect, flips in columns:  # Gaussian elimination, pivot by top bit
        for r_effect, r_flips in rows:
            if effect ^ r_effect < effect:
                effect, flips = effect ^ r_effect, flips ^ r_flips
        if effect:
            rows.append((effect, flips))
            rows.sort(reverse=True)
    flips = 0
    for r_effect, r_flips in rows:
        if want ^ r_effect < want:
            want, flips = want ^ r_effect, flips ^ r_flips
    assert want == 0, "CRC-32 cannot be fixed there"
    for bit in range(32):
        if flips >> bit & 1:
            data[at + bit // 8] ^= 1 << (bit % 8)


if __name__ == "__main__":
    unittest.main()
