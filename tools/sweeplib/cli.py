"""tools/sweep's command line (docs/SWEEP.md)."""

import fcntl
import json
import os
import signal
import subprocess
import sys

from . import environment, launcher, spec
from .errors import SpecError, UsageError, printable
from .pick import picks
from .plan import Plan
from .report import report
from .runner import Runner

USAGE = """\
usage: tools/sweep [options] SPEC...     run the grid(s), then report
       tools/sweep --report DIR [--stability-k=K]   re-aggregate a sweep
       tools/sweep --pick KEY DIR   the best value of KEY for each setting of
                                    the other axes, as spec lines

options:
  -o DIR, --out=DIR     sweep directory (default: results/sweep-NAME, NAME the
                        first spec file's name without extension)
  --set KEY=VALUES      replace (or add) a spec line in every spec, e.g.
                        --set 'seed=1 2' --set epochs=2; repeatable; a
                        conditional line too: --set 'lr=0.01 if algorithm=gsgm'
  --dry-run             list the runs (and whether they are finished), run nothing
  --stability-k=K       evaluations the stability column covers (default 5)
  --no-plots            skip the gnuplot PNGs
  -h, --help            this text

launcher (default: mpirun --oversubscribe --bind-to none -np N on this machine):
  --hostfile FILE       mpirun --hostfile FILE: the machines to run on
  --mpirun-args ARGS    more mpirun arguments, e.g. '--mca btl self,vader,tcp'
  --launcher TEMPLATE   the whole command instead of mpirun, e.g.
                        'srun -n {np} {qgmd} {flags}'; {np} the ranks, {qgmd}
                        the daemon, {flags} the run's flags, {dir} its directory

A spec file has one 'key = value ...' line per setting ('#' comments): key is
a qgmd flag without its --, 'np' (ranks) or 'flagfile'; several values make
a grid axis. 'key = value ... if other = value' sets key only in the runs
with that value of other, e.g. 'lr = 0.005 if algorithm = asgd-m'.
Exit status: 0 all runs finished, 1 some run failed, 2 bad usage or bad
spec, 130 interrupted (finished runs are kept).
"""

DEFAULT_STABILITY_K = 5
INTERRUPTED = 130


class Options:
    def __init__(self):
        self.sweep_dir = self.report_dir = self.pick_key = None
        self.dry_run, self.plots = False, True
        self.stability_k = DEFAULT_STABILITY_K
        self.specs, self.sets = [], []
        self.hostfile = self.mpirun_args = self.template = None


# Options that take a value: the field it goes to, and what it is (for
# errors). "-o DIR" takes it as the next word, "--out=DIR" after '=', the
# others either way.
VALUE_OPTIONS = {"-o": ("sweep_dir", "a directory"), "--out": ("sweep_dir", "a directory"),
                 "--set": ("sets", "KEY=VALUES"), "--report": ("report_dir", "a sweep directory"),
                 "--pick": ("pick_key", "a spec key"),
                 "--hostfile": ("hostfile", "a file"), "--mpirun-args": ("mpirun_args", "ARGS"),
                 "--launcher": ("template", "a TEMPLATE")}
NEXT_WORD_ONLY, JOINED_ONLY = "-o", "--out"


def _parse(argv):
    o = Options()
    args = list(argv)
    while args:
        arg = args.pop(0)
        name, has_value, value = arg.partition("=")
        if arg in ("-h", "--help"):
            sys.stdout.write(USAGE)
            sys.exit(0)
        elif arg in VALUE_OPTIONS and arg != JOINED_ONLY:
            if not args:
                raise UsageError(f"{arg} needs {VALUE_OPTIONS[arg][1]}")
            _store(o, VALUE_OPTIONS[arg][0], args.pop(0))
        elif has_value and name in VALUE_OPTIONS and name != NEXT_WORD_ONLY:
            _store(o, VALUE_OPTIONS[name][0], value)
        elif arg == "--dry-run":
            o.dry_run = True
        elif arg == "--no-plots":
            o.plots = False
        elif has_value and name == "--stability-k":
            if not (value.isascii() and value.isdigit() and value[0] != "0"):
                raise UsageError(f"--stability-k needs a whole number >= 1, got '{value}'")
            o.stability_k = int(value)
        elif arg.startswith("-"):
            raise UsageError(f"unknown option '{arg}'")
        else:
            o.specs.append(arg)
    return o


def _store(o, field, value):
    if field == "sets":
        o.sets.append(value)
    else:
        setattr(o, field, value)


