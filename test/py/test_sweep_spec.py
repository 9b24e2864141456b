"""Spec files to runs: bad specs are exit status 2 with one line naming the
file and line; conditional lines set their key in the matching runs only;
run names and the --dry-run listing are the shell version's, so sweeps
started by it resume."""

import hashlib
import os
import subprocess

from support import FIXTURES, QGMD, TINY, TempDirTest, read, write
from sweeplib import spec
from sweeplib.cksum import cksum
from sweeplib.plan import Plan

KNOWN = {"algorithm", "alpha", "epochs", "lr", "seed", "topology", "train-limit",
         "test-limit", "control", "hidden"}


class PlanTest(TempDirTest):
    def plan(self, text, overrides=()):
        write(self.path("g.grid"), text)
        sets = [spec.parse_override(s, KNOWN) for s in overrides]
        return spec.plan_spec(self.path("g.grid"), sets, KNOWN)

    def test_axes_are_a_cartesian_product_first_line_slowest(self):
        runs = self.plan("np = 2\nseed = 1 2\nalgorithm = dsgd gt\n")
        self.assertEqual([(r["seed"], r["algorithm"]) for r in runs],
                         [("1", "dsgd"), ("1", "gt"), ("2", "dsgd"), ("2", "gt")])
        self.assertEqual(list(runs[0]), ["np", "seed", "algorithm"])

    def test_conditional_line_sets_its_key_in_matching_runs_only(self):
        runs = self.plan("np = 3\nalgorithm = asgd asgd-m gsgm\nlr = 0.05\n"
                         "lr = 0.005 0.01 if algorithm = asgd-m   # two runs for asgd-m\n")
        self.assertEqual([(r["algorithm"], r["lr"]) for r in runs],
                         [("asgd", "0.05"), ("asgd-m", "0.005"), ("asgd-m", "0.01"),
                          ("gsgm", "0.05")])

    def test_conditional_line_adds_a_key_the_others_lack(self):
        runs = self.plan("np = 2\nalgorithm = dsgd gt\nhidden = 64 if algorithm = gt\n")
        self.assertEqual(runs, [{"np": "2", "algorithm": "dsgd"},
                                {"np": "2", "algorithm": "gt", "hidden": "64"}])

    def test_overrides_replace_or_add_lines(self):
        runs = self.plan("np = 2\nalgorithm = dsgd gt\nlr = 0.1\nlr = 1 if algorithm = gt\n",
                         ["lr=0.2", "lr=0.3 if algorithm=gt", "seed=1 2"])
        self.assertEqual([(r["algorithm"], r["lr"], r["seed"]) for r in runs],
                         [("dsgd", "0.2", "1"), ("dsgd", "0.2", "2"),
                          ("gt", "0.3", "1"), ("gt", "0.3", "2")])
        # A value --set narrowed away matches no run, and is no error.
        runs = self.plan("np = 2\nalgorithm = dsgd gt\nlr = 1 if algorithm = gt\n",
                         ["algorithm=dsgd"])
        self.assertEqual(runs, [{"np": "2", "algorithm": "dsgd"}])

    def test_flag_files_are_absolute_and_hashed_by_content(self):
        write(self.path("sub", "a.flags"), "--epochs=1\n")
        runs = self.plan("np = 2\nflagfile = sub/a.flags\n")
        self.assertEqual(runs[0]["flagfile"], self.path("sub", "a.flags"))
        before = Plan(runs).names[0]
        self.assertTrue(before.startswith("a_np-2_"), before)
        write(self.path("sub", "a.flags"), "--epochs=2\n")
        self.assertNotEqual(Plan(runs).names[0], before)

    def test_cksum_is_posix_cksum(self):
        for data in (b"", b"abc\n", bytes(range(256)) * 3):
            p = subprocess.run(["cksum"], input=data, capture_output=True, check=True)
            self.assertEqual(cksum(data), int(p.stdout.split()[0]))


BAD_SPECS = [
    ("np = 2\nalpha 1\n", ":2", "expected 'key = value ...', got 'alpha 1'"),
    ("np = 2\n\n# c\nepohcs = 1\n", ":4",
     "unknown key 'epohcs' (a qgmd flag without its --, np or flagfile)"),
    ("np = 2\nalpha = 1, 0.1\n", ":2", "'1,': values are separated by spaces, not commas"),
    ("np = 2\nnp = 4\n", ":2", "'np' is already set on line 1"),
    ("np = two\n", ":1", "np must be a number of ranks in [1, 9999], got 'two'"),
    ("np = 2\nalpha =\n", ":2", "no value for 'alpha'"),
    ("np = 2\nflagfile = nope.flags\n", ":2", "cannot read flag file '@DIR@/nope.flags'"),
    ("np = 2\nmetrics = x\n", ":2",
     "'metrics' is set by the sweep (every run writes runs/NAME/metrics.jsonl)"),
    ("alpha = 1\n", "", "no 'np' line (the number of ranks of each run)"),
    ("np = 2\nlr = 0.1 if algorithm = dsgd\n", ":2",
     "'if algorithm = ...': 'algorithm' has no line of its own to choose runs by"),
    ("np = 2\nalgorithm = dsgd\nlr = 1 if algorithm = dsdg\n", ":3",
     "'dsdg' is not one of the values of 'algorithm'"),
    ("np = 2\nalgorithm = dsgd\nlr = 1 if algorithm\n", ":3",
     "expected 'if KEY = VALUE' (one value) at the end of the line"),
    ("np = 2\nalgorithm = dsgd\nlr = 1 if algorithm = dsgd\nlr = 2 if algorithm = dsgd\n",
     ":4", "'lr if algorithm=dsgd' is already set on line 3"),
    ("np = 2\nalgorithm = dsgd\nalgorithm = gt if algorithm = dsgd\n", ":3",
     "'algorithm' cannot depend on itself"),
]


