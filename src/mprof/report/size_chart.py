"""The allocation size distribution as bars: one per size that occurs, or,
when there are too many sizes to read, one per power-of-two range."""

from __future__ import annotations

from dataclasses import dataclass

from .model import BinRow, Model

MAX_BARS = 24
LARGE = 1025  # the bin of every size above 1024


@dataclass(frozen=True)
class Bar:
    label: str  # bytes: "204", "129-256", "> 1024"
    allocs: int
    bytes: int
    kept: int
    allocs_share: float  # of the most blocks in a bar, 0-1
    share: float  # of the most bytes in a bar, 0-1
    kept_share: float


@dataclass(frozen=True)
class SizeChart:
    bars: list[Bar]
    ranges: bool  # one bar per power-of-two range rather than per size


def chart(model: Model, max_bars: int = MAX_BARS) -> SizeChart:
    used = [b for b in model.bins if b.allocs]
    groups: list[tuple[str, list[BinRow]]]
    by_range = len(used) > max_bars
    if not by_range:
        groups = [(_label(b.size), [b]) for b in used]
    else:
        ranges: dict[str, list[BinRow]] = {}
        for b in used:
            ranges.setdefault(_range(b.size), []).append(b)
        groups = list(ranges.items())  # bins are in size order, so ranges are too
    widest = max((sum(b.bytes for b in members) for _, members in groups), default=0) or 1
    most = max((sum(b.allocs for b in members) for _, members in groups), default=0) or 1
    result = []
    for label, members in groups:
        allocated = sum(b.bytes for b in members)
        kept = sum(b.bytes - b.bytes_freed for b in members)
        allocs = sum(b.allocs for b in members)
        result.append(Bar(label, allocs, allocated, kept, allocs / most, allocated / widest, kept / widest))
    return SizeChart(result, by_range)


def _label(size: int) -> str:
    return "> 1024" if size >= LARGE else str(size)


def _range(size: int) -> str:
    """0, 1-8, 9-16, 17-32, ... 513-1024, > 1024."""
    if size >= LARGE or size == 0:
        return _label(size)
    if size <= 8:
        return "1-8"
    top = 1 << (size - 1).bit_length()
    return f"{top // 2 + 1}-{top}"
