"""test_cluster_names.py - qgm-cluster touches only its own cluster: with
clusters named vsec and vsec1 (each name a prefix of the other's old host
names), `down` of one that is not up removes nothing and says so, `down`
of one leaves the other whole, and an `up` that fails on a namespace it
did not make removes only what it made; two clusters brought up at once
take different /24s. Needs root and network
namespaces (skipped otherwise); one host a cluster, addresses from the
free /24s of 10.213.0.0/16 that qgm-cluster picks (two clusters are up at
once, so two /24s), no traffic sent. Everything is taken down at the end,
whatever failed."""

import os
import re
import subprocess
import unittest

from support import ROOT

CLUSTER = os.path.join(ROOT, "tools", "qgm-cluster")
NAMES = ("vsec", "vsec1")


def cluster(name, *args):
    return subprocess.run([CLUSTER, f"--name={name}", *args], capture_output=True,
                          text=True, timeout=120, check=False)


def namespaces():
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                         check=False).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


class ClusterNames(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root (network namespaces)")
        probe = subprocess.run(["ip", "netns", "add", "vsec-probe0"], capture_output=True,
                               text=True, check=False)
        if probe.returncode != 0:
            self.skipTest(f"cannot make network namespaces: {probe.stderr.strip()}")
        subprocess.run(["ip", "netns", "del", "vsec-probe0"], check=False)
        for name in NAMES:
            self.addCleanup(cluster, name, "down")

    def mine(self, name):
        return {ns for ns in namespaces() if ns.startswith(name + "-")}

    def test_down_of_a_prefix_name_touches_only_its_own_cluster(self):
        up = cluster("vsec1", "up", "1")
        self.assertEqual(up.returncode, 0, up.stderr)
        theirs = self.mine("vsec1")
        self.assertEqual(theirs, {"vsec1-1", "vsec1-sw"})
        # vsec is not up: nothing of vsec1 may go.
        down = cluster("vsec", "down")
        self.assertEqual(down.returncode, 0, down.stderr)
        self.assertIn("no cluster 'vsec' is up; nothing removed", down.stdout)
        self.assertEqual(self.mine("vsec1"), theirs)
        # Both up; down of vsec leaves vsec1 whole.
        up = cluster("vsec", "up", "1")
        self.assertEqual(up.returncode, 0, up.stderr)
        self.assertEqual(self.mine("vsec"), {"vsec-1", "vsec-sw"})
        self.assertEqual(cluster("vsec", "down").returncode, 0)
        self.assertEqual(self.mine("vsec"), set())
        self.assertEqual(self.mine("vsec1"), theirs)
        status = cluster("vsec1", "status")
        self.assertEqual(status.returncode, 0, status.stderr)
        self.assertIn("vsec1-1", status.stdout)
        self.assertEqual(cluster("vsec1", "down").returncode, 0)
        self.assertEqual(self.mine("vsec1"), set())

    def test_two_clusters_coming_up_at_once_take_different_subnets(self):
        """Each `up` picks the first /24 no other network holds; started
        together, each must see the other's claim (qgm-cluster makes the
        choice under a lock)."""
        jobs = [subprocess.Popen([CLUSTER, f"--name={name}", "up", "1"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for name in NAMES]
        outs = [job.communicate(timeout=120) for job in jobs]
        self.assertEqual([job.returncode for job in jobs], [0, 0], outs)
        subnets = [re.search(r" on (\S+)/24,", out).group(1) for out, _ in outs]
        self.assertNotEqual(subnets[0], subnets[1])
        for name, subnet in zip(NAMES, subnets):
            with open(f"/run/qgm-cluster/{name}/cluster", encoding="utf-8") as f:
                self.assertIn(f"SUBNET={subnet[:-2]}\n", f.read())

    def test_a_failed_up_removes_only_what_it_made(self):
        # A namespace by the name of vsec's second host, made by someone else.
        subprocess.run(["ip", "netns", "add", "vsec-2"], check=True)
        self.addCleanup(subprocess.run, ["ip", "netns", "del", "vsec-2"], check=False)
        up = cluster("vsec", "up", "3")
        self.assertNotEqual(up.returncode, 0)
        self.assertEqual(self.mine("vsec"), {"vsec-2"})
        self.assertFalse(os.path.exists("/run/qgm-cluster/vsec"))


if __name__ == "__main__":
    unittest.main()
