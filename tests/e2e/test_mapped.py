"""Memory the program maps itself (mapped.c's regions): counted under
their call paths as [mmap] and [brk], apart from the heap's figures.
tests/targets/mapped.c says what it maps."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from e2e_support import Run, Targets, mprof

PAGE = 4096
MIB = 1 << 20


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
