"""The reduction of the call path tree and of the call graph as mprof did
it in Python before libmprof-reduce (reduce/): an independent reading of
what the library must give, kept for test_reduction_core.py to compare with.  Slow, plain and
obviously right: one dict entry per key, one step per node."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mprof.reducer import callgraph as cg
from mprof.reducer import format as fmt
from mprof.reducer import runtime_blocks
from mprof.reducer.callgraph import CLASSES, CallGraph, FunctionKey
from mprof.reducer.escape import printable
from mprof.reducer.records import DataFile
from mprof.reducer.symbolize import Frame
from mprof.reducer.tree import LeakChain, Pair, Site, Totals

EMPTY = -1
# The innermost frames of the regions the program mapped itself (mprof(5)).
MAPPED_FRAMES = frozenset((fmt.MMAP_FRAME, fmt.BRK_FRAME))


def _add(into: list[int], values: Sequence[int]) -> None:
    for n, value in enumerate(values):
        into[n] += value


def _addresses(data: DataFile, node: int, limit: int) -> tuple[int, ...]:
    found: list[int] = []
    while node >= 0 and len(found) < limit:
        found.append(data.nodes[node].addr)
        node = data.nodes[node].parent
    return tuple(found)


def _kinds(data: DataFile, index: int) -> tuple[int, ...]:
    """The path's LEAK figures, none where the file has none."""
    return tuple(data.leaks.kinds.get(index, (0,) * 8)) if data.leaks else (0,) * 8


def totals(data: DataFile) -> Totals:
    nodes = data.nodes
    sites: dict[int, list[int]] = {}
    leaks: dict[tuple[int, ...], list[int]] = {}
    below = [[0] * 5 for _ in nodes]
    for index, path in enumerate(data.paths):
        if path.node >= 0:
            _add(sites.setdefault(nodes[path.node].addr, [0] * 13),
                 (path.allocs, path.frees, *path.bytes, *path.freed, path.temporaries, path.peak_blocks,
                  path.peak_bytes))
            _add(below[path.node], (path.allocs, *path.bytes))
        _add(leaks.setdefault(_addresses(data, path.node, data.header.leak_depth), [0] * 12),
             (path.allocs, path.frees, sum(path.bytes), sum(path.freed), *_kinds(data, index)))
    pairs: dict[tuple[int, int], list[int]] = {}
    for index in range(len(nodes) - 1, -1, -1):
        parent = nodes[index].parent
        if parent < 0:
            continue
        _add(below[parent], below[index])
        if data.header.call_graph:
            _add(pairs.setdefault((nodes[parent].addr, nodes[index].addr), [0] * 5), below[index])
    return Totals(
        sites=tuple(Site(addr, f[0], f[1], (f[2], f[3], f[4], f[5]), (f[6], f[7], f[8], f[9]), f[10], f[11], f[12])
                    for addr, f in sites.items()),
        leaks=tuple(LeakChain(addrs, *f[:4], tuple(f[4:])) for addrs, f in leaks.items()),  # type: ignore[arg-type]
        pairs=tuple(Pair(caller, callee, f[0], (f[1], f[2], f[3], f[4])) for (caller, callee), f in pairs.items()),
    )


@dataclass(frozen=True)
class FrameNode:
    parent: int
    function: FunctionKey
    file: str
    line: int
    inlined: bool


@dataclass
class PathTree:
    nodes: list[FrameNode] = field(default_factory=list)
    index: dict[FrameNode, int] = field(default_factory=dict)
    paths: dict[int, list[int]] = field(default_factory=dict)  # 13 figures by innermost node, or EMPTY

    def node(self, parent: int, function: FunctionKey, frame: Frame) -> int:
        key = FrameNode(parent, function, frame.file, frame.line, frame.inlined)
        if key not in self.index:
            self.index[key] = len(self.nodes)
            self.nodes.append(key)
        return self.index[key]


def _from_main(frames: Sequence[Frame]) -> bool:
    return any(frame.function == "main" and not frame.inlined for frame in frames)


