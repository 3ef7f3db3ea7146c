"""tests/targets/losing_server.c under the monitor, for the tests of watching
its leak kinds: started, its lines read, and ended as it ends."""

from __future__ import annotations

import select
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from e2e_support import Targets, monitor_env

# Its blocks while it waits, by path: the blocks and bytes of each leak kind
# (definite, indirect, possible, reachable), as memcheck would classify them.
KINDS = {
    ("main", "lose_buffers", "drop_buffer"): (5, 1000, 0, 0, 0, 0, 0, 0),
    ("main", "lose_list", "list_node"): (1, 64, 4, 256, 0, 0, 0, 0),
    ("main", "keep_and_point_inside", "middle_block"): (0, 0, 0, 0, 1, 100, 0, 0),
    ("main", "keep_and_point_inside", "keep_entry"): (0, 0, 0, 0, 0, 0, 30, 960),
}


def line_of(process: subprocess.Popen[str]) -> str:
    """The program's next line; the bound only catches a hang."""
    assert process.stdout is not None
    assert select.select([process.stdout], [], [], 60)[0], "no line from the program"
    return process.stdout.readline()


@contextmanager
def losing_server(targets: Targets, output: Path, **settings: str) -> Iterator[subprocess.Popen[str]]:
    """The program, once it has lost its blocks ("ready"); told to end at
    the end of the block, which it must do with status 0 (killed if the
    block failed)."""
    program = subprocess.Popen([targets.build("losing_server")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, env=monitor_env(output, **settings))
    try:
        assert line_of(program) == "ready\n"
        yield program
        assert program.stdin is not None
        program.stdin.close()
        assert program.wait(timeout=60) == 0
    finally:
        if program.poll() is None:
            program.kill()
            program.communicate()
