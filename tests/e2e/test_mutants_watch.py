"""How often the monitor's hot path looks for a viewer's request, a cost a
mutation audit found unchecked (make mutate): at most once a tenth of a
second (LOOK_EVERY_NS in monitor/watch.c), however many calls come, and
never at a system call per allocation.  Seen with strace, the looks being
the fstatat calls on the request's name."""

from __future__ import annotations

import itertools
import os
import subprocess
from pathlib import Path

import pytest

from e2e_support import Targets, monitor_env
from mprof.reducer import datafile

BLOCKS = 20000
SIZE = 64 << 10


@pytest.mark.slow
def test_the_hot_path_looks_for_a_request_at_most_once_a_tenth_of_a_second(targets: Targets,
                                                                          tmp_path: Path) -> None:
    program = targets.build("watch_looks")
    output, trace = tmp_path / "out.mprof", tmp_path / "trace"
    # The monitor's settings for the program alone, not for strace.
    env = monitor_env(output)
    settings = [f"-E{name}={env.pop(name)}" for name in ("LD_PRELOAD", "MPROF_OUTPUT")]
    subprocess.run(["strace", "-f", "-ttt", "-qq", "-o", trace, "-e", "trace=newfstatat,stat,lstat,statx",
                    *settings, program], env=env, check=True, timeout=300)
    summary = datafile.read(output).summary
    assert (summary.allocs, summary.frees, summary.bytes_allocated) == (BLOCKS, BLOCKS, BLOCKS * SIZE)
    # The first of the places a request may be in, looked at first on every
    # look: the user's runtime directory (root's under /run).
    first = "/run/mprof/" if os.geteuid() == 0 else f"/run/user/{os.geteuid()}/"
    looks = [float(line.split()[1]) for line in trace.read_text().splitlines()
             if f'"{first}mprof-watch.' in line]
    assert looks, trace.read_text()[-2000:]
    # The coarse clock the hot path reads moves a few milliseconds at a time.
    gaps = [later - earlier for earlier, later in itertools.pairwise(looks)]
    assert [gap for gap in gaps if gap < 0.05] == [], (len(looks), min(gaps))
