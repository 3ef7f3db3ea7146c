"""The monitor's leak scan (issue 49) as a program sees it and as its data
files say it: threads stopped for a snapshot's scan notice nothing; the
scan's figures for a program whose blocks are known; a traced process, the
setting that turns it off, the block map; headers whole after a scan.
Their agreement with memcheck is test_leak_kinds.py's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from e2e_support import Run, Targets
from mprof.reducer.records import DataFile, LeakScan

# What leak_scan_quiet.c prints when its threads saw nothing of the scan.
UNDISTURBED = "eintr 0\nsigchld 0\nchildren -1\nfds {0} {0}\nspins moved 1\n"
KEPT, LOST, THREADS = 50, 7, 4
KINDS = ("definite", "indirect", "possible", "reachable")


def totals(leaks: LeakScan) -> dict[str, tuple[int, int]]:
    """Blocks and bytes of each kind over every path."""
    sums = [sum(figures[i] for figures in leaks.kinds.values()) for i in range(8)]
    return {kind: (sums[2 * k], sums[2 * k + 1]) for k, kind in enumerate(KINDS)}


def classified(data: DataFile) -> LeakScan:
    assert data.leaks is not None, f"{data.path}: the blocks were not classified"
    return data.leaks


@pytest.fixture
def quiet(targets: Targets) -> Path:
    return targets.build("leak_scan_quiet", "-pthread")


def run_quiet(profile: Callable[..., Run], program: Path, **settings: str) -> tuple[Run, int]:
    """The run, and the descriptors its program had open around the snapshot."""
    run = profile([program], **settings)
    lines = run.completed.stdout.splitlines()
    descriptors = lines[3].split()
    assert descriptors[1] == descriptors[2], run.completed.stdout
    return run, int(descriptors[1])


def snapshot(run: Run) -> DataFile:
    """The program's snapshot: OUT.snap1, or OUT.PID.snap1 when the program
    was a child of the profiled command (strace)."""
    found = sorted(run.output.parent.glob(run.output.name + "*.snap1"))
    assert len(found) == 1, found
    return run.data(found[0])


def test_threads_stopped_for_a_snapshot_notice_nothing(profile: Callable[..., Run], quiet: Path) -> None:
    run, descriptors = run_quiet(profile, quiet)
    assert run.completed.stdout == UNDISTURBED.format(descriptors)
    leaks = classified(snapshot(run))
    assert (leaks.threads_stopped, leaks.threads_unstopped, leaks.flags) == (THREADS, 0, 0)
    kinds = totals(leaks)
    # The freed blocks are no blocks; the threads' DTVs are reached only
    # through their TCBs' pointers past their first word, as under memcheck.
    assert kinds["definite"] == (LOST, LOST * 40)
    assert kinds["indirect"] == (0, 0)
    assert kinds["possible"][0] == THREADS
    assert kinds["reachable"] == (KEPT, KEPT * 24)


def test_the_final_file_finds_the_ended_threads_tls(profile: Callable[..., Run], quiet: Path) -> None:
    run, _ = run_quiet(profile, quiet)
    data = run.data()
    leaks = classified(data)
    kinds = totals(leaks)
    assert (leaks.threads_stopped, leaks.threads_unstopped) == (0, 0)
    # The scan's own time is a part of the run's; it read the reachable
    # blocks (stdout's buffer) and some roots.
    assert 0 < leaks.scan_ns < data.header.elapsed_ns
    assert leaks.block_bytes >= 4096 and leaks.root_bytes > 0
    assert kinds["definite"] == (LOST, LOST * 40)
    # glibc keeps the joined threads' stacks, whose TCBs point into their DTVs.
    assert kinds["possible"][0] == THREADS
    # stdout's buffer (a pipe here: 4096 bytes), which exit has not freed yet.
    assert kinds["reachable"] == (1, 4096)


def test_headers_are_whole_after_a_snapshot(profile: Callable[..., Run], quiet: Path) -> None:
    """The scan keeps its marks in the blocks' headers while it runs: the
    frees after it must find each block's path there again."""
    run, _ = run_quiet(profile, quiet)
    data = run.data()
    assert data.summary.unknown_frees == 0
    kept = [path for path in data.paths if path.allocs == KEPT]
    assert len(kept) == 1 and kept[0].frees == KEPT and sum(kept[0].freed) == KEPT * 24


def test_a_traced_process_says_which_threads_went_unstopped(profile: Callable[..., Run], quiet: Path,
                                                            tmp_path: Path) -> None:
    """Under strace -f every thread has a tracer already: the scan cannot
    stop them, says so, and reads their stacks whole."""
    run = profile(["strace", "-f", "-o", tmp_path / "strace.log", quiet])
    leaks = classified(snapshot(run))
    assert (leaks.threads_stopped, leaks.threads_unstopped) == (0, THREADS)
    assert leaks.threads_unread and not leaks.unknown_roots
    assert totals(leaks)["reachable"][0] >= KEPT


