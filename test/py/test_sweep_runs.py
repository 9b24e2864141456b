"""tools/sweep end to end on tiny grids (2 or 3 ranks, a Fashion-MNIST
subset): runs.csv agrees with the runs' metrics files, summary.md with
runs.csv, a failing run is reported while the others finish, a second
sweep skips finished runs and redoes unfinished ones, an interrupt stops
the run in progress and leaves no rank behind, a hostfile and mpirun
arguments reach mpirun, a launcher template is what starts the runs, and
an asynchronous grid with a conditional line reports what the runs'
summaries say."""

import csv
import json
import os
import shlex
import signal
import subprocess

from support import SWEEP, ROOT, TINY, TempDirTest, read, write

GRID = "np = 2\n" + TINY + "algorithm = dsgd qg-dsgdm-n no-such-algorithm\n"
ASYNC_GRID = ("np = 3\nepochs = 1\ntrain-limit = 1000\ntest-limit = 300\ncontrol = none\n"
              "algorithm = asgd gsgm\nlr = 0.05\nlr = 0.02 if algorithm = gsgm\n")


def records(path):
    return [json.loads(line) for line in read(path).splitlines()]


def csv_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class SweepRunsTest(TempDirTest):
    def run_dirs(self, sweep_dir):
        return sorted(os.listdir(os.path.join(sweep_dir, "runs")))

    def metrics_of(self, sweep_dir, row):
        return records(os.path.join(sweep_dir, "runs", row["run"], "metrics.jsonl"))

    def check_row(self, sweep_dir, row):
        recs = self.metrics_of(sweep_dir, row)
        evals = [r for r in recs if r["type"] == "eval"]
        summary = [r for r in recs if r["type"] == "summary"][0]
        self.assertEqual(len(evals), 2)
        acc = [e["test_acc_avg_model"] for e in evals]
        local = [e["test_acc_local_mean"] for e in evals]
        self.assertEqual((row["np"], row["epochs"], row["train-limit"], row["epochs_done"]),
                         ("2", "2", "1000", "2"))
        self.assertAlmostEqual(float(row["final_test_acc_avg_model"]), acc[1], delta=1e-9)
        self.assertAlmostEqual(float(row["final_test_acc_avg_model"]),
                               summary["final_test_acc_avg_model"], delta=1e-9)
        self.assertAlmostEqual(float(row["best_test_acc_avg_model"]), max(acc), delta=1e-9)
        self.assertAlmostEqual(float(row["final_test_acc_local_mean"]), local[1], delta=1e-9)
        self.assertAlmostEqual(float(row["best_test_acc_local_mean"]), max(local), delta=1e-9)
        consensus = evals[1]["consensus_dist"]
        self.assertAlmostEqual(float(row["final_consensus_dist"]), consensus,
                               delta=1e-6 * (1 + consensus))
        # The population standard deviation of two values is half their
        # distance (K = 2).
        self.assertAlmostEqual(float(row["stability"]), abs(acc[1] - acc[0]) / 2, delta=1e-6)
        self.assertAlmostEqual(float(row["train_wall_s"]), summary["wall_s"], delta=1e-9)

    def check_summary(self, sweep_dir, rows):
        """The pivot of final accuracies: one row per algorithm, the best in
        bold, the failed run listed."""
        md = read(os.path.join(sweep_dir, "summary.md")).split("\n")
        accs = {r["algorithm"]: 100 * float(r["final_test_acc_avg_model"]) for r in rows}
        start = md.index("Final test accuracy of the averaged model (%):")
        self.assertEqual(md[start + 2], "| algorithm | alpha = 1 |")
        for line, algorithm in zip(md[start + 4:start + 6], ("dsgd", "qg-dsgdm-n")):
            cell = "%.2f" % accs[algorithm]  # one seed: no spread
            if accs[algorithm] == max(accs.values()):
                cell = f"**{cell}**"
            self.assertEqual(line, f"| {algorithm} | {cell} |")
        failed = [d for d in self.run_dirs(sweep_dir) if "no-such-algorithm" in d]
        self.assertIn(f"- `{failed[0]}`: failed, exit status 2; see its log", md)

    def test_grid_reports_failures_resumes_and_reaggregates(self):
        grid, out_dir = self.path("tiny.grid"), self.path("sweep")
        write(grid, GRID)
        status, out, err = self.sweep("--stability-k=2", "-o", out_dir, grid)
        self.assertEqual(status, 1, out + err)
        lines = out.splitlines()
        self.assertIn("run 3/3: algorithm=no-such-algorithm FAILED (exit status 2); "
                      f"last lines of {out_dir}/runs/", "\n".join(lines))
        # The failing run's own error, from its log, not Open MPI's notices.
        failure = lines.index(next(l for l in lines if " FAILED " in l))
        self.assertIn("unknown algorithm 'no-such-algorithm'", lines[failure + 1])
        self.assertEqual(lines[-2], "sweep: 3 runs: 2 finished now, 0 skipped, 1 failed")
        rows = csv_rows(os.path.join(out_dir, "runs.csv"))
        self.assertEqual(sorted(r["algorithm"] for r in rows), ["dsgd", "qg-dsgdm-n"])
        for row in rows:
            self.check_row(out_dir, row)
        self.check_summary(out_dir, rows)
        for png in ("accuracy-vs-epoch_alpha-1.png", "consensus-vs-epoch_alpha-1.png",
                    "final-accuracy-vs-alpha.png"):
            self.assertEqual(read(os.path.join(out_dir, "plots", png), "rb")[:4], b"\x89PNG")

        # Again: the finished runs are skipped (their metrics untouched),
        # the failed one is retried.
        before = {r["run"]: read(os.path.join(out_dir, "runs", r["run"], "metrics.jsonl"))
                  for r in rows}
        status, out, _ = self.sweep("--stability-k=2", "--no-plots", "-o", out_dir, grid)
        self.assertEqual(status, 1)
        skipped = [l for l in out.splitlines() if l.endswith("skipped (finished earlier)")]
        self.assertEqual([l.split(": ", 1)[0] for l in skipped],
                         ["run 1/3", "run 2/3"])
        for run, text in before.items():
            self.assertEqual(read(os.path.join(out_dir, "runs", run, "metrics.jsonl")), text)

        # A run killed mid-way has metrics but no completion marker: redone.
        dsgd = next(r["run"] for r in rows if r["algorithm"] == "dsgd")
        metrics = os.path.join(out_dir, "runs", dsgd, "metrics.jsonl")
        os.remove(os.path.join(out_dir, "runs", dsgd, "done"))
        write(metrics, "".join(read(metrics).splitlines(True)[:2]))
        status, out, _ = self.sweep("--stability-k=2", "--no-plots", "-o", out_dir, grid)
        self.assertEqual(status, 1)
        self.assertTrue(out.startswith("run 1/3: algorithm=dsgd epoch "), out)
        self.assertIn("\nrun 1/3: algorithm=dsgd done in ", out)
        self.assertIn("\nrun 2/3: algorithm=qg-dsgdm-n skipped (finished earlier)\n", out)
        rows = csv_rows(os.path.join(out_dir, "runs.csv"))
        for row in rows:
            self.check_row(out_dir, row)

        # --report rewrites the same tables from the runs' files alone.
        csv_text = read(os.path.join(out_dir, "runs.csv"))
        summary_text = read(os.path.join(out_dir, "summary.md"))
        os.remove(os.path.join(out_dir, "runs.csv"))
        os.remove(os.path.join(out_dir, "summary.md"))
        status, _, err = self.sweep("--report", out_dir, "--stability-k=2", "--no-plots")
        self.assertEqual(status, 0, err)
        self.assertEqual(read(os.path.join(out_dir, "runs.csv")), csv_text)
        self.assertEqual(read(os.path.join(out_dir, "summary.md")), summary_text)

    def test_async_grid_with_a_conditional_line(self):
        grid, out_dir = self.path("async.grid"), self.path("async")
        write(grid, ASYNC_GRID)
        status, out, err = self.sweep("--stability-k=10", "--no-plots", "-o", out_dir, grid)
        self.assertEqual(status, 0, out + err)
        self.assertIn("\nrun 2/2: algorithm=gsgm lr=0.02 done in ", out)
        rows = csv_rows(os.path.join(out_dir, "runs.csv"))
        self.assertEqual(len(rows), 2)
        for row in rows:
            self.assertEqual(float(row["lr"]), 0.02 if row["algorithm"] == "gsgm" else 0.05)
            summary = [r for r in self.metrics_of(out_dir, row) if r["type"] == "summary"][0]
            # The sweep's K = 10 is the daemon's default: the same figure,
            # up to rounding: both are printed to 6 decimals (5e-7 each), and
            # the sweep computes it from accuracies printed to 6 decimals (a
            # standard deviation moves by at most as much as its inputs).
            self.assertAlmostEqual(float(row["stability"]), summary["stability_std_last_k"],
                                   delta=1.5e-6)
            self.assertAlmostEqual(float(row["staleness_mean"]), summary["staleness_mean"],
                                   delta=1e-9)
            self.assertEqual(int(row["applied_spread"]),
                             summary["applied_max"] - summary["applied_min"])
            self.assertEqual(row["epochs_done"], "1")
        md = read(os.path.join(out_dir, "summary.md")).split("\n")
        # lr goes with the algorithm: one table, the algorithms labelled.
        self.assertEqual([l for l in md if l.startswith("## ")], ["## All runs"])
        labels = [l.split(" | ")[0] for l in md if l.startswith("| asgd") or l.startswith("| gsgm")]
        self.assertEqual(labels[:2], ["| asgd (lr=0.05)", "| gsgm (lr=0.02)"])
        self.assertNotIn("final acc, local mean (%)", "\n".join(md))

    def test_interrupt_stops_the_run_in_progress(self):
        grid, out_dir = self.path("long.grid"), self.path("long")
        # The second run would train for minutes.
        write(grid, "np = 2\ncontrol = none\ntrain-limit = 1000\ntest-limit = 300\n"
                    "epochs = 2 5000\n")
        # SIGINT as a terminal gives it: a make started in the background
        # hands its children SIGINT ignored, and Python then keeps it so.
        sweep = subprocess.Popen([SWEEP, "--no-plots", "-o", out_dir, grid], cwd=ROOT,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        # The progress line comes once the second run's mpirun is started.
        for line in sweep.stdout:
            if line.startswith("run 2/2: "):
                break
        sweep.send_signal(signal.SIGINT)
        _, err = sweep.communicate(timeout=120)
        self.assertEqual(sweep.returncode, 130, err)
        self.assertIn("sweep: interrupted; finished runs are kept in", err)
        first, second = sorted(self.run_dirs(out_dir), key=lambda d: "epochs=5000\n" in read(
            os.path.join(out_dir, "runs", d, "run.conf")))
        self.assertTrue(os.path.isfile(os.path.join(out_dir, "runs", first, "done")))
        stopped = os.path.join(out_dir, "runs", second)
        self.assertFalse(os.path.exists(os.path.join(stopped, "done")))
        # The sweep waited for mpirun to end (it wrote its exit status), and
        # no rank of the run is left.
        self.assertNotEqual(read(os.path.join(stopped, "exit_status")), "0\n")
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmdline = read(f"/proc/{pid}/cmdline", "rb")
            except OSError:
                continue
            self.assertNotIn(stopped.encode(), cmdline, pid)

    def test_launcher_template_starts_the_runs(self):
        grid, out_dir = self.path("t.grid"), self.path("t")
        write(grid, "np = 2\n" + TINY)
        template = ("sh -c 'echo {np} > {dir}/launched-with-np && exec \"$@\"' sh "
                    "mpirun --bind-to none -np {np} {qgmd} {flags}")
        status, out, err = self.sweep("--no-plots", "--launcher", template, "-o", out_dir, grid)
        self.assertEqual(status, 0, out + err)
        (run,) = self.run_dirs(out_dir)
        self.assertEqual(read(os.path.join(out_dir, "runs", run, "launched-with-np")), "2\n")
        self.assertEqual(len(csv_rows(os.path.join(out_dir, "runs.csv"))), 1)

    def test_hostfile_and_mpirun_arguments_reach_mpirun(self):
        grid, out_dir, hosts = self.path("h.grid"), self.path("h"), self.path("hosts")
        write(grid, "np = 2\n" + TINY)
        write(hosts, "localhost slots=2\n")
        status, out, err = self.sweep("--no-plots", "--hostfile", hosts,
                                      "--mpirun-args", "--mca btl self,vader", "-o", out_dir, grid)
        self.assertEqual(status, 0, out + err)
        (run,) = self.run_dirs(out_dir)
        command = shlex.split(read(os.path.join(out_dir, "runs", run, "command")))
        ranks = command.index("-np")
        self.assertEqual(command[ranks - 5:ranks], ["--hostfile", hosts, "--mca", "btl",
                                                    "self,vader"])
        self.assertEqual(len(csv_rows(os.path.join(out_dir, "runs.csv"))), 1)
