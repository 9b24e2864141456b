"""test_control_socket.py - a job removes its control socket at the end
only if the path still holds the socket it bound: a socket another job
bound at the path since is left in place. Run from the source tree under
the Makefile's Open MPI settings (make py-check)."""

import os
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
