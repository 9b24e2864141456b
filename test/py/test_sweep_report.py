"""The reports come out byte for byte as the shell version of tools/sweep
wrote them (test/py/sweep-fixtures/README.md): runs.csv, summary.md, the
plot data and the gnuplot scripts from the same runs, and summary.md from
the runs tables in docs/results/."""

import csv
import json
import glob
import os
import shutil
import unittest

from support import FIXTURES, ROOT, TempDirTest, read
from sweeplib import groups, summary, table


class ReportFixturesTest(TempDirTest):
    def check_sweep(self, name, k):
        sweep_dir = self.path(name)
        shutil.copytree(os.path.join(FIXTURES, name, "runs"), os.path.join(sweep_dir, "runs"))
        env = self.capturing_gnuplot()
        status, out, err = self.sweep("--report", sweep_dir, f"--stability-k={k}", env=env)
        self.assertEqual(status, 0, err)
        expected = os.path.join(FIXTURES, name, "expected")
        data = os.path.join(sweep_dir, "plots", "data")
        data_files = ["runs.tsv"] + [os.path.basename(p)
                                     for p in glob.glob(os.path.join(expected, "*.dat"))]
        self.assertEqual(sorted(os.listdir(data)),
                         sorted(data_files + ["gnuplot.log", "manifest"]))
        compared = {"runs.csv": os.path.join(sweep_dir, "runs.csv"),
                    "summary.md": os.path.join(sweep_dir, "summary.md"),
                    **{name: os.path.join(data, name) for name in data_files}}
        for fixture, produced in compared.items():
            self.assertEqual(read(produced), read(os.path.join(expected, fixture)), fixture)
        # Paths in the manifest and the scripts are the sweep directory's.
        unplace = lambda text: text.replace(sweep_dir, "@SWEEP@")
        self.assertEqual(unplace(read(os.path.join(data, "manifest"))),
                         read(os.path.join(expected, "manifest")))
        scripts = sorted(os.listdir(env["GP_CAPTURE"]))
        self.assertEqual(scripts, sorted(os.listdir(os.path.join(expected, "gnuplot"))))
        for script in scripts:
            self.assertEqual(unplace(read(os.path.join(env["GP_CAPTURE"], script))),
                             read(os.path.join(expected, "gnuplot", script)), script)

    def test_synchronous_sweep_with_two_tables_and_a_failed_run(self):
        self.check_sweep("sync", 2)

    def test_asynchronous_sweep_with_a_conditional_line(self):
        self.check_sweep("async", 10)

    def test_summaries_of_the_published_runs_tables(self):
        for name, k in (("fmnist-heterogeneity", 5), ("async-gsgm", 10), ("async-gsgm-lr", 10)):
            with open(os.path.join(ROOT, "docs", "results", f"{name}-runs.csv"), newline="") as f:
                rows = list(csv.reader(f))
            text = summary.summary(groups.Groups(rows[0], rows[1:]), k)
            self.assertEqual(text, read(os.path.join(FIXTURES, "results", f"{name}-summary.md")),
                             name)

    def test_no_finished_runs_is_no_report(self):
        os.makedirs(self.path("empty", "runs", "interrupted_0000"))
        status, out, err = self.sweep("--report", self.path("empty"))
        self.assertEqual(status, 0, err)
        self.assertEqual(out, f"sweep: no finished runs in {self.path('empty')} yet: "
                              "nothing to report\n")
        self.assertFalse(os.path.exists(self.path("empty", "summary.md")))


class TimeToTargetTest(TempDirTest):
    def run_dir(self, name, seed, accuracies, target=0.8, machine=None):
        """A finished run whose evaluations, 10 s apart, reach accuracies;
        machine: the config record's cpu and kernels."""
        d = self.path("runs", name)
        os.makedirs(d)
        records = [{"type": "config", **(machine or {}),
                    "flags": {"algorithm": "dsgd", "alpha": 1, "seed": seed,
                              "target-accuracy": target, "kernels": "auto"}}]
        records += [{"type": "eval", "epoch": i + 1, "wall_s": 10.0 * (i + 1),
                     "test_acc_avg_model": a, "test_acc_local_mean": a, "consensus_dist": 0.1}
                    for i, a in enumerate(accuracies)]
        with open(os.path.join(d, "metrics.jsonl"), "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(r) + "\n" for r in records))
        with open(os.path.join(d, "run.conf"), "w", encoding="utf-8") as f:
            f.write("np=2\n")
        return d

    def test_time_to_target_is_the_first_evaluation_at_the_target(self):
        dirs = [self.run_dir("a", 1, [0.5, 0.81, 0.79, 0.9]),
                self.run_dir("b", 2, [0.8, 0.9]),
                self.run_dir("c", 3, [0.5, 0.6])]
        header, rows = table.build(dirs, 2)
        at = header.index("time_to_target_s")
        self.assertEqual([r[at] for r in rows], ["20.0", "10.0", ""])
        text = summary.summary(groups.Groups(header, rows), 2)
        # The mean over the two seeds that reached it, and how many did.
        self.assertIn("| **15.0 ± 7.1** (2 of 3 seeds) |", text)
        self.assertIn("time to target accuracy (s)", text)
        header, rows = table.build(dirs[2:], 2)
        self.assertIn("| not reached |", summary.summary(groups.Groups(header, rows), 2))

    def test_the_table_names_the_cpu_and_the_plan_each_run_took(self):
        zen = {"cpu": "AuthenticAMD family 25 model 1",
               "kernels": "dense=avx2,conv=avx2,conv3x3=winograd-avx2"}
        xeon = {"cpu": "GenuineIntel family 6 model 167",
                "kernels": "dense=avx512,conv=avx512,conv3x3=direct-avx512"}
        dirs = [self.run_dir("a", 1, [0.5], machine=zen),
                self.run_dir("b", 2, [0.6], machine=xeon)]
        header, rows = table.build(dirs, 2)
        cell = lambda row, column: rows[row][header.index(column)]
        self.assertEqual([cell(0, "kernels"), cell(0, "cpu"), cell(0, "kernel_plan")],
                         ["auto", zen["cpu"], zen["kernels"]])
        self.assertEqual([cell(1, "cpu"), cell(1, "kernel_plan")], [xeon["cpu"], xeon["kernels"]])
        # Settings, before the results; the plan's commas quoted in the CSV.
        self.assertLess(header.index("kernel_plan"), header.index("final_test_acc_avg_model"))
        parsed = list(csv.reader(table.csv(header, rows).splitlines()))
        self.assertEqual(parsed[1][header.index("kernel_plan")], zen["kernels"])
        # A record without them (runs from before) leaves no such columns.
        header, rows = table.build([self.run_dir("c", 3, [0.5])], 2)
        self.assertNotIn("kernel_plan", header)


if __name__ == "__main__":
    unittest.main()
