"""What a whole call path counts for, measure by measure: the figures that
the exports (pprof's sample types, a collapsed file's counts) and mprof
diff give per path, named as pprof's heap profiles name theirs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .model import BinRow, Model, PathNodeRow, PathRow


@dataclass(frozen=True)
class Measure:
    name: str  # pprof's sample type
    unit: str  # "count" or "bytes"
    what: str  # for the reader: help texts, headings
    of: Callable[[PathRow], int]
    # The same figure of a size bin; bins know no paths, so never-freed
    # ones include what the runtimes keep.
    of_bin: Callable[[BinRow], int]


def _kept_objects(path: PathRow) -> int:
    return path.allocs - path.frees


def _kept_bytes(path: PathRow) -> int:
    return sum(path.bytes) - sum(path.freed)


def measures(runtime: bool = False) -> tuple[Measure, ...]:
    """Every measure; the never-freed ones leave out, as the leak table
    does, what a suppression took and, unless runtime, the blocks the C
    and C++ runtimes keep on purpose."""

    def leaked(figure: Callable[[PathRow], int]) -> Callable[[PathRow], int]:
        return lambda path: 0 if path.suppressed or (path.runtime and not runtime) else figure(path)

    return (
        Measure("alloc_objects", "count", "blocks allocated", lambda path: path.allocs, lambda row: row.allocs),
        Measure("alloc_space", "bytes", "bytes allocated", lambda path: sum(path.bytes), lambda row: row.bytes),
        Measure("leak_objects", "count", "blocks never freed", leaked(_kept_objects),
                lambda row: row.allocs - row.frees),
        Measure("leak_space", "bytes", "bytes never freed", leaked(_kept_bytes),
                lambda row: row.bytes - row.bytes_freed),
        Measure("peak_objects", "count", "blocks live at the peak", lambda path: path.peak_blocks,
                lambda row: row.peak_blocks),
        Measure("peak_space", "bytes", "bytes live at the peak", lambda path: path.peak_bytes,
                lambda row: row.peak_bytes),
        Measure("temp_objects", "count", "temporary blocks", lambda path: path.temporaries,
                lambda row: row.temporaries),
    )


MEASURE_NAMES = tuple(measure.name for measure in measures())
DEFAULT_MEASURE = "alloc_space"


def by_name(name: str, runtime: bool = False) -> Measure:
    return next(measure for measure in measures(runtime) if measure.name == name)


def machine_frames(model: Model, path: PathRow) -> Iterator[list[PathNodeRow]]:
    """The path's frames grouped by the return address they share: each
    group a frame and the functions inlined into it, innermost first, as
    pprof's locations hold them."""
    group: list[PathNodeRow] = []
    for row in model.frames(path.node):
        group.append(row)
        if not row.inlined:
            yield group
            group = []
    if group:
        yield group
