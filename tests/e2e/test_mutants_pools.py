"""Pool announcements a mutation audit found unchecked (make mutate): a
pool made with a NULL anchor is none, a NULL object is no object,
objects announced in two pools by turns each go to their own, and so do
those of a pool made again where one was destroyed; a long name is kept to
the 55 bytes libmprof(3) says.  The
targets' sources say what they announce."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from e2e_support import REPO_ROOT, Run, Targets, monitor_env, mprof

MONITOR_HEADERS = f"-I{REPO_ROOT / 'monitor'}"


@pytest.mark.slow
def test_a_null_anchor_or_object_is_not_counted(targets: Targets, profile: Callable[..., Run]) -> None:
    """tests/targets/pool_nulls.c."""
    run = profile([targets.build("pool_nulls", MONITOR_HEADERS)])
    data = run.data()
    # The malloc-like blocks' frame (no name), then the pool's.
    assert [pool.name for pool in data.pools] == ["", "real"]
    assert (data.summary.allocs, data.summary.frees, data.summary.pool_alloc_calls) == (5, 1, 5)
    text = mprof("report", "--no-pager", "--tables", "direct", "--all", run.output).stdout
    assert direct_rows(text) == {"[malloc-like blocks]": (96, 96, 3), "[pool real]": (32, 16, 2)}, text


def direct_rows(text: str) -> dict[str, tuple[int, int, int]]:
    """Allocated bytes, kept bytes and calls of each frame of the direct
    allocation table, read at the columns its header puts them in (each
    figure is right-aligned under its heading)."""
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("% mem"))
    ends = [header.index(label) + len(label) for label in ("bytes", "bytes kept", "calls")]
    rows = {}
    for line in lines:
        if match := re.search(r"  (\[[^]]+\])", line):
            allocated, kept, calls = (int(line[:end].split()[-1].replace(",", "")) for end in ends)
            rows[match[1]] = (allocated, kept, calls)
    return rows


@pytest.mark.slow
def test_objects_announced_in_two_pools_by_turns_go_each_to_its_own(targets: Targets,
                                                                     profile: Callable[..., Run]) -> None:
    """tests/targets/pools_alternate.c."""
    run = profile([targets.build("pools_alternate", MONITOR_HEADERS)])
    summary = run.data().summary
    assert (summary.allocs, summary.frees, summary.pool_alloc_calls, summary.unknown_frees) == (10, 4, 10, 0)
    text = mprof("report", "--no-pager", "--tables", "direct", "--all", run.output).stdout
    assert direct_rows(text) == {"[pool even]": (200, 168, 5), "[pool odd]": (240, 192, 5)}, text


@pytest.mark.slow
def test_a_pool_made_again_at_a_destroyed_ones_anchor_takes_its_own_objects(
        targets: Targets, profile: Callable[..., Run]) -> None:
    """tests/targets/pool_remade.c."""
    run = profile([targets.build("pool_remade", MONITOR_HEADERS)])
    summary = run.data().summary
    assert (summary.allocs, summary.frees, summary.pool_alloc_calls) == (4, 1, 4)
    text = mprof("report", "--no-pager", "--tables", "direct", "--all", run.output).stdout
    assert direct_rows(text) == {"[pool first]": (16, 0, 1), "[pool second]": (64, 64, 2),
                                 "[pool other]": (8, 8, 1)}, text


@pytest.mark.slow
def test_a_pool_name_is_kept_to_its_first_55_bytes(targets: Targets, profile: Callable[..., Run]) -> None:
    """tests/targets/pool_long_name.c."""
    run = profile([targets.build("pool_long_name", MONITOR_HEADERS)])
    assert [pool.name for pool in run.data().pools] == ["a" * 54 + "b"]


@pytest.mark.slow
def test_pool_announcements_at_the_edges(targets: Targets, profile: Callable[..., Run]) -> None:
    """tests/targets/pool_edges.c: auto-free and trim by their ranges'
    bounds, a pool never created, an empty backing bracket, an anchor
    holding its pool's first object at its start, and NULLs."""
    data = profile([targets.build("pool_edges", MONITOR_HEADERS)]).data()
    assert [pool.name for pool in data.pools] == ["meta", "", "trimmed", "", "carved"]
    figures = ("allocs", "bytes_allocated", "frees", "bytes_freed", "pool_alloc_calls", "pool_free_calls",
               "unknown_frees", "free_null", "pool_resets", "backing_blocks", "backing_bytes", "backing_frees",
               "backing_bytes_freed")
    assert {name: data.summary[name] for name in figures} == {
        "allocs": 12, "bytes_allocated": 468, "frees": 4, "bytes_freed": 160, "pool_alloc_calls": 13,
        "pool_free_calls": 2, "unknown_frees": 1, "free_null": 0, "pool_resets": 2, "backing_blocks": 3,
        "backing_bytes": 768, "backing_frees": 1, "backing_bytes_freed": 256}


