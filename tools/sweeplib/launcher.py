"""The command line that starts a run. By default mpirun on this machine;
--hostfile and --mpirun-args add to it, and --launcher replaces it with a
template, so that a grid can run on a cluster (docs/SWEEP.md)."""

import os
import re
import shlex

from .errors import UsageError

# {flags} stands for every flag of the run (one word each), {np} for its
# ranks, {qgmd} for the daemon, {dir} for the run's directory.
PLACEHOLDERS = ("np", "qgmd", "flags", "dir")
REQUIRED = ("np", "flags")
LOCAL = "mpirun --oversubscribe --bind-to none {extra} -np {np} {qgmd} {flags}"

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


class Launcher:
    def __init__(self, template):
        """template: the words of the command line, with placeholders."""
        self.words = template
        found = set()
        for word in template:
            for name in _PLACEHOLDER.findall(word):
                if name not in PLACEHOLDERS:
                    raise UsageError(f"--launcher: unknown placeholder '{{{name}}}' (known: "
                                     + ", ".join("{%s}" % p for p in PLACEHOLDERS) + ")")
                if name == "flags" and word != "{flags}":
                    raise UsageError("--launcher: {flags} must be a word of its own")
                found.add(name)
        missing = [p for p in REQUIRED if p not in found]
        if missing:
            raise UsageError("--launcher: the template needs "
                             + " and ".join("{%s}" % p for p in missing))

    def command(self, ranks, qgmd, flags, run_dir):
        """The words of one run's command line."""
        values = {"np": ranks, "qgmd": qgmd, "dir": run_dir}
        words = []
        for word in self.words:
            if word == "{flags}":
                words += flags
            else:
                words.append(_PLACEHOLDER.sub(lambda m: values[m.group(1)], word))
        return words


def choose(hostfile=None, mpirun_args=None, template=None):
    """The launcher the options ask for."""
    if template is not None:
        if hostfile is not None or mpirun_args is not None:
            raise UsageError("--launcher replaces mpirun: write the hostfile and mpirun's "
                             "arguments into the template instead of --hostfile or --mpirun-args")
        try:
            return Launcher(shlex.split(template))
        except ValueError as e:
            raise UsageError(f"--launcher: {e}") from None
    extra = []
    if hostfile is not None:
        if not (os.path.isfile(hostfile) and os.access(hostfile, os.R_OK)):
            raise UsageError(f"--hostfile {hostfile}: cannot read the file")
        extra += ["--hostfile", os.path.abspath(hostfile)]
    if mpirun_args is not None:
        try:
            extra += shlex.split(mpirun_args)
        except ValueError as e:
            raise UsageError(f"--mpirun-args: {e}") from None
    words = []
    for word in LOCAL.split():
        words += extra if word == "{extra}" else [word]
    return Launcher(words)


def quoted(words):
    """A command line as a shell would read it back."""
    return " ".join(shlex.quote(w) for w in words)
