"""Differential flame graphs: the call paths of both profiles as one tree,
each path as wide as the larger of its two figures (so that what shrank to
nothing is still drawn), a frame as wide as its paths, and coloured by its
change: reds for growth, blues for shrinkage, the deeper the larger the
change relative to the frame, grey for none."""

from __future__ import annotations

from ..report.flame import Candidate, Flame, expand
from .compare import Comparison, measure_index
from .text import signed

# Tones, as report/flame.py's Frame has them: tone // 10 picks the colour
# class t0 (deepest blue) .. t3, t4 (no change), t6 .. t9 (deepest red).
UNCHANGED = 40


def tone(base: int, new: int) -> int:
    """The colour of a change: its size relative to the larger figure, in
    four steps each way."""
    larger = max(base, new)
    if not larger or base == new:
        return UNCHANGED
    steps = min(3, int(abs(new - base) * 4 / larger))
    return (3 - steps) * 10 if new < base else (6 + steps) * 10


def differential(comparison: Comparison, measure: str) -> Flame:
    """The paths of both profiles as one tree, a frame by its function's
    key (the walk's, compare.PathsFlame), each frame found as the graph
    asks for it."""
    index = measure_index(comparison.measures, measure)
    unit = comparison.measures[index].unit
    tree = comparison.view("paths").flame(index)

    def detail(node: int) -> str:
        base, new = tree.base(node), tree.new(node)
        percent = f", {(new - base) * 100 / base:+.1f}%" if base else ""
        return f"base {base:,}, new {new:,} {unit} ({signed(new - base)}{percent})"

    def children(key: object, value: int) -> list[Candidate]:
        node = 0 if key is None else key
        assert isinstance(node, int)
        return [(name, detail(child), tree.width(child), child) for child, name in tree.children(node)]

    def colour(name: str, key: object) -> int:
        node = 0 if key is None else key
        assert isinstance(node, int)
        return tone(tree.base(node), tree.new(node))

    return expand("all", tree.width(0), children, tone=colour)