@pytest.mark.slow
def test_a_pool_made_again_under_its_name_finds_its_frame_among_many(targets: Targets,
                                                                      profile: Callable[..., Run]) -> None:
    """tests/targets/pool_names_again.c: 1,000 names in the frames' index
    (nearly half full, at 2,048 slots, so that many a frame lies
    past its hash's own slot), each looked up again."""
    data = profile([targets.build("pool_names_again", MONITOR_HEADERS)]).data()
    assert [pool.name for pool in data.pools] == [f"q{i:04d}" for i in range(1000)]
    assert (data.summary.allocs, data.summary.pool_alloc_calls, data.summary.pool_resets) == (2000, 2000, 1000)


@pytest.mark.slow
def test_every_frame_is_found_again_after_the_frames_index_grew_many_times(
        targets: Targets, profile: Callable[..., Run]) -> None:
    """tests/targets/pool_names_again.c with 70,000 names: the frames' index
    (1,024 slots at first, doubled whenever it would be more than half
    full) grows eight times while it holds frames, from 1,024 slots to
    262,144, and each time every frame it held must be placed anew, that
    of its first slot too (there at about every other growth, by the
    hashes of the names and of where the program lies).  The second round
    finds each name's frame: still 70,000 frames."""
    pools = 70_000
    data = profile([targets.build("pool_names_again", MONITOR_HEADERS), str(pools)]).data()
    names = [pool.name for pool in data.pools]
    assert len(names) == pools and names == [f"q{i:04d}" for i in range(pools)]
    assert (data.summary.allocs, data.summary.pool_alloc_calls, data.summary.pool_resets) == (2 * pools, 2 * pools,
                                                                                              pools)


def pool_early_user(targets: Targets) -> Path:
    """tests/targets/pool_early_user.c, linked with the library
    tests/targets/pool_early.c, whose constructor makes its pools."""
    library = targets.build("libpool_early.so", MONITOR_HEADERS, source="pool_early.c", shared=True)
    return targets.build("pool_early_user", str(library), f"-Wl,-rpath,{library.parent}")


@pytest.mark.slow
def test_a_pool_made_before_the_monitor_started_is_counted(targets: Targets, profile: Callable[..., Run]) -> None:
    """The library's constructor runs before libmprof's, and its pool's
    creation is the first call the monitor sees, which starts it: the pool
    keeps its name, and its 3 objects of 24 bytes made there are counted
    with main's 5 of 40 bytes."""
    run = profile([pool_early_user(targets)])
    data = run.data()
    assert [pool.name for pool in data.pools] == ["early pool", "scratch"]
    assert (data.summary.allocs, data.summary.pool_alloc_calls) == (8, 8)
    text = mprof("report", "--no-pager", "--tables", "direct", "--all", run.output).stdout
    assert direct_rows(text) == {"[pool early pool]": (3 * 24 + 5 * 40, 3 * 24 + 5 * 40, 8)}, text


@pytest.mark.slow
def test_pool_calls_of_fork_handlers_that_run_while_the_monitor_forks(targets: Targets, tmp_path: Path) -> None:
    """pool_early_user fork: the library's fork handlers were registered
    before the monitor's, so they run inside the monitor's (after its
    preparation, before its parent's and child's), while it holds its locks
    and records nothing; their calls, the scratch pool's destruction and
    creation, must not wait for those locks (the program would hang).  The
    scratch pool is empty at the fork, so the figures are the same whether
    the calls count or not: both processes take and give back 2 objects of
    16 bytes from it, the child 1 more of 40 bytes from the early pool."""
    output = tmp_path / "out.mprof"
    try:
        # Well within mutate_monitor.py's limit for pools.c, so that a hang
        # fails here.
        subprocess.run([pool_early_user(targets), "fork"], env=monitor_env(output), check=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the program hung in fork()")
    run = Run(subprocess.CompletedProcess([], 0), output)
    [child_file] = [path for path in run.output.parent.iterdir() if path.name.startswith(run.output.name + ".")]
    parent, child = run.data().summary, run.data(child_file).summary
    assert (parent.allocs, parent.frees, parent.pool_alloc_calls, parent.pool_free_calls) == (10, 2, 10, 2)
    assert (child.allocs, child.frees, child.pool_alloc_calls, child.pool_free_calls) == (3, 2, 3, 2)
    rows = {name: direct_rows(mprof("report", "--no-pager", "--tables", "direct", "--all", path).stdout)
            for name, path in (("parent", run.output), ("child", child_file))}
    assert rows == {"parent": {"[pool early pool]": (272, 272, 8), "[pool scratch]": (32, 0, 2)},
                    "child": {"[pool early pool]": (40, 40, 1), "[pool scratch]": (32, 0, 2)}}
