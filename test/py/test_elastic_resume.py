"""test_elastic_resume.py - a checkpoint of 4 ranks resumed on 3 with
--resume-ranks (docs/RELIABILITY.md, "Resuming on fewer ranks"): the
survivors' step counter and schedule go on, the graph has 3 nodes, the
lost rank's shard is dropped and the resume record says so; the lost
record a supervisor relaunched after is accounted for; without the flag
a rank-count mismatch is refused with one line and exit status 2. Every
record is read with a JSON parser. Run from the source tree under the
Makefile's Open MPI settings (make py-check)."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MPIRUN = ["mpirun", "--bind-to", "none"]
# 2000 samples in 4 shards of 500; batch 16: 31 steps an epoch, 93 in all.
FLAGS = ["--train-limit=2000", "--test-limit=200", "--batch-size=16",
         "--epochs=3", "--seed=7", "--hidden=32", "--control=none",
         "--checkpoint-every=20", "--checkpoint-keep=10",
         "--log-level=warning"]
STEPS_PER_EPOCH = 31
TOTAL_STEPS = 93
RESUMED_AT = 40  # the newest step left after the later ones are removed


def records(path, kind):
    with open(path, encoding="utf-8") as f:
        return [r for r in map(json.loads, f) if r["type"] == kind]


def qgmd(np, *flags):
    out = subprocess.run(MPIRUN + ["-np", str(np), "daemon/qgmd", *FLAGS, *flags],
                         capture_output=True, text=True, cwd=ROOT, check=False)
    return out.returncode, out.stdout + out.stderr


def errors(text):
    return [line for line in text.splitlines() if ": error: " in line]


def manifest(ck, step):
    with open(os.path.join(ck, f"step-{step:012d}", "MANIFEST"), encoding="utf-8") as f:
        return dict(line.split(" ", 1) for line in f.read().splitlines()[1:])


def sections(path):
    """qgm-inspect's section list of a checkpoint file: {name: count}."""
    out = subprocess.run(["tools/qgm-inspect", "checkpoint", path], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines()[3:]:
        parts = line.split()
        if len(parts) == 3 and parts[2].isdigit():
            found[parts[0]] = int(parts[2])
    return found


class ResumeOnFewerRanks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="qgm-elastic.")
        cls.whole = os.path.join(cls.tmp, "whole")
        rc, text = qgmd(4, f"--checkpoint-dir={cls.whole}",
                        f"--metrics={cls.whole}.jsonl")
        if rc != 0:
            raise AssertionError(f"the 4-rank run exited {rc}:\n{text}")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def interrupted(self, name):
        """A copy of the 4-rank run as if it had stopped after step 40:
        its checkpoints and records up to there."""
        ck = os.path.join(self.tmp, name)
        shutil.copytree(self.whole, ck)
        for entry in os.listdir(ck):
            if int(entry.split("-")[1]) > RESUMED_AT:
                shutil.rmtree(os.path.join(ck, entry))
        with open(self.whole + ".jsonl", encoding="utf-8") as f:
            kept = [line for line in f
                    if json.loads(line)["type"] == "config" or
                    (json.loads(line)["type"] == "eval" and
                     json.loads(line)["step"] <= RESUMED_AT)]
        with open(ck + ".jsonl", "w", encoding="utf-8") as f:
            f.writelines(kept)
        return ck

    def test_three_survivors_go_on(self):
        ck = self.interrupted("three")
        # What the job that ended left (lost.c writes it, compact), which
        # qgm-run relaunches after: it lost rank 2 at its step 47, 7 steps
        # after the checkpoint.
        lost = {"type": "lost", "step": 47, "nodes": 4, "lost_ranks": [2],
                "lost_hosts": ["h3"], "silent_since": 1000.5, "noticed": 1003.5,
                "deadline_s": 3.0, "median_step_s": 0.01}
        with open(os.path.join(ck, "lost.json"), "w", encoding="utf-8") as f:
            f.write(json.dumps(lost, separators=(",", ":")) + "\n")
        rc, text = qgmd(3, f"--checkpoint-dir={ck}", f"--metrics={ck}.jsonl",
                        "--resume", "--resume-ranks=0,1,3")
        self.assertEqual(rc, 0, text)
        metrics = ck + ".jsonl"

        (resume,) = records(metrics, "resume")
        self.assertEqual(resume["step"], RESUMED_AT)
        self.assertEqual((resume["from_nodes"], resume["nodes"]), (4, 3))
        self.assertEqual(resume["ranks"], [0, 1, 3])
        self.assertEqual(resume["parts"], 4)
        self.assertEqual(resume["shards"], [0, 1, 3])
        self.assertEqual(resume["shards_dropped"], [2])
        self.assertTrue(resume["exchange_reset"])
        self.assertEqual(resume["lost_ranks"], [2])
        self.assertEqual(resume["lost_hosts"], ["h3"])
        self.assertEqual(resume["failed_at_step"], 47)
        self.assertEqual(resume["steps_lost"], 47 - RESUMED_AT)
        self.assertAlmostEqual(resume["recovery_s"],
                               resume["first_step_done"] - 1000.5, delta=0.002)
        # The record is kept under its step, so that the next loss writes
        # a fresh one.
        self.assertFalse(os.path.exists(os.path.join(ck, "lost.json")))
        self.assertTrue(os.path.exists(os.path.join(ck, "lost-step-47.json")))

        # The graph has 3 nodes: the new config record, and the resumed
        # run's checkpoints, of 3 files each.
        configs = records(metrics, "config")
        self.assertEqual([c["nodes"] for c in configs], [4, 3])
        self.assertEqual(manifest(ck, 60)["nodes"], "3")
        self.assertEqual(sorted(os.listdir(os.path.join(ck, "step-000000000060"))),
                         ["MANIFEST", "rank-00000.qgmc", "rank-00001.qgmc",
                          "rank-00002.qgmc"])
        # The shard section names the part each file's rank trains on:
        # rank 2 of the 3 has old rank 3's (shard of 500 samples).
        last = sections(os.path.join(ck, "step-000000000060", "rank-00002.qgmc"))
        self.assertEqual(last["shard"], 2)
        self.assertEqual(last["order"], 500)

        # The step counter goes on from 40 on the old schedule: the epochs
        # end at 62 and 93, and the run ends at the 4-rank run's last step.
        evals = records(metrics, "eval")
        steps = [e["step"] for e in evals]
        self.assertEqual(steps, [STEPS_PER_EPOCH, 2 * STEPS_PER_EPOCH, TOTAL_STEPS])
        self.assertEqual([e["epoch"] for e in evals], [1, 2, 3])
        whole_evals = records(self.whole + ".jsonl", "eval")
        self.assertEqual([e["lr"] for e in evals], [e["lr"] for e in whole_evals])
        (summary,) = records(metrics, "summary")
        self.assertEqual(summary["steps"], TOTAL_STEPS)
        self.assertGreater(summary["final_test_acc_avg_model"], 0.5)

        # Resumed again without the flag, the 3-rank run's own checkpoint
        # continues on 3 ranks: each keeps its shard.
        shutil.rmtree(os.path.join(ck, f"step-{TOTAL_STEPS:012d}"))
        shutil.rmtree(os.path.join(ck, "step-000000000080"))
        rc, text = qgmd(3, f"--checkpoint-dir={ck}", "--resume")
        self.assertEqual(rc, 0, text)

    def test_same_ranks_is_an_ordinary_resume(self):
        """--resume-ranks=0,1,2,3 on 4 ranks keeps every model, optimizer
        state and shard: with plain gossip (no exchange state to reset)
        the run ends where the uninterrupted one ends, record for record."""
        ck = self.interrupted("same")
        rc, text = qgmd(4, f"--checkpoint-dir={ck}", f"--metrics={ck}.jsonl",
                        "--resume", "--resume-ranks=0,1,2,3")
        self.assertEqual(rc, 0, text)
        (resume,) = records(ck + ".jsonl", "resume")
        self.assertEqual(resume["shards_dropped"], [])
        self.assertNotIn("lost_ranks", resume)

        def trained(path):
            # Times, and the bytes counted since this process started.
            drop = ("wall_s", "compute_s", "comm_s", "bytes_sent")
            return [{k: v for k, v in e.items() if k not in drop}
                    for e in records(path, "eval")]
        self.assertEqual(trained(ck + ".jsonl"), trained(self.whole + ".jsonl"))

    def test_refusals(self):
        ck = self.interrupted("refused")
        cases = [
            ([], "written by a 4-node run; this run has 3 nodes (resume with "
                 "mpirun -np 4, or on fewer ranks with --resume-ranks)"),
            (["--resume-ranks=0,1,1"], "--resume-ranks=0,1,1: not a list of "
                                       "distinct ranks"),
            (["--resume-ranks=0,1,7"], "--resume-ranks=0,1,7: rank 7 is not in "
                                       "the checkpoint of step 40, which is of 4 ranks"),
            (["--resume-ranks=0,1"], "--resume-ranks=0,1: names 2 ranks; this "
                                     "run has 3 (mpirun -np 2)"),
        ]
        for extra, line in cases:
            with self.subTest(extra=extra):
                rc, text = qgmd(3, f"--checkpoint-dir={ck}", "--resume", *extra)
                self.assertEqual(rc, 2, text)
                found = errors(text)
                self.assertEqual(len(found), 1, text)
                self.assertIn(line, found[0])
        rc, text = qgmd(3, f"--checkpoint-dir={ck}x", "--resume-ranks=0,1,2")
        self.assertEqual(rc, 2, text)
        self.assertIn("--resume-ranks needs --resume", errors(text)[0])
        rc, text = qgmd(3, f"--checkpoint-dir={ck}", "--resume",
                        "--resume-ranks=0,1,2", "--algorithm=gt")
        self.assertEqual(rc, 2, text)
        self.assertIn("--resume-ranks: --algorithm=gt cannot go on", errors(text)[0])


if __name__ == "__main__":
    unittest.main()
