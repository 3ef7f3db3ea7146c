"""Flame graphs (icicles, root on top) of the bytes allocated by call path
and of the bytes never freed, laid out for drawing.

Both are the whole call paths of the profile (schema.sql's path_nodes and
paths), so every frame's bytes are exact: a frame is a function called from
the frame above it, its width the bytes of every allocation made through
that very chain of calls.  Calls of one function from different lines of
its caller are one frame, as in other flame graphs.

Both are capped so that a profile with tens of thousands of paths still
draws quickly: frames below MIN_SHARE of the root are left out (their bytes
stay in their parent's width), and at most MAX_FRAMES frames are kept, the
widest first."""

from __future__ import annotations

import array
import heapq
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from ..reducer import core
from .measured import node_sums
from .measures import measures
from .model import Model
from .tables import NO_CHAIN

MIN_SHARE = 0.001
MAX_FRAMES = 3000


@dataclass(frozen=True)
class Frame:
    name: str
    bytes: int
    depth: int
    x: float  # left edge, as a fraction of the root's width
    width: float  # fraction of the root's width
    parent: int  # index in Flame.frames, -1 for the root
    detail: str  # more hover text: a cycle's members
    tone: int  # 0-99, from the name, so that a function keeps its colour

    @property
    def search(self) -> str:
        """What the search box matches: the name, and a cycle's members."""
        return f"{self.name} {self.detail}" if self.detail else self.name


@dataclass(frozen=True)
class Flame:
    frames: list[Frame]  # pre-order: every frame after its parent
    total: int
    depth: int  # number of rows
    omitted: int  # frames left out for being too narrow or beyond the cap


# A frame to be: its label, hover detail, bytes, and the key of its node,
# from which its children are found.
Candidate = tuple[str, str, int, object]
Children = Callable[[object, int], list[Candidate]]


def _path_flame(model: Model, sums: tuple[array.array[int], int], min_share: float, max_frames: int) -> Flame:
    """The paths' tree, each node counting sums' figure of the paths that
    end there, those of no caller counted apart (measured.node_sums)."""
    nodes = model.tree.arrays()
    subtotal, unwound = sums
    core.subtree_sums(nodes.parent, subtotal)  # OverflowError past 64 bits

    def children(key: object, value: int) -> list[Candidate]:
        # A frame is the nodes of one function under the frame above.
        below = nodes.children(-1) if key is None else [
            child for n in cast(tuple[int, ...], key) for child in nodes.children(n)]
        by_function: dict[int, list[int]] = {}
        for index in below:
            by_function.setdefault(nodes.function[index], []).append(index)
        found: list[Candidate] = []
        for function_id, group in by_function.items():
            function = model.functions[function_id]
            found.append((function.name, function.full_name if function.full_name != function.name else "",
                          sum(subtotal[n] for n in group), tuple(group)))
        if key is None and unwound:
            found.append((NO_CHAIN, "", unwound, ()))
        return found

    root_bytes = sum(subtotal[n] for n in nodes.children(-1)) + unwound
    return expand("all", root_bytes, children, min_share, max_frames)


def _suppressed(model: Model) -> list[int]:
    """The places in tree.rows() of the paths a leak suppression took,
    and of every other path that ends at one of their nodes."""
    if not model.path_suppressions:
        return []
    rows = model.tree.rows()
    nodes = {rows[n].node for n in model.path_suppressions}
    return [n for n, row in enumerate(rows) if row.node in nodes]


def _flames(model: Model, names: list[str], runtime: bool = False, min_share: float = MIN_SHARE,
            max_frames: int = MAX_FRAMES) -> list[Flame]:
    """The flame graphs of the measures named, their figures summed by
    node in one walk of the paths."""
    chosen = {measure.name: measure for measure in measures(runtime)}
    sums = node_sums(model, [chosen[name] for name in names], model.tree.arrays().ids, _suppressed(model))
    return [_path_flame(model, each, min_share, max_frames) for each in sums]


def allocation_flame(model: Model, min_share: float = MIN_SHARE, max_frames: int = MAX_FRAMES) -> Flame | None:
    """Bytes allocated, by whole call path; None in mprof- mode, whose paths
    stop at the leak depth."""
    if not model.call_graph:
        return None
    [flame] = _flames(model, ["alloc_space"], min_share=min_share, max_frames=max_frames)
    return flame


