"""The allocation call graph: caller/callee pairs of return addresses become
edges between functions (inlined ones included, as a debugger shows them),
frames above main are dropped, recursive cycles are merged as gprof merges
them, and each function's self and self+descendants bytes are computed
without counting any byte twice (paper section 3.3, Figure 7)."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .scc import strongly_connected_components
from .symbolize import Frame
from .tree import Totals

CLASSES = 4
FunctionKey = tuple[str, str]  # (name, module)


def _zero() -> list[int]:
    return [0] * CLASSES


@dataclass
class Function:
    name: str
    module: str
    file: str
    line: int
    self_calls: int = 0
    self_bytes: list[int] = field(default_factory=_zero)
    kept_bytes: list[int] = field(default_factory=_zero)
    kept_objects: int = 0
    cycle: int | None = None
    total_bytes: int = 0
    called: int = 0
    recursive_calls: int = 0


@dataclass
class Edge:
    calls: int = 0
    bytes: list[int] = field(default_factory=_zero)

    def add(self, calls: int, by_class: Sequence[int]) -> None:
        self.calls += calls
        for c in range(CLASSES):
            self.bytes[c] += by_class[c]


@dataclass
class Cycle:
    number: int
    members: list[FunctionKey]
    self_bytes: int = 0
    total_bytes: int = 0
    called: int = 0
    internal_calls: int = 0


@dataclass
class Site:
    function: FunctionKey
    module: str
    offset: int
    file: str
    line: int
    calls: int = 0
    frees: int = 0
    bytes: list[int] = field(default_factory=_zero)
    freed: list[int] = field(default_factory=_zero)
    temporaries: int = 0
    peak_blocks: int = 0
    peak_bytes: int = 0


@dataclass
class Leak:
    frames: tuple[tuple[FunctionKey, str, int], ...]  # innermost first: function, file, line
    allocs: int = 0
    frees: int = 0
    bytes: int = 0
    bytes_freed: int = 0


@dataclass
class CallGraph:
    functions: dict[FunctionKey, Function] = field(default_factory=dict)
    edges: dict[tuple[FunctionKey, FunctionKey], Edge] = field(default_factory=dict)
    sites: dict[tuple[str, int], Site] = field(default_factory=dict)
    leaks: dict[tuple[tuple[FunctionKey, str, int], ...], Leak] = field(default_factory=dict)
    cycles: list[Cycle] = field(default_factory=list)

    def function(self, frame: Frame) -> FunctionKey:
        key = (frame.function, frame.module)
        if key not in self.functions:
            # The first frame seen names the function's file; its line is
            # that of the first call site seen in it, the best there is
            # without the function's own DW_AT_decl_line.
            self.functions[key] = Function(frame.function, frame.module, frame.file, frame.line)
        return key

    def edge(self, caller: FunctionKey, callee: FunctionKey) -> Edge:
        return self.edges.setdefault((caller, callee), Edge())


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


def add_run(graph: CallGraph, data: Totals, call_graph: bool, frames: Mapping[int, Sequence[Frame]]) -> None:
    """Adds one data file's sites, leaks and pairs (tree.totals); frames has
    every address resolved."""
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
                                     Site(key, innermost.module, innermost.offset, innermost.file, innermost.line))
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
        leak = graph.leaks.setdefault(path, Leak(path))
        leak.allocs += chain.allocs
        leak.frees += chain.frees
        leak.bytes += chain.bytes
        leak.bytes_freed += chain.bytes_freed

    if not call_graph:
        return
    # Pairs from start-up code into main go with the frames above main.
    above = _above_main(data, frames)
    kept = [p for p in data.pairs if p.caller not in above]
    incoming: set[int] = {p.callee for p in kept}
    outgoing: dict[int, tuple[int, list[int]]] = {}
    for pair in kept:
        callee_frames = logical(pair.callee)
        graph.edge(graph.function(logical(pair.caller)[-1]), graph.function(callee_frames[0])).add(pair.calls,
                                                                                                   pair.bytes)
        if len(callee_frames) > 1:
            _add_inline_edges(graph, callee_frames, pair.calls, pair.bytes)
        calls, by_class = outgoing.get(pair.caller, (0, _zero()))
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
        graph.edge(graph.function(outer), graph.function(inner)).add(calls, by_class)


def finish(graph: CallGraph) -> None:
    """Merges cycles and computes totals and call counts."""
    successors: dict[FunctionKey, list[FunctionKey]] = defaultdict(list)
    for caller, callee in sorted(graph.edges):
        successors[caller].append(callee)
    components = strongly_connected_components(sorted(graph.functions), successors)
    component_of: dict[FunctionKey, int] = {}
    for number, component in enumerate(components):
        for member in component:
            component_of[member] = number
    cyclic = [c for c in components if len(c) > 1 or (c[0], c[0]) in graph.edges]
    # Numbered by their first member's name, so that reducing twice numbers alike.
    cyclic.sort(key=lambda members: sorted(members))
    graph.cycles = [Cycle(n + 1, sorted(members)) for n, members in enumerate(cyclic)]
    for cycle in graph.cycles:
        for member in cycle.members:
            graph.functions[member].cycle = cycle.number

    # Components come out callees first, so descendants are done before their callers.
    totals: dict[int, int] = {}
    for number, component in enumerate(components):
        total = sum(sum(graph.functions[m].self_bytes) for m in component)
        for member in component:
            for callee in successors[member]:
                if component_of[callee] != number:
                    total += sum(graph.edges[(member, callee)].bytes)
        totals[number] = total
    for key, function in graph.functions.items():
        function.total_bytes = totals[component_of[key]]
    for (caller, callee), edge in graph.edges.items():
        if component_of[caller] == component_of[callee]:
            graph.functions[callee].recursive_calls += edge.calls
        else:
            graph.functions[callee].called += edge.calls
    cycle_of = {member: cycle for cycle in graph.cycles for member in cycle.members}
    for cycle in graph.cycles:
        cycle.self_bytes = sum(sum(graph.functions[m].self_bytes) for m in cycle.members)
        cycle.total_bytes = graph.functions[cycle.members[0]].total_bytes
    for (caller, callee), edge in graph.edges.items():
        into = cycle_of.get(callee)
        if into is None:
            continue
        if cycle_of.get(caller) is into:
            into.internal_calls += edge.calls
        else:
            into.called += edge.calls
