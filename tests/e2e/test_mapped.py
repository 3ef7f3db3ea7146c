"""Memory the program maps itself (mapped.c's regions): counted under
their call paths as [mmap] and [brk], apart from the heap's figures.
tests/targets/mapped.c says what it maps."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from e2e_support import REPO_ROOT, Run, Targets, monitor_env, mprof, table
from mprof.live.watch import Watch
from mprof.reducer import datafile
from mprof.reducer import format as fmt
from mprof.reducer.records import DataFile

PAGE = 4096
MIB = 1 << 20
MONITOR_HEADERS = f"-I{REPO_ROOT / 'monitor'}"
# Crashes and hangs depend on where the kernel puts things: each case runs
# this many times, with the address space laid out anew (ASLR) each time.
RUNS = 20


def runs(program: Path, *arguments: str, directory: Path, times: int = RUNS) -> list[tuple[str, DataFile]]:
    """What times runs of program under the monitor printed, and their data
    files; each must exit with 0, and a hang fails at the timeout."""
    results = []
    for run in range(times):
        output = directory / f"{program.name}-{'-'.join(arguments)}-{run}.mprof"
        completed = subprocess.run([program, *arguments], env=monitor_env(output), capture_output=True, text=True,
                                   timeout=120)
        assert completed.returncode == 0, (run, completed)
        results.append((completed.stdout, datafile.read(output)))
    return results


def kept_by_kind(data: DataFile) -> dict[str, tuple[int, int]]:
    """The objects and bytes kept at the end, by the innermost frame's kind:
    mmap, brk or pool (any pool)."""
    kept: dict[str, tuple[int, int]] = {}
    for path in data.paths:
        objects, size = path.allocs - path.frees, sum(path.bytes) - sum(path.freed)
        if not objects and not size:
            continue
        innermost = data.nodes[path.node].addr if path.node >= 0 else 0
        kind = {fmt.MMAP_FRAME: "mmap", fmt.BRK_FRAME: "brk"}.get(
            innermost, "pool" if innermost >= fmt.POOL_FRAME_BASE else "heap")
        before = kept.get(kind, (0, 0))
        kept[kind] = (before[0] + objects, before[1] + size)
    return kept


MAPPED_FIGURES = ("mmap_calls", "munmap_calls", "mremap_calls", "brk_calls", "mapped_bytes", "unmapped_bytes",
                  "mapped_splits")


@pytest.mark.slow
def test_regions_the_program_maps(targets: Targets, profile: Callable[..., Run]) -> None:
    run = profile([targets.build("mapped")])
    document: dict[str, Any] = json.loads(mprof("report", "--format", "json", run.output).stdout)
    summary = document["summary"]
    # 10, 8 and 3 pages mapped, 3 grown to 6 by mremap, 2 pages of break.
    mapped = (10 + 8 + 3 + 6 + 2) * PAGE
    # The first whole, two and two of the second, the third's old 3 pages
    # (remapped), one page of the break.
    unmapped = (10 + 2 + 2 + 3 + 1) * PAGE
    assert (summary["mmap_calls"], summary["munmap_calls"], summary["mremap_calls"], summary["brk_calls"]) == (
        3, 3, 1, 2)
    assert (summary["mapped_bytes"], summary["unmapped_bytes"]) == (mapped, unmapped)
    # Two regions left of the second's cuts, one of the break's.
    assert summary["mapped_splits"] == 3
    # The heap's figures are malloc's alone: the 1 MiB block glibc mapped
    # for itself is counted once, as the block.
    assert (summary["allocs"], summary["bytes_allocated"], summary["frees"]) == (1, MIB, 1)
    assert (summary["max_live_bytes"], summary["max_live_objects"]) == (MIB, 1)
    kept = {row["path"]: (row["allocs"] - row["frees"], row["kept_bytes"]) for row in document["leaks"]}
    assert kept == {"main > map_pages > [mmap]": (1, 4 * PAGE), "main > grow_region > [mmap]": (1, 6 * PAGE),
                    "main > move_break > [brk]": (1, PAGE)}
    assert mapped - unmapped == sum(bytes for _, bytes in kept.values())
    # Over time: the last point, the moment the file was written, has what
    # is left mapped; the page draws a line of it.
    assert run.data().timeline[-1].mapped_bytes == mapped - unmapped
    page = run.output.parent / "mapped.html"
    mprof("html", run.output, "-o", page)
    assert '<polyline class="mapped" points="' in page.read_text()
    text = mprof("report", "--tables", "summary", run.output).stdout
    assert (f"  mapped        mmap 3, munmap 3, mremap 1, brk and sbrk 2; {mapped:,} bytes mapped, {unmapped:,} "
            f"unmapped, {mapped - unmapped:,} left; in the tables as [mmap] and [brk], in no figure above") in text


@pytest.mark.slow
def test_shares_of_tables_that_hold_regions(targets: Targets, profile: Callable[..., Run]) -> None:
    # The tables' rows are the heap's blocks and the regions alike: their
    # shares are of both, never of the heap's bytes alone.  mapped.c keeps
    # 6, 4 and 1 pages (of 11), and frees its one heap block of 1 MiB.
    # The regions' bytes in the call graph: 10 + 8 + 3 + 6 pages mapped,
    # the regions left by the cuts counted anew (6 and 4 pages of the
    # second), 2 pages of break and the page left of it.  The regions the
    # program maps are roots of the leak scan, never lost: --leak-kinds all
    # lists them, still reachable.
    run = profile([targets.build("mapped")])
    text = mprof("report", "--tables", "leaks,graph", "--leak-kinds", "all", run.output).stdout
    assert table(text, "Memory leak table") == [
        "         1       24,576  (54)  still reachable  main > grow_region > [mmap]",
        "         1       16,384  (36)  still reachable  main > map_pages > [mmap]",
        "         1        4,096   (9)  still reachable  main > move_break > [brk]"]
    regions = (10 + 8 + 3 + 6 + 6 + 4 + 2 + 1) * PAGE
    entries = {line.split()[-2]: line for line in table(text, "Allocation call graph") if line.startswith("[")}
    assert entries["main"].split()[:4] == ["[0]", "100.0", f"{MIB:,}", f"({MIB * 100 // (MIB + regions)})"]
    assert entries["[mmap]"].split()[1] == f"{(10 + 8 + 3 + 6 + 6 + 4) * PAGE * 100 / (MIB + regions):.1f}"


# What each case of tests/targets/pool_in_mapping.c leaves: the pool's
# objects (allocs, bytes, frees), the mapped figures, what is kept.
POOL_IN_MAPPING = {
    # 6 MiB mapped, the head and the tail unmapped: 2 MiB left, in two
    # regions' splits.
    "chunk": ((10, 2000, 0), (1, 2, 0, 0, 6 * MIB, 4 * MIB, 2), {"pool": (10, 2000), "mmap": (1, 2 * MIB)}),
    # 4 MiB reserved, its first 1 MiB mapped anew: 3 MiB of the reservation
    # left beside the new 1 MiB.
    "reserve": ((10, 2000, 0), (2, 0, 0, 0, 5 * MIB, MIB, 1), {"pool": (10, 2000), "mmap": (2, 4 * MIB)}),
    "sbrk": ((10, 2000, 0), (0, 0, 0, 1, MIB, 0, 0), {"pool": (10, 2000), "brk": (1, MIB)}),
    # 10 objects trimmed away, 10 carved again.
    "trim": ((20, 4000, 10), (1, 0, 0, 0, 8 * MIB, 0, 0), {"pool": (10, 2000), "mmap": (1, 8 * MIB)}),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", POOL_IN_MAPPING)
def test_a_pool_anchored_at_the_start_of_a_mapped_region(case: str, targets: Targets, tmp_path: Path) -> None:
    # The anchor heads no block: nothing precedes it to read, and the region
    # is no pool's backing, so its bytes stay in the mapped figures alone.
    program = targets.build("pool_in_mapping", MONITOR_HEADERS)
    objects, mapped, kept = POOL_IN_MAPPING[case]
    for stdout, data in runs(program, case, directory=tmp_path):
        assert stdout == "ok\n"
        s = data.summary
        assert (s.allocs, s.bytes_allocated, s.frees, s.pool_alloc_calls) == (*objects, objects[0])
        assert (s.backing_blocks, s.backing_bytes) == (0, 0)
        assert tuple(s[name] for name in MAPPED_FIGURES) == mapped
        assert kept_by_kind(data) == kept


@pytest.mark.slow
def test_a_region_unmapped_twice_over_its_hole(targets: Targets, tmp_path: Path) -> None:
    # unmap_twice.c: 1,000 regions of 4 pages, each unmapped by 2 pages and
    # then by all 4.  The monitor's own memory never lands in the hole
    # between, where the second munmap would take it away.
    for stdout, data in runs(targets.build("unmap_twice"), directory=tmp_path):
        assert stdout == "ok\n"
        assert tuple(data.summary[name] for name in MAPPED_FIGURES) == (
            1000, 2000, 0, 0, 1000 * 4 * PAGE, 1000 * 4 * PAGE, 1000)
        assert "mmap" not in kept_by_kind(data)


def function_ranges(program: Path, names: Iterable[str]) -> dict[str, tuple[int, int]]:
    """Where each function of names lies in program's file, from its symbol
    table."""
    wanted = set(names)
    ranges = {}
    for line in subprocess.run(["nm", "-S", "--defined-only", program], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[3] in wanted:
            ranges[fields[3]] = (int(fields[0], 16), int(fields[0], 16) + int(fields[1], 16))
    assert set(ranges) == wanted, f"{wanted - set(ranges)} not in {program}"
    return ranges


@pytest.mark.slow
def test_mapping_and_unmapping_from_a_signal_handler(targets: Targets, tmp_path: Path) -> None:
    # mapping_signals.c: a handler every 100 us maps a page and unmaps one
    # an earlier call mapped, while the main loop maps and unmaps 20,000
    # pages and allocates; at the end nothing is left mapped.  A handler
    # that interrupted the monitor's own mapping call waited for its lock.
    program = targets.build("mapping_signals")
    start, end = function_ranges(program, ["map_page"])["map_page"]
    for stdout, data in runs(program, "20000", directory=tmp_path):
        assert stdout.startswith("rounds 20000 handler ")
        s = data.summary
        # Every region counted was unmapped once and counted so: the
        # handler's own included, whichever call (main's, a handler's that
        # interrupted the monitor, whose figures waited) unmapped it.
        assert s.mapped_bytes == s.unmapped_bytes == s.mmap_calls * PAGE
        assert s.munmap_calls == s.mmap_calls
        assert "mmap" not in kept_by_kind(data)
        [executable] = [m for m in data.modules if Path(m.path).name == program.name]
        main_paths = [path for path in data.paths
                      if path.node >= 0 and data.nodes[path.node].addr == fmt.MMAP_FRAME
                      and start <= data.nodes[data.nodes[path.node].parent].addr - executable.bias < end]
        assert [(path.allocs, path.frees) for path in main_paths] == [(20000, 20000)]


@pytest.mark.slow
def test_two_threads_mapping_and_unmapping_at_once(targets: Targets, tmp_path: Path) -> None:
    # mapping_threads.c: two threads map and unmap a page 50,000 times each;
    # the page one unmaps is the next the other maps.
    [(stdout, data)] = runs(targets.build("mapping_threads"), directory=tmp_path, times=1)
    assert stdout == "ok\n"
    assert tuple(data.summary[name] for name in MAPPED_FIGURES) == (
        100000, 100000, 0, 0, 100000 * PAGE, 100000 * PAGE, 0)
    assert "mmap" not in kept_by_kind(data)


def test_mappings_over_regions_and_a_file_grown(targets: Targets, profile: Callable[..., Run]) -> None:
    # mapped_over.c: pages mapped 8 + 2 (fixed_over), 4 + 1 (short_fixed, a
    # page), 4 + 4 + 4 (remap_over, mremap's), 4 (file_over); every one
    # unmapped or mapped over.  Splits: fixed_over's region cut in its
    # middle (2), short_fixed's and file_over's first page (1 each).  The
    # file's mapping grown to 1 MiB is none of them.
    run = profile([targets.build("mapped_over")])
    document: dict[str, Any] = json.loads(mprof("report", "--format", "json", run.output).stdout)
    summary = document["summary"]
    pages = 8 + 2 + 4 + 1 + 4 + 4 + 4 + 4
    assert tuple(summary[name] for name in MAPPED_FIGURES) == (7, 5, 1, 0, pages * PAGE, pages * PAGE, 4)
    assert [row["path"] for row in document["leaks"] if "[mmap]" in row["path"]] == []
    text = mprof("report", "--tables", "summary", run.output).stdout
    assert (f"  mapped        mmap 7, munmap 5, mremap 1, brk and sbrk 0; {pages * PAGE:,} bytes mapped, "
            f"{pages * PAGE:,} unmapped, 0 left; in the tables as [mmap] and [brk], in no figure above") in text


def answer(watch: Watch, process: subprocess.Popen[str]) -> None:
    """Waits for the monitor's next answer to watch; a hang fails at the
    deadline, the program's death at once."""
    deadline = time.monotonic() + 60
    while not watch.answered():
        assert process.poll() is None, f"the program ended with {process.returncode}"
        assert time.monotonic() < deadline, "no answer"
        time.sleep(0.01)


