#!/usr/bin/python3
"""Cross-host tests on an emulated cluster of 4 hosts x 2 ranks.

tools/qgm-cluster makes the hosts (network namespaces on a bridge, each
with its own hostname, /dev/shm and local disk; TCP between hosts, shared
memory within one). The tests check that

- a job across hosts computes exactly what the same job computes on one
  host over shared memory (eval records and final checkpoints);
- no exchange sends more between hosts than its design says (the
  all-reduce 2 (H - 1) / H of the model a host and step, gossip the
  degree of the host graph);
- a flag file that differs on one host ends every rank with exit status 2;
- a lost host (its ranks killed, or its link taken down) ends the job
  within 30 s with lines that name it, and --resume on the restored
  cluster then ends bit for bit where an undisturbed run ends;
- under the supervisor (qgm-cluster run --restarts=N, tools/qgm-run) a
  job that loses a host, or two one after the other, completes on the
  hosts left with no one acting: the lost and resume records name the
  ranks and hosts, account for every step, lose at most --checkpoint-every
  steps, and the first step after a failure comes within 15 s of it.

They need root and network namespaces; where those cannot be had, every
test is reported as skipped, with the reason. The cluster is removed at
the end, also when a test fails or the run is interrupted.
"""
import atexit
import filecmp
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "qgmt"  # the test cluster's name: hosts qgmt-1..qgmt-4
HOSTS, SLOTS = 4, 2
NP = HOSTS * SLOTS
CLUSTER = [os.path.join(ROOT, "tools", "qgm-cluster"), "--name=" + NAME]
STATE = os.path.join(os.environ.get("QGM_CLUSTER_STATE", "/run/qgm-cluster"),
                     NAME)
QGMD = os.path.join(ROOT, "daemon", "qgmd")
# 4000 samples / 8 nodes / batch 16 = 31 steps per epoch, 62 in all.
FLAGS = ["--algorithm=qg-dsgdm-n", "--topology=ring", "--alpha=0.1",
         "--epochs=2", "--train-limit=4000", "--test-limit=500",
         "--batch-size=16", "--hidden=64", "--seed=5", "--control=none"]
FINAL_STEP = 62
MODEL_BYTES = 4 * (64 * (784 + 1) + 10 * (64 + 1))  # the MLP's floats
# Emulated slow devices (the workers sleep) make the faulted runs last
# seconds at no CPU cost, so a fault reliably lands mid-run.
SLOW = ["--straggle=0,1,2,3,4,5,6,7:40", "--checkpoint-every=10",
        "--comm-timeout=10"]
LOST_RANKS = {6, 7}  # the ranks of the last host
DEADLINE_S = 30      # a lost host must end the job within this
# The supervised runs: every gradient takes 15 ms (an emulated device, no
# CPU), a checkpoint every 10 steps, 31 steps an epoch as above.
ELASTIC = ["--device-time=15", "--checkpoint-every=10", "--comm-timeout=10"]
EVERY = 10
RECOVERY_S = 15      # a lost host's survivors step again within this
HANG_S = 300         # any other job: a bound against hanging forever

skip_reason = None


def cluster(*args):
    return subprocess.run(CLUSTER + list(args), capture_output=True,
                          text=True, timeout=120)


def down():
    cluster("down")


def on_signal(signum, frame):
    down()
    sys.exit(128 + signum)


def setUpModule():
    global skip_reason
    if os.geteuid() != 0:
        skip_reason = "not root: network namespaces need root"
        return
    down()  # whatever an interrupted earlier run left
    atexit.register(down)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    r = cluster("up", str(HOSTS), "--slots=%d" % SLOTS)
    if r.returncode != 0:
        skip_reason = "cannot make the emulated cluster: " + r.stderr.strip()


def tearDownModule():
    down()


