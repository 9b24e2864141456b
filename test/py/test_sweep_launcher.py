"""The launcher: mpirun on this machine by default, a hostfile and more
mpirun arguments, or a whole command template; and the one list of Open
MPI settings that the Makefile and the sweep share."""

import os
import subprocess
import unittest

from support import QGMD, ROOT, TempDirTest, write
from sweeplib import environment, launcher
from sweeplib.errors import UsageError

FLAGS = ["--alpha=0.1", "--metrics=/runs/a/metrics.jsonl"]


class LauncherTest(TempDirTest):
    def test_default_is_mpirun_on_this_machine(self):
        self.assertEqual(launcher.choose().command("4", "/bin/qgmd", FLAGS, "/runs/a"),
                         ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", "4",
                          "/bin/qgmd", *FLAGS])

    def test_hostfile_and_mpirun_arguments_go_before_the_ranks(self):
        write(self.path("hosts"), "node1 slots=16\n")
        chosen = launcher.choose(
            hostfile=self.path("hosts"),
            mpirun_args="--mca btl self,vader,tcp --mca btl_tcp_if_include eth0")
        self.assertEqual(chosen.command("32", "qgmd", FLAGS, "/runs/a"),
                         ["mpirun", "--oversubscribe", "--bind-to", "none",
                          "--hostfile", self.path("hosts"), "--mca", "btl", "self,vader,tcp",
                          "--mca", "btl_tcp_if_include", "eth0", "-np", "32", "qgmd", *FLAGS])

    def test_template_placeholders(self):
        chosen = launcher.choose(template="srun -n {np} --chdir={dir} '{qgmd}' {flags} --x={np}")
        self.assertEqual(chosen.command("8", "/opt/q gmd", FLAGS, "/runs/a"),
                         ["srun", "-n", "8", "--chdir=/runs/a", "/opt/q gmd", *FLAGS, "--x=8"])

    def test_bad_templates(self):
        for template, message in (
                ("srun -n {np} {qgmd} {flags} {nodes}", "unknown placeholder '{nodes}'"),
                ("srun -n {np} {qgmd}", "the template needs {flags}"),
                ("srun {qgmd} {flags}", "the template needs {np}"),
                ("srun -n {np} {qgmd} --{flags}", "{flags} must be a word of its own"),
                ("srun -n {np} '{qgmd} {flags}", "No closing quotation")):
            with self.subTest(template=template):
                with self.assertRaises(UsageError) as raised:
                    launcher.choose(template=template)
                self.assertIn(message, str(raised.exception))
        with self.assertRaises(UsageError):
            launcher.choose(hostfile=self.path("no-such-hostfile"))

    def test_dry_run_shows_the_chosen_command_and_bad_choices_exit_2(self):
        grid = self.path("g.grid")
        write(grid, "np = 2\nalpha = 1\n")
        status, out, err = self.sweep("--dry-run", "-o", self.path("s"), "--launcher",
                                      "srun -n {np} {qgmd} {flags}", grid)
        self.assertEqual(status, 0, err)
        command = out.splitlines()[1].split()
        self.assertEqual(command[:4], ["srun", "-n", "2", QGMD])
        self.assertEqual(command[4], "--alpha=1")
        self.assertTrue(command[5].startswith(f"--metrics={self.path('s', 'runs')}/"))
        write(self.path("hosts"), "localhost slots=2\n")
        status, _, err = self.sweep("--dry-run", "--launcher", "srun -n {np} {qgmd} {flags}",
                                    "--hostfile", self.path("hosts"), grid)
        self.assertEqual(status, 2)
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertIn("--launcher replaces mpirun", err)
        status, _, err = self.sweep("--dry-run", "--hostfile", self.path("nope"), grid)
        self.assertEqual((status, err), (2, f"sweep: --hostfile {self.path('nope')}: "
                                            "cannot read the file (see --help)\n"))


class EnvironmentTest(unittest.TestCase):
    def test_root_lines_only_as_root(self):
        user = environment.settings(is_root=False)
        root = environment.settings(is_root=True)
        self.assertEqual(user["OMPI_MCA_btl"], "self,vader")
        self.assertNotIn("OMPI_ALLOW_RUN_AS_ROOT", user)
        self.assertEqual({k: v for k, v in root.items() if k not in user},
                         {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})

    def test_the_makefile_exports_the_same_list(self):
        p = subprocess.run(["make", "-s", "--no-print-directory",
                            "--eval=show-mpi-env: ; @env", "show-mpi-env"],
                           cwd=ROOT, capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items()
                                if k not in environment.settings(is_root=True)})
        self.assertEqual(p.returncode, 0, p.stderr)
        exported = dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)
        wanted = environment.settings()
        self.assertEqual({k: exported.get(k) for k in wanted}, wanted)

    def test_the_callers_settings_win(self):
        env = {"OMPI_MCA_btl": "self,tcp"}
        environment.apply_defaults(env)
        self.assertEqual(env["OMPI_MCA_btl"], "self,tcp")
        self.assertEqual(env["OMPI_MCA_pml"], "ob1")


if __name__ == "__main__":
    unittest.main()
