"""test_gossip_async.py - asynchronous gossip (--sync=async,
--max-staleness=T, daemon/train_async.c):

- T = 0 is the synchronous exchange: the same records as --sync=sync, all
  but the times, and byte-identical checkpoints;
- push-sum sends no weight to a neighbour that has finished its steps:
  a straggler left alone keeps its weight;
- with T > 0 and one rank 4 times slower, every rank runs its steps, no
  message mixed is more than T of the mixing rank's rounds behind (the
  staleness histogram is empty past T), the histogram counts every
  message mixed, the slow rank is the one that never waits, the samples'
  shares are the steps' shares, push-sum's weights sum to the number
  of nodes at the end (nothing is in flight then) to float rounding, and
  each epoch is evaluated once (the last at the run's end);
- model gossip on one host goes through the newest-message slots (every
  round's message published once) and, with --shared-memory=off,
  through MPI messages, both under the same staleness bound;
- with 30% of the messages lost (--drop-rate), push-sum's weights still
  sum to the number of nodes, model gossip still trains, and the losses
  counted are between 1 and the messages sent;
- both algorithm families train: the averaged model's accuracy ends
  within 5 points of the synchronous run's on the same job;
- --target-accuracy halts every rank, and a SIGTERM to one rank stops
  the run, which ends with its summary (stopped_early) and status 0.

Every record is read with a JSON parser. Run from the source tree under
the Makefile's Open MPI settings (make py-check)."""

import json
import os
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MPIRUN = ["mpirun", "--bind-to", "none"]
NP = 4
SMALL = ["--train-limit=2000", "--test-limit=500", "--epochs=2",
         "--batch-size=16", "--lr=0.05", "--hidden=32", "--seed=5",
         "--control=none", "--log-level=warning"]
# 2000 samples / 4 nodes / batch 16 = 31 steps per epoch.
STEPS = 62
SLOW = ["--device-time=2", "--straggle=3:4"]


def run(metrics, *flags):
    args = MPIRUN + ["-np", str(NP), "daemon/qgmd", *SMALL, *flags,
                     f"--metrics={metrics}"]
    out = subprocess.run(args, capture_output=True, text=True, cwd=ROOT,
                         check=False, timeout=300)
    if out.returncode != 0:
        raise AssertionError(f"{args} exited {out.returncode}:\n"
                             f"{out.stdout}{out.stderr}")
    with open(metrics, encoding="utf-8") as f:
        return [r for r in map(json.loads, f) if r["type"] != "config"]


def without_times(records):
    return [{k: v for k, v in r.items() if not k.endswith("_s")}
            for r in records]