def test_the_scan_turned_off(profile: Callable[..., Run], quiet: Path) -> None:
    run, _ = run_quiet(profile, quiet, MPROF_LEAK_CHECK="0")
    assert run.data().leaks is None and snapshot(run).leaks is None


def test_a_setting_not_understood_keeps_the_scan(profile: Callable[..., Run], quiet: Path) -> None:
    run, _ = run_quiet(profile, quiet, MPROF_LEAK_CHECK="sometimes")
    data = run.data()
    assert data.program.refused_settings == ("MPROF_LEAK_CHECK=sometimes",)
    assert totals(classified(data))["definite"] == (LOST, LOST * 40)


def test_the_block_map_gives_the_same_kinds(profile: Callable[..., Run], quiet: Path) -> None:
    headed = totals(classified(snapshot(run_quiet(profile, quiet, name="headers.mprof")[0])))
    mapped = totals(classified(snapshot(run_quiet(profile, quiet, name="map.mprof", MPROF_BLOCKS="map")[0])))
    assert mapped == headed



@pytest.mark.parametrize(("blocks", "size"), [("headers", 6), ("map", 20)])
def test_a_tiny_lost_block_beside_a_free_chunk(profile: Callable[..., Run], targets: Targets, blocks: str,
                                               size: int) -> None:
    """leak_tiny_neighbour.c: glibc's main arena points at a free chunk that
    starts where a lost 6-byte block does (its header before it), or in the
    last word of a 20-byte block (no header); glibc's pointers are no
    program's: memcheck's definitely lost, 1 block."""
    run = profile([targets.build("leak_tiny_neighbour"), str(size)], MPROF_BLOCKS=blocks)
    kinds = totals(classified(run.data()))
    assert kinds == {"definite": (1, size), "indirect": (0, 0), "possible": (0, 0), "reachable": (0, 0)}


def test_a_block_that_holds_a_pools_objects(profile: Callable[..., Run], targets: Targets) -> None:
    """leak_pool_in_block.c: a slab not declared a pool's backing holds its
    objects: the objects are classified, the slab counted still reachable
    (memcheck leaves it out), and every path's kinds add up."""
    run = profile([targets.build("leak_pool_in_block")])
    data = run.data()
    leaks = classified(data)
    assert totals(leaks) == {"definite": (1, 48), "indirect": (0, 0), "possible": (0, 0),
                             "reachable": (4, 4096 + 3 * 48)}
    for index, figures in leaks.kinds.items():
        path = data.paths[index]
        assert (sum(figures[0::2]), sum(figures[1::2])) == (path.allocs - path.frees,
                                                            sum(path.bytes) - sum(path.freed))


def test_a_slab_left_out_of_a_snapshots_scan_is_freed_as_its_own(profile: Callable[..., Run],
                                                                   targets: Targets) -> None:
    """leak_pool_in_block.c snapshot: the snapshot classifies as at exit; the slab then freed is counted freed on
    its own path, its header as the allocation left it."""
    run = profile([targets.build("leak_pool_in_block"), "snapshot"])
    assert totals(classified(snapshot(run))) == {"definite": (1, 48), "indirect": (0, 0), "possible": (0, 0),
                                                 "reachable": (4, 4096 + 3 * 48)}
    data = run.data()
    slabs = [path for path in data.paths if sum(path.bytes) == 4096]
    assert [(path.allocs, path.frees, sum(path.freed)) for path in slabs] == [(1, 1, 4096)]
    assert totals(classified(data)) == {kind: (0, 0) for kind in ("definite", "indirect", "possible", "reachable")}


@pytest.mark.parametrize("traced", [False, True], ids=["alone", "under strace"])
def test_a_hundred_threads(profile: Callable[..., Run], targets: Targets, tmp_path: Path, traced: bool) -> None:
    """leak_many_threads.c: a hundred threads asleep at a snapshot, each
    with a block on its stack: all stopped and their blocks reachable; or,
    under strace -f, all counted as not stopped, their stacks read whole."""
    program = targets.build("leak_many_threads", "-pthread")
    run = profile(["strace", "-f", "-o", tmp_path / "strace.log", program] if traced else [program])
    leaks = classified(snapshot(run))
    assert (leaks.threads_stopped, leaks.threads_unstopped) == ((0, 100) if traced else (100, 0))
    assert leaks.threads_unread == traced
    kinds = totals(leaks)
    assert kinds["reachable"][0] >= 100
    # Each live thread's DTV, as memcheck says of it, whichever way its
    # stack was read.
    assert kinds["possible"][0] == 100


def test_a_process_under_a_seccomp_filter_is_scanned_without_stopping(profile: Callable[..., Run],
                                                                     targets: Targets) -> None:
    """leak_many_threads.c 3 filtered: under a seccomp filter the scan's
    clone or ptrace could be answered with a signal the program sees, or its
    end: no thread is stopped, each is counted, and the run goes on."""
    run = profile([targets.build("leak_many_threads", "-pthread"), "3", "filtered"])
    leaks = classified(snapshot(run))
    assert (leaks.threads_stopped, leaks.threads_unstopped, leaks.threads_unread) == (0, 3, True)
    assert run.completed.stderr == ""
