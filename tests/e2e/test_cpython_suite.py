"""A real program's own test suite gives the same results with and without
`mprof run`: CPython's regression tests of subprocess, signals and threads
(Debian's libpython3.11-testsuite), which fork, exec, vfork, install
handlers, send signals and read their children's output.  Each test's
outcome is compared, from regrtest's JUnit report."""

from __future__ import annotations

import os
import signal
import subprocess
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from e2e_support import MPROF

pytestmark = pytest.mark.slow

PYTHON = "/usr/bin/python3.11"
# Classes that run in seconds and need neither network nor terminal.
SUITE = ["test_subprocess", "test_signal", "test_threading",
         "-m", "POSIXProcessTestCase",                        # fork, exec, vfork, pipes, signals to children
         "-m", "PosixTests", "-m", "PendingSignalsTests",     # handlers, sigaction, pending and blocked signals
         "-m", "RaiseSignalTest", "-m", "WakeupSignalTests",
         "-m", "ThreadTests", "-m", "ThreadJoinOnShutdown"]   # threads, fork with threads, exit with threads


def outcomes(report: Path) -> dict[str, str]:
    found = {}
    for case in ElementTree.parse(report).iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        found[str(case.get("name"))] = kinds[0] if kinds else "passed"  # module.Class.test
    return found


def _default_interrupts() -> None:
    """The suite's SIGINT tests need SIGINT's default action, which a shell
    that started the tests in the background (as nohup, or `make check &`)
    leaves ignored for them."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def run_suite(prefix: list[str], directory: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    directory.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_") and k != "LD_PRELOAD"}
    report = directory / "junit.xml"
    completed = subprocess.run([*prefix, PYTHON, "-m", "test", "--junit-xml", str(report), *SUITE], cwd=directory,
                               env=env, capture_output=True, text=True, timeout=600, preexec_fn=_default_interrupts)
    return completed, outcomes(report)


def test_cpython_subprocess_signal_and_threading_tests(tmp_path: Path) -> None:
    assert Path("/usr/lib/python3.11/test/test_subprocess.py").is_file(), "make check installs libpython3.11-testsuite"
    plain, expected = run_suite([], tmp_path / "plain")
    profiled, seen = run_suite([str(MPROF), "run", "-o", str(tmp_path / "run" / "py.mprof")], tmp_path / "run")
    assert plain.returncode == 0, plain.stdout[-3000:]
    assert len(expected) > 140 and list(expected.values()).count("passed") > 130
    assert seen == expected
    assert profiled.returncode == 0
    # The monitor wrote nothing into the output the tests read; mprof run's
    # own list comes after the suite's last line.
    assert "Tests result: SUCCESS" in profiled.stdout
    assert "mprof: the run wrote " in profiled.stderr
    files = list((tmp_path / "run").glob("py.mprof*"))
    assert (tmp_path / "run" / "py.mprof") in files and len(files) > 50
