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