def add_run(tree: PathTree, graph: CallGraph, data: DataFile, frames: Mapping[int, Sequence[Frame]]) -> None:
    start_up: set[int] = set()
    for node in data.nodes:
        if _from_main(frames[node.addr]):
            parent = node.parent
            while parent >= 0 and parent not in start_up:
                start_up.add(parent)
                parent = data.nodes[parent].parent
    ends: list[int] = []
    for index, node in enumerate(data.nodes):
        if index in start_up:
            ends.append(EMPTY)
            continue
        parent = EMPTY if _from_main(frames[node.addr]) or node.parent < 0 else ends[node.parent]
        for frame in _logical(frames[node.addr]):
            parent = tree.node(parent, graph.function(frame), frame)
        ends.append(parent)
    for index, path in enumerate(data.paths):
        _add(tree.paths.setdefault(ends[path.node] if path.node >= 0 else EMPTY, [0] * 21),
             (path.allocs, path.frees, *path.bytes, *path.freed, path.temporaries, path.peak_blocks,
              path.peak_bytes, *_kinds(data, index)))


def rows(tree: PathTree, ids: Mapping[FunctionKey, int]) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """The rows of path_nodes and paths, as schema.sql has them."""
    used = [False] * len(tree.nodes)
    for end in tree.paths:
        step = end
        while step != EMPTY and not used[step]:
            used[step] = True
            step = tree.nodes[step].parent
    number: dict[int, int] = {}
    node_rows: list[tuple[object, ...]] = []
    chains: list[runtime_blocks.Chain | None] = [None] * len(tree.nodes)
    # Each node's functions, outermost first, and the first node numbered with them.
    functions_of: dict[int, tuple[FunctionKey, ...]] = {EMPTY: ()}
    first: dict[tuple[FunctionKey, ...], int] = {}
    for index, node in enumerate(tree.nodes):
        if used[index]:
            number[index] = len(number) + 1
            functions_of[index] = (*functions_of[node.parent], node.function)
            first.setdefault(functions_of[index], number[index])
            node_rows.append((number[index], number[node.parent] if node.parent != EMPTY else None,
                              ids[node.function], node.file, node.line, int(node.inlined)))
            chains[index] = runtime_blocks.called(node.function, chains[node.parent] if node.parent != EMPTY
                                                  else None)
    # The place of each node's names among all nodes', as the reports print them, from 1.
    names_of = {index: tuple(printable(name) for name, _ in chain) for index, chain in functions_of.items()}
    place = {names: n for n, names in enumerate(sorted(set(names_of.values())))}
    path_rows: list[tuple[object, ...]] = [
        (number[end] if end != EMPTY else None, *figures, runtime_blocks.kept_by(chains[end] if end != EMPTY else None),
         first[functions_of[end]] if end != EMPTY else None, place[names_of[end]])
        for end, figures in sorted(tree.paths.items(), key=lambda item: number.get(item[0], 0))]
    return node_rows, path_rows


# The call graph of one file, from its totals and frames (callgraph.add_run before).

def _logical(frames: Sequence[Frame]) -> list[Frame]:
    """Outermost first, cut above main: frames above main are start-up code."""
    outermost_first = list(reversed(frames))
    for i, frame in enumerate(outermost_first):
        if frame.function == "main" and not frame.inlined:
            return outermost_first[i:]
    return outermost_first


def _above_main(data: Totals, frames: Mapping[int, Sequence[Frame]]) -> set[int]:
    """Return addresses in frames that call main, directly or not."""
    callers: dict[int, list[int]] = defaultdict(list)
    for pair in data.pairs:
        callers[pair.callee].append(pair.caller)
    above = {pair.caller for pair in data.pairs
             if any(f.function == "main" and not f.inlined for f in frames[pair.callee])}
    work = list(above)
    while work:
        for caller in callers[work.pop()]:
            if caller not in above:
                above.add(caller)
                work.append(caller)
    return above


