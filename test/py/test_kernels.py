"""test_kernels.py - --kernels: the config record names the CPU and the
paths the products took (qgm-sim's as qgmd's); giving a record's plan back
reproduces the run bit for bit, another plan changes its rounding only;
plans that are malformed or name a kernel the CPU lacks are refused,
naming the flag. Run from the source tree (make py-check)."""

import json
import os
import subprocess
import tempfile
import unittest

from support import ROOT

# The job's flags, which qgm-sim takes too, then qgmd's own.
JOB = ["--train-limit=1000", "--test-limit=200", "--epochs=1"]
FLAGS = JOB + ["--control=none", "--log-level=error"]


def qgmd(*flags, metrics=None):
    extra = [f"--metrics={metrics}"] if metrics else []
    p = subprocess.run(["mpirun", "--bind-to", "none", "-np", "2", "daemon/qgmd",
                        *FLAGS, *extra, *flags], cwd=ROOT, capture_output=True,
                       text=True, timeout=300, check=False)
    return p.returncode, p.stdout + p.stderr


def results(record):
    """What an evaluation computed, without the clocks."""
    return {k: v for k, v in record.items() if not k.endswith("_s")}


def cpuinfo():
    fields = {}
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    return fields


class Kernels(unittest.TestCase):
    def run_records(self, *flags):
        with tempfile.TemporaryDirectory(prefix="qgm-kernels-test.") as tmp:
            metrics = os.path.join(tmp, "m.jsonl")
            rc, out = qgmd(*flags, metrics=metrics)
            self.assertEqual(rc, 0, out)
            with open(metrics, encoding="utf-8") as f:
                records = [json.loads(line) for line in f]
        (config,) = [r for r in records if r["type"] == "config"]
        evals = [r for r in records if r["type"] == "eval"]
        self.assertTrue(evals)
        return config, evals

    def test_the_record_names_the_cpu_and_replays_its_plan(self):
        config, evals = self.run_records()
        info = cpuinfo()
        if "vendor_id" in info:
            self.assertEqual(config["cpu"], f"{info['vendor_id']} family "
                             f"{info['cpu family']} model {info['model']}")
        plan = dict(item.split("=") for item in config["kernels"].split(","))
        self.assertEqual(sorted(plan), ["conv", "conv3x3", "dense"])
        self.assertRegex(plan["conv3x3"], r"^(winograd|direct)-(avx512|avx2|blis)$")
        again, replayed = self.run_records(f"--kernels={config['kernels']}")
        self.assertEqual(again["kernels"], config["kernels"])
        self.assertEqual([results(e) for e in replayed], [results(e) for e in evals])
        if plan["dense"] == "blis":
            return
        # The MLP's products on BLIS: the same model to rounding.
        other, changed = self.run_records("--kernels=dense=blis")
        self.assertEqual(other["kernels"].split(",")[0], "dense=blis")
        self.assertNotEqual([results(e) for e in evals], [results(e) for e in changed])
        for e, c in zip(evals, changed):
            self.assertAlmostEqual(e["train_loss"], c["train_loss"], delta=1e-3)
            self.assertAlmostEqual(e["test_acc_avg_model"],
                                   c["test_acc_avg_model"], delta=0.02)

    def test_the_simulator_records_the_plan_it_took(self):
        """qgm-sim's config record names the CPU and the plan as qgmd's
        does (sweeps of simulated runs put them in runs.csv), and follows
        --kernels as the daemon does."""
        daemon, _ = self.run_records()
        forced = "dense=blis,conv=blis,conv3x3=direct-blis"
        with tempfile.TemporaryDirectory(prefix="qgm-kernels-test.") as tmp:
            configs = []
            for flags in ([], [f"--kernels={forced}"]):
                metrics = os.path.join(tmp, "sim.jsonl")
                p = subprocess.run(["tools/qgm-sim", "--problem=dataset", "--nodes=2",
                                    *JOB, *flags, f"--metrics={metrics}"],
                                   cwd=ROOT, capture_output=True, text=True,
                                   timeout=300, check=False)
                self.assertEqual(p.returncode, 0, p.stderr)
                with open(metrics, encoding="utf-8") as f:
                    configs.append(json.loads(f.readline()))
        self.assertEqual([configs[0]["type"], configs[0]["simulated"]], ["config", True])
        self.assertEqual([configs[0]["cpu"], configs[0]["kernels"]],
                         [daemon["cpu"], daemon["kernels"]])
        self.assertEqual(configs[1]["kernels"], forced)

    def test_bad_plans_are_refused_naming_the_flag(self):
        for plan in ["conv=avx9", "conv3x3=winograd-blis", "dense=blis,dense=avx2",
                     "conv3x3=avx2", "speed=fast", ""]:
            rc, out = qgmd(f"--kernels={plan}")
            self.assertEqual(rc, 2, out)
            lines = [l for l in out.splitlines() if "--kernels" in l]
            self.assertEqual(len(lines), 1, out)
            self.assertIn(f"'{plan}' is not a plan this CPU runs", lines[0])


if __name__ == "__main__":
    unittest.main()
