"""test_docs.py - what the docs show is what the code takes.

Every qgmd and qgm-sim flag that README.md and docs/*.md spell, in their
code blocks' commands and in inline code (and the commands of the man
page's EXAMPLES), passes the programs' own parser
(--show-config parses and checks, and starts nothing); every option the
commands give a tool is one its --help names; and the README's flag table
gives each flag's default as the flag table (--show-flags=json) has it and
lists every value of an enumeration. Placeholders (DIR, $c, {np}) are
checked by name only."""

import glob
import json
import os
import re
import shlex
import subprocess
import unittest

from support import ROOT, help_entries, read

DAEMON = os.path.join(ROOT, "daemon", "qgmd")
SIM = os.path.join(ROOT, "tools", "qgm-sim")
# The tools a command may name, by the word that names them.
TOOLS = {name: os.path.join(ROOT, "tools", name)
         for name in ("qgm-plot", "qgm-topo", "qgmctl", "qgm-inspect",
                      "qgm-trace-merge", "qgm-cluster", "qgm-run", "sweep",
                      "qgm-data")}
TOOLS["qgm-sweep"] = TOOLS["sweep"]
# Options of mpirun (and of qgm-cluster run, which passes them on) before
# the program.
MPIRUN_WORDS = {"mpirun", "--oversubscribe", "--bind-to", "none", "-np",
                "--hostfile", "--mca", "--map-by", "--allow-run-as-root"}
# The project's Python scripts the docs name options of (their argparse
# calls), and valgrind's options that RELIABILITY.md gives.
SCRIPTS = ("bench/peers/torch_job.py", "test/compare_builds.py")
VALGRIND = {"--leak-check", "--errors-for-leak-kinds"}


def docs():
    return [os.path.join(ROOT, "README.md")] + sorted(
        glob.glob(os.path.join(ROOT, "docs", "*.md")))


def where(path, text, at):
    return f"{os.path.relpath(path, ROOT)}:{text.count(chr(10), 0, at) + 1}"


def show_flags(program):
    out = subprocess.run([program, "--show-flags=json"], capture_output=True,
                         text=True, check=True).stdout
    return {f["name"]: f for f in json.loads(out)["flags"]}


