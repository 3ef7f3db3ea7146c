"""The live view's lines of the leak kinds, once the user has asked the
process to classify its live blocks: memcheck's four kinds in bytes and
blocks, and the paths that lose the most, as of that answer, shown until
the next."""

from __future__ import annotations

from ..leak_kinds import DEFINITE, INDIRECT, KINDS
from ..report import tables
from .numbers import compact, duration
from .sample import Sample

# The lost paths shown: the worst few, the screen's rows are for the rest.
LOST_ROWS = 3
# Each kind's column: its name and a space before it; the label's, what
# 80 columns leave.
KIND_WIDTH = 16
LABEL_WIDTH = 80 - 4 * KIND_WIDTH
# Before the path of a lost row: its bytes and blocks as the path rows
# below have them, then the kind.
LOST_PREFIX = 14 + 1 + 6 + 2 + len(INDIRECT) + 2


def leak_lines(classified: Sample | None, classifying: bool, refused: bool, width: int) -> list[str]:
    """None before the user asks; a line while the first answer is awaited,
    or when the process answered without classifying; else the kinds of
    the classified sample and its most lost paths."""
    if classified is None:
        if classifying:
            return ["leak kinds: classifying (the process stops its threads to scan its heap)"]
        if refused:
            return ["leak kinds: not classified (MPROF_LEAK_CHECK=0, or a libmprof before them)"]
        return []
    totals = [sum(path.kinds[n] for path in classified.paths.values()) for n in range(2 * len(KINDS))]
    label = "classifying" if classifying else f"scan at {duration(classified.elapsed_ns)}"
    out = [f"{label:<{LABEL_WIDTH}}" + "".join(f"{kind:>{KIND_WIDTH}}" for kind in KINDS),
           f"{'bytes':<{LABEL_WIDTH}}" + "".join(f"{totals[2 * n + 1]:>{KIND_WIDTH},}" for n in range(len(KINDS))),
           f"{'blocks':<{LABEL_WIDTH}}" + "".join(f"{totals[2 * n]:>{KIND_WIDTH},}" for n in range(len(KINDS)))]
    lost = sorted(((path.kinds[2 * n + 1], path.kinds[2 * n], kind, path)
                   for path in classified.paths.values() for n, kind in enumerate(KINDS)
                   if kind in (DEFINITE, INDIRECT) and path.kinds[2 * n]),
                  key=lambda row: (-row[0], -row[1], KINDS.index(row[2]), row[3].names))[:LOST_ROWS]
    if not lost:
        return [*out, f"{'':>14} (no block is lost)"]
    shown = tables.shown_whole_paths(
        classified.model, [tables.WholePath(path.functions, blocks, size) for size, blocks, _, path in lost],
        max(20, width - LOST_PREFIX))
    return [*out, *(f"{size:>14,} {compact(blocks):>6}  {kind:<{len(INDIRECT)}}  {path.text}"
                    for (size, blocks, kind, _), path in zip(lost, shown, strict=True))]