@pytest.mark.slow
def test_the_monitors_thread_keeps_out_of_a_hole_the_program_made(targets: Targets, tmp_path: Path) -> None:
    # hole_while_watched.c unmaps 16 MiB of its 24 MiB region, and the
    # whole region once a viewer's answers have started: the thread that
    # answers, started meanwhile, has its stack where the monitor's memory
    # is, not in the hole, and answers again afterwards.
    program = targets.build("hole_while_watched")
    for run in range(RUNS):
        output = tmp_path / f"hole-{run}.mprof"
        process = subprocess.Popen([program], env=monitor_env(output), stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True)
        assert process.stdin and process.stdout
        try:
            assert process.stdout.readline() == "ready\n"
            with Watch(process.pid) as watch:
                answer(watch, process)
                process.stdin.write("unmap\n")
                process.stdin.flush()
                assert process.stdout.readline() == "unmapped\n"
                watch.ask()
                answer(watch, process)
            process.stdin.write("end\n")
            process.stdin.flush()
            assert process.wait(timeout=60) == 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.mark.parametrize("call", ["setrlimit", "prlimit", "prlimit-pid"])
def test_a_program_that_limits_its_address_space(call: str, targets: Targets, profile: Callable[..., Run]) -> None:
    # limited_address_space.c limits itself (to 2047 MiB with setrlimit, or
    # with prlimit of pid 0 or of its own pid to 180 MiB above what it has),
    # then takes 100 MiB with malloc and maps 100 MiB: the monitor's
    # reserved address space counts against the limit until it gives back
    # what it does not use.
    run = profile([targets.build("limited_address_space"), *([call] if call.startswith("prlimit") else [])])
    assert run.completed.stdout == "ok\n"
    s = run.data().summary
    assert (s.allocs, s.bytes_allocated, s.mmap_calls, s.mapped_bytes) == (1, 100 * MIB, 1, 100 * MIB)


