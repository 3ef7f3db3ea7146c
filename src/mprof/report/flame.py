"""Flame graphs (icicles, root on top) of the bytes allocated by call chain
and of the bytes never freed, laid out for drawing.

The allocation graph is a tree expansion of the call graph with cycles
condensed, from the roots (main) down.  An edge carries the exact bytes
allocated under its caller/callee pair, but not which of the caller's own
callers they came through, so below the first level a frame's bytes are
split among its callees in proportion to the edges' bytes: exact for a call
tree, an estimate where a function has several callers.  The never-freed
graph is a trie of the leak table's paths, whose bytes are exact.

Both are capped so that a profile with tens of thousands of functions still
draws quickly: frames below MIN_SHARE of the root are left out (their bytes
stay in their parent's width), and at most MAX_FRAMES frames are kept, the
widest first."""

from __future__ import annotations

import heapq
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from .model import Model

MIN_SHARE = 0.001
MAX_FRAMES = 3000
PARTIAL = "..."  # the frame above leak paths that do not reach main


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


@dataclass
class _PathNode:
    """A step of the leak paths' trie."""
    bytes: int = 0
    below: dict[int | str, _PathNode] = field(default_factory=dict)


def allocation_flame(model: Model, min_share: float = MIN_SHARE, max_frames: int = MAX_FRAMES) -> Flame | None:
    """Bytes allocated, by call chain; None in mprof- mode (no call graph)."""
    if not model.call_graph:
        return None

    def node(function_id: int) -> tuple[str, int]:
        cycle = model.functions[function_id].cycle
        return ("c", cycle) if cycle is not None else ("f", function_id)

    out: dict[tuple[str, int], dict[tuple[str, int], int]] = {}
    called: set[tuple[str, int]] = set()
    for edge in model.edges:
        caller, callee = node(edge.caller), node(edge.callee)
        if caller != callee:
            targets = out.setdefault(caller, {})
            targets[callee] = targets.get(callee, 0) + sum(edge.bytes)
            called.add(callee)

    def total(key: tuple[str, int]) -> int:
        return model.cycles[key[1]].total_bytes if key[0] == "c" else model.functions[key[1]].total_bytes

    def own(key: tuple[str, int]) -> int:
        return model.cycles[key[1]].self_bytes if key[0] == "c" else sum(model.functions[key[1]].self_bytes)

    def label(key: tuple[str, int]) -> tuple[str, str]:
        if key[0] == "c":
            members = model.cycles[key[1]].members
            return f"<cycle {key[1]} as a whole>", "members: " + ", ".join(model.functions[m].name for m in members)
        function = model.functions[key[1]]
        return function.name, function.full_name if function.full_name != function.name else ""

    def candidate(key: tuple[str, int], value: int) -> Candidate:
        name, detail = label(key)
        return name, detail, value, key

    def children(key: object, value: int) -> list[Candidate]:
        if key is None:  # the root: every function that no other calls, with all its bytes
            return [candidate(root, total(root)) for root in roots]
        assert isinstance(key, tuple)
        targets = out.get(key, {})
        # Edges and totals come from one reduction and should agree; the max
        # keeps the children inside their parent if they ever do not.
        whole = max(total(key), own(key) + sum(targets.values()))
        return [candidate(callee, (value * share + whole // 2) // whole) for callee, share in targets.items()
                if whole]

    nodes = {node(f) for f in model.functions}
    roots = [key for key in nodes if key not in called and total(key) > 0]
    return _expand("all", sum(total(r) for r in roots), children, min_share, max_frames)


def leak_flame(model: Model, min_share: float = MIN_SHARE, max_frames: int = MAX_FRAMES,
               runtime: bool = False) -> Flame:
    """Bytes never freed, by the leak table's partial paths (exact); what
    the runtimes keep on purpose only with runtime, as in the table."""
    trie = _PathNode()  # outermost caller first
    for leak in model.leaks:
        kept = leak.bytes - leak.bytes_freed
        if leak.allocs == leak.frees or kept <= 0 or not leak.frames or (leak.runtime and not runtime):
            continue
        path: list[int | str] = [f.function for f in reversed(leak.frames)]
        if model.functions[leak.frames[-1].function].name != "main":
            path.insert(0, PARTIAL)
        level = trie
        level.bytes += kept
        for step in path:
            level = level.below.setdefault(step, _PathNode())
            level.bytes += kept

    def children(key: object, value: int) -> list[Candidate]:
        assert key is None or isinstance(key, _PathNode)
        return [("... (callers beyond the leak depth)" if step == PARTIAL else model.functions[int(step)].name, "",
                 node.bytes, node) for step, node in (key or trie).below.items()]

    return _expand("all", trie.bytes, children, min_share, max_frames)


def _expand(root_name: str, root_bytes: int, children: Children, min_share: float, max_frames: int) -> Flame:
    """Keeps the widest frames first, then lays the kept ones out."""
    if root_bytes <= 0:
        return Flame([], 0, 0, 0)
    threshold = root_bytes * min_share
    kept: list[tuple[str, str, int, int]] = [(root_name, "", root_bytes, -1)]  # name, detail, bytes, parent
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
        kept.append((name, detail, value, parent))
        push(len(kept) - 1, key, value)
    return _layout(kept, root_bytes, omitted=len(queue))


def _layout(kept: list[tuple[str, str, int, int]], root_bytes: int, omitted: int) -> Flame:
    """Pre-order, widest child leftmost (ties by name); a frame's own bytes
    and those of omitted children are the space right of its children."""
    below: dict[int, list[int]] = {}
    for index, (_, _, _, parent) in enumerate(kept):
        if parent >= 0:
            below.setdefault(parent, []).append(index)
    frames: list[Frame] = []
    stack: list[tuple[int, int, float, int]] = [(0, 0, 0.0, -1)]  # kept index, depth, x, parent in frames
    deepest = 0
    while stack:
        index, depth, x, parent = stack.pop()
        name, detail, value, _ = kept[index]
        frames.append(Frame(name, value, depth, x, value / root_bytes, parent, detail,
                            zlib.crc32(name.encode("utf-8", "surrogatepass")) % 100))
        deepest = max(deepest, depth)
        me = len(frames) - 1
        placed = []
        offset = x
        for child in sorted(below.get(index, []), key=lambda c: (-kept[c][2], kept[c][0])):
            placed.append((child, depth + 1, offset, me))
            offset += kept[child][2] / root_bytes
        stack.extend(reversed(placed))
    return Flame(frames, root_bytes, deepest + 1, omitted)
