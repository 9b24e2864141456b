"""The progress line's pieces: durations, the ETA, the epoch read from a
growing metrics file, and the tail of a failed run's log."""

import unittest

from support import TempDirTest, write
from sweeplib import metrics
from sweeplib.runner import Runner, epochs_of, format_duration, log_tail


class ProgressTest(TempDirTest):
    def test_durations(self):
        for seconds, text in ((0, "0.0s"), (7.04, "7.0s"), (9.96, "10.0s"), (10, "10s"),
                              (59.9, "59s"), (61, "1m01s"), (3599, "59m59s"),
                              (3725, "1h02m")):
            self.assertEqual(format_duration(seconds), text, seconds)

    def test_eta_from_finished_runs_then_from_the_current_pace(self):
        runner = Runner(launcher=None, qgmd="qgmd")
        # Before any run has finished: 4 s for 2 of 10 epochs is 20 s a
        # run; 2 runs left (this one included) minus the 4 s spent.
        self.assertEqual(runner.estimate_left(2, 4.0, 2, 10), 36)
        self.assertIsNone(runner.estimate_left(2, 4.0, 0, 10))
        self.assertIsNone(runner.estimate_left(2, 4.0, 2, 0))
        # Then the mean of the finished runs: (10 + 20) / 2 = 15 s a run.
        runner.finished, runner.finished_wall = 2, 30.0
        self.assertEqual(runner.estimate_left(3, 5.0, 0, 0), 40)
        self.assertEqual(runner.estimate_left(1, 50.0, 0, 0), 0)

    def test_epoch_of_a_growing_metrics_file(self):
        path = self.path("metrics.jsonl")
        write(path, '{"type":"config","flags":{"epochs":4}}\n'
                    '{"type":"eval","epoch":1.9}\n{"type":"eval","epo')
        self.assertEqual(epochs_of(metrics.records(path)), (1, 4))
        self.assertEqual(epochs_of(metrics.records(self.path("none"))), (0, 0))

    def test_numbers_keep_the_daemon_s_text(self):
        path = self.path("m.jsonl")
        write(path, '{"type":"eval","test_acc_avg_model":0.790000,"epoch":3,"x":"0.5"}\n')
        (rec,) = metrics.records(path)
        self.assertEqual(metrics.number_text(rec, "test_acc_avg_model"), "0.790000")
        self.assertEqual(metrics.number_text(rec, "epoch"), "3")
        self.assertEqual(metrics.number_text(rec, "x"), "")
        self.assertEqual(metrics.flag_text(metrics.Number("0.10000000000000001")), "0.1")

    def test_log_tail_leaves_out_boxed_notices(self):
        path = self.path("log")
        write(path, "a\nb\n" + "-" * 20 + "\nnotice\nmore notice\n" + "-" * 20 + "\n"
                    "c\nd\ne\nqgmd[0]: error: the real cause\n")
        self.assertEqual(log_tail(path), ["b", "c", "d", "e", "qgmd[0]: error: the real cause"])
        self.assertEqual(log_tail(self.path("missing")), [])


if __name__ == "__main__":
    unittest.main()
