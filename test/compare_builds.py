#!/usr/bin/python3
"""compare_builds.py - runs the same small jobs with two builds of qgmd and
says whether they wrote the same records and the same checkpoints.

    test/compare_builds.py OLD_TREE NEW_TREE [--only NAME...] [--np N]

Each TREE is a built checkout (daemon/qgmd, tools/qgm-sim). For every
configuration of the matrix below, both builds run the same flags, each in
its own temporary directory; the tool reads both metrics files with a JSON
parser, drops the fields that measure time or name the build (DROPPED,
below), and requires everything else to be equal: the same records in the
same order, the same fields in the same order, the same values and types.
Synchronous qgmd runs also write a final checkpoint (resume configurations
one every few steps, then resume from one of them), and every checkpoint
file and manifest must be byte-identical. Configurations that qgmd refuses
must be refused with the same exit status and the same error line.

One line per configuration: "same", or the first difference. Exit status 0
when every configuration is the same, 1 otherwise, 2 on bad usage.
Run it on two copies of one build (OLD_TREE = NEW_TREE) to see that every
configuration repeats run to run; --new-flags adds flags to NEW_TREE's runs
only (--new-flags=--seed=2), to see a difference caught.

Standard library only; Open MPI's settings come from tools/mpi.env, as
for the tests (a variable already set in the environment is kept)."""

import argparse
import fnmatch
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The fields left out of the comparison, from the records as written
# (daemon/main.c and daemon/provenance.c: config; daemon/report.c: eval
# and summary; daemon/async_report.c: the server's; tools/sim/main.c):
# - every field whose name ends in "_s" is a time in seconds: wall_s,
#   compute_s, comm_s, and the summary's wait_s, steps_s, wait_cpu_s;
# - the config record's version and revision (`git describe` of the
#   build, "-dirty" for a changed tree) name the build, and start_time is
#   the clock at start-up.
# Nothing else in a record depends on the clock or the build: byte counts,
# losses, accuracies, consensus distances, momentum norms, learning rates
# and steps are functions of the flags alone in a synchronous run. (The
# progress lines' steps/s, elapsed and ETA are on stdout, not in the
# records; control.c's status goes to the socket, not to the file.)
DROPPED_CONFIG = ("version", "revision", "start_time")


def timed(key):
    return key.endswith("_s")


def strip(record):
    """A record without the fields that measure time or name the build."""
    out = {k: v for k, v in record.items() if not timed(k)}
    if record.get("type") == "config":
        for k in DROPPED_CONFIG:
            out.pop(k, None)
    return out


# ----------------------------------------------------------- the matrix

class Config:
    """One job: the program (qgmd under mpirun, or qgm-sim), its ranks
    (None: --np), its flags, and how it is compared.

    resume=(EVERY, FROM): write a checkpoint every EVERY steps, then run
    again from the one of step FROM (the later ones removed) and compare
    that run's records and checkpoints too.
    stable={type: fields}: a run that does not repeat run to run by design;
    only these fields of each record type are compared (None: all).
    refused=True: qgmd must refuse the flags (exit status 2)."""

    def __init__(self, name, flags, program="qgmd", np=None, resume=None,
                 stable=None, refused=False, checkpoint=True, note=""):
        self.name, self.flags, self.program = name, flags, program
        self.np, self.resume, self.stable = np, resume, stable
        self.refused, self.note = refused, note
        self.checkpoint = checkpoint and program == "qgmd" and not refused


# 4 ranks x 500 samples, batch 32: 15 steps; an evaluation every 5 steps.
JOB = ["--epochs=1", "--train-limit=2000", "--test-limit=500",
       "--eval-every=5", "--control=none", "--comm-timeout=120"]
SIM_JOB = ["--problem=dataset", "--epochs=1", "--train-limit=2000",
           "--test-limit=500", "--eval-every=5"]
TWO_EPOCHS = ["--epochs=2"]  # after JOB's --epochs=1: 30 steps

# An asynchronous run with several workers applies the gradients in the
# order they arrive, which the scheduler decides (docs/ALGORITHMS-ASYNC.md,
# "What is deterministic"): only the counts that the flags fix repeat.
# With one worker (2 ranks) the order is fixed and the whole record is
# compared.
ASYNC_STABLE = {
    "config": None,
    "eval": ("type", "epoch", "step", "lr", "consensus_dist"),
    "summary": ("type", "mode", "algorithm", "workers", "epochs", "steps",
                "stopped_early", "final_consensus_dist", "stability_k",
                "evaluations", "gsgm_rule", "staleness_hist_last"),
}