@dataclass(frozen=True)
class Step:
    """One step of tests/targets/mapped_neighbours.c: the line it prints
    from /proc/self/maps, and mprof's figures after it, all since the start
    (pages): calls (mmap, munmap, mremap, brk), bytes mapped and unmapped,
    splits, and the figures of each function's regions that the step
    changed, (allocations, frees, bytes, bytes freed)."""
    maps: str
    calls: tuple[int, int, int, int]
    mapped: int
    unmapped: int
    splits: int
    changed: dict[str, tuple[int, int, int, int]]




def side_by_side(first: int, pairs: range) -> str:
    """The maps line's part for pairs of mapped_neighbours.c's even r--
    and odd rw- regions of 2 pages from page first."""
    return ", ".join(f"{first + 4 * i}-{first + 4 * i + 2} r-- anon, {first + 4 * i + 2}-{first + 4 * i + 4} rw- anon"
                     for i in pairs)


MANY_PLACED = side_by_side(0, range(20))
ROW_A, ROW_B, ROW_C = (side_by_side(first, range(10)) for first in (0, 80, 120))
COVERED_C = "120-121 r-- anon, 121-159 -w- anon, 159-160 rw- anon"

# Every case of mapped_neighbours.c, step by step, from its steps as its
# comment says them and the kernel's view it printed when run alone: each
# region freed by a call that takes any of it, what is left of it counted
# anew (a split); a move is the old region's free and a new region under
# the mremap's path.
NEIGHBOURS: dict[str, list[Step]] = {
    "neighbours": [
        Step("placed: 0-4 r-- anon, 4-8 rw- anon, 8-12 r-x anon", (3, 0, 0, 0), 12, 0, 0,
             {"left": (1, 0, 4, 0), "middle": (1, 0, 4, 0), "right": (1, 0, 4, 0)}),
        Step("across: 0-3 r-- anon, 5-8 rw- anon, 8-12 r-x anon", (3, 1, 0, 0), 12, 2, 2,
             {"left": (2, 1, 7, 4), "middle": (2, 1, 7, 4)}),
        Step("exact: 0-3 r-- anon, 8-12 r-x anon", (3, 2, 0, 0), 12, 5, 2, {"middle": (2, 2, 7, 7)}),
        Step("filled: 0-3 r-- anon, 3-8 -w- anon, 8-12 r-x anon", (4, 2, 0, 0), 17, 5, 2, {"fill": (1, 0, 5, 0)}),
        Step("gone:", (4, 3, 0, 0), 17, 17, 2, {"left": (2, 2, 7, 7), "right": (1, 1, 4, 4), "fill": (1, 1, 5, 5)}),
    ],
    "hole": [
        Step("placed: 0-10 rw- anon, 10-12 r-- anon, 12-16 --- file", (2, 0, 0, 0), 12, 0, 0,
             {"whole": (1, 0, 10, 0), "beside": (1, 0, 2, 0)}),
        Step("hole: 0-3 rw- anon, 5-10 rw- anon, 10-12 r-- anon, 12-16 --- file", (2, 1, 0, 0), 12, 2, 2,
             {"whole": (3, 1, 18, 10)}),
        Step("second hole: 0-3 rw- anon, 5-7 rw- anon, 8-10 rw- anon, 10-12 r-- anon, 12-16 --- file",
             (2, 2, 0, 0), 12, 3, 4, {"whole": (5, 2, 22, 15)}),
        Step("across: 0-3 rw- anon, 5-7 rw- anon, 8-9 rw- anon, 11-12 r-- anon, 12-16 --- file", (2, 3, 0, 0), 12,
             5, 6, {"whole": (6, 3, 23, 17), "beside": (2, 1, 3, 2)}),
        Step("moved out: 0-1 rw- anon, 2-3 rw- anon, 5-7 rw- anon, 8-9 rw- anon, 11-12 r-- anon, 12-14 --- file, "
             "14-15 rw- anon, 15-16 --- file", (2, 3, 1, 0), 13, 6, 8,
             {"whole": (8, 4, 25, 20), "move_out": (1, 0, 1, 0)}),
        Step("gone:", (2, 4, 1, 0), 13, 13, 8,
             {"whole": (8, 8, 25, 25), "beside": (2, 2, 3, 3), "move_out": (1, 1, 1, 1)}),
    ],
    "remap": [
        Step("placed: 0-4 rw- anon, 4-8 --- file, 8-12 r-- anon, 12-16 --- file", (2, 0, 0, 0), 8, 0, 0,
             {"moved": (1, 0, 4, 0), "still": (1, 0, 4, 0)}),
        Step("next: 4-8 rw- anon, 8-12 r-- anon, 12-16 --- file", (2, 0, 1, 0), 12, 4, 0,
             {"moved": (1, 1, 4, 4), "move_next": (1, 0, 4, 0)}),
        Step("over: 2-6 r-- anon, 6-8 rw- anon, 12-16 --- file", (2, 0, 2, 0), 16, 10, 1,
             {"still": (1, 1, 4, 4), "move_next": (2, 1, 6, 4), "move_over": (1, 0, 4, 0)}),
        Step("grown: 2-6 r-- anon, 6-10 rw- anon, 12-16 --- file", (2, 0, 3, 0), 20, 12, 1,
             {"move_next": (2, 2, 6, 6), "grow_next": (1, 0, 4, 0)}),
        Step("shrunk: 2-3 r-- anon, 6-10 rw- anon, 12-16 --- file", (2, 0, 4, 0), 21, 16, 1,
             {"move_over": (1, 1, 4, 4), "shrink": (1, 0, 1, 0)}),
        Step("kept: 2-3 r-- anon, 6-10 rw- anon, 12-16 rw- anon", (2, 0, 5, 0), 25, 16, 1,
             {"keep_old": (1, 0, 4, 0)}),
        Step("gone:", (2, 1, 5, 0), 25, 25, 1,
             {"grow_next": (1, 1, 4, 4), "shrink": (1, 1, 1, 1), "keep_old": (1, 1, 4, 4)}),
    ],
    "fixed_over": [
        Step("placed: 0-4 r-- anon, 4-8 rw- anon, 8-12 r-x anon", (3, 0, 0, 0), 12, 0, 0,
             {"first": (1, 0, 4, 0), "second": (1, 0, 4, 0), "third": (1, 0, 4, 0)}),
        Step("over: 0-2 r-- anon, 2-6 -w- anon, 6-8 rw- anon, 8-12 r-x anon", (4, 0, 0, 0), 16, 4, 2,
             {"first": (2, 1, 6, 4), "second": (2, 1, 6, 4), "over": (1, 0, 4, 0)}),
        # The file's mapping unmaps what it replaces: a munmap call.
        Step("file: 0-2 r-- anon, 2-5 -w- anon, 5-9 r-- file, 9-12 r-x anon", (4, 1, 0, 0), 16, 8, 4,
             {"second": (2, 2, 6, 6), "third": (2, 1, 7, 4), "over": (2, 1, 7, 4)}),
        Step("file moved: 0-2 r-- anon, 2-5 -w- anon, 7-9 r-- file, 9-10 r-x anon, 10-12 r-- file", (4, 1, 1, 0),
             16, 10, 5, {"third": (3, 2, 8, 7)}),
        Step("gone:", (4, 2, 1, 0), 16, 16, 5, {"first": (2, 2, 6, 6), "third": (3, 3, 8, 8), "over": (2, 2, 7, 7)}),
    ],
    "carved": [
        Step("reserved: 0-16 --- anon", (1, 0, 0, 0), 16, 0, 0, {"reserve": (1, 0, 16, 0)}),
        Step("carved: 0-4 rw- anon, 4-8 r-- anon, 8-16 --- anon", (3, 0, 0, 0), 24, 8, 2,
             {"reserve": (3, 2, 36, 28), "carve_first": (1, 0, 4, 0), "carve_second": (1, 0, 4, 0)}),
        Step("last: 0-4 rw- anon, 4-8 r-- anon, 8-12 --- anon, 12-16 r-x anon", (4, 0, 0, 0), 28, 12, 3,
             {"reserve": (4, 3, 40, 36), "carve_last": (1, 0, 4, 0)}),
        Step("across: 0-2 rw- anon, 14-16 r-x anon", (4, 1, 0, 0), 28, 24, 5,
             {"reserve": (4, 4, 40, 40), "carve_first": (2, 1, 6, 4), "carve_second": (1, 1, 4, 4),
              "carve_last": (2, 1, 6, 4)}),
        Step("gone:", (4, 2, 0, 0), 28, 28, 5, {"carve_first": (2, 2, 6, 6), "carve_last": (2, 2, 6, 6)}),
    ],
    # More regions in one call than a call keeps on its stack (16).
    "many": [
        Step(f"placed: {MANY_PLACED}", (40, 0, 0, 0), 80, 0, 0, {"even": (20, 0, 40, 0), "odd": (20, 0, 40, 0)}),
        Step("across: 0-1 r-- anon, 79-80 rw- anon", (40, 1, 0, 0), 80, 78, 2,
             {"even": (21, 20, 41, 40), "odd": (21, 20, 41, 40)}),
        Step("gone:", (40, 2, 0, 0), 80, 80, 2, {"even": (21, 21, 41, 41), "odd": (21, 21, 41, 41)}),
    ],
    # A MAP_FIXED over 20 regions, and mremaps onto 20 below and 20 above
    # where the moved region was: more than a call keeps on its stack,
    # counted before the call over the whole span.  Each takes 18 regions
    # whole and cuts the 2 at its ends, leaving a page of each.
    "many_over": [
        Step(f"placed: {ROW_A}, 40-78 --x anon, 78-80 --- file, {ROW_B}, {ROW_C}, 160-200 --- file", (61, 0, 0, 0),
             158, 0, 0, {"even": (30, 0, 60, 0), "odd": (30, 0, 60, 0), "source": (1, 0, 38, 0)}),
        Step(f"covered: {ROW_A}, 40-78 --x anon, 78-80 --- file, {ROW_B}, {COVERED_C}, 160-200 --- file",
             (62, 0, 0, 0), 196, 38, 2, {"even": (31, 10, 61, 20), "odd": (31, 10, 61, 20), "cover": (1, 0, 38, 0)}),
        Step(f"down: 0-1 r-- anon, 1-39 --x anon, 39-40 rw- anon, 78-80 --- file, {ROW_B}, {COVERED_C}, "
             "160-200 --- file", (62, 0, 1, 0), 234, 38 + 2 * 38, 4,
             {"even": (32, 20, 62, 40), "odd": (32, 20, 62, 40), "source": (1, 1, 38, 38),
              "move_down": (1, 0, 38, 0)}),
        Step(f"up: 0-1 r-- anon, 39-40 rw- anon, 78-80 --- file, 80-81 r-- anon, 81-119 --x anon, 119-120 rw- anon, "
             f"{COVERED_C}, 160-200 --- file", (62, 0, 2, 0), 272, 38 + 4 * 38, 6,
             {"even": (33, 30, 63, 60), "odd": (33, 30, 63, 60), "move_down": (1, 1, 38, 38),
              "move_up": (1, 0, 38, 0)}),
        Step("gone:", (62, 1, 2, 0), 272, 272, 6,
             {"even": (33, 33, 63, 63), "odd": (33, 33, 63, 63), "cover": (1, 1, 38, 38), "move_up": (1, 1, 38, 38)}),
    ],
    "break": [
        Step("low: 0-2 rw- heap", (0, 0, 0, 1), 2, 0, 0, {"break_low": (1, 0, 2, 0)}),
        Step("high: 0-4 rw- heap", (0, 0, 0, 2), 4, 0, 0, {"break_high": (1, 0, 2, 0)}),
        Step("back: 0-1 rw- heap", (0, 0, 0, 3), 4, 3, 1, {"break_low": (2, 1, 3, 2), "break_high": (1, 1, 2, 2)}),
        Step("gone:", (0, 0, 0, 4), 4, 4, 1, {"break_low": (2, 2, 3, 3)}),
    ],
    # Lengths a byte past whole pages: the kernel maps, unmaps and moves
    # the pages they touch.
    "lengths": [
        Step("placed: 0-3 rw- anon, 3-8 --- file", (1, 0, 0, 0), 3, 0, 0, {"odd_length": (1, 0, 3, 0)}),
        Step("cut: 2-3 rw- anon, 3-8 --- file", (1, 1, 0, 0), 3, 2, 1, {"odd_length": (2, 1, 4, 3)}),
        Step("moved: 3-5 --- file, 5-7 rw- anon, 7-8 --- file", (1, 1, 1, 0), 5, 3, 1,
             {"odd_length": (2, 2, 4, 4), "move_odd": (1, 0, 2, 0)}),
        Step("gone:", (1, 2, 1, 0), 5, 5, 1, {"move_odd": (1, 1, 2, 2)}),
    ],
    # An mremap whose old range and new one each cut the region across
    # them: 16 regions in the call's span, 17 cuts (span's twice), each
    # with room.
    "spanning": [
        Step("placed: 0-2 r-x anon, " + ", ".join(f"{page}-{page + 1} {'r--' if page % 2 == 0 else 'rw-'} anon"
                                               for page in range(2, 17)), (16, 0, 0, 0), 17, 0, 0,
             {"span": (1, 0, 2, 0), "even": (8, 0, 8, 0), "odd": (7, 0, 7, 0)}),
        Step("moved: 1-17 r-x anon", (16, 0, 1, 0), 33, 17, 1,
             {"span": (2, 2, 3, 3), "even": (8, 8, 8, 8), "odd": (7, 7, 7, 7), "move_span": (1, 0, 16, 0)}),
        Step("gone:", (16, 1, 1, 0), 33, 33, 1, {"move_span": (1, 1, 16, 16)}),
    ],
    # 17 regions in one mapping of the kernel's, grown in place by an
    # mremap that takes them all: more than a call keeps on its stack,
    # counted before the call over the old range.
    "grown_many": [
        Step("placed: 0-17 rw- anon, 17-20 --- file", (17, 0, 0, 0), 17, 0, 0, {"odd": (17, 0, 17, 0)}),
        Step("grown: 0-20 rw- anon", (17, 0, 1, 0), 37, 17, 0, {"odd": (17, 17, 17, 17), "grow_many": (1, 0, 20, 0)}),
        Step("gone:", (17, 1, 1, 0), 37, 37, 0, {"grow_many": (1, 1, 20, 20)}),
    ],
    # The break moved back over 17 of its 18 regions: more than a call
    # keeps on its stack, counted before the call below the break.
    "breaks": [
        Step("up: 0-18 rw- heap", (0, 0, 0, 18), 18, 0, 0, {"break_page": (18, 0, 18, 0)}),
        Step("back: 0-1 rw- heap", (0, 0, 0, 19), 18, 17, 0, {"break_page": (18, 17, 18, 17)}),
        Step("gone:", (0, 0, 0, 20), 18, 18, 0, {"break_page": (18, 18, 18, 18)}),
    ],
}

