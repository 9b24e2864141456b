"""make layer-check (tools/layer-check): every rule passes on the tree and
fails, naming the file and line, when a violation of it is planted in a
copy of the tree's sources."""

import os
import shutil
import subprocess
import unittest

from support import ROOT, TempDirTest

CHECK = os.path.join(ROOT, "tools", "layer-check")
# What the rules read: the C sources of every layer.
PARTS = ["include", "libqgm", "job", "daemon", "tools", "bench"]


def sources(directory, names):
    """shutil.copytree's ignore: keeps folders and C sources only."""
    return [n for n in names if not os.path.isdir(os.path.join(directory, n))
            and not n.endswith((".c", ".h"))]


class LayerCheckTest(TempDirTest):
    def setUp(self):
        super().setUp()
        for part in PARTS:
            shutil.copytree(os.path.join(ROOT, part), self.path(part),
                            ignore=sources)

    def check(self):
        p = subprocess.run([CHECK, self.tmp], capture_output=True, text=True)
        return p.returncode, p.stderr

    def plant(self, rel, text):
        """Appends text to rel (created if missing); returns the line of
        text's first line."""
        path = self.path(rel)
        before = ""
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                before = f.read()
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)
        return before.count("\n") + 1

    def assert_refused(self, rel, text, why):
        line = self.plant(rel, text)
        rc, err = self.check()
        self.assertEqual(rc, 1, err)
        self.assertIn(f"layer-check: {rel}:{line}: ", err)
        self.assertIn(why, err)
        self.assertEqual(len(err.splitlines()), 1, err)

    def test_the_clean_tree_passes(self):
        rc, err = self.check()
        self.assertEqual((rc, err), (0, ""))

    def test_library_internals_outside_the_library(self):
        for rel in ("daemon/planted.c", "job/planted.h", "tools/sim/planted.c"):
            with self.subTest(rel=rel):
                self.assert_refused(rel, '#include "../libqgm/core/vec.h"\n',
                                    "only include/qgm.h")
                os.remove(self.path(rel))

    def test_tools_include_no_daemon_header(self):
        # The path qgm-inspect took before the layout moved to job/.
        self.assert_refused("tools/qgm-inspect.c",
                            '#include "../daemon/checkpoint_layout.h"\n',
                            "includes no daemon header")

    def test_benchmarks_include_no_daemon_header_by_name(self):
        self.assert_refused("bench/optim.c", '#include "mpi_util.h"\n',
                            '"mpi_util.h" is the daemon\'s')

    def test_tools_may_include_the_job_layer(self):
        self.plant("tools/qgm-topo.c", '#include "job.h"\n')
        self.assertEqual(self.check(), (0, ""))

    def test_job_layer_has_no_mpi_and_no_libuv(self):
        for header in ("<mpi.h>", '"uv.h"'):
            with self.subTest(header=header):
                self.assert_refused("job/planted.c", f"#include {header}\n",
                                    "free of MPI and libuv")
                os.remove(self.path("job/planted.c"))

    def test_job_layer_includes_no_daemon_header(self):
        self.assert_refused("job/job.h", '#include "log.h"\n',
                            "the job layer is below the daemon")

    def test_library_has_no_network(self):
        self.assert_refused("libqgm/core/vec.c", "#include <mpi.h>\n",
                            "never talks to the network")

    def test_library_never_prints_or_exits(self):
        for code in ('fprintf(stderr, "x");', "exit(1);", 'puts("x");',
                     "abort ();", 'printf("%d", 1);'):
            with self.subTest(code=code):
                shutil.copy(os.path.join(ROOT, "libqgm/core/vec.c"),
                            self.path("libqgm/core/vec.c"))
                self.assert_refused("libqgm/core/vec.c",
                                    "void planted(void) { " + code + " }\n",
                                    "never prints and never exits")

    def test_comments_strings_and_formats_are_no_calls(self):
        self.plant("libqgm/core/vec.c",
                   "/* callers printf the error, then exit(2) */\n"
                   "// abort() is theirs\n"
                   'static const char planted[] = "exit(1) to stderr";\n'
                   "int planted_fmt(const char *f, ...) "
                   "__attribute__((format(printf, 1, 2)));\n")
        self.assertEqual(self.check(), (0, ""))

    def test_the_rank_services_do_not_include_node_h(self):
        self.assert_refused("daemon/report.c", '#include "node.h"\n',
                            "include rank.h")

    def test_asynchronous_ranks_hold_no_gossip_node(self):
        self.assert_refused("daemon/async_worker.c",
                            "static qgmd_node_t *planted;\n",
                            "qgmd_node_t: an asynchronous rank holds no gossip node")

    def test_asynchronous_ranks_hold_no_exchange(self):
        for code in ('#include "exchange.h"\n', "static qgmd_exchange_t *planted;\n"):
            with self.subTest(code=code):
                shutil.copy(os.path.join(ROOT, "daemon/async_server.c"),
                            self.path("daemon/async_server.c"))
                self.assert_refused("daemon/async_server.c", code,
                                    "no gossip node and no exchange")

    def test_asynchronous_comments_may_name_the_node(self):
        self.plant("daemon/async.h", "/* unlike qgmd_node_t (node.h) */\n")
        self.assertEqual(self.check(), (0, ""))


class MakeLayerCheckTest(TempDirTest):
    def make(self, *args):
        return subprocess.run(["make", "--no-print-directory", "layer-check", *args],
                              capture_output=True, text=True, cwd=ROOT)

    def test_the_tree_passes(self):
        p = self.make()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("asynchronous mode names no gossip node", p.stdout)

    def test_a_violation_fails_make(self):
        for part in PARTS:
            shutil.copytree(os.path.join(ROOT, part), self.path(part),
                            ignore=sources)
        with open(self.path("tools/qgmctl.c"), "a", encoding="utf-8") as f:
            f.write('#include "../daemon/control.h"\n')
        p = self.make(f"LAYER_ROOT={self.tmp}")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("layer-check: tools/qgmctl.c:", p.stderr)


if __name__ == "__main__":
    unittest.main()