class BadInputTest(TempDirTest):
    def expect_error(self, args, line):
        status, out, err = self.sweep(*args)
        self.assertEqual(status, 2, out + err)
        self.assertEqual(out, "")
        self.assertEqual(err, f"sweep: {line}\n")

    def test_bad_specs_name_file_and_line(self):
        grid = self.path("bad.grid")
        for text, where, message in BAD_SPECS:
            with self.subTest(text=text):
                write(grid, text)
                self.expect_error(["--dry-run", grid],
                                  f"{grid}{where}: {message.replace('@DIR@', self.tmp)}")

    def test_bad_command_lines(self):
        grid = self.path("ok.grid")
        write(grid, "np = 2\n")
        self.expect_error(["/nonexistent.grid"], "/nonexistent.grid: cannot read the spec file")
        self.expect_error(["--dry-run", "--set", "epohcs=1", grid],
                          "--set epohcs=1: unknown key 'epohcs' (a qgmd flag without its --, "
                          "np or flagfile)")
        self.expect_error(["--set", "x", grid], "--set x: expected --set KEY=VALUE...")
        self.expect_error(["--stability-k=0", grid],
                          "--stability-k needs a whole number >= 1, got '0' (see --help)")
        self.expect_error(["--report", "/nonexistent"],
                          "--report /nonexistent: not a sweep directory (no runs/) (see --help)")
        self.expect_error(["--frobnicate", grid], "unknown option '--frobnicate' (see --help)")
        self.expect_error([], "no spec file given (see --help)")
        status, _, err = self.sweep("--dry-run", grid, env={"QGMD": "/nonexistent/qgmd"})
        self.assertEqual((status, err), (2, "sweep: no daemon at /nonexistent/qgmd "
                                            "(run make, or set QGMD) (see --help)\n"))


class DryRunTest(TempDirTest):
    def listing(self, sweep_dir, specs, placeholders):
        status, out, err = self.sweep("--dry-run", "-o", sweep_dir, *specs)
        self.assertEqual(status, 0, err)
        for path, name in placeholders:
            out = out.replace(path, name)
        return out

    def test_fixture_grids_list_as_before(self):
        specs = os.path.join(FIXTURES, "specs")
        for name, grids in (("sync", ["two-ranks.grid", "three-ranks.grid"]),
                            ("async", ["async.grid"])):
            out = self.listing(self.path(name), [os.path.join(specs, g) for g in grids],
                               [(self.path(name), "@SWEEP@"), (specs, "@SPECS@"),
                                (QGMD, "@QGMD@")])
            self.assertEqual(out, read(os.path.join(FIXTURES, name, "expected", "dry-run.txt")))
        self.assertFalse(os.path.exists(self.path("sync")))

    def test_example_grids_keep_their_run_names(self):
        for line in read(os.path.join(FIXTURES, "examples-run-names.sha256")).splitlines():
            *grids, digest = line.split()
            status, out, err = self.sweep("--dry-run", "-o", self.path("x"), *grids)
            self.assertEqual(status, 0, err)
            names = [l.rsplit("/", 2)[1] for l in out.splitlines() if l.startswith("  ")]
            self.assertEqual(hashlib.sha256("".join(n + "\n" for n in names).encode())
                             .hexdigest(), digest, grids)

    def test_finished_runs_are_listed_as_finished(self):
        grid = self.path("g.grid")
        write(grid, "np = 2\n" + TINY + "seed = 1 2\n")
        status, out, _ = self.sweep("--dry-run", "-o", self.path("s"), grid)
        first = out.splitlines()[1].split("--metrics=")[1].rsplit("/", 1)[0]
        write(os.path.join(first, "done"), "wall_s=1.0\n")
        status, out, _ = self.sweep("--dry-run", "-o", self.path("s"), grid)
        self.assertEqual([l.rsplit(" ", 1)[1] for l in out.splitlines()[::2]],
                         ["[finished]", "[pending]"])
