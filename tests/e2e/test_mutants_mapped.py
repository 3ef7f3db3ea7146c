"""Mapped-region calls a mutation audit found unchecked (make mutate):
an mremap that only unmaps what it lands on, one that only maps, moves
of the break the kernel refuses, and a mapping made before the monitor's
constructor ran.  The targets' sources say what they map."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from e2e_support import Run, Targets, monitor_env, mprof

PAGE = 4096


@pytest.mark.slow
def test_an_mremap_that_only_unmaps_or_only_maps_is_counted(targets: Targets, profile: Callable[..., Run]) -> None:
    """tests/targets/remap_over.c."""
    run = profile([targets.build("remap_over")])
    document: dict[str, Any] = json.loads(mprof("report", "--format", "json", run.output).stdout)
    summary = document["summary"]
    # The page above, the 4- and 2-page regions, and the 2 pages the copy
    # maps anew; the file's mapping and its unmapping are none.
    mapped = (1 + 4 + 2 + 2) * PAGE
    # The page the file's mapping replaced, pages 3-4 of the first, the
    # pair left behind, its copy, and the page above.
    unmapped = (1 + 2 + 2 + 2 + 1) * PAGE
    assert (summary["mmap_calls"], summary["munmap_calls"], summary["mremap_calls"], summary["brk_calls"]) == (
        3, 4, 2, 0)
    assert (summary["mapped_bytes"], summary["unmapped_bytes"], summary["mapped_splits"]) == (
        mapped, unmapped, 2)
    kept = {row["path"]: (row["allocs"] - row["frees"], row["kept_bytes"]) for row in document["leaks"]}
    assert kept == {"main > map_pages > [mmap]": (1, PAGE)}
    assert run.data().timeline[-1].mapped_bytes == mapped - unmapped


@pytest.mark.slow
def test_a_move_of_the_break_the_kernel_refuses_changes_nothing(targets: Targets,
                                                                 profile: Callable[..., Run]) -> None:
    """tests/targets/brk_fails.c: an sbrk and a brk refused with ENOMEM
    count no call, map nothing and unmap nothing; the break moved by one
    byte is a region of one byte, under its path; the break moved up takes
    nothing of a region below it."""
    run = profile([targets.build("brk_fails")])
    document: dict[str, Any] = json.loads(mprof("report", "--format", "json", run.output).stdout)
    summary = document["summary"]
    assert (summary["mmap_calls"], summary["munmap_calls"], summary["mremap_calls"], summary["brk_calls"]) == (
        2, 0, 0, 2)
    assert (summary["mapped_bytes"], summary["unmapped_bytes"], summary["mapped_splits"]) == (5 * PAGE + 1, 0, 0)
    kept = {row["path"]: (row["allocs"] - row["frees"], row["kept_bytes"]) for row in document["leaks"]}
    assert kept == {"main > map_pages > [mmap]": (1, 3 * PAGE), "main > [mmap]": (1, PAGE),
                    "main > [brk]": (2, PAGE + 1)}


@pytest.mark.slow
def test_more_regions_than_the_first_table_holds_and_calls_that_map_nothing_new(
        targets: Targets, profile: Callable[..., Run]) -> None:
    """tests/targets/regions_at_once.c: 3 pages, then 300 mapped one at a
    time and all kept, the middle one of the 3 unmapped (the region freed,
    its two pages left counted anew: two splits), and the first 100 of the
    300; a shared region's duplicate by mremap
    with an old size of 0 is the same memory, no region, so neither it nor
    its unmapping is a call of the figures; a brk to the break moves
    nothing and is none either; 6,000 bytes mapped and unmapped are 2
    pages."""
    run = profile([targets.build("regions_at_once")])
    document: dict[str, Any] = json.loads(mprof("report", "--format", "json", run.output).stdout)
    summary = document["summary"]
    assert (summary["mmap_calls"], summary["munmap_calls"], summary["mremap_calls"], summary["brk_calls"]) == (
        303, 103, 0, 0)
    assert (summary["mapped_bytes"], summary["unmapped_bytes"], summary["mapped_splits"]) == (
        (3 + 300 + 4 + 2) * PAGE, (1 + 100 + 4 + 2) * PAGE, 2)
    kept = {row["path"]: (row["allocs"], row["frees"], row["kept_bytes"]) for row in document["leaks"]}
    assert kept == {"main > map_page > [mmap]": (300, 100, 200 * PAGE), "main > map_three > [mmap]": (3, 1, 2 * PAGE)}
    assert run.data().timeline[-1].mapped_bytes == (200 + 2) * PAGE


@pytest.mark.slow
def test_mapping_and_unmapping_take_points_over_time(targets: Targets, profile: Callable[..., Run]) -> None:
    """tests/targets/regions_over_time.c allocates nothing while it maps:
    its mmap after a pause longer than the interval between points takes a
    point with its 11 pages, its munmap after another one with 10; the 10
    pages it mapped before may have taken points of their own, of 10 pages
    or fewer; any point after (the exit's, and the last, as the file is
    written) has the 10 left."""
    run = profile([targets.build("regions_over_time")])
    pages = [point.mapped_bytes // PAGE for point in run.data().timeline if point.mapped_bytes]
    assert all(point.mapped_bytes % PAGE == 0 for point in run.data().timeline)
    eleven = pages.index(11)
    assert all(0 < count <= 10 for count in pages[:eleven])
    assert pages[eleven:eleven + 2] == [11, 10]
    assert set(pages[eleven + 2:]) == {10}


@pytest.mark.slow
def test_a_thousand_calls_that_each_take_more_regions_than_the_stack_keeps(
        targets: Targets, profile: Callable[..., Run]) -> None:
    """tests/targets/many_cuts.c, 1,000 rounds: a 17-page reservation, its
    pages mapped anew one by one (each but the last leaves the rest of the
    reservation, counted anew: a split), and one munmap of all 17.  The
    monitor's own memory for the calls' cuts is given back as it was taken:
    its figure stays within the 128 TiB of x86-64's user address space,
    where one given back more often than taken would wrap around."""
    run = profile([targets.build("many_cuts")])
    s = run.data().summary
    assert tuple(s[name] for name in ("mmap_calls", "munmap_calls", "mremap_calls", "brk_calls", "mapped_bytes",
                                      "unmapped_bytes", "mapped_splits")) == (
        1000 * 18, 1000, 0, 0, 1000 * 34 * PAGE, 1000 * 34 * PAGE, 1000 * 16)
    assert 0 < s.monitor_bytes < 1 << 47


@pytest.mark.slow
def test_a_libraries_mapping_before_the_monitors_constructor_starts_it(targets: Targets, tmp_path: Path) -> None:
    """tests/targets/early_mapping.c, linked with early_mapper.c's library:
    the library's constructor maps 3 pages before the monitor's constructor
    has run (a library the executable links is initialised before those
    preloaded), the first call to reach the monitor; main unmaps a page of
    them.  The monitor starts on that mmap and counts it, so that the
    munmap cuts a region it knows."""
    library = targets.build("libearly_mapper.so", source="early_mapper.c", shared=True)
    program = targets.build("early_mapping", str(library), f"-Wl,-rpath,{library.parent}")
    output = tmp_path / "out.mprof"
    completed = subprocess.run([program], env=monitor_env(output), capture_output=True, text=True, timeout=120)
    assert (completed.returncode, completed.stdout) == (0, "ok\n"), completed.stderr
    document: dict[str, Any] = json.loads(mprof("report", "--format", "json", output).stdout)
    summary = document["summary"]
    assert (summary["mmap_calls"], summary["munmap_calls"], summary["mremap_calls"], summary["brk_calls"]) == (
        1, 1, 0, 0)
    assert (summary["mapped_bytes"], summary["unmapped_bytes"], summary["mapped_splits"]) == (3 * PAGE, PAGE, 1)
    # Called by the loader's constructor calls, whose frames are no concern
    # here: the region cut is freed, the 2 pages left of it counted anew.
    kept = {row["path"].rsplit(" > ", 2)[-2]: (row["allocs"], row["frees"], row["kept_bytes"])
            for row in document["leaks"] if row["path"].endswith("[mmap]")}
    assert kept == {"map_early": (2, 1, 2 * PAGE)}


@pytest.mark.slow
def test_regions_unmapped_behind_the_monitors_back_and_mapped_over(targets: Targets, tmp_path: Path) -> None:
    """tests/targets/unmapped_behind.c: 20 regions unmapped with the system
    call itself, unseen, then mapped over by one mmap the kernel places
    there, which cuts all 20 where the monitor made room for fewer.  The
    program runs to its end, and its own mapping is counted; what it
    unmapped unseen stays counted as far as the monitor could not tell."""
    program = targets.build("unmapped_behind")
    output = tmp_path / "out.mprof"
    completed = subprocess.run([program], env=monitor_env(output), capture_output=True, text=True, timeout=120)
    assert (completed.returncode, completed.stdout) == (0, "same\n"), completed.stderr
    document: dict[str, Any] = json.loads(mprof("report", "--format", "json", output).stdout)
    assert document["summary"]["mmap_calls"] == 22
    kept = {row["path"]: (row["allocs"], row["frees"], row["kept_bytes"]) for row in document["leaks"]}
    assert kept["main > map_over > [mmap]"] == (1, 0, 20 * PAGE)
    assert kept["main > map_one > [mmap]"][0] == 20


@pytest.mark.slow
def test_the_lowest_of_a_thousand_regions_unmapped(targets: Targets, profile: Callable[..., Run]) -> None:
    """tests/targets/lowest_of_many.c: 1,000 regions of a page, the lowest
    unmapped, which the monitor keeps first of all: the regions it counts
    as overlapped are from there up, never below."""
    run = profile([targets.build("lowest_of_many")])
    assert run.completed.stdout == "ok\n"
    document: dict[str, Any] = json.loads(mprof("report", "--format", "json", run.output).stdout)
    summary = document["summary"]
    assert tuple(summary[name] for name in ("mmap_calls", "munmap_calls", "mremap_calls", "brk_calls", "mapped_bytes",
                                            "unmapped_bytes", "mapped_splits")) == (
        1000, 1, 0, 0, 1000 * PAGE, PAGE, 0)
    kept = {row["path"]: (row["allocs"], row["frees"], row["kept_bytes"]) for row in document["leaks"]}
    assert kept == {"main > map_page > [mmap]": (1000, 1, 999 * PAGE)}
