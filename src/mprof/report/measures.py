"""What a whole call path counts for, measure by measure: the figures that
the exports (pprof's sample types, a collapsed file's counts) and mprof
diff give per path, named as pprof's heap profiles name theirs."""

from __future__ import annotations

import array
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass

from ..leak_kinds import KINDS, LOST
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


# The leak measures count what may be a leak ("leaked"): the blocks of the
# kinds asked for (--leak-kinds; by default the lost, definitely and
# indirectly) in the runs classified, every block never freed of the
# others; that is, all kept but the kinds not asked for.  A PathRow's
# kinds are each kind's blocks and bytes, in KINDS' order.
def _kept_objects(left_out: Sequence[int]) -> Callable[[PathRow], int]:
    return lambda path: path.allocs - path.frees - sum(path.kinds[2 * at] for at in left_out)


def _kept_bytes(left_out: Sequence[int]) -> Callable[[PathRow], int]:
    return lambda path: sum(path.bytes) - sum(path.freed) - sum(path.kinds[2 * at + 1] for at in left_out)


def measures(runtime: bool = False, kinds: Collection[str] = LOST) -> tuple[Measure, ...]:
    """Every measure; the never-freed ones count the leak kinds asked for
    and leave out, as the leak table does, what a suppression took and,
    unless runtime, the blocks the C and C++ runtimes keep on purpose."""

    def leaked(figure: Callable[[PathRow], int]) -> Callable[[PathRow], int]:
        return lambda path: 0 if path.suppressed or (path.runtime and not runtime) else figure(path)

    left_out = [at for at, kind in enumerate(KINDS) if kind not in kinds]
    return (
        Measure("alloc_objects", "count", "blocks allocated", lambda path: path.allocs, lambda row: row.allocs),
        Measure("alloc_space", "bytes", "bytes allocated", lambda path: sum(path.bytes), lambda row: row.bytes),
        Measure("leak_objects", "count", "blocks leaked", leaked(_kept_objects(left_out)),
                lambda row: row.allocs - row.frees),
        Measure("leak_space", "bytes", "bytes leaked", leaked(_kept_bytes(left_out)),
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


def by_name(name: str, runtime: bool = False, kinds: Collection[str] = LOST) -> Measure:
    return next(measure for measure in measures(runtime, kinds) if measure.name == name)


# A path's columns, as PathRow holds them, that a measure may sum: allocs,
# frees, bytes by size class, bytes freed by class, temporaries, peak blocks
# and bytes, the leak kinds' blocks and bytes (pathrows.h's PR_FIELDS); and
# the gates that set a measure to 0, a path being the runtimes' or
# suppressed (PR_GATE_RUNTIME, PR_GATE_SUPPRESSED).
FIELDS = 21
GATE_RUNTIME, GATE_SUPPRESSED = 1, 2


def _probe(columns: Sequence[int], runtime: str = "", suppressed: str = "") -> PathRow:
    return PathRow(None, columns[0], columns[1], tuple(columns[2:6]), tuple(columns[6:10]),  # type: ignore[arg-type]
                   runtime, columns[10], columns[11], columns[12], suppressed, tuple(columns[13:21]))  # type: ignore[arg-type]


# Paths to try a measure on: figures of both signs and of no pattern.
_PROBES = ([7919 * (n + 3) ** 2 + n for n in range(FIELDS)],
           [(-1) ** n * (104729 + 31 ** (n % 7) * (n + 1)) for n in range(FIELDS)])


def _linear(measure: Measure) -> tuple[list[int], int] | None:
    """measure.of as the library sums it: each column times a coefficient,
    and 0 where the path is the runtimes' or suppressed (its gates); None
    when the measure is not such a sum, as tried on a few paths."""
    if measure.of(_probe([0] * FIELDS)) != 0:
        return None
    coefficients = [measure.of(_probe([int(n == f) for n in range(FIELDS)]))
                    for f in range(FIELDS)]
    if any(abs(coefficient) > 2 ** 31 for coefficient in coefficients):
        return None
    gates = None
    for columns in _PROBES:
        value = sum(map(int.__mul__, coefficients, columns))
        if measure.of(_probe(columns)) != value:
            return None
        if not value:
            continue
        runtime = measure.of(_probe(columns, runtime="stdio buffer"))
        suppressed = measure.of(_probe(columns, suppressed="leak:x"))
        both = measure.of(_probe(columns, "stdio buffer", "leak:x"))
        if runtime not in (0, value) or suppressed not in (0, value):
            return None
        found = (GATE_RUNTIME if runtime == 0 else 0) | (GATE_SUPPRESSED if suppressed == 0 else 0)
        if both != (0 if found else value) or (gates is not None and gates != found):
            return None
        gates = found
    return coefficients, gates or 0


def as_sums(chosen: Sequence[Measure]) -> tuple[array.array[int], bytes] | None:
    """The measures as libmprof-reduce sums a path's columns (diffwalk.h,
    export.h): FIELDS coefficients a measure, and its gates; None when one
    is not such a sum."""
    sums = [_linear(measure) for measure in chosen]
    found = [each for each in sums if each is not None]
    if len(found) < len(sums):
        return None
    return (array.array("q", [coefficient for each in found for coefficient in each[0]]),
            bytes(each[1] for each in found))


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
