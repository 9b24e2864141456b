"""test_control_socket.py - a job removes its control socket at the end
only if the path still holds the socket it bound: a socket another job
bound at the path since is left in place. The socket serves at most 16
connections at once: one more is answered "busy" and closed, so idle
connections cannot take rank 0's file descriptors, and a slot freed is
served again. Run from the source tree under
the Makefile's Open MPI settings (make py-check)."""

import json
import os
import re
import signal
import socket
import subprocess
import time

from support import QGMD, ROOT, TempDirTest
from test_async_timeout import rank_pids


class ControlSocket(TempDirTest):
    def test_the_end_leaves_a_socket_that_is_not_its_own(self):
        path = self.path("c.sock")
        job = subprocess.Popen(["mpirun", "--bind-to", "none", "-np", "1", QGMD,
                                "--epochs=100", "--train-limit=2000", "--test-limit=100",
                                "--hidden=16", f"--control={path}",
                                f"--metrics={self.path('m.jsonl')}"],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
        self.addCleanup(lambda: job.poll() is not None or job.kill())
        deadline = time.monotonic() + 120
        while not os.path.exists(path) and time.monotonic() < deadline and job.poll() is None:
            time.sleep(0.1)
        self.assertTrue(os.path.exists(path), "the job bound no socket")
        # Another job's socket at the path now.
        os.unlink(path)
        other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(other.close)
        other.bind(path)
        inode = os.stat(path).st_ino
        os.kill(rank_pids(job.pid)[0], signal.SIGTERM)  # a clean stop
        out, _ = job.communicate(timeout=120)
        self.assertEqual(job.returncode, 0, out)
        self.assertTrue(os.path.exists(path), out)
        self.assertEqual(os.stat(path).st_ino, inode)


class StatusHuman(TempDirTest):
    def test_human_status_says_what_the_json_says(self):
        path = self.path("c.sock")
        job = subprocess.Popen(["mpirun", "--bind-to", "none", "-np", "2", QGMD,
                                "--epochs=100", "--train-limit=2000", "--test-limit=100",
                                "--hidden=16", f"--control={path}", "--log-level=warning"],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
        self.addCleanup(lambda: job.poll() is not None or job.kill())
        ctl = os.path.join(ROOT, "tools", "qgmctl")
        deadline = time.monotonic() + 120
        status = None
        while time.monotonic() < deadline and job.poll() is None:
            out = subprocess.run([ctl, f"--control={path}", "status"],
                                 capture_output=True, text=True)
            if out.returncode == 0:
                status = json.loads(out.stdout)
                if status["step"] > 0:
                    break
            time.sleep(0.1)
        self.assertIsNotNone(status, "the job never answered")
        human = subprocess.run([ctl, f"--control={path}", "status", "--human"],
                               capture_output=True, text=True)
        self.assertEqual(human.returncode, 0, human.stderr)
        lines = human.stdout.splitlines()
        self.assertTrue(lines[0].startswith(
            f"{status['algorithm']} on 2 nodes ({status['topology']}): step "),
            lines[0])
        step, total = re.search(r"step (\d+) of (\d+)", lines[0]).groups()
        self.assertGreaterEqual(int(step), status["step"])
        self.assertEqual(int(total), status["total_steps"])
        self.assertTrue(lines[1].startswith("last evaluation"), lines[1])
        self.assertEqual(lines[2].split()[:2], ["rank", "step"])
        rows = [line.split() for line in lines[3:]]
        self.assertEqual([row[0] for row in rows], ["0", "1"])
        for row, then in zip(rows, status["ranks"]):
            self.assertGreaterEqual(float(row[1]), then["step"])
        wrong = subprocess.run([ctl, f"--control={path}", "stop", "--human"],
                               capture_output=True, text=True)
        self.assertEqual(wrong.returncode, 2)
        self.assertEqual(wrong.stderr, "qgmctl: --human goes with status\n")
        os.kill(rank_pids(job.pid)[0], signal.SIGTERM)

MAX_CLIENTS = 16  # daemon/control.c


def qgmctl(path, command):
    return subprocess.run([os.path.join(ROOT, "tools", "qgmctl"), f"--control={path}",
                           command], capture_output=True, text=True, check=False)


class ConnectionLimit(TempDirTest):
    def test_idle_connections_beyond_the_limit_are_refused(self):
        path = self.path("c.sock")
        job = subprocess.Popen(["mpirun", "--bind-to", "none", "-np", "1", QGMD,
                                "--epochs=100", "--train-limit=2000", "--test-limit=100",
                                "--hidden=16", f"--control={path}"],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
        self.addCleanup(lambda: job.poll() is not None or job.kill())
        deadline = time.monotonic() + 120
        while qgmctl(path, "status").returncode != 0 and time.monotonic() < deadline:
            self.assertIsNone(job.poll(), "the job ended before it served its socket")
            time.sleep(0.1)
        idle = []
        for _ in range(MAX_CLIENTS):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.addCleanup(s.close)
            s.connect(path)
            idle.append(s)
        # Each idle connection is counted once the job has accepted it: a
        # further one is then answered busy, whatever it asks.
        status = qgmctl(path, "status")
        while status.returncode == 0 and time.monotonic() < deadline:
            status = qgmctl(path, "status")
        self.assertEqual(status.returncode, 1, status.stdout + status.stderr)
        self.assertEqual(status.stdout, "")
        busy = json.loads(status.stderr)
        self.assertEqual(busy, {"error": f"busy: {MAX_CLIENTS} connections are open, "
                                         "the most served at once"})
        # One idle connection closed: the job serves requests again.
        idle.pop().close()
        status = qgmctl(path, "status")
        while status.returncode != 0 and time.monotonic() < deadline:
            status = qgmctl(path, "status")
        self.assertEqual(status.returncode, 0, status.stderr)
        self.assertIn("ranks", json.loads(status.stdout))
        self.assertEqual(qgmctl(path, "stop").returncode, 0)
        out, _ = job.communicate(timeout=120)
        self.assertEqual(job.returncode, 0, out)
