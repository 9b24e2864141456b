"""test_device_time_stop.py - a stop during an emulated device time
(--device-time) does not wait it out: with every step taking two minutes
of sleep, SIGTERM to the ranks (what mpirun sends them) ends the run
cleanly, at the agreed step, long before one device time is over. The
wait is bounded by the subprocess's timeout. Run from the source tree
under the Makefile's Open MPI settings (make py-check)."""

import json
import os
import signal
import subprocess
import time

from support import QGMD, ROOT, TempDirTest
from test_async_timeout import rank_pids

DEVICE_S = 120
# 2000 / 2 / 32 = 31 steps. A stop asked before step 8 is voted on at step
# 8 and takes effect at step 16 (QGMD_VOTE_EVERY, daemon/stop.h).
STOP_STEP = 16


class DeviceTimeStop(TempDirTest):
    def test_sigterm_cuts_the_emulated_device_time(self):
        metrics, ckpt = self.path("m.jsonl"), self.path("ckpt")
        job = subprocess.Popen(["mpirun", "--bind-to", "none", "-np", "2", QGMD,
                                "--train-limit=2000", "--test-limit=100", "--epochs=1",
                                f"--device-time={DEVICE_S * 1000}", "--control=none",
                                f"--metrics={metrics}", f"--checkpoint-dir={ckpt}"],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
        self.addCleanup(lambda: job.poll() is not None or job.kill())
        # The config record is written before the first step: from then
        # on the ranks sleep out their first device time.
        deadline = time.monotonic() + 120
        while not (os.path.exists(metrics) and os.path.getsize(metrics) > 0):
            self.assertIsNone(job.poll(), "the job ended before it trained")
            self.assertLess(time.monotonic(), deadline, "no config record")
            time.sleep(0.1)
        ranks = rank_pids(job.pid)
        self.assertEqual(sorted(ranks), [0, 1])
        for pid in ranks.values():
            os.kill(pid, signal.SIGTERM)
        try:
            out, _ = job.communicate(timeout=DEVICE_S / 2)
        except subprocess.TimeoutExpired:
            job.kill()
            job.communicate()
            self.fail(f"the job still slept {DEVICE_S / 2} s after SIGTERM")
        self.assertEqual(job.returncode, 0, out)
        with open(metrics, encoding="utf-8") as f:
            records = [json.loads(line) for line in f]
        (summary,) = [r for r in records if r["type"] == "summary"]
        self.assertTrue(summary["stopped_early"])
        self.assertEqual(summary["steps"], STOP_STEP)
        self.assertTrue(os.path.isdir(os.path.join(ckpt, f"step-{STOP_STEP:012d}")))
