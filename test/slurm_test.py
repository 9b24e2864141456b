#!/usr/bin/python3
"""Slurm on an emulated cluster of 4 hosts x 2 CPUs: real munged,
slurmctld and slurmd daemons (tools/qgm-cluster up --slurm,
tools/qgm-slurm), the job scripts of examples/slurm/ submitted with
sbatch on one of the hosts, qgmd started by srun --mpi=pmix.

The tests check that

- examples/slurm/ring.sbatch trains across the 4 hosts (qgmd finds them
  from Slurm's placement: the config record names them, 2 ranks each) and
  gives the same eval records and the same final checkpoint files, byte
  for byte, as the same job under mpirun across the same hosts;
- examples/slurm/resume.sbatch, whose time limit comes mid-run, is warned
  by Slurm, checkpoints, requeues itself and resumes by itself, and ends
  bit for bit where an uninterrupted run ends (eval records and final
  checkpoint files).

They need root, network namespaces and Debian's Slurm packages
(`tools/deps slurm`); without one of them every test is reported as
skipped, with the reason. The cluster is removed at the end, also when a
test fails or the run is interrupted.
"""
import atexit
import filecmp
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "qgms"  # hosts qgms-1..qgms-4; cluster_test.py's are qgmt-*
HOSTS, SLOTS = 4, 2
NP = HOSTS * SLOTS
CLUSTER = [os.path.join(ROOT, "tools", "qgm-cluster"), "--name=" + NAME]
# The cluster's state directory (qgm-cluster's STATE/PREFIX), where
# qgm-slurm keeps the daemons' logs.
STATE = os.path.join(os.environ.get("QGM_CLUSTER_STATE", "/run/qgm-cluster"),
                     NAME)
QGMD = os.path.join(ROOT, "daemon", "qgmd")
EXAMPLES = os.path.join(ROOT, "examples", "slurm")
# The programs the emulated Slurm cluster runs (Debian: slurmctld, slurmd,
# slurm-client, munge).
SLURM_PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "srun",
                  "scontrol", "sinfo")
# A small job: 4000 samples / 8 nodes / batch 16 = 31 steps an epoch. The
# scripts' own flags come first; these win over them.
FLAGS = ["--train-limit=4000", "--test-limit=500", "--batch-size=16",
         "--hidden=64", "--seed=5", "--control=none"]
RING = ["--algorithm=qg-dsgdm-n", "--topology=ring", "--alpha=0.1"]
# The time-limited job: 4 epochs, 124 steps, each gradient 350 ms of an
# emulated device (no CPU), 43 s in all. Slurm's shortest limit is a
# minute; the warning (B:TERM, to the script) is sent once its controller's
# 30-second check sees less than WARN + 30 s left, so 5 to 35 s after the
# start, while the run goes on.
RESUME_EPOCHS, RESUME_FINAL = 4, 124
PACE = ["--device-time=350"]
TIME_LIMIT = ["--time=1", "--signal=B:TERM@25"]
HANG_S = 300  # a bound against a job hanging forever

skip_reason = None
slurm_error = None


def cluster(*args):
    return subprocess.run(CLUSTER + list(args), capture_output=True,
                          text=True, timeout=120)


def down():
    cluster("down")


def on_signal(signum, frame):
    down()
    sys.exit(128 + signum)


def missing_programs():
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
    return [p for p in SLURM_PROGRAMS if shutil.which(p, path=path) is None]


def setUpModule():
    global skip_reason, slurm_error
    if os.geteuid() != 0:
        skip_reason = "not root: network namespaces and Slurm's daemons need root"
        return
    missing = missing_programs()
    if missing:
        skip_reason = ("Slurm is not installed (no %s): 'tools/deps slurm' "
                       "installs it" % ", ".join(missing))
        return
    down()  # whatever an interrupted earlier run left
    atexit.register(down)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    r = cluster("up", str(HOSTS), "--slots=%d" % SLOTS)
    if r.returncode != 0:
        skip_reason = "cannot make the emulated cluster: " + r.stderr.strip()
        return
    # Namespaces work: from here on a failure is the Slurm set-up's, and
    # every test fails with it.
    r = subprocess.run([os.path.join(ROOT, "tools", "qgm-slurm"),
                        "--name=" + NAME, "up"], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        slurm_error = "qgm-slurm up failed: " + (r.stdout + r.stderr).strip()


def tearDownModule():
    down()


# The states a job ends in (a requeued job goes through REQUEUED and
# PENDING to RUNNING again).
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
         "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"}