def across(args, timeout=HANG_S, np=NP):
    """mpirun of qgmd across the emulated hosts (np ranks fill the first
    hosts, SLOTS each)."""
    return subprocess.run(CLUSTER + ["run", "--", "-np", str(np), QGMD]
                          + args, capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def one_host(args, np=NP):
    """The same job on this machine alone, over shared memory."""
    return subprocess.run(["mpirun", "--bind-to", "none", "-np", str(np),
                           QGMD] + args, capture_output=True, text=True,
                          timeout=HANG_S, cwd=ROOT)


def eval_records(path):
    """The eval records of a metrics file without what depends on time or
    on where the ranks ran."""
    out = []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r["type"] != "eval":
                continue
            out.append({k: v for k, v in r.items()
                        if not k.endswith("_s")
                        and k not in ("bytes_between_hosts_per_step",
                                      "bytes_in_place_per_step")})
    return out


def wait_for_file(path, job):
    """Polls for path while job runs: a condition to wait on, bounded so
    that a broken job cannot hang the test."""
    for _ in range(int(HANG_S / 0.05)):
        if os.path.exists(path) or job.poll() is not None:
            return
        try:
            job.wait(timeout=0.05)
        except subprocess.TimeoutExpired:
            pass


def final_checkpoint(d):
    files = sorted(glob.glob(os.path.join(
        d, "step-%012d" % FINAL_STEP, "rank-*.qgmc")))
    return files


class ClusterTest(unittest.TestCase):
    def setUp(self):
        if skip_reason:
            self.skipTest(skip_reason)
        self.tmp = tempfile.mkdtemp(prefix="qgm-cluster-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def assert_ok(self, r):
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def assert_same_checkpoints(self, a, b):
        fa, fb = final_checkpoint(a), final_checkpoint(b)
        self.assertEqual(len(fa), NP, "final checkpoint of %s" % a)
        self.assertEqual([os.path.basename(f) for f in fa],
                         [os.path.basename(f) for f in fb])
        for x, y in zip(fa, fb):
            self.assertTrue(filecmp.cmp(x, y, shallow=False),
                            "%s differs from %s" % (x, y))

    def same_result_as_one_host(self, flags):
        """Runs flags across the hosts and on one host, asserts the same
        eval records and checkpoints, and returns both last eval records."""
        runs, last = {}, {}
        for where, run in (("across", across), ("one", one_host)):
            d = self.path(where)
            r = run(flags + ["--checkpoint-dir=" + d,
                             "--metrics=" + d + ".jsonl"])
            self.assert_ok(r)
            runs[where] = d
            with open(d + ".jsonl") as f:
                last[where] = [r for r in map(json.loads, f)
                               if r["type"] == "eval"][-1]
        a = eval_records(runs["across"] + ".jsonl")
        b = eval_records(runs["one"] + ".jsonl")
        self.assertEqual(len(a), 2)
        self.assertEqual(a, b)
        self.assert_same_checkpoints(runs["across"], runs["one"])
        return last["across"], last["one"]

    def test_same_result_as_one_host(self):
        across_last, one_last = self.same_result_as_one_host(FLAGS)
        # The bytes crossing hosts are what a ring of 4 hosts x 2 ranks
        # sends: every rank sends its model to 2 neighbours, and half of
        # those messages leave the host.
        self.assertEqual(across_last["bytes_per_step"], 2 * MODEL_BYTES)
        self.assertEqual(across_last["bytes_between_hosts_per_step"],
                         MODEL_BYTES)
        # The other half stays on the host, where the neighbour reads it
        # in place; on one host, every message is read in place.
        self.assertEqual(across_last["bytes_in_place_per_step"], MODEL_BYTES)
        self.assertEqual(one_last["bytes_in_place_per_step"],
                         2 * MODEL_BYTES)

    def test_allreduce_same_result_as_one_host(self):
        # The global mean is summed as one tree wherever the ranks run.
        flags = [f for f in FLAGS if not f.startswith("--algorithm=")]
        across_last, one_last = self.same_result_as_one_host(
            flags + ["--algorithm=allreduce"])
        # Every rank sends 2 (n - 1) / n models a step in slices, each to a
        # rank of its own host (read in place) or of another.
        self.assertEqual(across_last["bytes_per_step"],
                         round(2 * (NP - 1) / NP * MODEL_BYTES))
        self.assertAlmostEqual(  # each printed rounded to a byte
            across_last["bytes_between_hosts_per_step"] +
            across_last["bytes_in_place_per_step"],
            across_last["bytes_per_step"], delta=1)
        self.assertGreater(across_last["bytes_between_hosts_per_step"], 0)
        self.assertEqual(one_last["bytes_in_place_per_step"],
                         one_last["bytes_per_step"])
        # The guard: each host link carries at most what a bandwidth-
        # optimal all-reduce sends, 2 (H - 1) / H of the model a step.
        self.assert_between_hosts_at_most(across_last,
                                          2 * (HOSTS - 1) / HOSTS)

    def test_allreduce_on_three_hosts_same_as_one(self):
        # 6 ranks on 3 hosts: 3 groups of 2, not a power of two, so the
        # groups sum in one step each way instead of pairing off; the same
        # tree all the same.
        flags = [f for f in FLAGS if not f.startswith("--algorithm=")]
        flags += ["--algorithm=allreduce", "--epochs=1"]
        records = {}
        for where, run in (("across", across), ("one", one_host)):
            d = self.path(where)
            self.assert_ok(run(flags + ["--metrics=" + d + ".jsonl"], np=6))
            records[where] = eval_records(d + ".jsonl")
        self.assertEqual(len(records["across"]), 1)
        self.assertEqual(records["across"], records["one"])

    def test_compressed_allreduce_same_result_as_one_host(self):
        # The hosts of --topology=hier --hosts=4 are the flags', so the job
        # is the same on one host; across hosts, each host's mean crosses
        # its link compressed once to each other host.
        flags = [f for f in FLAGS if not f.startswith(("--algorithm=",
                                                       "--topology="))]
        across_last, _ = self.same_result_as_one_host(
            flags + ["--algorithm=allreduce", "--topology=hier",
                     "--hosts=%d" % HOSTS, "--compress=qsgd:4"])
        # qsgd:4 sends at most 4 bits a coordinate (and a norm a block).
        self.assert_between_hosts_at_most(across_last, (HOSTS - 1) * 4 / 32)

    def assert_between_hosts_at_most(self, last, models):
        """The guard on every exchange's design: a host sends at most
        `models` models a step to the others, plus 5%. The records give a
        rank's mean; a host holds SLOTS ranks."""
        per_host = last["bytes_between_hosts_per_step"] * SLOTS
        self.assertLessEqual(per_host, 1.05 * models * MODEL_BYTES,
                             "%.0f bytes a step leave each host, more "
                             "than %.2f models" % (per_host, models))

    def test_gossip_bytes_between_hosts_as_designed(self):
        # Gossip sends a host's model once to each host it neighbours: the
        # degree of the host graph (2 on a ring of hosts), flat or
        # hierarchical; the flat ring's host graph is that ring too.
        across_last = {}
        for name, topology in (("flat", ["--topology=ring"]),
                               ("hier", ["--topology=hier",
                                         "--host-topology=ring"])):
            d = self.path(name)
            flags = [f for f in FLAGS if not f.startswith("--topology=")]
            r = across(flags + topology + ["--epochs=1",
                                           "--metrics=" + d + ".jsonl"])
            self.assert_ok(r)
            with open(d + ".jsonl") as f:
                across_last[name] = [r for r in map(json.loads, f)
                                     if r["type"] == "eval"][-1]
            self.assert_between_hosts_at_most(across_last[name], 2)
        # The hierarchical exchange sends one copy of the host's mean, in
        # slices: exactly the degree's models, a flat ring's messages too.
        for name in across_last:
            self.assertEqual(
                across_last[name]["bytes_between_hosts_per_step"] * SLOTS,
                2 * MODEL_BYTES)

    def test_async_gossip_across_a_slow_link(self):
        # The last host's link at 10 Mbit/s: a model message takes about
        # 0.2 s there and a round 1 ms of compute, so senders find their
        # last message to it not yet taken and hold newer ones back. The
        # newest held back must still go out once the last is taken:
        # otherwise a receiver waits for a round its sender has passed
        # while that sender waits on another neighbour, and the job hangs
        # (until --comm-timeout ends it).
        r = cluster("rate", "10mbit", f"{NAME}-{HOSTS}")
        self.addCleanup(cluster, "rate", "none", f"{NAME}-{HOSTS}")
        self.assertEqual(r.returncode, 0, r.stderr)
        for alg in ("qg-dsgdm-n", "sgp"):
            d = self.path("async-" + alg)
            flags = [f for f in FLAGS if not f.startswith("--algorithm=")]
            r = across(flags + ["--algorithm=" + alg, "--sync=async",
                                "--max-staleness=2", "--comm-timeout=30",
                                "--metrics=" + d + ".jsonl"])
            self.assert_ok(r)
            with open(d + ".jsonl") as f:
                records = [json.loads(line) for line in f]
            (summary,) = [x for x in records if x["type"] == "summary"]
            self.assertEqual(summary["node_steps"], [FINAL_STEP] * NP)
            self.assertLessEqual(summary["staleness_max"], 2)
            # Push-sum's mass: the shares held back go out summed.
            if alg == "sgp":
                self.assertAlmostEqual(sum(summary["push_sum_weights"]),
                                       NP, delta=1e-3)

    def test_flag_file_differs_on_one_host(self):
        job = os.path.join(STATE, "local", "job.flags")  # as hosts see it
        for h in range(1, HOSTS + 1):
            local = os.path.join(STATE, f"{NAME}-{h}", "local", "job.flags")
            with open(local, "w") as f:
                f.write("--lr=%s\n" % ("0.05" if h == HOSTS else "0.1"))
        r = across(FLAGS + ["--flagfile=" + job])
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        errors = [l for l in (r.stdout + r.stderr).splitlines()
                  if l.startswith("qgmd") and "error:" in l]
        self.assertEqual(len(errors), 1, errors)
        self.assertIn("different flags", errors[0])

    def reference(self):
        d = self.path("reference")
        self.assert_ok(across(FLAGS + SLOW + ["--checkpoint-dir=" + d]))
        return d

    def lose_host(self, how):
        """Starts the slow job, waits for its first complete checkpoint,
        loses the last host, and returns the job's output and exit."""
        d = self.path("faulted")
        cmd = CLUSTER + ["run", "--", "-np", str(NP), QGMD] + FLAGS + SLOW \
            + ["--checkpoint-dir=" + d]
        job = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, cwd=ROOT)
        wait_for_file(os.path.join(d, "step-%012d" % 10, "MANIFEST"), job)
        self.assertIsNone(job.poll(), "the job ended before the fault")
        lost = f"{NAME}-{HOSTS}"
        if how == "kill":
            pids = subprocess.run(["ip", "netns", "pids", lost],
                                  capture_output=True, text=True).stdout
            for pid in pids.split():
                try:
                    with open("/proc/%s/comm" % pid) as f:
                        if f.read().strip() == "qgmd":
                            os.kill(int(pid), signal.SIGKILL)
                except (FileNotFoundError, ProcessLookupError):
                    pass
        else:
            self.assertEqual(cluster("link", lost, "down").returncode, 0)
        try:
            out, _ = job.communicate(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            job.kill()
            out, _ = job.communicate()
            self.fail("the job did not end within %d s of losing %s:\n%s"
                      % (DEADLINE_S, lost, out))
        finally:
            if how == "link":
                cluster("link", lost, "up")
        return d, out, job.returncode

    def assert_names_lost_host(self, out):
        """Open MPI names the lost host (its daemon went silent, or one of
        its processes died); a process said to have died is one of its
        ranks; and where qgmd's watchdog spoke, the ranks next to the lost
        ones named them."""
        lost = f"{NAME}-{HOSTS}"
        self.assertRegex(out, r"on node %s\b" % lost)
        died = {int(m) for m in re.findall(r"process rank (\d+)", out)}
        self.assertTrue(died <= LOST_RANKS, "%s:\n%s" % (died, out))
        silent = {}
        for m in re.finditer(r"qgmd\[(\d+)\]: error: no message from "
                             r"neighbour rank (\d+)", out):
            silent[int(m.group(1))] = int(m.group(2))
        for waiter in (5, 0):  # the ring neighbours of ranks 6 and 7
            if waiter in silent:
                self.assertIn(silent[waiter], LOST_RANKS, out)

    def check_lost_host(self, how):
        ref = self.reference()
        d, out, rc = self.lose_host(how)
        self.assertNotEqual(rc, 0, out)
        self.assert_names_lost_host(out)
        self.assertFalse(final_checkpoint(d), "finished despite the fault")
        r = across(FLAGS + SLOW + ["--checkpoint-dir=" + d, "--resume"])
        self.assert_ok(r)
        self.assert_same_checkpoints(d, ref)

    def test_host_killed(self):
        self.check_lost_host("kill")

    def test_link_down(self):
        self.check_lost_host("link")

    # ------------------------------------------------ under the supervisor

    def lose(self, how, host):
        """Kills every qgmd of host, or takes its link down."""
        if how == "kill":
            r = subprocess.run(["ip", "netns", "pids", host],
                               capture_output=True, text=True)
            pids = r.stdout
            killed = []
            for pid in pids.split():
                try:
                    with open("/proc/%s/comm" % pid) as f:
                        if f.read().strip() == "qgmd":
                            os.kill(int(pid), signal.SIGKILL)
                            killed.append(pid)
                except (FileNotFoundError, ProcessLookupError):
                    pass
            self.assertEqual(len(killed), SLOTS, "qgmd on %s: %s" % (host, pids))
        else:
            self.assertEqual(cluster("link", host, "down").returncode, 0)
            self.addCleanup(cluster, "link", host, "up")

    def wait_for(self, condition, job):
        """Polls condition() while job runs (bounded by HANG_S)."""
        for _ in range(int(HANG_S / 0.05)):
            value = condition()
            if value or job.poll() is not None:
                return value
            try:
                job.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                pass
        return None

    def checkpoint_of(self, d, nodes, after=0):
        """A complete checkpoint of `nodes` ranks after step `after`."""
        for m in glob.glob(os.path.join(d, "step-*", "MANIFEST")):
            try:  # an old step may be pruned between the glob and the open
                with open(m) as f:
                    fields = dict(l.split(" ", 1) for l in f.read().splitlines()[1:])
            except FileNotFoundError:
                continue
            if int(fields["nodes"]) == nodes and int(fields["step"]) > after:
                return int(fields["step"])
        return None

    def supervised(self, epochs, failures):
        """Runs the job under `qgm-cluster run --restarts=2` and, for each
        (how, host, ranks) of failures in turn, waits until the job runs on
        `ranks` ranks and has a checkpoint of its own, then loses host.
        Returns the metrics' records and the job's output."""
        d, metrics = self.path("elastic"), self.path("elastic.jsonl")
        cmd = CLUSTER + ["run", "--restarts=2", "--", "-np", str(NP), QGMD] \
            + [f for f in FLAGS if not f.startswith("--epochs=")] \
            + ["--epochs=%d" % epochs] + ELASTIC \
            + ["--checkpoint-dir=" + d, "--metrics=" + metrics]
        # The output goes to a file: a pipe nobody reads while the test
        # waits could fill and stall rank 0.
        log = open(self.path("elastic.out"), "w+")
        self.addCleanup(log.close)
        job = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                               text=True, cwd=ROOT)
        self.addCleanup(lambda: job.poll() is None and job.kill())

        def output():
            log.flush()
            with open(log.name) as f:
                return f.read()
        # The failures fall between evaluations (every 31 steps), where
        # the step's exchange notices them (--lost-after): the first after
        # the checkpoint of step 70, the second after that of step 100.
        resumed = 65
        for how, host, ranks in failures:
            step = self.wait_for(lambda: self.checkpoint_of(d, ranks, resumed),
                                 job)
            if step is None:
                self.fail("no checkpoint of %d ranks:\n%s" % (ranks, output()))
            self.lose(how, host)
            resumed = 95
        job.wait(timeout=HANG_S)
        out = output()
        self.assertEqual(job.returncode, 0, out)
        with open(metrics) as f:
            return [json.loads(l) for l in f], out

    def assert_recovered(self, records, lost_hosts, final_step):
        """The records of a supervised run with failures: each lost record
        names a host's ranks and is followed by a resume record on the
        ranks left; the steps add up; the first step after each failure
        came within RECOVERY_S."""
        kinds = [r["type"] for r in records]
        lost = [r for r in records if r["type"] == "lost"]
        resumes = [r for r in records if r["type"] == "resume"]
        self.assertEqual(len(lost), len(lost_hosts), kinds)
        self.assertEqual(len(resumes), len(lost_hosts), kinds)
        self.assertEqual(kinds.count("summary"), 1, kinds)
        nodes, ranks_of = NP, list(range(NP))
        for loss, res, host in zip(lost, resumes, lost_hosts):
            # The lost host's two ranks, in this run's numbering (the
            # hosts fill in order, SLOTS ranks each).
            h = int(host.rsplit("-", 1)[1]) - 1
            self.assertEqual(loss["lost_hosts"], [host])
            self.assertEqual(loss["lost_ranks"], [SLOTS * h, SLOTS * h + 1])
            self.assertEqual(loss["nodes"], nodes)
            left = [r for r in range(nodes) if r not in loss["lost_ranks"]]
            self.assertEqual(res["from_nodes"], nodes)
            self.assertEqual(res["nodes"], nodes - SLOTS)
            self.assertEqual(res["ranks"], left)
            ranks_of = [ranks_of[r] for r in left]
            self.assertEqual(res["shards"], ranks_of)
            self.assertEqual(res["shards_dropped"],
                             [p for p in range(NP) if p not in ranks_of])
            self.assertTrue(res["exchange_reset"])
            # Lost work: the steps since the last complete checkpoint.
            self.assertEqual(res["step"] % EVERY, 0)
            self.assertEqual(res["failed_at_step"], loss["step"])
            self.assertEqual(res["steps_lost"], loss["step"] - res["step"])
            self.assertTrue(0 <= res["steps_lost"] < EVERY, res)
            self.assertLessEqual(res["first_step_done"] - loss["silent_since"],
                                 RECOVERY_S, (loss, res))
            self.assertAlmostEqual(res["recovery_s"], res["first_step_done"]
                                   - loss["silent_since"], delta=0.002)
            nodes -= SLOTS
        # Every step: each job's evaluations go on from where the one
        # before resumed, and the last ends the schedule.
        segments, current = [[]], None
        for r in records:
            if r["type"] == "resume":
                segments.append([])
                current = r["step"]
            elif r["type"] == "eval":
                if current is not None:
                    self.assertGreater(r["step"], current)
                segments[-1].append(r["step"])
        for seg, res in zip(segments[1:], resumes):
            self.assertEqual(seg, sorted(seg))
        self.assertEqual(segments[-1][-1], final_step)
        (summary,) = [r for r in records if r["type"] == "summary"]
        self.assertEqual(summary["steps"], final_step)

    def test_supervisor_host_killed(self):
        records, out = self.supervised(10, [("kill", f"{NAME}-4", NP)])
        self.assert_recovered(records, [f"{NAME}-4"], 310)

    def test_supervisor_link_down(self):
        records, out = self.supervised(10, [("link", f"{NAME}-4", NP)])
        self.assert_recovered(records, [f"{NAME}-4"], 310)

    def test_supervisor_two_failures(self):
        records, out = self.supervised(
            16, [("kill", f"{NAME}-4", NP), ("link", f"{NAME}-3", NP - SLOTS)])
        self.assert_recovered(records, [f"{NAME}-4", f"{NAME}-3"], 496)


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(ROOT, "test", "py"))
    import summary
    summary.run("cluster", unittest.defaultTestLoader.loadTestsFromModule(
        sys.modules[__name__]))
