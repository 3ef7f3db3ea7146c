"""mprof-inject's command line, which a mutation audit found unchecked
(make mutate): too few or too many arguments, or --helper with no file
after it, are a usage error (status 2) that touches no process."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from e2e_support import BUILD

INJECT = BUILD / "mprof-inject"
USAGE = "usage: mprof-inject [--loaded] [--helper FILE] PID LIBRARY FUNCTION [ARGUMENT]\n"


def no_process() -> str:
    """A process id no process can have: above the kernel's largest."""
    return str(int(Path("/proc/sys/kernel/pid_max").read_text()) + 1)


@pytest.mark.parametrize("arguments", [
    ["--helper"], ["--loaded", "--helper"], ["PID", "lib.so"], ["PID", "lib.so", "f", "argument", "more"],
    ["--loaded", "PID", "lib.so", "f", "argument", "more"]])
def test_a_wrong_command_line_is_a_usage_error(arguments: list[str]) -> None:
    completed = subprocess.run([INJECT, *(no_process() if a == "PID" else a for a in arguments)],
                               capture_output=True, text=True, timeout=60)
    assert (completed.returncode, completed.stdout, completed.stderr) == (2, "", USAGE)