class GossipAsync(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def test_zero_staleness_is_the_synchronous_exchange(self):
        for alg in ("qg-dsgdm-n", "sgp"):
            sync = run(self.path(alg + ".sync.jsonl"), f"--algorithm={alg}",
                       f"--checkpoint-dir={self.path(alg + '.sync')}")
            zero = run(self.path(alg + ".zero.jsonl"), f"--algorithm={alg}",
                       "--sync=async", "--max-staleness=0",
                       f"--checkpoint-dir={self.path(alg + '.zero')}")
            self.assertEqual([r["type"] for r in sync].count("eval"), 2)
            self.assertEqual(without_times(sync), without_times(zero), alg)
            for r in range(NP):
                name = os.path.join(f"step-{STEPS:012d}", f"rank-{r:05d}.qgmc")
                with open(os.path.join(self.path(alg + ".sync"), name), "rb") as a, \
                        open(os.path.join(self.path(alg + ".zero"), name), "rb") as b:
                    self.assertEqual(a.read(), b.read(), f"{alg} rank {r}")

    def straggled(self, alg, staleness, *flags):
        recs = run(self.path(f"{alg}.async{staleness}{''.join(flags)}.jsonl"),
                   f"--algorithm={alg}", "--sync=async",
                   f"--max-staleness={staleness}", *SLOW, *flags)
        summary = recs[-1]
        self.assertEqual(summary["type"], "summary")
        self.assertEqual(summary["sync"], "async")
        self.assertEqual(summary["max_staleness"], staleness)
        self.assertEqual(summary["node_steps"], [STEPS] * NP)
        self.assertEqual(summary["node_sample_share"], [0.25] * NP)
        hist = summary["staleness_histogram"]
        self.assertTrue(all(h == 0 for h in hist[staleness + 1:]), hist)
        self.assertLessEqual(summary["staleness_max"], staleness)
        # Every rank mixes its two ring neighbours once per step, but for
        # the first steps, before any of their messages arrived.
        self.assertLessEqual(sum(hist), 2 * NP * STEPS)
        self.assertGreaterEqual(sum(hist), 2 * NP * (STEPS - staleness - 1))
        mean = sum(b * h for b, h in enumerate(hist)) / sum(hist)
        self.assertAlmostEqual(summary["staleness_mean"], mean, places=3)
        # The slow rank never waits for the fast ones; they wait for it.
        blocked = summary["node_blocked_s"]
        self.assertEqual(blocked[3], min(blocked))
        self.assertGreater(min(blocked[:3]), blocked[3])
        # One evaluation an epoch, the last one of every rank's last
        # model at the run's end: no step recorded twice.
        steps = [r["step"] for r in recs if r["type"] == "eval"]
        self.assertEqual(steps, [STEPS // 2, STEPS])
        return recs

    def test_straggler_push_sum_keeps_its_weights(self):
        recs = self.straggled("sgp", 3)
        weights = recs[-1]["push_sum_weights"]
        self.assertAlmostEqual(sum(weights), NP, delta=1e-4)
        self.assertTrue(all(w > 0 for w in weights), weights)
        last = [r for r in recs if r["type"] == "eval"][-1]
        self.assertAlmostEqual(last["push_sum_weight_sum"], NP, delta=1e-4)

    def test_push_sum_sends_no_weight_to_a_finished_neighbour(self):
        # With no staleness bound the fast ranks finish long before rank
        # 3, which then takes most of its steps alone. Sending its
        # neighbours its shares all the while, it kept a third of its
        # weight a round, toward 0 (a longer run ended on a NaN loss). It
        # keeps them once they are finished.
        recs = run(self.path("sgp.unbounded.jsonl"), "--algorithm=sgp",
                   "--sync=async", "--max-staleness=100000", *SLOW)
        summary = recs[-1]
        self.assertEqual(summary["node_steps"], [STEPS] * NP)
        weights = summary["push_sum_weights"]
        self.assertAlmostEqual(sum(weights), NP, delta=1e-4)
        self.assertGreater(min(weights), 0.05, weights)

    def test_model_gossip_by_slot_and_by_message(self):
        # On one host model gossip publishes each round once into the
        # node's slot, which both ring neighbours read: rank 0's bytes are
        # two messages of dim + 1 floats (the model, its round) a step.
        # Through MPI (--shared-memory=off) a round is skipped for a
        # neighbour that has not taken the last one, so never more.
        dim = 784 * 32 + 32 + 32 * 10 + 10
        per_step = 2 * (dim + 1) * 4
        slots = self.straggled("qg-dsgdm-n", 2)[-1]
        self.assertEqual(slots["bytes_sent"], STEPS * per_step)
        messages = self.straggled("qg-dsgdm-n", 2, "--shared-memory=off")[-1]
        self.assertLessEqual(messages["bytes_sent"], STEPS * per_step)
        self.assertGreater(messages["bytes_sent"], 0)

    def test_lost_messages(self):
        # 30% lost: push-sum's sender keeps each lost share, so the
        # weights still sum to the number of nodes at the end; model
        # gossip keeps the older message and still trains. Every loss is
        # counted once: at least one, at most every message of every step.
        sgp = self.straggled("sgp", 3, "--drop-rate=0.3")
        self.assertAlmostEqual(sum(sgp[-1]["push_sum_weights"]), NP, delta=1e-4)
        for recs in (sgp, self.straggled("qg-dsgdm-n", 2, "--drop-rate=0.3")):
            lost = [r for r in recs if r["type"] == "eval"][-1]["messages_lost"]
            self.assertGreater(lost, 0)
            self.assertLessEqual(lost, 2 * NP * STEPS)
        sync = run(self.path("lossless.jsonl"), "--algorithm=qg-dsgdm-n")
        self.assertAlmostEqual(recs[-1]["final_test_acc_avg_model"],
                               sync[-1]["final_test_acc_avg_model"], delta=0.05)

    def test_both_families_train_as_the_synchronous_run(self):
        for alg in ("qg-dsgdm-n", "sgp"):
            sync = run(self.path(alg + ".ref.jsonl"), f"--algorithm={alg}")
            asynchronous = self.straggled(alg, 2)
            self.assertAlmostEqual(
                asynchronous[-1]["final_test_acc_avg_model"],
                sync[-1]["final_test_acc_avg_model"], delta=0.05, msg=alg)

    def test_target_accuracy_halts_every_rank(self):
        recs = run(self.path("target.jsonl"), "--algorithm=qg-dsgdm-n",
                   "--sync=async", "--max-staleness=3", "--epochs=20",
                   "--target-accuracy=0.6")
        summary = recs[-1]
        self.assertTrue(summary["stopped_early"])
        self.assertGreaterEqual(summary["final_test_acc_avg_model"], 0.6)
        # Halted together, far short of 20 epochs: a neighbour is never
        # more than T rounds behind, so on the 4-ring no two ranks are
        # more than 2 (T + 1) steps apart; allowed 4 (T + 1).
        steps = summary["node_steps"]
        self.assertLess(max(steps), 20 * 31)
        self.assertLessEqual(max(steps) - min(steps), 4 * (3 + 1))

    def test_sigterm_on_one_rank_stops_the_run(self):
        metrics = self.path("stop.jsonl")
        args = MPIRUN + ["-np", str(NP), "daemon/qgmd", *SMALL,
                         "--algorithm=qg-dsgdm-n", "--sync=async",
                         "--max-staleness=3", "--epochs=50",
                         "--device-time=10", f"--metrics={metrics}"]
        job = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        self.addCleanup(lambda: job.poll() is None and job.kill())
        # Waits (polling the file) until the first evaluation is written:
        # then every rank is training.
        for _ in range(1200):
            if job.poll() is not None:
                break
            if os.path.exists(metrics):
                with open(metrics, encoding="utf-8") as f:
                    if any(json.loads(l)["type"] == "eval" for l in f):
                        break
            subprocess.run(["sleep", "0.05"], check=True)
        self.assertIsNone(job.poll(), "the run ended before its first evaluation")
        found = subprocess.run(["pgrep", "-f", f"daemon/qgmd.*--metrics={metrics}"],
                               capture_output=True, text=True).stdout.split()
        ranks = [int(p) for p in found if int(p) != job.pid]
        self.assertEqual(len(ranks), NP, found)
        os.kill(max(ranks), 15)  # SIGTERM to one rank only
        out, _ = job.communicate(timeout=300)
        self.assertEqual(job.returncode, 0, out)
        with open(metrics, encoding="utf-8") as f:
            summary = [json.loads(line) for line in f][-1]
        self.assertEqual(summary["type"], "summary")
        self.assertTrue(summary["stopped_early"])
        self.assertLess(max(summary["node_steps"]), 50 * 31)

if __name__ == "__main__":
    unittest.main()
