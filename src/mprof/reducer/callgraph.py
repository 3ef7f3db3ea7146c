"""The allocation call graph: caller/callee pairs of return addresses become
edges between functions (inlined ones included, as a debugger shows them),
frames above main are dropped, recursive cycles are merged as gprof merges
them, and each function's self and self+descendants bytes are computed
without counting any byte twice (paper section 3.3, Figure 7)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..leak_kinds import KINDS, REACHABLE, UNKNOWN
from . import core
from .frames_table import FramesTable, Names
from .pools import MAPPED_FRAMES, POOL_MODULE
from .records import DataFile
from .scc import strongly_connected_components
from .symbolize import Frame

CLASSES = 4
MAPPED_NAMES = frozenset(MAPPED_FRAMES.values())
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
    # Blocks and bytes by kind (leak_kinds'), each kind there only with blocks or bytes.
    kinds: dict[str, list[int]] = field(default_factory=dict)

    def add_kind(self, kind: str, blocks: int, size: int) -> None:
        if blocks or size:
            figures = self.kinds.setdefault(kind, [0, 0])
            figures[0] += blocks
            figures[1] += size


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


def add_run(graph: CallGraph, data: DataFile, table: FramesTable, names: Names) -> None:
    """Adds one data file's call graph, made by libmprof-reduce from its
    paths and table, its addresses' frames (core.Graph)."""
    built = core.Graph(data.calls, data.header.leak_depth, data.header.call_graph, table.first, table.numbered,
                       table.from_main, table.site_module, table.site_offset, len(names.functions))
    frames = table.frames
    for at in built.taken:
        graph.function(frames[at])
    keys = names.functions
    s = built.self
    for number, key in enumerate(keys):
        at = number * core.SELF
        if not any(s[at:at + core.SELF]):
            continue
        function = graph.functions[key]
        calls, frees = s[at], s[at + 1]
        function.self_calls += calls
        function.kept_objects += calls - frees
        for c in range(CLASSES):
            function.self_bytes[c] += s[at + 2 + c]
            function.kept_bytes[c] += s[at + 2 + c] - s[at + 6 + c]
    f = built.site_figures
    for first, at in zip(built.site_frames, range(0, len(f), core.FIGURES), strict=True):
        frame = frames[first]
        row = graph.sites.setdefault((frame.module, frame.offset), Site((frame.function, frame.module), frame.module,
                                                                        frame.offset, frame.file, frame.line))
        row.calls += f[at]
        row.frees += f[at + 1]
        row.temporaries += f[at + 10]
        row.peak_blocks += f[at + 11]
        row.peak_bytes += f[at + 12]
        for c in range(CLASSES):
            row.bytes[c] += f[at + 2 + c]
            row.freed[c] += f[at + 6 + c]
    leak_figures = built.leak_figures
    for of_leak, at in zip(built.leak_frames, range(0, len(leak_figures), core.LEAK_FIGURES), strict=True):
        path = tuple(((frames[n].function, frames[n].module), frames[n].file, frames[n].line) for n in of_leak)
        leak = graph.leaks.setdefault(path, Leak(path))
        allocs, frees, allocated, freed, *kinds = leak_figures[at:at + core.LEAK_FIGURES]
        leak.allocs += allocs
        leak.frees += frees
        leak.bytes += allocated
        leak.bytes_freed += freed
        _add_kinds(leak, data.leaks is not None, allocs - frees, allocated - freed, kinds)
    e = built.edge_figures
    edges = graph.edges
    for caller, callee, at in zip(built.edge_callers, built.edge_callees, range(0, len(e), core.BELOW), strict=True):
        pair = (keys[caller], keys[callee])
        edge = edges.get(pair)
        if edge is None:  # each of a file's edges, the first time: made whole
            edges[pair] = Edge(e[at], e[at + 1:at + 5])
        else:
            edge.add(e[at], e[at + 1:at + 5])


def _add_kinds(leak: Leak, classified: bool, blocks: int, size: int, kinds: Sequence[int]) -> None:
    """A file's live blocks of one chain by kind: what LEAK leaves out is
    unknown, but for the regions the program mapped, roots to the scan,
    which are still reachable (mprof(5))."""
    for kind, words in enumerate(KINDS):
        leak.add_kind(words, kinds[2 * kind], kinds[2 * kind + 1])
    rest = blocks - sum(kinds[0::2]), size - sum(kinds[1::2])
    mapped = bool(leak.frames) and leak.frames[0][0][1] == POOL_MODULE and leak.frames[0][0][0] in MAPPED_NAMES
    leak.add_kind(REACHABLE if classified and mapped else UNKNOWN, *rest)


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
