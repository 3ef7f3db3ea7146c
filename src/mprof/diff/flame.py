"""Differential flame graphs: the call paths of both profiles as one tree,
each path as wide as the larger of its two figures (so that what shrank to
nothing is still drawn), a frame as wide as its paths, and coloured by its
change: reds for growth, blues for shrinkage, the deeper the larger the
change relative to the frame, grey for none."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from ..report.flame import Candidate, Flame, expand
from ..report.tables import NO_CHAIN
from .compare import Comparison, FunctionKey, measure_index
from .text import signed

# Tones, as report/flame.py's Frame has them: tone // 10 picks the colour
# class t0 (deepest blue) .. t3, t4 (no change), t6 .. t9 (deepest red).
UNCHANGED = 40


@dataclass
class _Node:
    name: str
    base: int = 0
    new: int = 0
    width: int = 0  # the larger figure of each path through it, summed
    children: dict[FunctionKey | str, _Node] = field(default_factory=dict)


def tone(base: int, new: int) -> int:
    """The colour of a change: its size relative to the larger figure, in
    four steps each way."""
    larger = max(base, new)
    if not larger or base == new:
        return UNCHANGED
    steps = min(3, int(abs(new - base) * 4 / larger))
    return (3 - steps) * 10 if new < base else (6 + steps) * 10


def differential(comparison: Comparison, measure: str) -> Flame:
    index = measure_index(comparison.measures, measure)
    unit = comparison.measures[index].unit
    root = _Node("all")
    for row in comparison.view("paths").rows.values():
        base, new = row.base[index], row.new[index]
        if not base and not new:
            continue
        # A path row's key is its functions' keys.
        keys = cast(tuple[FunctionKey, ...], row.key)
        frames = zip(keys, [frame.text for frame in row.frames], strict=True) if row.frames else [(NO_CHAIN, NO_CHAIN)]
        node = root
        node.base += base
        node.new += new
        for key, name in frames:
            child = node.children.get(key)
            if child is None:
                child = node.children[key] = _Node(name)
            child.base += base
            child.new += new
            child.width += max(base, new)
            node = child
        root.width += max(base, new)

    def detail(node: _Node) -> str:
        percent = f", {(node.new - node.base) * 100 / node.base:+.1f}%" if node.base else ""
        return f"base {node.base:,}, new {node.new:,} {unit} ({signed(node.new - node.base)}{percent})"

    def children(key: object, value: int) -> list[Candidate]:
        node = root if key is None else key
        assert isinstance(node, _Node)
        return [(child.name, detail(child), child.width, child) for child in node.children.values()]

    def colour(name: str, key: object) -> int:
        node = root if key is None else key
        assert isinstance(node, _Node)
        return tone(node.base, node.new)

    return expand("all", root.width, children, tone=colour)