POLL_S = 0.5


def sbatch(host, script, options, args, out_dir, wait=True):
    """sbatch of an example script on host, waiting for the job to end:
    with sbatch --wait, or (wait=False) by polling scontrol, which follows
    a long job sooner than sbatch's ever longer pauses. Returns the job
    id, sbatch's completed process and the job's output."""
    env = dict(os.environ, QGMD=QGMD, QGM_OUT=out_dir)
    log = out_dir + ".out"
    try:
        r = subprocess.run(CLUSTER + ["exec", host, "--", "sbatch",
                                      "--parsable", "--output=" + log]
                           + (["--wait"] if wait else [])
                           + options + [os.path.join(EXAMPLES, script)]
                           + args, capture_output=True, text=True,
                           timeout=HANG_S, cwd=ROOT, env=env)
    except subprocess.TimeoutExpired:
        raise AssertionError("%s did not end within %d s\n%s"
                             % (script, HANG_S, slurm_state())) from None
    job = r.stdout.strip().split(";")[0]
    if not wait and r.returncode == 0:
        for _ in range(int(HANG_S / POLL_S)):
            if job_fields(job).get("JobState") in ENDED:
                break
            time.sleep(POLL_S)  # a bounded poll of the job's state
    text = ""
    if os.path.exists(log):
        with open(log) as f:
            text = f.read()
    return job, r, text


