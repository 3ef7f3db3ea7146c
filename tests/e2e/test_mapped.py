"""Memory the program maps itself (mapped.c's regions): counted under
their call paths as [mmap] and [brk], apart from the heap's figures.
tests/targets/mapped.c says what it maps."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
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
    # second), 2 pages of break and the page left of it.
    run = profile([targets.build("mapped")])
    text = mprof("report", "--tables", "leaks,graph", run.output).stdout
    assert table(text, "Memory leak table") == [
        "         1       24,576  (54)  main > grow_region > [mmap]",
        "         1       16,384  (36)  main > map_pages > [mmap]",
        "         1        4,096   (9)  main > move_break > [brk]"]
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


def function_range(program: Path, name: str) -> tuple[int, int]:
    """Where function name lies in program's file, from its symbol table."""
    for line in subprocess.run(["nm", "-S", "--defined-only", program], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[3] == name:
            return int(fields[0], 16), int(fields[0], 16) + int(fields[1], 16)
    raise AssertionError(f"{name} not in {program}")


@pytest.mark.slow
def test_mapping_and_unmapping_from_a_signal_handler(targets: Targets, tmp_path: Path) -> None:
    # mapping_signals.c: a handler every 100 us maps a page and unmaps one
    # an earlier call mapped, while the main loop maps and unmaps 20,000
    # pages and allocates; at the end nothing is left mapped.  A handler
    # that interrupted the monitor's own mapping call waited for its lock.
    program = targets.build("mapping_signals")
    start, end = function_range(program, "map_page")
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


def test_a_program_that_limits_its_address_space(targets: Targets, profile: Callable[..., Run]) -> None:
    # limited_address_space.c limits itself to 2 GiB, then takes 100 MiB
    # with malloc and maps 100 MiB: the monitor's reserved address space
    # counts against the limit until it gives back what it does not use.
    run = profile([targets.build("limited_address_space")])
    assert run.completed.stdout == "ok\n"
    s = run.data().summary
    assert (s.allocs, s.bytes_allocated, s.mmap_calls, s.mapped_bytes) == (1, 100 * MIB, 1, 100 * MIB)