def add_graph_run(graph: CallGraph, data: Totals, call_graph: bool, frames: Mapping[int, Sequence[Frame]], *,
                  classified: bool) -> None:
    """Adds one data file's sites, leaks and pairs (tree.totals); frames has
    every address resolved; classified: the file has a LEAK section."""
    logical_of: dict[int, list[Frame]] = {}

    def logical(address: int) -> list[Frame]:
        found = logical_of.get(address)
        if found is None:
            found = logical_of[address] = _logical(frames[address])
        return found

    for site in data.sites:
        of_site = logical(site.addr)
        innermost = of_site[-1]
        key = graph.function(innermost)
        function = graph.functions[key]
        function.self_calls += site.calls
        function.kept_objects += site.calls - site.frees
        for c in range(CLASSES):
            function.self_bytes[c] += site.bytes[c]
            function.kept_bytes[c] += site.bytes[c] - site.freed[c]
        row = graph.sites.setdefault((innermost.module, innermost.offset),
                                     cg.Site(key, innermost.module, innermost.offset, innermost.file, innermost.line))
        row.calls += site.calls
        row.frees += site.frees
        row.temporaries += site.temporaries
        row.peak_blocks += site.peak_blocks
        row.peak_bytes += site.peak_bytes
        for c in range(CLASSES):
            row.bytes[c] += site.bytes[c]
            row.freed[c] += site.freed[c]
        for outer in of_site[:-1]:
            graph.function(outer)

    for chain in data.leaks:
        outermost_first = [frame for address in reversed(chain.addrs) for frame in reversed(frames[address])]
        path = tuple((graph.function(frame), frame.file, frame.line) for frame in reversed(_logical(
            list(reversed(outermost_first)))))
        leak = graph.leaks.setdefault(path, cg.Leak(path))
        leak.allocs += chain.allocs
        leak.frees += chain.frees
        leak.bytes += chain.bytes
        leak.bytes_freed += chain.bytes_freed
        # Each kind LEAK names, and what it leaves out unknown; but in a
        # classified file the regions the program mapped (the chain's
        # innermost frame [mmap] or [brk]), roots to the scan and in no entry
        # of LEAK, are still reachable (mprof(5)).
        rest = "still reachable" if classified and chain.addrs and chain.addrs[0] in MAPPED_FRAMES else "unknown"
        unknown = [chain.allocs - chain.frees, chain.bytes - chain.bytes_freed]
        for kind, words in enumerate(("definitely lost", "indirectly lost", "possibly lost", "still reachable")):
            blocks, size = chain.kinds[2 * kind], chain.kinds[2 * kind + 1]
            unknown[0] -= blocks
            unknown[1] -= size
            if blocks or size:
                into = leak.kinds.setdefault(words, [0, 0])
                into[0] += blocks
                into[1] += size
        if any(unknown):
            into = leak.kinds.setdefault(rest, [0, 0])
            into[0] += unknown[0]
            into[1] += unknown[1]

    if not call_graph:
        return
    # Pairs from start-up code into main go with the frames above main.
    above = _above_main(data, frames)
    kept = [p for p in data.pairs if p.caller not in above]
    incoming: set[int] = {p.callee for p in kept}
    outgoing: dict[int, tuple[int, list[int]]] = {}
    for pair in kept:
        callee_frames = logical(pair.callee)
        _edge(graph, graph.function(logical(pair.caller)[-1]), graph.function(callee_frames[0])).add(pair.calls,
                                                                                                     pair.bytes)
        if len(callee_frames) > 1:
            _add_inline_edges(graph, callee_frames, pair.calls, pair.bytes)
        calls, by_class = outgoing.get(pair.caller, (0, [0] * CLASSES))
        outgoing[pair.caller] = (calls + pair.calls, [a + b for a, b in zip(by_class, pair.bytes, strict=True)])
    # A chain's outermost address is no pair's callee: its inlined frames are
    # passed by every allocation that leaves it.
    for address, (calls, by_class) in outgoing.items():
        if address not in incoming:
            _add_inline_edges(graph, logical(address), calls, by_class)
    for site in data.sites:
        if site.addr not in incoming:
            _add_inline_edges(graph, logical(site.addr), site.calls, site.bytes)


def _add_inline_edges(graph: CallGraph, logical: Sequence[Frame], calls: int, by_class: Sequence[int]) -> None:
    for outer, inner in itertools.pairwise(logical):
        _edge(graph, graph.function(outer), graph.function(inner)).add(calls, by_class)


def _edge(graph: CallGraph, caller: FunctionKey, callee: FunctionKey) -> cg.Edge:
    return graph.edges.setdefault((caller, callee), cg.Edge())
