"""test_runs.py - what a run reports while it trains and after: the eval
records (--eval-every in a synchronous run, test losses, the spread of
the local models), the progress lines, qgmctl status before the first
evaluation, a stopped run's summary and a resumed run's clock. Every
record is read with a JSON parser. Run from the source tree under the
Makefile's Open MPI settings (make py-check)."""

import datetime
import json
import os
import re
import socket
import subprocess
import tempfile
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MPIRUN = ["mpirun", "--bind-to", "none"]


def records(path, kind):
    with open(path, encoding="utf-8") as f:
        return [r for r in map(json.loads, f) if r["type"] == kind]


def qgmd(np, *flags):
    return MPIRUN + ["-np", str(np), "daemon/qgmd", *flags]


def run(args, env=None):
    out = subprocess.run(args, capture_output=True, text=True, cwd=ROOT,
                         check=False, env={**os.environ, **(env or {})})
    if out.returncode != 0:
        raise AssertionError(f"{args} exited {out.returncode}:\n"
                             f"{out.stdout}{out.stderr}")
    return out


def until(condition, timeout=120.0):
    """Polls condition() until it returns something true: a condition
    to wait on, not a delay."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("timed out waiting")


def status(sock):
    out = subprocess.run(["tools/qgmctl", f"--control={sock}", "status"],
                         capture_output=True, text=True, cwd=ROOT,
                         check=False)
    return json.loads(out.stdout) if out.returncode == 0 else None


class Records(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def test_eval_every_and_progress_in_a_synchronous_run(self):
        # 1000 samples / 2 nodes / batch 32: 15 steps per epoch, 30 in all.
        metrics = os.path.join(self.tmp.name, "m.jsonl")
        out = run(qgmd(2, "--train-limit=1000", "--test-limit=200",
                       "--epochs=2", "--eval-every=4", "--log-every=5",
                       "--control=none", f"--metrics={metrics}"))
        evals = records(metrics, "eval")
        # Every 4 steps and at both epochs' ends.
        self.assertEqual([e["step"] for e in evals],
                         [4, 8, 12, 15, 16, 20, 24, 28, 30])
        for e in evals:
            self.assertAlmostEqual(e["epoch"], e["step"] / 15, places=5)
            # Two nodes: the mean of the local accuracies lies midway
            # between the worst and the best; all are k/200.
            self.assertAlmostEqual(e["test_acc_local_mean"],
                                   (e["test_acc_local_min"] +
                                    e["test_acc_local_max"]) / 2, places=6)
            self.assertLessEqual(e["test_acc_local_min"],
                                 e["test_acc_local_max"])
            for key in ("test_loss_avg_model", "test_loss_local_mean",
                        "train_loss"):
                self.assertTrue(0.0 < e[key] < 10.0, (key, e))
        # The averaged model of the first evaluation is still far from
        # trained: its test loss is far above its final one.
        self.assertGreater(evals[0]["test_loss_avg_model"],
                           evals[-1]["test_loss_avg_model"])
        # Progress every 5 steps, except where an evaluation reports.
        progress = re.findall(r"^qgmd: step (\d+)/30 \(epoch ([0-9.]+)/2\) "
                              r".* loss [0-9.]+ .* ETA \d+ s$", out.stdout,
                              re.M)
        self.assertEqual([int(s) for s, _ in progress], [5, 10, 25])
        self.assertEqual([e for _, e in progress], ["0.33", "0.67", "1.67"])
        summary = records(metrics, "summary")[0]
        self.assertEqual(summary["epochs"], 2)
        self.assertIn("topology ring: 2 nodes, 1 edge, up to 1 peer,",
                      out.stdout)
        self.assertIn("qg-dsgdm-n on 2 nodes (ring),", out.stdout)

    def test_config_record_tells_where_the_run_came_from(self):
        flagfile = os.path.join(self.tmp.name, "a.flags")
        with open(flagfile, "w", encoding="utf-8") as f:
            f.write("# the job\n--alpha=0.1\n\n--epochs=1\n")
        metrics = os.path.join(self.tmp.name, "m.jsonl")
        started = datetime.datetime.now(datetime.timezone.utc)
        run(qgmd(2, f"--flagfile={flagfile}", "--train-limit=500",
                 "--test-limit=100", "--control=none", "--epochs=1",
                 f"--metrics={metrics}"))
        with open(metrics, encoding="utf-8") as f:
            line = f.readline()
        config = json.loads(line)
        self.assertEqual(config["type"], "config")
        version = run(["daemon/qgmd", "--version"]).stdout.split()[1]
        self.assertEqual(config["version"], version)
        git = subprocess.run(["git", "describe", "--always", "--dirty"],
                             capture_output=True, text=True, cwd=ROOT,
                             check=False)
        if git.returncode == 0:
            self.assertEqual(config["revision"], git.stdout.strip())
        self.assertEqual(config["hosts"], {socket.gethostname(): 2})
        start = datetime.datetime.strptime(
            config["start_time"], "%Y-%m-%dT%H:%M:%SZ").replace(
                tzinfo=datetime.timezone.utc)
        self.assertLessEqual(started.replace(microsecond=0), start)
        origins = config["flag_origins"]
        self.assertEqual(list(origins), list(config["flags"]))
        self.assertEqual(origins["alpha"], f"{flagfile}:2")
        # The command line overrides the file's line 4.
        self.assertEqual(origins["epochs"], "command line")
        self.assertEqual(origins["train-limit"], "command line")
        self.assertEqual(origins["lr"], "default")
        # Flags as they were given, not 0.10000000000000001.
        self.assertIn('"alpha":0.1,', line)
        self.assertEqual(config["flags"]["alpha"], 0.1)

    def test_the_log_names_the_job_an_all_reduce_is(self):
        """An all-reduce has no graph: the log names none, and no
        spectral gap of the ring it does not gossip on; one node is
        'node'."""
        tiny = ["--train-limit=200", "--test-limit=50", "--control=none",
                "--epochs=1", "--algorithm=allreduce"]
        out = run(qgmd(2, *tiny)).stdout
        lines = [l for l in out.splitlines() if not l.startswith("qgmd: epoch")]
        self.assertIn("qgmd: no graph: every step averages all 2 nodes", lines)
        self.assertEqual([l for l in lines if "topology" in l or "gap" in l], [])
        self.assertTrue(any(l.startswith("qgmd: allreduce on 2 nodes, fashion-mnist")
                            for l in lines), lines)
        out = run(["daemon/qgmd", *tiny]).stdout
        self.assertTrue(any(l.startswith("qgmd: done: allreduce on 1 node, ")
                            for l in out.splitlines()), out)

    def test_config_record_names_the_tcp_eager_limit(self):
        """Messages between hosts leave at once, whole, except on the
        hierarchical topology; a limit the user set is kept."""
        metrics = os.path.join(self.tmp.name, "m.jsonl")
        tiny = ["--train-limit=200", "--test-limit=50", "--control=none",
                "--epochs=1", f"--metrics={metrics}"]
        cases = (([], {}, "4194304"),
                 (["--topology=hier", "--hosts=1"], {}, None),
                 ([], {"OMPI_MCA_btl_tcp_eager_limit": "12345"}, "12345"))
        for flags, env, limit in cases:
            with self.subTest(flags=flags, env=env):
                run(qgmd(2, *tiny, *flags), env=env)
                config = records(metrics, "config")[0]
                self.assertIn("mpi_tcp_eager_limit", config)
                self.assertEqual(config["mpi_tcp_eager_limit"], limit)

    def test_status_before_the_first_evaluation_and_a_stopped_summary(self):
        # 60000 samples / 2 nodes / 32: 937 steps before the first
        # evaluation, time enough to ask. The graph comes from a file
        # whose path needs escaping in JSON.
        edges = os.path.join(self.tmp.name, 'two "nodes"\\.edges')
        with open(edges, "w", encoding="utf-8") as f:
            f.write("0 1\n")
        sock = os.path.join(self.tmp.name, "s.sock")
        metrics = os.path.join(self.tmp.name, "m.jsonl")
        job = subprocess.Popen(
            qgmd(2, f"--topology=file:{edges}", "--test-limit=200",
                 f"--control={sock}", f"--metrics={metrics}"),
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True)
        try:
            first = until(lambda: (s := status(sock)) and s["step"] > 0
                          and s)
            self.assertIsNone(first["last_eval"])
            self.assertEqual(first["topology"], f"file:{edges}")
            self.assertGreater(first["elapsed_s"], 0.0)
            self.assertGreater(first["eta_s"], 0.0)
            later = until(lambda: (s := status(sock)) and
                          s["step"] > first["step"] and s)
            self.assertGreaterEqual(later["elapsed_s"], first["elapsed_s"])
            subprocess.run(["tools/qgmctl", f"--control={sock}", "stop"],
                           cwd=ROOT, capture_output=True, check=True)
            out, _ = job.communicate(timeout=120)
        finally:
            if job.poll() is None:
                job.kill()
                job.wait()
        self.assertEqual(job.returncode, 0, out)
        summary = records(metrics, "summary")[0]
        self.assertTrue(summary["stopped_early"])
        # The epochs done, not the epochs of a last evaluation.
        self.assertAlmostEqual(summary["epochs"], summary["steps"] / 937,
                               places=5)
        self.assertGreater(summary["epochs"], 0.0)

    def test_resumed_run_continues_the_clock(self):
        ckpt = os.path.join(self.tmp.name, "ckpt")
        metrics = os.path.join(self.tmp.name, "m.jsonl")
        log = os.path.join(self.tmp.name, "log")
        # 4000 / 2 / 32 = 62 steps per epoch, stopped after 3 epochs.
        sock = os.path.join(self.tmp.name, "s.sock")
        flags = ["--train-limit=4000", "--test-limit=200", "--epochs=1000",
                 f"--control={sock}", f"--checkpoint-dir={ckpt}",
                 f"--metrics={metrics}"]

        def stop_after(evals, resume):
            with open(log, "w", encoding="utf-8") as out:
                job = subprocess.Popen(qgmd(2, *flags, *resume), cwd=ROOT,
                                       stdout=out, stderr=out)
                until(lambda: os.path.exists(metrics) and
                      len(records_so_far(metrics, "eval")) >= evals)
                subprocess.run(["tools/qgmctl", f"--control={sock}",
                                "stop"], cwd=ROOT, capture_output=True,
                               check=True)
                self.assertEqual(job.wait(timeout=120), 0)

        stop_after(3, [])
        stopped = records(metrics, "summary")[-1]
        before = len(records(metrics, "eval"))
        stop_after(before + 1, ["--resume"])
        resumed = [e for e in records(metrics, "eval")
                   if e["step"] > stopped["steps"]][0]
        self.assertGreater(resumed["wall_s"], stopped["wall_s"])

        # qgm-inspect shows who wrote a checkpoint, where and with what.
        final = records(metrics, "summary")[-1]["steps"]
        path = os.path.join(ckpt, f"step-{final:012d}", "rank-00001.qgmc")
        lines = run(["tools/qgm-inspect", "checkpoint", path]).stdout
        lines = lines.splitlines()
        self.assertEqual(lines[1], f"  rank 1 of 2, step {final}, epoch "
                         f"{final / 62:.4g} (62 steps per epoch), shard of "
                         "2000 samples")
        self.assertTrue(lines[2].startswith("  flags {"))
        flags = json.loads(lines[2][len("  flags "):])
        self.assertEqual(flags["train-limit"], 4000)
        self.assertEqual(flags["batch-size"], 32)


class Readme(unittest.TestCase):
    def commands(self):
        """The mpirun lines of the README's sh blocks, continuations
        joined; those for a cluster (--hostfile) need one."""
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            blocks = re.findall(r"```sh\n(.*?)```", f.read(), re.S)
        text = "\n".join(blocks).replace("\\\n", " ")
        return [line.split() for line in text.splitlines()
                if line.startswith("mpirun ") and "--hostfile" not in line]

    def test_examples_run_on_this_machine(self):
        # Every example may start more ranks than there are cores.
        commands = self.commands()
        self.assertGreaterEqual(len(commands), 4)
        for command in commands:
            self.assertIn("--oversubscribe", command, " ".join(command))
        # The largest one runs, as a user's shell runs it: without the
        # Makefile's oversubscription setting, cut short to one small
        # epoch.
        social = [c for c in commands
                  if "--flagfile=topologies/social32.flags" in c][0]
        env = {k: v for k, v in os.environ.items()
               if k != "OMPI_MCA_rmaps_base_oversubscribe"}
        with tempfile.TemporaryDirectory() as tmp:
            metrics = os.path.join(tmp, "social.jsonl")
            out = subprocess.run(
                social + ["--train-limit=4096", "--test-limit=100",
                          "--epochs=1", "--control=none",
                          "--log-level=warning", f"--metrics={metrics}"],
                cwd=ROOT, env=env, capture_output=True, text=True,
                check=False)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            summary = records(metrics, "summary")[0]
        # 4096 samples over 32 nodes in batches of 32: 4 steps.
        self.assertEqual(summary["steps"], 4)


def records_so_far(path, kind):
    """The complete records of a file still being written."""
    with open(path, encoding="utf-8") as f:
        lines = [l for l in f.read().split("\n")[:-1] if l]
    return [r for r in map(json.loads, lines) if r["type"] == kind]


if __name__ == "__main__":
    unittest.main(verbosity=2)
