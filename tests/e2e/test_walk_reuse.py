"""The walk that reuses the upper steps of the thread's last walk (issue 31):
a frame returns and another call lands at the same stack address under a
different caller, and the chain recorded is the new one, as libunwind,
which remembers nothing between walks, records it."""

from __future__ import annotations

from collections.abc import Callable

from e2e_support import Run, Targets
from test_unwinder import OPTIMISED, chains, leak_paths

TWIN_ALLOCATIONS = 300  # of each twin: 100 rounds of a, b, a, a, b, b


def test_a_slot_that_now_holds_another_caller_is_seen(targets: Targets, profile: Callable[..., Run]) -> None:
    command = [targets.build("reused_slots", *OPTIMISED)]
    rules = profile(command, name="rules.mprof", MPROF_UNWINDER="rules")
    libunwind = profile(command, name="libunwind.mprof", MPROF_UNWINDER="libunwind")
    paths = leak_paths(rules.output)
    # Each twin's own size, all of it under its own path.
    for twin, size, under in (("near_a", 101, "mid"), ("near_b", 102, "mid"),
                              ("far_a", 103, "upper > mid"), ("far_b", 104, "upper > mid")):
        assert paths[f"main > {twin} > {under} > leaf"] == (TWIN_ALLOCATIONS, TWIN_ALLOCATIONS * size)
    assert chains(rules.data()) == chains(libunwind.data())
    assert rules.data().summary.truncated_chains == 0


def test_chains_cut_at_the_depth_limit_are_cut_where_libunwind_cuts_them(targets: Targets,
                                                                           profile: Callable[..., Run]) -> None:
    # recursive(20) and recursive(21) chains are 24 and 25 frames: past 10,
    # the last walk's steps end at the limit, and the next walk, one frame
    # deeper or shallower, stops at another frame.
    command = [targets.build("reused_slots", *OPTIMISED)]
    rules = profile(command, name="rules.mprof", MPROF_UNWINDER="rules", MPROF_DEPTH="10")
    libunwind = profile(command, name="libunwind.mprof", MPROF_UNWINDER="libunwind", MPROF_DEPTH="10")
    assert chains(rules.data()) == chains(libunwind.data())
    assert rules.data().summary.truncated_chains == libunwind.data().summary.truncated_chains == 100
