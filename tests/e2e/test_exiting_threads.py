"""Allocations after the monitor let go of a thread's own aggregates: the
destructors of the program's thread-specific data, run by several exiting
threads at once, all counting in the one state they share."""

from __future__ import annotations

from collections.abc import Callable

from e2e_support import Run, Targets
from test_unwinder import OPTIMISED, leak_paths

THREADS = 8
BLOCKS = 500  # kept by each thread's destructor


def test_threads_exiting_at_once_keep_their_own_chains(targets: Targets, profile: Callable[..., Run]) -> None:
    run = profile([targets.build("exiting_threads", *OPTIMISED)])
    kept: dict[str, tuple[int, int]] = {}
    for path, (objects, size) in leak_paths(run.output).items():
        if "keep" in path:
            # From forget in, the frames are the program's; above it, the C
            # library's way of calling destructors.
            ending = path[path.index("forget"):] if "forget" in path else path
            before = kept.get(ending, (0, 0))
            kept[ending] = (before[0] + objects, before[1] + size)
    # Half the threads keep 48-byte blocks two frames deeper than the other
    # half's 24-byte ones; a chain walked by one thread and counted by
    # another (they shared one buffer) made paths like "deeper > keep >
    # malloc > recorded > monitor_alloc" or "forget > deep > forget > keep".
    half = THREADS // 2 * BLOCKS
    assert kept == {"forget > deep > deeper > keep": (half, half * 48), "forget > keep": (half, half * 24)}
