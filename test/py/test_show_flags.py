"""qgmd --show-flags=json prints the flag table that parses the flags:
valid JSON, the flags --show-config lists in the same order, with the
defaults it shows, and the types and bounds the table gives."""

import json
import re
import subprocess
import unittest

from support import QGMD, help_entries


def qgmd(*args):
    return subprocess.run([QGMD, *args], capture_output=True, text=True)


class ShowFlagsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        p = qgmd("--show-flags=json")
        assert p.returncode == 0, p.stderr
        cls.flags = json.loads(p.stdout)["flags"]
        cls.by_name = {f["name"]: f for f in cls.flags}

    def test_same_flags_and_defaults_as_show_config(self):
        p = qgmd("--show-config")
        self.assertEqual(p.returncode, 0, p.stderr)
        shown = [line[2:].split("=", 1) for line in p.stdout.splitlines()]
        self.assertEqual([f["name"] for f in self.flags], [name for name, _ in shown])
        for name, value in shown:
            flag = self.by_name[name]
            if flag["type"] == "string":
                self.assertEqual(flag["default"], value, name)
            else:
                self.assertEqual(flag["default"], float(value), name)

    def test_known_defaults_types_and_bounds(self):
        expect = {
            "algorithm": ("string", "qg-dsgdm-n"),
            "epochs": ("integer", 5, 1, 100000),
            "alpha": ("number", 1, 1e-6, 1e6),
            "weight-decay": ("number", 1e-4, 0, 1),
            "seed": ("integer", 1, 0, 4294967295),
            "lr-decay-at": ("string", "0.5,0.75"),
            "metrics": ("string", ""),
        }
        for name, (kind, default, *bounds) in expect.items():
            flag = self.by_name[name]
            self.assertEqual(flag["type"], kind, name)
            self.assertEqual(flag["default"], default, name)
            if bounds:
                self.assertEqual([flag["min"], flag["max"]], bounds, name)
            else:
                self.assertNotIn("min", flag)
            self.assertTrue(flag["help"], name)
        self.assertIsInstance(self.by_name["epochs"]["default"], int)

    def test_every_flag_is_in_help(self):
        usage = qgmd("--help").stdout
        for flag in self.flags:
            self.assertIn(f"\n  --{flag['name']}=", usage)

    def test_other_formats_are_refused(self):
        for arg in ("--show-flags=xml", "--show-flags"):
            p = qgmd(arg)
            self.assertEqual(p.returncode, 2, arg)
            self.assertEqual(p.stdout, "")
            lines = p.stderr.splitlines()
            self.assertEqual(len(lines), 1, p.stderr)
            self.assertIn(f"{arg}: the only format is json", lines[0])


if __name__ == "__main__":
    unittest.main()


class HelpDefaultsTest(unittest.TestCase):
    def test_every_default_help_prints_is_accepted(self):
        """A value --help shows as a flag's default passes the flag's
        checks when given back; a flag with no value says so instead."""
        p = qgmd("--help")
        self.assertEqual(p.returncode, 0, p.stderr)
        shown = [(name, m.group(1)) for name, entry in help_entries(p.stdout)
                 for m in [re.search(r"\(default: ([^()]*)\)$", entry)] if m]
        self.assertGreater(len(shown), 40)
        unset = [name for name, value in shown if value == "not set"]
        self.assertIn("straggle", unset)
        self.assertIn("metrics", unset)
        for name, value in shown:
            if value == "not set" or " " in value:  # no value, or a rule
                continue
            with self.subTest(flag=name, value=value):
                q = qgmd(f"--{name}={value}", "--show-config")
                self.assertEqual(q.returncode, 0, q.stderr)


class NoneTest(unittest.TestCase):
    def test_none_is_the_unset_pacing_flag(self):
        """--straggle=none and --device-time=none are the defaults
        written out (the words a user tries for "no straggler"); a malformed
        value is still refused, naming the flag."""
        for flag in ("--straggle=none", "--device-time=none"):
            p = qgmd(flag, "--show-config")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(flag + "\n", p.stdout)
        p = qgmd("--straggle=nobody", "--show-config")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        self.assertIn("--straggle: 'nobody' is not RANKS:FACTOR", p.stderr)


class HelpLayoutTest(unittest.TestCase):
    def test_grouped_by_category_and_wrapped(self):
        """--help groups the flags under their --show-flags category, in
        the table's order within a group, and no line passes column 79."""
        for program in (QGMD, QGMD.replace("daemon/qgmd", "tools/qgm-sim")):
            usage = subprocess.run([program, "--help"], capture_output=True,
                                   text=True).stdout
            flags = json.loads(subprocess.run(
                [program, "--show-flags=json"], capture_output=True,
                text=True).stdout)["flags"]
            for line in usage.splitlines():
                self.assertLessEqual(len(line), 79, line)
            heading, under = None, {}
            for line in usage.splitlines():
                m = re.match(r"([a-z]+) flags \(", line)
                if m:
                    heading = m.group(1)
                m = re.match(r"  --([a-z0-9-]+)=[A-Z]+(?: |$)", line)
                if m and m.group(1) != "flagfile":
                    under.setdefault(heading, []).append(m.group(1))
            expect = {}
            for f in flags:
                expect.setdefault(f["category"], []).append(f["name"])
            self.assertEqual(under, expect, program)
