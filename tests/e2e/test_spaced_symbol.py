"""A C symbol with a space in it (`leaky_function free`, an assembler
name) is a whole name: no report cuts it at the space as it cuts a C++
template function's return type, so it never reads as `free`."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

from e2e_support import REPO_ROOT, monitor_env, mprof

pytestmark = pytest.mark.slow

NAME = "leaky_function free"


def test_a_name_with_a_space_is_shown_whole(tmp_path: Path) -> None:
    # Without -g: the name comes from the ELF symbol table, as it is.
    program = tmp_path / "spaced"
    subprocess.run(["gcc", "-O0", "-fno-builtin", "-o", program, REPO_ROOT / "tests" / "targets" / "spaced_symbol.c"],
                   check=True)
    profile = tmp_path / "spaced.mprof"
    subprocess.run([program], env=monitor_env(profile), check=True)
    text = mprof("report", profile).stdout
    # The whole paths of the peak and of the leaks, in the glance and in their tables.
    assert text.count(f"main > {NAME}\n") == 4
    direct = text[text.index("Direct allocation"):]
    assert f"  {NAME}\n" in direct and "  free\n" not in direct
    report = json.loads(mprof("report", "--format", "json", profile).stdout)
    assert [row["function"] for row in report["direct"]] == [NAME]
    mprof("export", "--format", "collapsed", "-o", tmp_path / "stacks.txt", profile)
    assert (tmp_path / "stacks.txt").read_text() == f"main;{NAME} 300\n"
    mprof("export", "--format", "pprof", "-o", tmp_path / "profile.pb.gz", profile)
    strings = gzip.decompress((tmp_path / "profile.pb.gz").read_bytes())
    assert NAME.encode() in strings and b"\x04free" not in strings
