"""test_cluster_args.py - qgm-cluster up checks every argument before it
makes anything: a bad --rate, an impossible --subnet, a 20-digit --slots
are one line and exit status 2, and no namespace of the cluster exists
after. Nothing here creates a namespace."""

import os
import shutil
import subprocess
import unittest

from support import ROOT

CLUSTER = os.path.join(ROOT, "tools", "qgm-cluster")
NAME = "qgmargs"


def namespaces():
    if not shutil.which("ip"):
        return []
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return [line.split()[0] for line in out.stdout.splitlines() if line.strip()]


class UpArguments(unittest.TestCase):
    def test_bad_arguments_are_refused_before_anything_is_made(self):
        cases = {
            "--rate=abc": "up: --rate=abc: not a rate (use e.g. 100mbit, 1gbit)",
            "--rate=99999999999999gbit": "up: --rate=99999999999999gbit: not a rate "
                                         "(use e.g. 100mbit, 1gbit)",
            "--subnet=10.999.0.0/24": "up: --subnet=10.999.0.0/24: must be a private /24 "
                                      "such as 10.213.5.0/24",
            "--slots=12345678901234567890": "up: --slots=12345678901234567890: not a count "
                                            "from 1 to 9999",
            "--rate-of=qgmargs-3:1gbit": "up: --rate-of=qgmargs-3:1gbit: no host 'qgmargs-3' "
                                         "among qgmargs-1..qgmargs-2",
        }
        for arg, says in cases.items():
            with self.subTest(arg=arg):
                p = subprocess.run([CLUSTER, f"--name={NAME}", "up", "2", arg],
                                   capture_output=True, text=True, timeout=60, check=False)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(p.stderr, f"qgm-cluster: {says}\n")
                self.assertEqual([n for n in namespaces() if n.startswith(NAME)], [])


if __name__ == "__main__":
    unittest.main()