def matrix():
    c = []
    q = c.append
    # Flat neighbour gossip, the default algorithm (qg-dsgdm-n) on a ring.
    q(Config("ring", JOB))
    q(Config("ring-overlap", JOB + ["--overlap=on"]))
    q(Config("ring-local3", JOB + ["--local-steps=3"]))
    q(Config("ring-overlap-local3", JOB + ["--overlap=on", "--local-steps=3"]))
    q(Config("ring-no-shm", JOB + ["--shared-memory=off"]))
    q(Config("ring-overlap-no-shm", JOB + ["--shared-memory=off", "--overlap=on"]))
    # The other synchronous update rules.
    for algo in ("dsgd", "dsgdm-n", "dsgdm", "qg-dsgdm", "dadam", "qg-dadam"):
        q(Config("ring-" + algo, JOB + ["--algorithm=" + algo]))
    q(Config("torus-dsgd", JOB + ["--algorithm=dsgd", "--topology=torus"], np=9))
    q(Config("torus-dsgd-overlap", JOB + ["--algorithm=dsgd", "--topology=torus",
                                          "--overlap=on", "--local-steps=2"], np=9))
    q(Config("ring-d2", JOB + ["--algorithm=d2", "--mixing=lazy"]))
    q(Config("ring-gt", JOB + ["--algorithm=gt"]))
    q(Config("ring-gt-no-shm", JOB + ["--algorithm=gt", "--shared-memory=off"]))
    q(Config("star-metropolis", JOB + ["--topology=star", "--mixing=metropolis"], np=5))
    q(Config("exp", JOB + ["--topology=exp"], np=8))
    q(Config("complete-dsgdm-n", JOB + ["--topology=complete", "--algorithm=dsgdm-n"]))
    # The time-varying one-peer exponential graph (not symmetric: no
    # reading in place).
    q(Config("one-peer-exp", JOB + ["--topology=one-peer-exp"]))
    q(Config("one-peer-exp-8-overlap", JOB + ["--topology=one-peer-exp",
                                              "--overlap=on", "--local-steps=2"], np=8))
    # Hierarchical: an exact average inside each host, a graph between.
    q(Config("hier-2x2", JOB + ["--topology=hier", "--hosts=2"]))
    q(Config("hier-4x2-ring", JOB + ["--topology=hier", "--hosts=4"], np=8))
    q(Config("hier-4x2-overlap-local2", JOB + ["--topology=hier", "--hosts=4",
                                               "--overlap=on", "--local-steps=2"], np=8))
    q(Config("hier-4x2-one-peer-exp", JOB + ["--topology=hier", "--hosts=4",
                                             "--host-topology=one-peer-exp"], np=8))
    q(Config("hier-4x2-no-shm", JOB + ["--topology=hier", "--hosts=4",
                                       "--shared-memory=off"], np=8))
    q(Config("hier-auto", JOB + ["--topology=hier"]))  # one host here
    q(Config("hier-2x2-gt", JOB + ["--topology=hier", "--hosts=2", "--algorithm=gt"]))
    # The global mean.
    q(Config("allreduce", JOB + ["--algorithm=allreduce"]))
    q(Config("allreduce-no-shm", JOB + ["--algorithm=allreduce", "--shared-memory=off"]))
    q(Config("allreduce-8", JOB + ["--algorithm=allreduce"], np=8))
    q(Config("allreduce-3", JOB + ["--algorithm=allreduce"], np=3))
    # CHOCO compressed gossip, flat and hierarchical.
    q(Config("choco-qsgd4", JOB + ["--compress=qsgd:4"]))
    q(Config("choco-topk", JOB + ["--compress=topk:0.05", "--consensus-lr=0.5"]))
    q(Config("choco-randk-overlap-local3", JOB + ["--compress=randk:0.1",
                                                  "--consensus-lr=0.3", "--overlap=on",
                                                  "--local-steps=3"]))
    q(Config("choco-sign-dsgd", JOB + ["--compress=sign", "--algorithm=dsgd"]))
    q(Config("choco-qsgd4-dadam", JOB + ["--compress=qsgd:4", "--algorithm=dadam"]))
    q(Config("choco-qsgd4-no-shm", JOB + ["--compress=qsgd:4", "--shared-memory=off"]))
    q(Config("choco-topk-exp-8", JOB + ["--compress=topk:0.1", "--topology=exp"], np=8))
    q(Config("choco-hier-2x2-qsgd8", JOB + ["--topology=hier", "--hosts=2",
                                            "--compress=qsgd:8"]))
    q(Config("choco-hier-4x2-topk-overlap", JOB + ["--topology=hier", "--hosts=4",
                                                   "--compress=topk:0.1",
                                                   "--overlap=on"], np=8))
    # RelaySum on trees.
    q(Config("relaysgd-chain", JOB + ["--algorithm=relaysgd", "--topology=chain"]))
    q(Config("relaysgd-tree", JOB + ["--algorithm=relaysgd", "--topology=tree"]))
    q(Config("relaysgd-tree-7-arity3", JOB + ["--algorithm=relaysgd", "--topology=tree",
                                              "--tree-arity=3"], np=7))
    q(Config("relaysgd-tree-no-shm", JOB + ["--algorithm=relaysgd", "--topology=tree",
                                            "--shared-memory=off"]))
    # Other data and models.
    q(Config("synthetic-data", JOB + ["--dataset=synthetic"]))
    q(Config("lenet", ["--epochs=1", "--train-limit=512", "--test-limit=200",
                       "--control=none", "--comm-timeout=120", "--model=lenet"]))
    q(Config("mlp-2-layers-warmup", JOB + ["--hidden=64,32", "--warmup-epochs=0.5",
                                           "--alpha=0.1", "--seed=7"]))
    # Checkpoints and resuming: every 10 (12) steps, resumed from step 10
    # (12) of 30, per exchange kind.
    q(Config("resume-ring-overlap-local3", JOB + TWO_EPOCHS + ["--overlap=on",
                                                             "--local-steps=3"],
             resume=(12, 12)))
    q(Config("resume-gt", JOB + TWO_EPOCHS + ["--algorithm=gt"], resume=(10, 10)))
    q(Config("resume-allreduce", JOB + TWO_EPOCHS + ["--algorithm=allreduce"],
             resume=(10, 10)))
    q(Config("resume-choco-randk", JOB + TWO_EPOCHS + ["--compress=randk:0.1",
                                                     "--consensus-lr=0.3",
                                                     "--overlap=on"],
             resume=(10, 20)))
    q(Config("resume-choco-hier", JOB + TWO_EPOCHS + ["--topology=hier", "--hosts=2",
                                                    "--compress=qsgd:8"],
             resume=(10, 10)))
    q(Config("resume-relaysgd-tree", JOB + TWO_EPOCHS + ["--algorithm=relaysgd",
                                                       "--topology=tree"],
             resume=(10, 10)))
    q(Config("resume-one-peer-exp", JOB + TWO_EPOCHS + ["--topology=one-peer-exp"],
             resume=(10, 10)))
    # The asynchronous parameter server: one worker repeats bit for bit.
    ajob = ["--epochs=1", "--train-limit=1000", "--test-limit=500",
            "--control=none", "--comm-timeout=120"]
    for algo in ("asgd", "asgd-m", "gsgm", "sa-asgd", "dc-asgd"):
        q(Config("async-1w-" + algo, ajob + ["--algorithm=" + algo], np=2,
                 checkpoint=False))
    q(Config("async-1w-gsgm-momentum", ajob + ["--algorithm=gsgm", "--gsgm-base=momentum"],
             np=2, checkpoint=False))
    q(Config("async-3w-gsgm", ajob + ["--algorithm=gsgm"], np=4, checkpoint=False,
             stable=ASYNC_STABLE, note="counts only: arrival order"))
    q(Config("async-3w-asgd", ajob + ["--algorithm=asgd"], np=4, checkpoint=False,
             stable=ASYNC_STABLE, note="counts only: arrival order"))
    # Refused with the same status and the same line.
    q(Config("refused-allreduce-compress", JOB + ["--algorithm=allreduce",
                                                  "--compress=qsgd:4"], refused=True))
    q(Config("refused-relaysgd-overlap", JOB + ["--algorithm=relaysgd", "--topology=tree",
                                                "--overlap=on"], refused=True))
    q(Config("refused-d2-ring", JOB + ["--algorithm=d2"], refused=True))
    q(Config("refused-relaysgd-ring", JOB + ["--algorithm=relaysgd"], refused=True))
    q(Config("refused-gt-overlap", JOB + ["--algorithm=gt", "--overlap=on"], refused=True))
    q(Config("refused-choco-one-peer-exp", JOB + ["--compress=topk:0.1",
                                                  "--topology=one-peer-exp"], refused=True))
    q(Config("refused-gt-compress", JOB + ["--algorithm=gt", "--compress=topk:0.1"],
             refused=True))
    # The simulator, on the daemon's job and on the synthetic problems.
    s = "sim-"
    q(Config(s + "ring", SIM_JOB, program="sim"))
    q(Config(s + "torus-dsgd", SIM_JOB + ["--algorithm=dsgd", "--topology=torus"],
             program="sim", np=9))
    q(Config(s + "d2", SIM_JOB + ["--algorithm=d2", "--mixing=lazy"], program="sim"))
    q(Config(s + "gt", SIM_JOB + ["--algorithm=gt"], program="sim"))
    q(Config(s + "hier-4x2", SIM_JOB + ["--topology=hier", "--hosts=4"], program="sim",
             np=8))
    q(Config(s + "allreduce", SIM_JOB + ["--algorithm=allreduce"], program="sim"))
    q(Config(s + "choco-qsgd4", SIM_JOB + ["--compress=qsgd:4"], program="sim"))
    q(Config(s + "choco-topk-dadam", SIM_JOB + ["--compress=topk:0.05",
                                                "--algorithm=dadam"], program="sim"))
    q(Config(s + "choco-hier-qsgd8", SIM_JOB + ["--topology=hier", "--hosts=2",
                                                "--compress=qsgd:8"], program="sim"))
    q(Config(s + "relaysgd-tree", SIM_JOB + ["--algorithm=relaysgd", "--topology=tree"],
             program="sim"))
    q(Config(s + "relaysgd-chain", SIM_JOB + ["--algorithm=relaysgd",
                                              "--topology=chain"], program="sim"))
    q(Config(s + "one-peer-exp", SIM_JOB + ["--topology=one-peer-exp"], program="sim"))
    q(Config(s + "least-squares-64", ["--problem=least-squares",
                                      "--epochs=20", "--eval-every=4",
                                      "--topology=one-peer-exp", "--heterogeneity=2",
                                      "--lr=0.005"],
             program="sim", np=64))
    q(Config(s + "logistic-16-torus", ["--problem=logistic", "--epochs=10",
                                       "--topology=torus", "--algorithm=dsgdm-n",
                                       "--compress=randk:0.25", "--consensus-lr=0.5"],
             program="sim", np=16))
    q(Config(s + "least-squares-relay", ["--problem=least-squares",
                                         "--epochs=10", "--algorithm=relaysgd",
                                         "--topology=tree"], program="sim", np=15))
    q(Config(s + "refused-d2-ring", SIM_JOB + ["--algorithm=d2"], program="sim",
             refused=True))
    return c