def parse(program, flags):
    """program --show-config FLAGS: (exit status, stderr)."""
    out = subprocess.run([program, "--show-config", *flags], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    return out.returncode, out.stderr.strip()


def placeholder(value):
    """A value that stands for one (DIR, $seed, {np}, <path>, ...)."""
    return re.search(r"[A-Z$<{*`]|\.\.\.", value) is not None


def tool_options(path):
    """The --options a tool's --help names."""
    out = subprocess.run([path, "--help"], capture_output=True, text=True,
                         check=False)
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", out.stdout))


def script_options():
    found = set()
    for script in SCRIPTS:
        found |= set(re.findall(r"add_argument\(\s*\"(--[a-z][a-z0-9-]*)\"",
                                read(os.path.join(ROOT, script))))
    return found


def parse_with_needs(program, word):
    """parse() of one flag; a flag that the parser takes only with another
    ("--resume-ranks needs --resume") is given the one it names."""
    status, err = parse(program, [word])
    need = re.search(r"needs (--[a-z][a-z0-9-]*(?:=[^\s:]+)?)", err)
    if status != 0 and need:
        status, err = parse(program, [need.group(1), word])
    return status, err


def commands():
    """(where, words) of every command line of the docs' code blocks that
    runs qgmd, qgm-sim or a tool: continuations joined, comments and
    shell separators cut."""
    found = []
    for path in docs():
        text = read(path)
        for block in re.finditer(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M):
            body = block.group(1).replace("\\\n", "  ")
            offset = block.start(1)
            for line in body.splitlines(keepends=True):
                try:
                    words = shlex.split(line, comments=True)
                except ValueError:
                    words = line.split()
                command = []
                for word in words + [";"]:
                    if word in (";", "&&", "||", "|", "do", "then"):
                        if command:
                            found.append((where(path, text, offset), command))
                        command = []
                    else:
                        command.append(word)
                offset += len(line)
    return found


def man_commands():
    """(where, words) of the command lines of qgmd.1's EXAMPLES."""
    path = os.path.join(ROOT, "docs", "man", "qgmd.1.in")
    text = read(path)
    examples = text[text.index(".SH EXAMPLES"):]
    examples = examples[:examples.index(".SH SEE ALSO")]
    found = []
    for block in re.findall(r"^\.nf\n(.*?)^\.fi", examples, re.S | re.M):
        body = block.replace("\\e\n", " ").replace("\\-", "-")
        for line in body.splitlines():
            found.append((f"{os.path.relpath(path, ROOT)} EXAMPLES",
                          shlex.split(line)))
    return found


def program_of(words):
    """(kind, the words after the program) of a command: kind is 'qgmd',
    'sim', a tool's name, or None for any other command."""
    while words and re.match(r"[A-Z_]+=", words[0]):  # NAME=value cmd
        words = words[1:]
    for i, word in enumerate(words):
        base = os.path.basename(word)
        if base == "qgmd":
            return "qgmd", words[i + 1:]
        if base == "qgm-sim":
            return "sim", words[i + 1:]
        if base in TOOLS and (i == 0 or words[0] in ("nice", "sudo")
                              or words[i - 1].startswith("-n")):
            return base, words[i + 1:]
        if i == 0 and base not in ("mpirun", "nice", "sudo", "flock"):
            return None, []
    return None, []


class DocsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.flags = {"qgmd": show_flags(DAEMON), "sim": show_flags(SIM)}
        cls.options = {name: tool_options(path)
                       for name, path in TOOLS.items() if os.path.exists(path)}

    def setUp(self):
        self.problems = []

    def check_flags(self, kind, flags, at):
        """The --name=value words of one qgmd or qgm-sim command."""
        table = self.flags[kind]
        literal = []
        for word in flags:
            if not word.startswith("--"):
                continue
            name, _, value = word[2:].partition("=")
            if name in ("flagfile", "show-config", "help", "version"):
                if name == "flagfile" and not placeholder(value):
                    literal.append(word)
                continue
            if name not in table:
                self.problems.append(f"{at}: {word}: no such flag")
                continue
            if not placeholder(value):
                literal.append(word)
        status, err = parse(DAEMON if kind == "qgmd" else SIM, literal)
        if status != 0:
            self.problems.append(f"{at}: {' '.join(literal)}: {err}")

    def test_code_blocks_run_through_the_parsers(self):
        checked = {"qgmd": 0, "sim": 0, "tools": 0}
        for at, words in commands() + man_commands():
            kind, rest = program_of(words)
            if kind in ("qgmd", "sim"):
                self.check_flags(kind, rest, at)
                checked[kind] += 1
            elif kind in self.options:
                for word in rest:
                    option = word.partition("=")[0]
                    if option == "--":
                        break  # qgm-cluster run, qgm-run: mpirun's own words
                    if re.fullmatch(r"--[a-z][a-z0-9-]*", option):
                        if option not in self.options[kind]:
                            self.problems.append(f"{at}: {kind} {option}: not in its --help")
                checked["tools"] += 1
        self.assertFalse(self.problems, "\n" + "\n".join(self.problems))
        # The docs show these many commands at least (a broken extraction
        # would check none).
        self.assertGreaterEqual(checked["qgmd"], 10, checked)
        self.assertGreaterEqual(checked["sim"], 4, checked)
        self.assertGreaterEqual(checked["tools"], 5, checked)

    def test_inline_flags_parse(self):
        """`--name=value` in the prose: a flag of qgmd or qgm-sim whose
        value the parser takes, or an option some tool's --help names."""
        known_options = (set().union(*self.options.values()) | MPIRUN_WORDS |
                         script_options() | VALGRIND)
        seen = 0
        for path in docs():
            text = read(path)
            for m in re.finditer(r"`(--([a-z][a-z0-9-]*)(?:=([^`\s]*))?)[^`]*`",
                                 text):
                word, name, value = m.group(1), m.group(2), m.group(3)
                at = where(path, text, m.start())
                kind = ("qgmd" if name in self.flags["qgmd"] else
                        "sim" if name in self.flags["sim"] else None)
                if kind is None or not value or placeholder(value):
                    if not (kind or f"--{name}" in known_options
                            or name in ("flagfile", "show-config",
                                        "show-flags", "help", "version")):
                        self.problems.append(f"{at}: {word}: no program takes it")
                    continue
                # a|b: either value
                for choice in value.split("|"):
                    status, err = parse_with_needs(
                        DAEMON if kind == "qgmd" else SIM, f"--{name}={choice}")
                    if status != 0:
                        self.problems.append(f"{at}: {word}: {err}")
                    seen += 1
        self.assertFalse(self.problems, "\n" + "\n".join(self.problems))
        self.assertGreater(seen, 50)

    def test_readme_flag_table_agrees_with_the_flag_table(self):
        path = os.path.join(ROOT, "README.md")
        text = read(path)
        table = self.flags["qgmd"]
        usage = subprocess.run([DAEMON, "--help"], capture_output=True,
                               text=True, check=True).stdout
        help_default = {name: m.group(1) for name, entry in help_entries(usage)
                        for m in [re.search(r"\(default: (.*)\)$", entry)] if m}
        rows = 0
        for m in re.finditer(r"^\| (`--[^|]*)\| ([^|]*) \| (.*) \|$", text, re.M):
            names = re.findall(r"`--([a-z0-9-]+)`", m.group(1))
            default, meaning = m.group(2), m.group(3)
            at = where(path, text, m.start())
            listed = set(re.findall(r"`([^`]+)`", default + " " + meaning))
            defaults = re.findall(r"`([^`]*)`", default)
            for i, name in enumerate(names):
                if name not in table:
                    self.problems.append(f"{at}: --{name}: no such flag")
                    continue
                flag = table[name]
                if defaults:
                    shown = defaults[min(i, len(defaults) - 1)]
                    same = (shown == flag["default"] if flag["type"] == "string"
                            else float(shown) == flag["default"])
                    if not same:
                        self.problems.append(f"{at}: --{name}'s default is "
                                             f"{flag['default']!r}, the table says {shown}")
                else:  # words: no value of its own, or a rule --help says
                    if flag["default"] not in ("", "no") and \
                            help_default.get(name) == str(flag["default"]):
                        self.problems.append(f"{at}: --{name}: its default is "
                                             f"{flag['default']!r}, the table says {default}")
                for value in flag.get("values", flag.get("forms", [])):
                    if value not in listed:
                        self.problems.append(f"{at}: --{name}: the value {value} is not listed")
            rows += 1
        self.assertFalse(self.problems, "\n" + "\n".join(self.problems))
        self.assertGreater(rows, 40)


class ModelsGuideTest(unittest.TestCase):
    def test_the_worked_example_is_the_trees(self):
        """docs/MODELS.md's C blocks: the kind's file whole, and the
        declaration, the registration and the gradient test as lines of
        the files the guide puts them in."""
        blocks = re.findall(r"```c\n(.*?)```", read(os.path.join(
            ROOT, "docs", "MODELS.md")), re.S)
        self.assertEqual(len(blocks), 4)
        self.assertEqual(blocks[0], read(os.path.join(
            ROOT, "libqgm", "model", "linear.c")))
        for block, path in zip(blocks[1:], ("libqgm/model/model.h",
                                            "libqgm/model/model.c",
                                            "test/unit_cnn.c")):
            lines = read(os.path.join(ROOT, path)).splitlines()
            wanted = block.splitlines()
            starts = [i for i in range(len(lines))
                      if lines[i:i + len(wanted)] == wanted]
            self.assertEqual(len(starts), 1, f"{path}: {block}")


if __name__ == "__main__":
    unittest.main()
