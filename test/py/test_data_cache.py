"""test_data_cache.py - the inflated copies of gzipped data files that
--data-cache keeps (job/data_cache.h): what an entry holds, that a
run reads it and trains exactly as one that inflates, that a damaged entry
or a changed file is not used, and where "auto" and "none" put them. Runs
2 ranks on one host (the host's first rank reads the files for both) on a
copy of Fashion-MNIST's files, so that the test controls their times.
Run from the source tree under the Makefile's Open MPI settings (make
py-check)."""

import gzip
import json
import os
import shutil
import subprocess
import unittest

from support import QGMD, ROOT, TempDirTest

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

    def run_qgmd(self, cache, env=None):
        """The eval records of a 2-rank run reading self.data."""
        self.runs += 1
        metrics = self.path(f"run{self.runs}.jsonl")
        args = ["mpirun", "--bind-to", "none", "-np", "2", QGMD,
                "--epochs=1", "--train-limit=600", "--test-limit=200",
                "--control=none", "--log-level=warning",
                f"--data-dir={self.data}", f"--metrics={metrics}"]
        if cache is not None:
            args.append(f"--data-cache={cache}")
        out = subprocess.run(args, capture_output=True, text=True, cwd=ROOT,
                             env=env, check=False)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        with open(metrics) as f:
            records = [json.loads(line) for line in f]
        evals = [{k: v for k, v in r.items() if k not in TIMES}
                 for r in records if r["type"] == "eval"]
        self.assertTrue(evals)
        return evals

    def entries(self, cache):
        """{source file name: (entry name, bytes)} of the cache directory."""
        if not os.path.isdir(cache):
            return {}
        found = {}
        for name in sorted(os.listdir(cache)):
            stem = name.rsplit("-", 1)[0]
            self.assertIn(stem, FILES, name)
            self.assertNotIn(stem, found, "two entries for one file")
            with open(os.path.join(cache, name), "rb") as f:
                found[stem] = (name, f.read())
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
        damaged = bytearray(data)
        damaged[len(damaged) // 2] ^= 0x40  # a pixel: same length, bad CRC
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


if __name__ == "__main__":
    unittest.main()
