"""The tree's launcher, ./mprof: what mprof run imports to start a program,
what a tree built by a plain `make` (no venv) does, and the command line
as each command's module registers it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from e2e_support import BUILD, MPROF, REPO_ROOT
from mprof.reducer import datafile

ENTRY = REPO_ROOT / "src" / "mprof" / "cli" / "entry.py"
COMMANDS = ["run", "report", "html", "diff", "export", "db", "dump", "replay", "top", "attach", "detach"]


def test_mprof_run_imports_only_what_starting_a_program_needs(tmp_path: Path) -> None:
    # Each import is time added to every profiled program's start; the
    # reducer, the reports and Jinja2 wait for the commands that use them.
    # The modules are those loaded when mprof run forks the program.
    modules = tmp_path / "modules"
    launch = f"""
import sys
def at_fork(event, arguments):
    if event == "os.fork":
        with open({str(modules)!r}, "w") as listing:
            listing.write("\\n".join(sorted(sys.modules)))
sys.addaudithook(at_fork)
sys.argv = [{str(ENTRY)!r}, "run", "--quiet", "-o", "t.mprof", "/bin/true"]
entry = {str(ENTRY)!r}
exec(compile(open(entry).read(), entry, "exec"), {{"__name__": "__main__", "__file__": entry}})
"""
    completed = subprocess.run([sys.executable, "-c", launch], cwd=tmp_path, capture_output=True, text=True,
                               timeout=60)
    assert (completed.returncode, completed.stderr) == (0, "")
    imported = set(modules.read_text().split("\n"))
    assert sorted(name for name in imported if name.startswith("mprof")) == [
        "mprof", "mprof.cli", "mprof.cli.arguments", "mprof.cli.main", "mprof.cli.pushing", "mprof.cli.run",
        # mprof.leak_kinds: the leak kinds' names, for --fail-on-leak-kinds, constants alone.
        "mprof.cli.run_record", "mprof.cli.run_settings", "mprof.leak_kinds", "mprof.reducer", "mprof.reducer.errors",
        "mprof.reducer.escape", "mprof.source_tree"]
    assert imported & {"dataclasses", "inspect", "typing", "tempfile", "sqlite3", "jinja2", "unicodedata"} == set()
    assert datafile.read(tmp_path / "t.mprof").header.final


def test_help_names_every_command() -> None:
    completed = subprocess.run([MPROF, "--help"], capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0
    listed = re.findall(r"^    (\w+) +\S", completed.stdout, re.MULTILINE)
    assert listed == COMMANDS


def test_a_commands_own_help_and_usage_errors() -> None:
    completed = subprocess.run([MPROF, "run", "--help"], capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0
    assert completed.stdout.startswith("usage: mprof run [-h] [-o FILE] ")
    assert "--fail-on-leak [BYTES]" in completed.stdout and "--suppressions FILE" in completed.stdout
    # argparse's status for a usage error, as mprof(1) says.
    wrong = subprocess.run([MPROF, "run", "--no-such-option", "/bin/true"], capture_output=True, text=True,
                           timeout=60)
    assert (wrong.returncode, wrong.stdout) == (2, "")
    # The command's usage and name, not the top level's.
    assert wrong.stderr.startswith("usage: mprof run [-h] ")
    assert wrong.stderr.endswith("mprof run: error: unrecognized arguments: --no-such-option\n")


def test_short_quiet_and_a_bare_gate_before_the_program(tmp_path: Path) -> None:
    """-q is --quiet; a bare --fail-on-leak before the program takes no -- after it, and the program's own words,
    the same option among them, are its own."""
    completed = subprocess.run([MPROF, "run", "-q", "-o", tmp_path / "echo.mprof", "--fail-on-leak", "/bin/echo",
                                "--fail-on-leak", "x"], capture_output=True, text=True, timeout=120)
    assert (completed.returncode, completed.stdout) == (0, "--fail-on-leak x\n")
    assert "wrote" not in completed.stderr and (tmp_path / "echo.mprof").is_file()
    unknown = subprocess.run([MPROF, "frobnicate"], capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2 and "invalid choice: 'frobnicate'" in unknown.stderr


def tree_without_venv(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A tree as a plain `make` leaves it: the launcher, the package and the
    build, no .venv; and an environment whose python3 has no Jinja2 (the
    interpreter without its site-packages)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "mprof").write_bytes(MPROF.read_bytes())
    (tree / "mprof").chmod(0o755)
    (tree / "src").symlink_to(REPO_ROOT / "src")
    (tree / "build").symlink_to(BUILD)
    bin_directory = tmp_path / "bin"
    bin_directory.mkdir()
    (bin_directory / "python3").write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    (bin_directory / "python3").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_") and k != "LD_PRELOAD"}
    env["PATH"] = f"{bin_directory}:{env.get('PATH', '/usr/bin:/bin')}"
    return tree / "mprof", env


@pytest.mark.slow
def test_without_the_venv_run_and_report_work_and_html_says_what_to_run(tmp_path: Path) -> None:
    launcher, env = tree_without_venv(tmp_path)
    lacks = subprocess.run(["python3", "-c", "import jinja2"], env=env, capture_output=True, text=True)
    assert "No module named 'jinja2'" in lacks.stderr
    # Relative to the working directory, as `./mprof` is typed in the tree.
    ran = subprocess.run(["./mprof", "run", "-o", "w.mprof", BUILD / "widgets", "100"], cwd=launcher.parent, env=env,
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr.startswith("mprof: the run wrote 1 data file:\n")
    data = launcher.parent / "w.mprof"
    reported = subprocess.run([launcher, "report", "--tables", "summary", data], env=env, capture_output=True,
                              text=True, timeout=120)
    assert reported.returncode == 0, reported.stderr
    assert "allocations   100 blocks, 20,400 bytes, 204.0 bytes on average" in reported.stdout
    line = ("mprof: the HTML report needs the Jinja2 Python package: install python3-jinja2, or run `make venv` "
            "for ./mprof\n")
    for command in (["html", data, "-o", tmp_path / "w.html"], ["diff", "--html", tmp_path / "d.html", data, data]):
        page = subprocess.run([launcher, *command], env=env, capture_output=True, text=True, timeout=120)
        assert (page.returncode, page.stdout, page.stderr) == (1, "", line)
    assert not (tmp_path / "w.html").exists() and not (tmp_path / "d.html").exists()
