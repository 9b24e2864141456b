"""tools/sweep --pick KEY DIR: the best value of KEY for each setting of
the other axes, judged by the averaged model's final accuracy, printed as
spec lines that plan the picked runs."""

import json
import os
import unittest

from support import TempDirTest, write
from sweeplib import spec


class PickTest(TempDirTest):
    def run_dir(self, name, flags, accuracy, finished=True):
        """A run of the sweep at self.path("s"): its spec settings, a config
        record with its flags and, if it got that far, one evaluation."""
        d = self.path("s", "runs", name)
        records = [{"type": "config", "flags": flags}]
        if accuracy is not None:
            records.append({"type": "eval", "epoch": 1, "wall_s": 1.0,
                            "test_acc_avg_model": accuracy,
                            "test_acc_local_mean": accuracy, "consensus_dist": 0.1})
        write(os.path.join(d, "metrics.jsonl"), "".join(json.dumps(r) + "\n" for r in records))
        write(os.path.join(d, "run.conf"),
              "np=4\n" + "".join(f"{k}={v}\n" for k, v in flags.items()))
        write(os.path.join(d, "done" if finished else "failed"),
              "wall_s=1\n" if finished else "1\n")

    def pick(self, key):
        status, out, err = self.sweep("--pick", key, self.path("s"))
        self.assertEqual((status, err), (0, ""))
        return out.splitlines()

    def test_the_best_rate_per_algorithm_and_a_rate_that_failed_is_not_picked(self):
        self.run_dir("a1", {"algorithm": "dsgd", "lr": 0.05, "seed": 4}, 0.80)
        self.run_dir("a2", {"algorithm": "dsgd", "lr": 0.1, "seed": 4}, 0.85)
        self.run_dir("b1", {"algorithm": "gut", "lr": 0.05, "seed": 4}, 0.70)
        self.run_dir("b2", {"algorithm": "gut", "lr": 0.1, "seed": 4}, 0.10, finished=False)
        self.assertEqual(self.pick("lr"), [
            f"# lr picked by final_test_acc_avg_model in {self.path('s')} "
            "(3 finished runs, 1 not)",
            "lr = 0.1 if algorithm = dsgd  # 0.05: 0.8000, 0.1: 0.8500",
            "lr = 0.05 if algorithm = gut  # 0.05: 0.7000, 0.1: did not finish"])

    def test_seeds_are_averaged_and_a_value_failing_on_one_seed_is_out(self):
        # lr 0.05: (0.80 + 0.90) / 2 = 0.85 beats 0.1's (0.86 + 0.83) / 2 =
        # 0.845; 0.2 has the best finished run but failed on seed 2.
        for seed, accuracies in ((1, (0.80, 0.86, 0.95)), (2, (0.90, 0.83, None))):
            for lr, a in zip((0.05, 0.1, 0.2), accuracies):
                self.run_dir(f"r{seed}{lr}", {"algorithm": "dsgd", "lr": lr, "seed": seed},
                             a, finished=a is not None)
        self.assertEqual(self.pick("lr")[1:], [
            "lr = 0.05  # 0.05: 0.8500 (mean of 2), 0.1: 0.8450 (mean of 2), "
            "0.2: 0.9500, 1 not finished"])

    def test_other_axes_head_sections_and_equal_results_pick_the_smaller_value(self):
        for alpha, dsgd, gut in ((0.1, (0.5, 0.5), (0.6, 0.7)), (0.01, (0.4, 0.3), (0.6, 0.6))):
            for lr, a, b in zip((0.1, 0.05), dsgd, gut):
                self.run_dir(f"d{alpha}{lr}", {"alpha": alpha, "algorithm": "dsgd", "lr": lr}, a)
                self.run_dir(f"g{alpha}{lr}", {"alpha": alpha, "algorithm": "gut", "lr": lr}, b)
        lines = self.pick("lr")
        self.assertEqual(lines[1:], [
            "# alpha=0.01",
            "lr = 0.1 if algorithm = dsgd  # 0.05: 0.3000, 0.1: 0.4000",
            "lr = 0.05 if algorithm = gut  # 0.05: 0.6000, 0.1: 0.6000",
            "# alpha=0.1",
            "lr = 0.05 if algorithm = dsgd  # 0.05: 0.5000, 0.1: 0.5000",
            "lr = 0.05 if algorithm = gut  # 0.05: 0.7000, 0.1: 0.6000"])
        # A section's lines are spec lines: they give the picked runs.
        section = lines[lines.index("# alpha=0.1") + 1:]
        write(self.path("tuned.grid"), "np = 4\nalgorithm = dsgd gut\nlr = 1\n"
              + "\n".join(section) + "\n")
        runs = spec.plan_spec(self.path("tuned.grid"), [], {"algorithm", "lr"})
        self.assertEqual([(r["algorithm"], r["lr"]) for r in runs],
                         [("dsgd", "0.05"), ("gut", "0.05")])

    def test_no_value_finished(self):
        self.run_dir("a", {"algorithm": "gut", "lr": 0.1}, None, finished=False)
        self.run_dir("b", {"algorithm": "gut", "lr": 0.2}, 0.1, finished=False)
        self.assertEqual(self.pick("lr")[1:], [
            "# lr: no value finished on every run (0.1: did not finish, 0.2: did not finish)"])

    def test_bad_use_is_refused_with_one_line(self):
        self.run_dir("a", {"algorithm": "gut", "lr": 0.1}, 0.5)
        self.run_dir("b", {"algorithm": "dsgd", "lr": 0.1}, 0.5)
        for args, message in (
                (("--pick", "lr", self.path("s")),
                 f"--pick lr: every run in {self.path('s')} has the same lr: nothing to pick from"),
                (("--pick", "momentum", self.path("s")),
                 f"--pick momentum: no run in {self.path('s')} records 'momentum'"),
                (("--pick", "lr", self.path()),
                 f"--pick {self.path()}: not a sweep directory (no runs/)"),
                (("--pick", "lr", self.path("s"), self.path("s")),
                 "--pick KEY takes one sweep directory")):
            status, out, err = self.sweep(*args)
            self.assertEqual((status, out), (2, ""), args)
            self.assertEqual(len(err.splitlines()), 1, err)
            self.assertTrue(err.startswith(f"sweep: {message}"), err)


if __name__ == "__main__":
    unittest.main()