def leak_flame(model: Model, min_share: float = MIN_SHARE, max_frames: int = MAX_FRAMES,
               runtime: bool = False) -> Flame:
    """Bytes never freed, by whole call path; what the runtimes keep on
    purpose only with runtime, and what suppressions took out never, as in
    the leak table."""
    [flame] = _flames(model, ["leak_space"], runtime, min_share, max_frames)
    return flame


def tone_by_name(name: str, key: object) -> int:
    """A function keeps its colour wherever it is drawn."""
    return zlib.crc32(name.encode("utf-8", "surrogatepass")) % 100


def expand(root_name: str, root_bytes: int, children: Children, min_share: float = MIN_SHARE,
           max_frames: int = MAX_FRAMES, tone: Callable[[str, object], int] = tone_by_name) -> Flame:
    """The flame graph of the frames children() finds from the root (key
    None): the widest kept first, then laid out; tone(name, key) gives a
    frame its colour, 0-99."""
    if root_bytes <= 0:
        return Flame([], 0, 0, 0)
    threshold = root_bytes * min_share
    kept: list[tuple[str, str, int, int, object]] = [(root_name, "", root_bytes, -1, None)]
    order = 0  # breaks ties between equal widths in the order children were found
    queue: list[tuple[int, int, int, Candidate]] = []

    def push(parent: int, key: object, value: int) -> None:
        nonlocal order
        for child in children(key, value):
            if child[2] > 0:
                order += 1
                heapq.heappush(queue, (-child[2], order, parent, child))

    push(0, None, root_bytes)
    while queue and len(kept) < max_frames:
        negative, _, parent, (name, detail, value, key) = heapq.heappop(queue)
        if value < threshold:
            queue.append((negative, 0, parent, (name, detail, value, key)))  # counted as omitted below
            break
        kept.append((name, detail, value, parent, key))
        push(len(kept) - 1, key, value)
    return _layout(kept, root_bytes, len(queue), tone)


def _layout(kept: list[tuple[str, str, int, int, object]], root_bytes: int, omitted: int,
            tone: Callable[[str, object], int]) -> Flame:
    """Pre-order, widest child leftmost (ties by name); a frame's own bytes
    and those of omitted children are the space right of its children."""
    below: dict[int, list[int]] = {}
    for index, (_, _, _, parent, _) in enumerate(kept):
        if parent >= 0:
            below.setdefault(parent, []).append(index)
    frames: list[Frame] = []
    stack: list[tuple[int, int, float, int]] = [(0, 0, 0.0, -1)]  # kept index, depth, x, parent in frames
    deepest = 0
    while stack:
        index, depth, x, parent = stack.pop()
        name, detail, value, _, key = kept[index]
        frames.append(Frame(name, value, depth, x, value / root_bytes, parent, detail, tone(name, key)))
        deepest = max(deepest, depth)
        me = len(frames) - 1
        placed = []
        offset = x
        for child in sorted(below.get(index, []), key=lambda c: (-kept[c][2], kept[c][0])):
            placed.append((child, depth + 1, offset, me))
            offset += kept[child][2] / root_bytes
        stack.extend(reversed(placed))
    return Flame(frames, root_bytes, deepest + 1, omitted)


def peak_flame(model: Model, min_share: float = MIN_SHARE, max_frames: int = MAX_FRAMES) -> Flame | None:
    """Bytes live at the peak, by whole call path; None for several
    processes, whose peaks are moments of their own."""
    if len(model.runs) > 1:
        return None
    [flame] = _flames(model, ["peak_space"], min_share=min_share, max_frames=max_frames)
    return flame


def temporary_flame(model: Model, min_share: float = MIN_SHARE, max_frames: int = MAX_FRAMES) -> Flame:
    """Temporary allocations, by whole call path: a count, not bytes."""
    [flame] = _flames(model, ["temp_objects"], min_share=min_share, max_frames=max_frames)
    return flame


@dataclass(frozen=True)
class PageFlames:
    """The page's flame graphs, as the functions above draw each."""
    allocation: Flame | None
    leak: Flame
    peak: Flame | None
    temporary: Flame


def page_flames(model: Model, runtime: bool = False) -> PageFlames:
    """allocation_flame, leak_flame (with runtime), peak_flame and
    temporary_flame, from one walk of the paths."""
    allocation, leak, peak, temporary = _flames(model, ["alloc_space", "leak_space", "peak_space", "temp_objects"],
                                                runtime)
    return PageFlames(allocation if model.call_graph else None, leak, peak if len(model.runs) <= 1 else None,
                      temporary)
