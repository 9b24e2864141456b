"""test_async_timeout.py - the asynchronous modes honour --comm-timeout:
with the asgd server, a gsgm worker or a gossip node stopped (SIGSTOP),
the job ends within the timeout and a margin, with a non-zero exit
status and a line naming the silent rank; so does a gossip node stopped
before a checkpoint step, where the others pause for it. The wait for the job is bounded by the
subprocess's timeout. Run from the source tree under the Makefile's Open
MPI settings (make py-check)."""

import json
import os
import signal
import subprocess
import time
import unittest

from support import QGMD, ROOT, TempDirTest

TIMEOUT_S = 3
# The job must be over by then: the timeout, the watchdog's grace (1.5 s),
# mpirun's teardown, and a loaded machine's slack.
MARGIN_S = 40
# Enough work that the run is still going when a rank is stopped.
RUN = ["--train-limit=4000", "--test-limit=100", "--epochs=200", "--batch-size=16",
       "--hidden=16", "--control=none", "--eval-every=20", f"--comm-timeout={TIMEOUT_S}"]


def rank_pids(mpirun_pid):
    """{rank: pid} of the ranks mpirun started (its children, by the rank
    Open MPI put in their environment)."""
    ranks = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != mpirun_pid:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
        except (OSError, ValueError, IndexError):
            continue
        if b"OMPI_COMM_WORLD_RANK" in env:
            ranks[int(env[b"OMPI_COMM_WORLD_RANK"])] = int(pid)
    return ranks


class AsyncTimeout(TempDirTest):
    def stop_and_wait(self, algorithm, np, stopped, *flags):
        # A file of its own each time: an earlier run's evaluation must
        # not be taken for this one's.
        metrics = self.path("run-%d.jsonl" % len(os.listdir(self.tmp)))
        job = subprocess.Popen(["mpirun", "--bind-to", "none", "-np", str(np), QGMD,
                                f"--algorithm={algorithm}", f"--metrics={metrics}", *RUN,
                                *flags],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
        self.addCleanup(lambda: job.poll() is not None or job.kill())
        # Once the server has evaluated, every rank trains.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and job.poll() is None:
            try:
                with open(metrics, encoding="utf-8") as f:
                    if any(json.loads(line)["type"] == "eval" for line in f
                           if line.endswith("\n")):
                        break
            except FileNotFoundError:
                pass
            time.sleep(0.2)
        self.assertIsNone(job.poll(), "the job ended before a rank was stopped")
        ranks = rank_pids(job.pid)
        self.assertEqual(sorted(ranks), list(range(np)))
        os.kill(ranks[stopped], signal.SIGSTOP)
        self.addCleanup(lambda: os.path.exists(f"/proc/{ranks[stopped]}") and
                        os.kill(ranks[stopped], signal.SIGKILL))
        try:
            out, _ = job.communicate(timeout=TIMEOUT_S + MARGIN_S)
        except subprocess.TimeoutExpired:
            for pid in ranks.values():
                os.kill(pid, signal.SIGKILL)
            job.kill()
            job.communicate()
            self.fail(f"the job still ran {TIMEOUT_S + MARGIN_S} s after rank "
                      f"{stopped} was stopped")
        self.assertNotEqual(job.returncode, 0, out)
        # An aborted job did not finish: no summary says it did.
        self.assertNotRegex(out, r"qgmd: (done|stopped):")
        with open(metrics, encoding="utf-8") as f:
            kinds = [json.loads(line)["type"] for line in f if line.endswith("\n")]
        self.assertNotIn("summary", kinds)
        return out

    def test_a_stopped_asgd_server_ends_the_job_naming_it(self):
        out = self.stop_and_wait("asgd", 3, 0)
        self.assertRegex(out, r"qgmd\[[12]\]: error: no model from the server, rank 0, "
                              r"for [0-9.]+ s \(--comm-timeout=3\)")
        self.assertIn(f"--comm-timeout={TIMEOUT_S}", out)

    def test_a_stopped_gsgm_worker_ends_the_job_naming_it(self):
        out = self.stop_and_wait("gsgm", 4, 2)
        # It was stopped computing, or with the model's send not taken.
        self.assertRegex(out, r"qgmd\[0\]: error: (no gradient from|the model has not "
                              r"been taken by) worker rank 2 for [0-9.]+ s \(--comm-timeout=3\)")

    def test_a_stopped_gossip_node_ends_the_job_naming_it(self):
        # Its neighbours on the ring (ranks 1 and 3) go on for T rounds,
        # then wait for it, with a deadline; or an evaluation waits for
        # it, with the watchdog's. Once by message, once through the
        # host's newest-message slots. A neighbour blocked on rank 0 (in
        # an evaluation that waits for rank 2) names rank 0, which waits
        # for the one stopped; an evaluation caught before the ranks
        # report which one is behind names none.
        for transport in ("off", "auto"):
            out = self.stop_and_wait("qg-dsgdm-n", 4, 2, "--sync=async",
                                     "--max-staleness=2",
                                     f"--shared-memory={transport}")
            self.assertRegex(out, r"qgmd\[[0-3]\]: error: (neighbour (rank [02] is|ranks "
                                  r"0,2 are) more than 2 rounds behind and sent nothing "
                                  r"newer|the evaluation has (had no word from rank 2|waited [0-9.]+ s "
                                  r"for another rank)) .*"
                                  r"\(--comm-timeout=3\)")

    def test_a_gossip_node_stopped_before_a_checkpoint_is_named(self):
        # With T = 1000 nobody waits for a neighbour behind, and with one
        # evaluation an epoch (62 steps) and 20 ms steps, rank 2 is stopped
        # a few steps after it, well before the next: the others stop at
        # the next checkpoint step (every 5), where each waits for its
        # neighbours' checkpoint markers with a deadline and names those
        # whose marker did not come; or, if rank 2 was stopped once ready,
        # every rank waits in the checkpoint's agreement, with the
        # watchdog's deadline. Without either the job would run on.
        out = self.stop_and_wait("qg-dsgdm-n", 4, 2, "--sync=async",
                                 "--max-staleness=1000", "--shared-memory=off",
                                 "--eval-every=0", "--device-time=20",
                                 "--checkpoint-every=5",
                                 f"--checkpoint-dir={self.path('ck')}")
        self.assertRegex(out, r"qgmd\[[0-3]\]: error: (the checkpoint of step [0-9]+ "
                              r"has waited [0-9.]+ s \(--comm-timeout=3\) for "
                              r"(neighbour ranks? (0,)?2|another rank)|the checkpoint's "
                              r"agreement has (had no word from rank 2|waited))")

if __name__ == "__main__":
    unittest.main()
