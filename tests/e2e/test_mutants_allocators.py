"""Another allocator's own mappings, which a mutation audit found
unchecked (make mutate): with jemalloc, tcmalloc or mimalloc preloaded
after the monitor, the memory the allocator maps for its heap is no
region of the program's (mapped.c's allocator modules), as glibc's is
not: the blocks are counted once, as blocks."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from e2e_support import LIBMPROF, Targets, monitor_env, mprof

# tests/targets/watch_looks.c: 20,000 blocks of 64 KiB, each freed.
BLOCKS = 20000
SIZE = 64 << 10
PAGE = 4096
ALLOCATORS = {"jemalloc": "libjemalloc.so.2", "tcmalloc": "libtcmalloc_minimal.so.4",
              "mimalloc": "libmimalloc.so.2"}


@pytest.mark.slow
@pytest.mark.parametrize("allocator", sorted(ALLOCATORS))
def test_an_allocators_own_mappings_are_not_the_programs(targets: Targets, tmp_path: Path, allocator: str) -> None:
    output = tmp_path / "out.mprof"
    env = monitor_env(output)
    env["LD_PRELOAD"] = f"{LIBMPROF} {ALLOCATORS[allocator]}"
    subprocess.run([targets.build("watch_looks")], env=env, check=True, timeout=120)
    summary: dict[str, Any] = json.loads(mprof("report", "--format", "json", output).stdout)["summary"]
    assert {name: summary[name] for name in ("mmap_calls", "munmap_calls", "mremap_calls", "brk_calls",
                                             "mapped_bytes", "unmapped_bytes")} == dict.fromkeys(
        ("mmap_calls", "munmap_calls", "mremap_calls", "brk_calls", "mapped_bytes", "unmapped_bytes"), 0)
    # The program's blocks, every one freed (the allocator's library may
    # keep a block of its own, as libstdc++'s exception pool).
    assert (summary["frees"], summary["bytes_freed"]) == (BLOCKS, BLOCKS * SIZE)


@pytest.mark.slow
@pytest.mark.parametrize("allocator", sorted(ALLOCATORS))
def test_the_programs_own_regions_are_counted_beside_another_allocator(targets: Targets, tmp_path: Path,
                                                                       allocator: str) -> None:
    """tests/targets/regions_at_once.c's calls are the program's own, not
    the allocator's: counted as they are with glibc's (test_mutants_mapped)."""
    output = tmp_path / "out.mprof"
    env = monitor_env(output)
    env["LD_PRELOAD"] = f"{LIBMPROF} {ALLOCATORS[allocator]}"
    subprocess.run([targets.build("regions_at_once")], env=env, check=True, timeout=120)
    document: dict[str, Any] = json.loads(mprof("report", "--format", "json", output).stdout)
    summary = document["summary"]
    assert (summary["mmap_calls"], summary["munmap_calls"], summary["mremap_calls"], summary["brk_calls"],
            summary["mapped_bytes"], summary["unmapped_bytes"]) == (303, 103, 0, 0, 309 * PAGE, 107 * PAGE)
    kept = {row["path"]: (row["allocs"], row["frees"], row["kept_bytes"]) for row in document["leaks"]
            if row["path"].endswith("[mmap]")}
    assert kept == {"main > map_page > [mmap]": (300, 100, 200 * PAGE), "main > map_three > [mmap]": (3, 1, 2 * PAGE)}


# How the je_ allocator is linked: as lld and older ld link, its code in
# its first segment (in jemalloc's, as in what ld links now, the first
# holds none); and as ld links now, with segments that each end nearer the
# next one's start than their own size (see prefixed_allocator.c).
PREFIXED_LAYOUTS = {"code_first": ["-Wl,-z,noseparate-code"], "large_sections": ["-DLARGE_SECTIONS"]}


@pytest.mark.slow
@pytest.mark.parametrize("layout", PREFIXED_LAYOUTS)
def test_two_allocators_mappings_are_not_the_programs_and_its_own_are(targets: Targets, tmp_path: Path,
                                                                      layout: str) -> None:
    """tests/targets/prefixed_mapper.c with jemalloc preloaded after the
    monitor and prefixed_allocator.c's je_ functions routed to it
    (MPROF_ALLOCATOR_PREFIX): neither allocator's mappings (the je_ one's
    64 MiB region among them) is a region of the program's, and the 3 pages
    the program maps itself are, however the je_ one's library is laid out
    (PREFIXED_LAYOUTS)."""
    library = targets.build("libprefixed.so", *PREFIXED_LAYOUTS[layout], source="prefixed_allocator.c",
                            shared=True)
    program = targets.build("prefixed_mapper", str(library), f"-Wl,-rpath,{library.parent}")
    output = tmp_path / "out.mprof"
    env = monitor_env(output, MPROF_ALLOCATOR_PREFIX="je_")
    env["LD_PRELOAD"] = f"{LIBMPROF} {ALLOCATORS['jemalloc']}"
    subprocess.run([program], env=env, check=True, timeout=120)
    document: dict[str, Any] = json.loads(mprof("report", "--format", "json", output).stdout)
    summary = document["summary"]
    assert (summary["mmap_calls"], summary["munmap_calls"], summary["mremap_calls"], summary["brk_calls"],
            summary["mapped_bytes"], summary["unmapped_bytes"]) == (1, 1, 0, 0, 3 * PAGE, PAGE)
    kept = {row["path"]: (row["allocs"], row["frees"], row["kept_bytes"]) for row in document["leaks"]
            if row["path"].endswith("[mmap]")}
    # The region cut is freed, and what is left of it counted anew.
    assert (summary["mapped_splits"], kept) == (1, {"main > map_pages > [mmap]": (2, 1, 2 * PAGE)})