def known_flags(qgmd):
    """The daemon's flag names, from its own table."""
    try:
        out = subprocess.run([qgmd, "--show-flags=json"], capture_output=True, check=True).stdout
        return {f["name"] for f in json.loads(out)["flags"]}
    except (OSError, subprocess.CalledProcessError, ValueError, KeyError, TypeError) as e:
        raise UsageError(f"{qgmd} --show-flags=json did not list the flags ({e})") from None


def default_sweep_dir(first_spec):
    stem = first_spec.rsplit(".", 1)[0] if "." in first_spec else first_spec
    return f"results/sweep-{os.path.basename(stem)}"


def _interrupt(signum, frame):
    raise KeyboardInterrupt


# Signals that stop a sweep as Ctrl-C does: the run in progress is stopped
# and waited for. SIGHUP: the terminal closed, or the session ended.
STOPPING = (signal.SIGTERM, signal.SIGHUP)


def lock_sweep_dir(sweep_dir):
    """An exclusive lock on DIR/.lock, held by the sweep and by each run's
    mpirun (the descriptor is handed down), so that a second sweep of the
    directory, even after the first was killed, does not reuse a run
    directory while a run still writes into it. Returns the descriptor."""
    fd = os.open(f"{sweep_dir}/.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise UsageError(f"{sweep_dir} is in use by another sweep (or by a run of one that "
                         "was killed, still ending); try again once it is over") from None
    return fd


def sweep(o, qgmd):
    run_launcher = launcher.choose(o.hostfile, o.mpirun_args, o.template)
    if not os.access(qgmd, os.X_OK) or not os.path.isfile(qgmd):
        raise UsageError(f"no daemon at {qgmd} (run make, or set QGMD)")
    known = known_flags(qgmd)
    overrides = [spec.parse_override(s, known) for s in o.sets]
    plan = Plan([run for s in o.specs for run in spec.plan_spec(s, overrides, known)])
    sweep_dir = o.sweep_dir or default_sweep_dir(o.specs[0])
    runner = Runner(run_launcher, qgmd)
    n = len(plan.runs)
    dirs = [f"{sweep_dir}/runs/{name}" for name in plan.names]
    if o.dry_run:
        for k, (run, run_dir, label) in enumerate(zip(plan.runs, dirs, plan.labels), 1):
            state = "finished" if os.path.isfile(f"{run_dir}/done") else "pending"
            print(f"run {k}/{n}: {label} [{state}]")
            print("  " + launcher.quoted(runner.command(run, run_dir)))
        return 0
    environment.apply_defaults()
    os.makedirs(f"{sweep_dir}/runs", exist_ok=True)
    runner.lock_fd = lock_sweep_dir(sweep_dir)
    failed = skipped = 0
    for signum in STOPPING:
        signal.signal(signum, _interrupt)
    try:
        for k, (run, run_dir, label) in enumerate(zip(plan.runs, dirs, plan.labels), 1):
            if os.path.isfile(f"{run_dir}/done"):
                print(f"run {k}/{n}: {label} skipped (finished earlier)")
                skipped += 1
            elif not runner.run_one(k, n, run, run_dir, label):
                failed += 1
    except KeyboardInterrupt:
        print(f"\nsweep: interrupted; finished runs are kept in {sweep_dir}, "
              "the others will be redone", file=sys.stderr)
        return INTERRUPTED
    finally:
        for signum in STOPPING:
            signal.signal(signum, signal.SIG_DFL)
    print(f"sweep: {n} runs: {runner.finished} finished now, {skipped} skipped, {failed} failed")
    report(sweep_dir, o.stability_k, o.plots)
    return 1 if failed else 0


def _check_sweep_dir(option, sweep_dir):
    if not os.path.isdir(f"{sweep_dir}/runs"):
        raise UsageError(f"{option} {sweep_dir}: not a sweep directory (no runs/)")


def main(argv, qgmd):
    # Like any filter: `tools/sweep --dry-run ... | head` ends quietly.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.stdout.reconfigure(line_buffering=True)
    try:
        o = _parse(argv)
        if o.pick_key is not None:
            if o.report_dir is not None or len(o.specs) != 1:
                raise UsageError("--pick KEY takes one sweep directory")
            _check_sweep_dir("--pick", o.specs[0])
            print("\n".join(picks(o.specs[0], o.pick_key)))
            return 0
        if o.report_dir is not None:
            if o.specs:
                raise UsageError("--report takes a sweep directory, not spec files")
            _check_sweep_dir("--report", o.report_dir)
            report(o.report_dir, o.stability_k, o.plots)
            return 0
        if not o.specs:
            raise UsageError("no spec file given")
        return sweep(o, qgmd)
    except (SpecError, UsageError) as e:
        print(f"sweep: {printable(str(e))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return INTERRUPTED