# ----------------------------------------------------------- running

def mpi_env():
    """The environment of the runs: tools/mpi.env under what is set."""
    env = dict(os.environ)
    root = os.geteuid() == 0
    with open(os.path.join(ROOT, "tools", "mpi.env"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("root:"):
                if not root:
                    continue
                line = line[len("root:"):].strip()
            name, _, value = line.partition("=")
            env.setdefault(name, value)
    return env


class Run:
    """What one build's run left: exit status, output, records, files."""

    def __init__(self, status, out, directory):
        self.status, self.out, self.dir = status, out, directory


def run(tree, cfg, np, flags, directory, env, timeout):
    os.makedirs(directory, exist_ok=True)
    if cfg.program == "qgmd":
        argv = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(np),
                os.path.join(tree, "daemon", "qgmd"), *flags]
    else:
        argv = [os.path.join(tree, "tools", "qgm-sim"), "--nodes=%d" % np, *flags]
    with open(os.path.join(directory, "command"), "w", encoding="utf-8") as f:
        f.write(" ".join(argv) + "\n")
    p = subprocess.Popen(argv, cwd=directory, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        out += "\n(killed after %d s)\n" % timeout
        return Run(-1, out, directory)
    with open(os.path.join(directory, "output"), "w", encoding="utf-8") as f:
        f.write(out)
    return Run(p.returncode, out, directory)


def records(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# ----------------------------------------------------------- comparing

def same_value(a, b):
    """Exact equality, type included (1 and 1.0 are not the same text)."""
    return type(a) is type(b) and a == b


def first_difference(a, b, where=""):
    """The first place where two JSON values differ, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            missing = [k for k in a if k not in b]
            extra = [k for k in b if k not in a]
            if missing or extra:
                return "%s fields: only in OLD %s, only in NEW %s" % (
                    where or "record", missing, extra)
            return "%s field order: %s != %s" % (where or "record", list(a), list(b))
        for k in a:
            d = first_difference(a[k], b[k], where + ("." if where else "") + k)
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return "%s: %d elements != %d" % (where, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, "%s[%d]" % (where, i))
            if d:
                return d
        return None
    if not same_value(a, b):
        return "%s: %s != %s" % (where, json.dumps(a), json.dumps(b))
    return None


def drop_path(record, path):
    """record without the field at dotted path (flags.lr), if it has it."""
    head, _, rest = path.partition(".")
    if head not in record:
        return record
    out = dict(record)
    if rest and isinstance(out[head], dict):
        out[head] = drop_path(out[head], rest)
    elif not rest:
        del out[head]
    return out


def keep_stable(record, stable):
    if stable is None:
        return record
    fields = stable.get(record.get("type"), ())
    if fields is None:
        return record
    return {k: v for k, v in record.items() if k in fields}


IGNORED = []  # --ignore


def compare_records(old_path, new_path, stable, label):
    have_old, have_new = os.path.exists(old_path), os.path.exists(new_path)
    if not (have_old and have_new):
        return "%s: metrics file written by %s only" % (
            label, "OLD" if have_old else "NEW") if have_old != have_new else \
            "%s: no metrics file" % label
    a, b = records(old_path), records(new_path)
    for i, (x, y) in enumerate(zip(a, b)):
        x, y = keep_stable(strip(x), stable), keep_stable(strip(y), stable)
        for path in IGNORED:
            x, y = drop_path(x, path), drop_path(y, path)
        d = first_difference(x, y)
        if d:
            what = "%s" % x.get("type")
            if "step" in x:
                what += " step %s" % x["step"]
            return "%s record %d (%s): %s" % (label, i + 1, what, d)
    if len(a) != len(b):
        return "%s: %d records != %d" % (label, len(a), len(b))
    return None


# The per-rank checkpoint file (libqgm/ckpt/checkpoint.c): a 48-byte
# header (magic, format version, sections, configuration hash, body sizes,
# CRC-32s) and a zlib body of sections. Nothing in it names the build or
# the time, so files are compared whole; a difference is explained by
# section.
CKPT_HEADER = struct.Struct("<8sIIQQQII")
CKPT_TYPES = {0: ("bytes", "B"), 1: ("f32", "f"), 2: ("u64", "Q"), 3: ("f64", "d")}


def sections(data):
    """[(name, type, count, bytes)] of a checkpoint file, or None."""
    try:
        body = zlib.decompress(data[CKPT_HEADER.size:])
    except zlib.error:
        return None
    out, at = [], 0
    while at < len(body):
        n = body[at]
        name = body[at + 1:at + 1 + n].decode("ascii", "replace")
        at += 1 + n
        kind, count = body[at], struct.unpack_from("<Q", body, at + 1)[0]
        at += 9
        size = struct.calcsize(CKPT_TYPES.get(kind, ("", "B"))[1]) * count
        out.append((name, kind, count, body[at:at + size]))
        at += size
    return out


def explain_checkpoint(a, b):
    if len(a) < CKPT_HEADER.size or len(b) < CKPT_HEADER.size:
        return "sizes %d != %d" % (len(a), len(b))
    ha, hb = CKPT_HEADER.unpack_from(a), CKPT_HEADER.unpack_from(b)
    names = ("magic", "format version", "sections", "configuration hash",
             "body size", "compressed size", "CRC", "body CRC")
    for name, x, y in zip(names[:4], ha, hb):
        if x != y:
            return "header's %s: %s != %s" % (name, x, y)
    sa, sb = sections(a), sections(b)
    if sa is None or sb is None:
        return "bodies differ (not inflatable)"
    na, nb = [s[0] for s in sa], [s[0] for s in sb]
    if na != nb:
        return "sections %s != %s" % (na, nb)
    for (name, ka, ca, da), (_, kb, cb, db) in zip(sa, sb):
        if (ka, ca) != (kb, cb):
            return "section %s: type/count %s/%d != %s/%d" % (name, ka, ca, kb, cb)
        if da != db:
            kind, fmt = CKPT_TYPES.get(ka, ("bytes", "B"))
            width = struct.calcsize(fmt)
            for i in range(ca):
                x = da[i * width:(i + 1) * width]
                y = db[i * width:(i + 1) * width]
                if x != y:
                    if kind == "bytes":
                        return "section %s: byte %d differs: %r != %r" % (
                            name, i, da[i:i + 40], db[i:i + 40])
                    return "section %s (%s): element %d of %d: %r != %r" % (
                        name, kind, i, ca, struct.unpack("<" + fmt, x)[0],
                        struct.unpack("<" + fmt, y)[0])
    return "same sections, different bytes (compression or CRC)"


def tree_files(top):
    found = {}
    for d, _, files in os.walk(top):
        for f in files:
            p = os.path.join(d, f)
            found[os.path.relpath(p, top)] = p
    return found


def compare_checkpoints(old_dir, new_dir, label):
    a, b = tree_files(old_dir), tree_files(new_dir)
    if sorted(a) != sorted(b):
        only_old = sorted(set(a) - set(b))
        only_new = sorted(set(b) - set(a))
        return "%s: files only in OLD %s, only in NEW %s" % (label, only_old[:4],
                                                             only_new[:4])
    if not a:
        return "%s: no checkpoint written" % label
    for rel in sorted(a):
        with open(a[rel], "rb") as f:
            x = f.read()
        with open(b[rel], "rb") as f:
            y = f.read()
        if x != y:
            why = explain_checkpoint(x, y) if rel.endswith(".qgmc") else \
                "%r != %r" % (x[:200], y[:200])
            return "%s %s: %s" % (label, rel, why)
    return None


def error_lines(out):
    return [l for l in out.splitlines() if "error" in l]


# ----------------------------------------------------------- one config

def step_folder(step):
    return "step-%012d" % step


def compare(cfg, old_tree, new_tree, top, args, env):
    np = cfg.np or args.np
    flags = list(cfg.flags)
    if cfg.refused:
        runs = [run(old_tree, cfg, np, flags, os.path.join(top, "old"), env, args.timeout),
                run(new_tree, cfg, np, flags + args.new_flags, os.path.join(top, "new"),
                    env, args.timeout)]
        if runs[0].status != 2:
            return "OLD exits %d, not 2 (the configuration is not refused)" % runs[0].status
        if runs[1].status != runs[0].status:
            return "exit status %d != %d" % (runs[0].status, runs[1].status)
        if error_lines(runs[0].out) != error_lines(runs[1].out):
            return "error lines %r != %r" % (error_lines(runs[0].out),
                                             error_lines(runs[1].out))
        return None

    flags.append("--metrics=metrics.jsonl")
    if cfg.resume:
        every, _ = cfg.resume
        flags += ["--checkpoint-dir=checkpoints", "--checkpoint-every=%d" % every,
                  "--checkpoint-keep=1000"]
    elif cfg.checkpoint:
        flags.append("--checkpoint-dir=checkpoints")
    result = {}
    for tree, side in ((old_tree, "old"), (new_tree, "new")):
        extra = args.new_flags if side == "new" else []
        d = os.path.join(top, side)
        r = run(tree, cfg, np, flags + extra, d, env, args.timeout)
        if r.status != 0:
            return "%s run failed (exit status %d): %s" % (
                side.upper(), r.status, (error_lines(r.out) or r.out.splitlines()[-3:]))
        if cfg.resume:
            _, start = cfg.resume
            # The resumed run: the same directory's checkpoints up to
            # step `start`, the later ones removed, and a metrics file of
            # its own.
            rd = os.path.join(top, side + "-resumed")
            os.makedirs(rd)
            shutil.copytree(os.path.join(d, "checkpoints"), os.path.join(rd, "checkpoints"))
            later = [s for s in os.listdir(os.path.join(rd, "checkpoints"))
                     if s.startswith("step-") and int(s[5:]) > start]
            if not later:
                return "no checkpoint after step %d to remove" % start
            for s in later:
                shutil.rmtree(os.path.join(rd, "checkpoints", s))
            rr = run(tree, cfg, np, flags + extra + ["--resume"], rd, env, args.timeout)
            if rr.status != 0:
                return "%s resumed run failed (exit status %d): %s" % (
                    side.upper(), rr.status, error_lines(rr.out))
            if ("resuming from step %d " % start) not in rr.out:
                return "%s did not resume from step %d" % (side.upper(), start)
            # A resumed run ends where the uninterrupted one did.
            d_exact = compare_checkpoints(os.path.join(d, "checkpoints"),
                                          os.path.join(rd, "checkpoints"),
                                          "%s resumed against uninterrupted:" % side.upper())
            if d_exact:
                return d_exact.replace("OLD", "uninterrupted").replace("NEW", "resumed")
        result[side] = d
    old, new = result["old"], result["new"]
    diff = compare_records(os.path.join(old, "metrics.jsonl"),
                           os.path.join(new, "metrics.jsonl"), cfg.stable, "metrics")
    if not diff and (cfg.checkpoint or cfg.resume):
        diff = compare_checkpoints(os.path.join(old, "checkpoints"),
                                   os.path.join(new, "checkpoints"), "checkpoint")
    if not diff and cfg.resume:
        diff = compare_records(os.path.join(top, "old-resumed", "metrics.jsonl"),
                               os.path.join(top, "new-resumed", "metrics.jsonl"),
                               cfg.stable, "resumed metrics")
    if not diff and cfg.resume:
        diff = compare_checkpoints(os.path.join(top, "old-resumed", "checkpoints"),
                                   os.path.join(top, "new-resumed", "checkpoints"),
                                   "resumed checkpoint")
    return diff


def built(tree):
    for p in ("daemon/qgmd", "tools/qgm-sim"):
        if not os.access(os.path.join(tree, p), os.X_OK):
            return p
    return None


def main():
    ap = argparse.ArgumentParser(
        description="Run the same small jobs with two builds of qgmd and compare "
                    "their records and checkpoints.")
    ap.add_argument("old", metavar="OLD_TREE", nargs="?",
                    help="a built checkout (the reference)")
    ap.add_argument("new", metavar="NEW_TREE", nargs="?",
                    help="a built checkout (the change)")
    ap.add_argument("--only", nargs="+", metavar="NAME", default=[],
                    help="only these configurations (shell patterns: 'choco-*')")
    ap.add_argument("--np", type=int, default=4,
                    help="ranks (qgm-sim: nodes) of the configurations that do not "
                         "fix their own (default: 4)")
    ap.add_argument("--list", action="store_true", help="list the configurations and exit")
    ap.add_argument("--keep", action="store_true",
                    help="keep the runs' directories (their path is printed)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds a run may take")
    ap.add_argument("--new-flags", action="append", default=[], metavar="FLAG",
                    help="a flag added to NEW_TREE's runs only, to see a difference "
                         "reported (repeatable; --new-flags=--seed=2)")
    ap.add_argument("--ignore", action="append", default=[], metavar="FIELD",
                    help="leave this field out of every record that has it, as a "
                         "dotted path (flags.NAME: a flag NEW_TREE added); repeatable")
    args = ap.parse_args()
    IGNORED.extend(args.ignore)

    configs = matrix()
    if args.only:
        configs = [c for c in configs if any(fnmatch.fnmatchcase(c.name, p)
                                             for p in args.only)]
        if not configs:
            ap.error("no configuration matches %s" % " ".join(args.only))
    if args.list:
        for c in configs:
            ranks = ("-np %d" if c.program == "qgmd" else "--nodes=%d") % (c.np or args.np)
            print("%-32s %s %s %s%s" % (c.name, c.program, ranks, " ".join(c.flags),
                                        "  (%s)" % c.note if c.note else ""))
        return 0
    if not (args.old and args.new):
        ap.error("OLD_TREE and NEW_TREE are needed")
    old, new = os.path.abspath(args.old), os.path.abspath(args.new)
    for tree in (old, new):
        missing = built(tree)
        if missing:
            ap.error("%s: no %s (build it with make)" % (tree, missing))

    env = mpi_env()
    top = tempfile.mkdtemp(prefix="qgm-compare.")
    failed = 0
    width = max(len(c.name) for c in configs)
    try:
        for c in configs:
            d = os.path.join(top, c.name)
            os.makedirs(d)
            diff = compare(c, old, new, d, args, env)
            failed += diff is not None
            note = "  (%s)" % c.note if c.note and not diff else ""
            print("%-*s  %s%s" % (width, c.name, diff or "same", note), flush=True)
    finally:
        if args.keep:
            print("runs kept in %s" % top)
        else:
            shutil.rmtree(top, ignore_errors=True)
    print("%d configuration%s: %d same, %d different" % (
        len(configs), "" if len(configs) == 1 else "s", len(configs) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
