"""The environment qgmd's ranks run with, from tools/mpi.env: the one list
the Makefile exports too. Variables the caller has set are left alone."""

import os

ENV_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "mpi.env")
ROOT_ONLY = "root:"


def settings(path=ENV_FILE, is_root=None):
    """The NAME=VALUE settings of the file, the root-only ones when run as
    root."""
    if is_root is None:
        is_root = os.geteuid() == 0
    result = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line.startswith(ROOT_ONLY):
                if not is_root:
                    continue
                line = line[len(ROOT_ONLY):].strip()
            if line:
                name, _, value = line.partition("=")
                result[name] = value
    return result


def apply_defaults(environ=os.environ):
    for name, value in settings().items():
        environ.setdefault(name, value)
