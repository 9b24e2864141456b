"""One planned run in its own directory: its command, its progress with an
ETA, and the markers that make the sweep resumable.

A run directory holds run.conf (its settings), command, log, metrics.jsonl,
exit_status and, once the summary record exists, `done` (renamed into
place, so its presence means the run is complete). A failed run leaves
`failed` (the exit status) instead; anything without `done` is redone."""

import ctypes
import os
import re
import signal
import subprocess
import sys
import time

from . import metrics
from .launcher import quoted
from .spec import RANKS

PACE_S = 1.0  # how often the progress line is refreshed while a run trains


def format_duration(seconds):
    whole = int(seconds)
    if whole < 10:
        return "%.1fs" % seconds
    if whole >= 3600:
        return "%dh%02dm" % (whole // 3600, whole % 3600 // 60)
    if whole >= 60:
        return "%dm%02ds" % (whole // 60, whole % 60)
    return "%ds" % whole


def epochs_of(recs):
    """Epochs finished and planned, from the records so far: the whole
    epochs of the last evaluation (asynchronous runs evaluate ten times per
    epoch, so counting evaluations would overshoot)."""
    evals = metrics.of_type(recs, "eval")
    done = int(float(metrics.number_text(evals[-1], "epoch") or 0)) if evals else 0
    total = 0
    for config in metrics.of_type(recs, "config"):
        flags = config.get("flags")
        if isinstance(flags, dict) and isinstance(flags.get("epochs"), metrics.Number):
            total = int(flags["epochs"])
            break
    return done, total


def log_tail(path, lines=5):
    """The last lines of a run's log without Open MPI's boxed notices
    (between dashed lines), which would otherwise push the daemon's message
    out."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read().split("\n")
    except OSError:
        return []
    if text and text[-1] == "":
        text.pop()
    kept, boxed = [], False
    for line in text:
        if re.fullmatch(r"-+", line):
            boxed = not boxed
        elif not boxed:
            kept.append(line)
    return kept[-lines:]


PR_SET_PDEATHSIG = 1  # <sys/prctl.h>


def _ended_with(parent):
    """For the child, before it runs the launcher: SIGTERM when the sweep
    dies, even by SIGKILL, so that mpirun takes its ranks down instead of
    training on unseen (Linux; elsewhere the lock still keeps a rerun
    out)."""
    def arm():
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:  # the sweep died before the prctl
            os.kill(os.getpid(), signal.SIGTERM)
    return arm


def _write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


class Runner:
    """Runs the planned runs one after another, keeping what the ETA needs."""

    def __init__(self, launcher, qgmd, out=sys.stdout):
        self.launcher, self.qgmd, self.out = launcher, qgmd, out
        self.finished = 0
        self.finished_wall = 0.0  # seconds spent by the runs finished now
        self.current = None       # the mpirun of the run in progress
        self.lock_fd = None       # the sweep directory's lock, handed to each mpirun

    def command(self, run, run_dir):
        flags = [f"--{k}={v}" for k, v in run.items() if k != RANKS]
        flags.append(f"--metrics={run_dir}/metrics.jsonl")
        return self.launcher.command(run[RANKS], self.qgmd, flags, run_dir)

    def estimate_left(self, runs_left, elapsed, epoch, epochs):
        """Seconds left: the mean wall time of the runs finished so far (or,
        before any, the current run's pace per epoch) times the runs left,
        minus what the current run has already used."""
        if self.finished > 0:
            per_run = self.finished_wall / self.finished
        elif epoch > 0 and epochs > 0:
            per_run = elapsed / epoch * epochs
        else:
            return None
        return max(int(per_run * runs_left - elapsed), 0)

    def _progress(self, k, n, label, run_dir, started, last_epoch):
        epoch, epochs = epochs_of(metrics.records(f"{run_dir}/metrics.jsonl"))
        eta = self.estimate_left(n - k + 1, time.monotonic() - started, epoch, epochs)
        line = (f"run {k}/{n}: {label} epoch {epoch}/{epochs if epochs > 0 else '?'}, "
                f"ETA {'?' if eta is None else format_duration(eta)}")
        if self.out.isatty():
            self.out.write(f"\r\033[K{line}")
        elif epoch != last_epoch:
            self.out.write(line + "\n")
        self.out.flush()
        return epoch

    def run_one(self, k, n, run, run_dir, label):
        """Runs the k-th of n runs; returns whether it finished."""
        for stale in ("metrics.jsonl", "log", "failed", "done.tmp", "exit_status"):
            if os.path.lexists(f"{run_dir}/{stale}"):
                os.remove(f"{run_dir}/{stale}")
        os.makedirs(run_dir, exist_ok=True)
        _write(f"{run_dir}/run.conf", "".join(f"{key}={value}\n" for key, value in run.items()))
        command = self.command(run, run_dir)
        _write(f"{run_dir}/command", quoted(command) + " \n")
        started = time.monotonic()
        with open(f"{run_dir}/log", "wb") as log:
            try:
                # Its own process group: a Ctrl-C reaches the sweep, which
                # stops the run and waits for its ranks (_stopped()).
                self.current = subprocess.Popen(
                    command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    process_group=0, preexec_fn=_ended_with(os.getpid()),
                    pass_fds=() if self.lock_fd is None else (self.lock_fd,))
            except OSError as e:
                log.write(f"sweep: cannot start {command[0]}: {e.strerror}\n".encode())
                status = 127
                _write(f"{run_dir}/exit_status", f"{status}\n")
            else:
                try:
                    self._watch(k, n, label, run_dir, started)
                finally:  # interrupted too: the run is stopped first
                    status = self._stopped()
                    _write(f"{run_dir}/exit_status", f"{status}\n")
        if self.out.isatty():
            self.out.write("\r\033[K")
        wall = "%.1f" % (time.monotonic() - started)
        summaries = metrics.of_type(metrics.records(f"{run_dir}/metrics.jsonl"), "summary")
        if status == 0 and summaries:
            _write(f"{run_dir}/done.tmp", f"wall_s={wall}\n")
            os.rename(f"{run_dir}/done.tmp", f"{run_dir}/done")
            self.finished += 1
            self.finished_wall += float(wall)
            accuracy = metrics.number_text(summaries[0], "final_test_acc_avg_model")
            self.out.write(f"run {k}/{n}: {label} done in {format_duration(float(wall))}, "
                           f"test accuracy {accuracy}\n")
            self.out.flush()
            return True
        reason = "0 but no summary record" if status == 0 else str(status)
        _write(f"{run_dir}/failed", f"{reason}\n")
        self.out.write(f"run {k}/{n}: {label} FAILED (exit status {reason}); "
                       f"last lines of {run_dir}/log:\n")
        self.out.write("".join(f"    {line}\n" for line in log_tail(f"{run_dir}/log")))
        self.out.flush()
        return False

    def _watch(self, k, n, label, run_dir, started):
        """Shows the progress until the run ends."""
        last_epoch = None
        while True:
            last_epoch = self._progress(k, n, label, run_dir, started, last_epoch)
            try:
                return self.current.wait(timeout=PACE_S)
            except subprocess.TimeoutExpired:
                continue

    def _stopped(self):
        """mpirun's exit status as a shell gives it (128 + signal). An
        interrupted run is stopped here (and redone by the next sweep, having
        no completion marker), once mpirun has taken its ranks down, so that
        no process is left behind."""
        if self.current.returncode is None:
            self.current.terminate()
            self.current.wait()
        status = self.current.returncode
        self.current = None
        return 128 - status if status < 0 else status
