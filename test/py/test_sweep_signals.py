"""test_sweep_signals.py - a sweep that dies leaves nothing running:
killed by SIGKILL, its mpirun (told by the kernel, PR_SET_PDEATHSIG) takes
the ranks down by itself; SIGHUP stops it as Ctrl-C does (exit status 130,
the run stopped and waited for). Meanwhile a second sweep of the same
directory is refused with one line, not let into the run directories.
Spec errors echo control bytes escaped. Every wait is bounded."""

import os
import signal
import subprocess
import time

from support import SWEEP, ROOT, TempDirTest, read, write

# One run that would train for minutes.
LONG = "np = 2\ncontrol = none\ntrain-limit = 1000\ntest-limit = 300\nepochs = 5000\n"


def processes_naming(text):
    """The pids whose command line holds text."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if text.encode() in read(f"/proc/{pid}/cmdline", "rb"):
                found.append(int(pid))
        except OSError:
            continue
    return found


class SweepSignals(TempDirTest):
    def start_long_sweep(self, out_dir):
        grid = self.path("long.grid")
        write(grid, LONG)
        sweep = subprocess.Popen([SWEEP, "--no-plots", "-o", out_dir, grid], cwd=ROOT,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: sweep.poll() is not None or sweep.kill())
        # The progress line comes once the run's mpirun is started.
        for line in sweep.stdout:
            if line.startswith("run 1/1: "):
                break
        self.assertIsNone(sweep.poll())
        return sweep, grid

    def assert_nothing_left(self, out_dir):
        deadline = time.monotonic() + 60
        while processes_naming(out_dir + "/runs/") and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(processes_naming(out_dir + "/runs/"), [])

    def test_sigkill_leaves_no_run_and_a_second_sweep_waits_its_turn(self):
        out_dir = self.path("long")
        sweep, grid = self.start_long_sweep(out_dir)
        self.assertTrue(processes_naming(out_dir + "/runs/"))
        second = subprocess.run([SWEEP, "--no-plots", "-o", out_dir, grid], cwd=ROOT,
                                capture_output=True, text=True, timeout=60, check=False)
        self.assertEqual(second.returncode, 2, second.stderr)
        self.assertEqual(second.stderr, f"sweep: {out_dir} is in use by another sweep (or by "
                         "a run of one that was killed, still ending); try again once it "
                         "is over (see --help)\n")
        sweep.kill()
        sweep.communicate(timeout=60)
        self.assert_nothing_left(out_dir)

    def test_sighup_stops_the_run_in_progress(self):
        out_dir = self.path("long")
        sweep, _ = self.start_long_sweep(out_dir)
        sweep.send_signal(signal.SIGHUP)
        _, err = sweep.communicate(timeout=120)
        self.assertEqual(sweep.returncode, 130, err)
        self.assertIn("sweep: interrupted; finished runs are kept in", err)
        self.assert_nothing_left(out_dir)

    def test_spec_errors_escape_control_bytes(self):
        spec = self.path("bad.grid")
        with open(spec, "wb") as f:
            f.write(b"np = 2\nbad\x1b]0;title\x07 \xff line\n")
        p = subprocess.run([SWEEP, "--dry-run", spec], cwd=ROOT, capture_output=True,
                           timeout=60, check=False)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr, f"sweep: {spec}:2: expected 'key = value ...', got "
                         "'bad\\x1b]0;title\\x07 \\xff line'\n".encode())