def slurm_state():
    """What Slurm says of its jobs and nodes, and the end of the
    controller's log: why a job waits, for a failure's message."""
    parts = []
    for cmd in (["squeue", "-o", "%i %T %r %N"],
                ["sinfo", "-N", "-o", "%N %T %E"]):
        r = cluster("exec", NAME + "-1", "--", *cmd)
        parts.append("$ %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    ctld = os.path.join(STATE, "slurm", "log", "slurmctld.log")
    if os.path.exists(ctld):
        with open(ctld) as f:
            tail = "".join(f.readlines()[-25:])
        parts.append("$ tail %s\n%s" % (ctld, tail))
    return "\n".join(parts)


def job_fields(job):
    """scontrol's record of a job, as a dict of its KEY=VALUE fields."""
    r = cluster("exec", NAME + "-1", "--", "scontrol", "show", "job", "-o",
                job)
    fields = {}
    for word in r.stdout.split():
        k, sep, v = word.partition("=")
        if sep:
            fields[k] = v
    return fields


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def eval_records(path, also=()):
    """The eval records without what depends on time or on where the
    ranks ran (and the keys in also)."""
    return [{k: v for k, v in r.items()
             if not k.endswith("_s")
             and k not in ("bytes_between_hosts_per_step",
                           "bytes_in_place_per_step") + tuple(also)}
            for r in records(path) if r["type"] == "eval"]


def final_checkpoint(d, step):
    return sorted(glob.glob(os.path.join(d, "step-%012d" % step,
                                         "rank-*.qgmc")))


class SlurmTest(unittest.TestCase):
    def setUp(self):
        if skip_reason:
            self.skipTest(skip_reason)
        if slurm_error:
            self.fail(slurm_error)
        self.tmp = tempfile.mkdtemp(prefix="qgm-slurm-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def assert_same_checkpoints(self, a, b, step):
        fa, fb = final_checkpoint(a, step), final_checkpoint(b, step)
        self.assertEqual(len(fa), NP, "final checkpoint of %s" % a)
        self.assertEqual([os.path.basename(f) for f in fa],
                         [os.path.basename(f) for f in fb])
        for x, y in zip(fa, fb):
            self.assertTrue(filecmp.cmp(x, y, shallow=False),
                            "%s differs from %s" % (x, y))

    def test_ring_sbatch_equals_mpirun(self):
        flags = FLAGS + ["--epochs=2"]
        out = self.path("slurm")
        job, r, log = sbatch(NAME + "-1", "ring.sbatch", [],
                             flags + ["--checkpoint-dir=" + out + "/ck"], out)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr + log)
        # The same job under mpirun across the same hosts.
        ref = self.path("mpirun")
        os.mkdir(ref)
        m = subprocess.run(CLUSTER + ["run", "--", "-np", str(NP), QGMD]
                           + RING + ["--epochs=5"] + flags
                           + ["--checkpoint-dir=" + ref + "/ck",
                              "--metrics=" + ref + ".jsonl"],
                           capture_output=True, text=True, timeout=HANG_S,
                           cwd=ROOT)
        self.assertEqual(m.returncode, 0, m.stdout + m.stderr)
        got = records(out + "/metrics.jsonl")
        (config,) = [x for x in got if x["type"] == "config"]
        # Placement from Slurm's node list: 2 ranks on each of the hosts.
        self.assertEqual(config["hosts"],
                         {"%s-%d" % (NAME, i): SLOTS
                          for i in range(1, HOSTS + 1)})
        self.assertEqual(config["nodes"], NP)
        a = eval_records(out + "/metrics.jsonl")
        self.assertEqual(len(a), 2)
        self.assertEqual(a, eval_records(ref + ".jsonl"))
        self.assert_same_checkpoints(out + "/ck", ref + "/ck", 62)

    def test_time_limit_requeue_resume(self):
        flags = FLAGS + ["--epochs=%d" % RESUME_EPOCHS,
                         "--checkpoint-every=10"]
        out = self.path("slurm")
        job, r, log = sbatch(NAME + "-2", "resume.sbatch", TIME_LIMIT,
                             flags + PACE, out, wait=False)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr + log)
        fields = job_fields(job)
        if fields.get("JobState") != "COMPLETED":
            self.fail("job %s ended %s (reason %s)\n%s\n%s" % (
                job, fields.get("JobState"), fields.get("Reason"), log,
                slurm_state()))
        restarts = int(fields.get("Restarts", "0"))
        self.assertGreaterEqual(restarts, 1, log)
        got = records(out + "/metrics.jsonl")
        summaries = [x for x in got if x["type"] == "summary"]
        # One summary a start: every start but the last stopped early at
        # the warning; the last did the whole schedule.
        self.assertEqual(len(summaries), restarts + 1, log)
        self.assertTrue(all(s["stopped_early"] for s in summaries[:-1]),
                        summaries)
        self.assertFalse(summaries[-1]["stopped_early"])
        self.assertEqual(summaries[-1]["steps"], RESUME_FINAL)
        self.assertTrue(all(0 < s["steps"] < RESUME_FINAL
                            for s in summaries[:-1]), summaries)
        # The uninterrupted run, on one host, without the pacing.
        ref = self.path("ref")
        os.mkdir(ref)
        m = subprocess.run(["mpirun", "--bind-to", "none", "-np", str(NP),
                            QGMD] + RING + ["--epochs=5"] + flags
                           + ["--checkpoint-dir=" + ref + "/ck",
                              "--metrics=" + ref + ".jsonl"],
                           capture_output=True, text=True, timeout=HANG_S,
                           cwd=ROOT)
        self.assertEqual(m.returncode, 0, m.stdout + m.stderr)
        # bytes_sent counts what this process sent since it started.
        a = eval_records(out + "/metrics.jsonl", also=["bytes_sent"])
        self.assertEqual(len(a), RESUME_EPOCHS)
        self.assertEqual(a, eval_records(ref + ".jsonl", also=["bytes_sent"]))
        self.assert_same_checkpoints(out + "/checkpoints", ref + "/ck",
                                     RESUME_FINAL)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(ROOT, "test", "py"))
    import summary
    summary.run("slurm", unittest.defaultTestLoader.loadTestsFromModule(
        sys.modules[__name__]))