# The protection each function maps its regions with (mremap keeps the
# moved region's), as mapped_neighbours.c's maps lines show it.
PROTECTIONS = {
    "left": "r--", "middle": "rw-", "right": "r-x", "fill": "-w-", "whole": "rw-", "beside": "r--",
    "move_out": "rw-", "moved": "rw-", "still": "r--", "move_next": "rw-", "move_over": "r--", "grow_next": "rw-",
    "shrink": "r--", "keep_old": "rw-", "first": "r--", "second": "rw-", "third": "r-x", "over": "-w-",
    "reserve": "---", "carve_first": "rw-", "carve_second": "r--", "carve_last": "r-x", "even": "r--", "odd": "rw-",
    "source": "--x", "cover": "-w-", "move_down": "--x", "move_up": "--x",
    "break_low": "rw-", "break_high": "rw-", "odd_length": "rw-", "move_odd": "rw-", "span": "r-x",
    "move_span": "r-x", "grow_many": "rw-", "break_page": "rw-"}
CASE_FUNCTIONS = {"break": "break_area"}
# The cases whose area is the break's: [heap] in the maps, [brk] in the tables.
BREAK_CASES = ("break", "breaks")


def region_figures(data: DataFile, program: Path,
                   functions: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int, int, int]]:
    """Each function's regions' figures in data, (allocations, frees, bytes,
    bytes freed) in pages, by the function of functions that made them: the
    frame outside [mmap] or [brk]."""
    [executable] = [m for m in data.modules if Path(m.path).name == program.name]
    figures: dict[str, tuple[int, int, int, int]] = {}
    for path in data.paths:
        if path.node < 0 or data.nodes[path.node].addr not in (fmt.MMAP_FRAME, fmt.BRK_FRAME):
            continue
        address = data.nodes[data.nodes[path.node].parent].addr - executable.bias
        [name] = [name for name, (start, end) in functions.items() if start <= address < end]
        before = figures.get(name, (0, 0, 0, 0))
        figures[name] = (before[0] + path.allocs, before[1] + path.frees,
                         before[2] + sum(path.bytes) // PAGE, before[3] + sum(path.freed) // PAGE)
    return figures


def kernel_pages(line: str, kind: str) -> dict[str, int]:
    """The pages of the mappings of kind (anon, heap) in a maps line of
    mapped_neighbours.c, by protection."""
    pages: dict[str, int] = {}
    for mapping in filter(None, line.split(":", 1)[1].split(",")):
        extent, protection, mapping_kind = mapping.split()
        first, end = map(int, extent.split("-"))
        if mapping_kind == kind:
            pages[protection] = pages.get(protection, 0) + end - first
    return pages


@pytest.mark.slow
@pytest.mark.parametrize("case", NEIGHBOURS)
def test_regions_side_by_side_cut_moved_and_mapped_over(case: str, targets: Targets, profile: Callable[..., Run],
                                                        tmp_path: Path) -> None:
    # After each step the program's snapshot has the figures of its steps,
    # and what its regions keep is what the kernel has mapped: by each
    # region's protection, and in all (the mapped bytes less the unmapped,
    # and the last point over time).
    program = targets.build("mapped_neighbours", MONITOR_HEADERS)
    run = profile([program, case])
    steps = NEIGHBOURS[case]
    functions = function_ranges(program, PROTECTIONS)
    assert run.completed.stdout.splitlines() == [step.maps for step in steps]
    assert run.files() == [run.output, *(run.output.with_name(f"{run.output.name}.snap{n}")
                                         for n in range(1, len(steps) + 1))]
    figures: dict[str, tuple[int, int, int, int]] = {}
    untracked = 0
    for number, step in enumerate(steps, 1):
        snapshot = run.output.with_name(f"{run.output.name}.snap{number}")
        data = datafile.read(snapshot)
        s = data.summary
        assert tuple(s[name] // (PAGE if name.endswith("_bytes") else 1) for name in MAPPED_FIGURES) == (
            *step.calls, step.mapped, step.unmapped, step.splits), step.maps
        # A cut with no room is lost and counted as untracked; the first
        # step cuts nothing.
        untracked = s.untracked_allocs if number == 1 else untracked
        assert s.untracked_allocs == untracked, step.maps
        figures = {**figures, **step.changed}
        assert region_figures(data, program, functions) == figures, step.maps
        kept = {name: bytes - freed for name, (_, _, bytes, freed) in figures.items()}
        by_protection: dict[str, int] = {}
        for name, pages in kept.items():
            if pages:
                by_protection[PROTECTIONS[name]] = by_protection.get(PROTECTIONS[name], 0) + pages
        assert kernel_pages(step.maps, "heap" if case in BREAK_CASES else "anon") == by_protection, step.maps
        assert step.mapped - step.unmapped == sum(kept.values()) == data.timeline[-1].mapped_bytes // PAGE
        if number == len(steps) - 1:
            # The reports' tables of the last step with regions left.
            document: dict[str, Any] = json.loads(mprof("report", "--format", "json", snapshot).stdout)
            frame = "[brk]" if case in BREAK_CASES else "[mmap]"
            outer = f"main > {CASE_FUNCTIONS.get(case, case)}"
            assert {row["path"]: (row["allocs"], row["frees"], row["kept_objects"], row["bytes"], row["kept_bytes"])
                    for row in document["leaks"]} == {
                f"{outer} > {name} > {frame}": (allocs, frees, allocs - frees, bytes * PAGE, (bytes - freed) * PAGE)
                for name, (allocs, frees, bytes, freed) in figures.items() if allocs > frees}
            [direct] = document["direct"]
            assert (direct["function"], direct["calls"], direct["bytes"], direct["kept_bytes"],
                    direct["kept_objects"]) == (
                frame, sum(f[0] for f in figures.values()), sum(f[2] for f in figures.values()) * PAGE,
                sum(kept.values()) * PAGE, sum(f[0] - f[1] for f in figures.values()))
            assert {via["function"]: via["bytes"] for via in direct["via"]} == {
                name: bytes * PAGE for name, (_, _, bytes, _) in figures.items()}
            assert tuple(document["summary"][name] for name in MAPPED_FIGURES) == tuple(
                s[name] for name in MAPPED_FIGURES)
            mmaps, munmaps, mremaps, breaks = step.calls
            # A snapshot's summary has a wider first column.
            [line] = [line.split(maxsplit=1)[1] for line in mprof("report", "--tables", "summary", snapshot)
                      .stdout.splitlines() if line.startswith("  mapped ")]
            assert line == (f"mmap {mmaps}, munmap {munmaps}, mremap {mremaps}, brk and sbrk {breaks}; "
                            f"{step.mapped * PAGE:,} bytes mapped, {step.unmapped * PAGE:,} unmapped, "
                            f"{(step.mapped - step.unmapped) * PAGE:,} left; in the tables as [mmap] and [brk], "
                            "in no figure above")
    assert tuple(run.data().summary[name] for name in MAPPED_FIGURES) == tuple(s[name] for name in MAPPED_FIGURES)
    assert kept_by_kind(run.data()) == {}
    # Where the kernel puts the area and the monitor's memory changes from
    # run to run: a program region placed over the monitor's memory, or the
    # monitor's in a hole the program meant to fill, crashes or fails a
    # step only in some runs.
    for stdout, data in runs(program, case, directory=tmp_path, times=RUNS - 1):
        assert stdout.splitlines() == [step.maps for step in steps]
        assert tuple(data.summary[name] // (PAGE if name.endswith("_bytes") else 1) for name in MAPPED_FIGURES) == (
            *steps[-1].calls, steps[-1].mapped, steps[-1].unmapped, steps[-1].splits)
        assert kept_by_kind(data) == {}
