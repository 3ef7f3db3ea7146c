"""Read-only queries of a profile database: plain rows for the reporters."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field

from .replays import StoredReplay
from .replays import load as load_replays

CLASSES = ("s", "m", "l", "x")


@dataclass(frozen=True)
class RunInfo:
    pid: int
    ppid: int
    program: str
    command_line: str
    elapsed_ns: int
    call_graph: bool
    final: bool
    checkpoint: bool
    end_signal: int
    forked: bool
    leak_depth: int
    # Its own figures, by mprof(5)'s SUMM names: allocs, max_live_bytes...
    figures: Mapping[str, int] = field(default_factory=dict)
    start_unix_ns: int = 0
    # Its memory over time: (ns from its start, live bytes, live blocks, resident bytes), oldest first.
    timeline: tuple[tuple[int, int, int, int], ...] = ()
    lsan_suppressions: str = ""  # what its __lsan_default_suppressions returned
    running: bool = False  # a checkpoint whose process still ran when the profile was made


@dataclass(frozen=True)
class FunctionRow:
    id: int
    name: str
    module: str
    file: str
    line: int
    cycle: int | None
    self_calls: int
    self_bytes: tuple[int, int, int, int]
    kept_bytes: tuple[int, int, int, int]
    kept_objects: int
    total_bytes: int
    called: int
    recursive_calls: int
    # The whole demangled name, parameters and template arguments too; name
    # is what reports show, shortened by display.for_display.
    signature: str = ""

    @property
    def full_name(self) -> str:
        return self.signature or self.name


@dataclass(frozen=True)
class EdgeRow:
    caller: int
    callee: int
    calls: int
    bytes: tuple[int, int, int, int]


@dataclass(frozen=True)
class CycleRow:
    number: int
    self_bytes: int
    total_bytes: int
    called: int
    internal_calls: int
    members: tuple[int, ...]


@dataclass(frozen=True)
class BinRow:
    size: int
    allocs: int
    frees: int
    bytes: int
    bytes_freed: int
    types: str
    temporaries: int = 0
    peak_blocks: int = 0
    peak_bytes: int = 0


@dataclass(frozen=True)
class LeakFrame:
    function: int
    file: str
    line: int


@dataclass(frozen=True)
class LeakRow:
    allocs: int
    frees: int
    bytes: int
    bytes_freed: int
    frames: tuple[LeakFrame, ...]  # innermost first
    runtime: str = ""  # what in the C or C++ runtime keeps its blocks on purpose; "": the program


@dataclass(frozen=True)
class PathNodeRow:
    """A frame of the whole call paths (schema.sql's path_nodes)."""
    parent: int | None  # None: an outermost frame
    function: int
    file: str
    line: int
    inlined: bool = False  # inlined into its parent's code: one machine frame with it


@dataclass(frozen=True)
class PathRow:
    """The allocations of one whole call path."""
    node: int | None  # its innermost frame; None: no caller was found
    allocs: int
    frees: int
    bytes: tuple[int, int, int, int]
    freed: tuple[int, int, int, int]
    runtime: str = ""  # as LeakRow's
    temporaries: int = 0
    peak_blocks: int = 0  # live at the peak, in one process
    peak_bytes: int = 0
    suppressed: str = ""  # the leak suppression its never-freed blocks fell under (report/suppressions.py)


@dataclass(frozen=True)
class SuppressedRow:
    """What one leak suppression (report/suppressions.py) took out."""
    pattern: str
    origin: str  # FILE:LINE, or the program's __lsan_default_suppressions
    objects: int
    bytes: int


@dataclass
class Model:
    runs: list[RunInfo]
    summary: dict[str, int]  # every field of mprof(5)'s SUMM, and elapsed_ns
    functions: dict[int, FunctionRow]
    edges: list[EdgeRow]
    cycles: dict[int, CycleRow]
    bins: list[BinRow]
    leaks: list[LeakRow]
    callers: dict[int, list[EdgeRow]] = field(default_factory=dict)
    callees: dict[int, list[EdgeRow]] = field(default_factory=dict)
    path_nodes: dict[int, PathNodeRow] = field(default_factory=dict)  # parents first
    paths: list[PathRow] = field(default_factory=list)
    replays: list[StoredReplay] = field(default_factory=list)  # mprof replay --db's, oldest first
    # Never-freed blocks leak suppressions took out of the leak rows, most first.
    suppressed: list[SuppressedRow] = field(default_factory=list)
    # path_functions' memory: a path's functions by its innermost node.
    _path_functions: dict[int, tuple[int, ...]] = field(default_factory=dict, init=False, repr=False,
                                                         compare=False)

    @property
    def suppressed_bytes(self) -> int:
        return sum(row.bytes for row in self.suppressed)

    @property
    def total_bytes(self) -> int:
        return self.summary["bytes_allocated"]

    @property
    def kept_bytes(self) -> int:
        return self.summary["bytes_allocated"] - self.summary["bytes_freed"]

    @property
    def call_graph(self) -> bool:
        return any(run.call_graph for run in self.runs)

    def path_functions(self, node: int | None) -> tuple[int, ...]:
        """The functions of the whole path that ends at node, outermost
        first; each node's once, from its parent's."""
        unknown: list[int] = []
        while node is not None and node not in self._path_functions:
            unknown.append(node)
            node = self.path_nodes[node].parent
        known = self._path_functions[node] if node is not None else ()
        for step in reversed(unknown):
            known = self._path_functions[step] = (*known, self.path_nodes[step].function)
        return known

    def frames(self, node: int | None) -> list[PathNodeRow]:
        """The frames of the whole path that ends at node, innermost first;
        none for None, an allocation whose caller was not found."""
        found = []
        while node is not None:
            row = self.path_nodes[node]
            found.append(row)
            node = row.parent
        return found

    def label(self, function_id: int) -> str:
        """gprof's way: name, <cycle N> for a member of a cycle."""
        function = self.functions[function_id]
        return function.name if function.cycle is None else f"{function.name} <cycle {function.cycle}>"


def _text(value: str | bytes) -> str:
    """A text column's value: a BLOB holds the bytes of non-UTF-8 text
    (schema.sql), read back as surrogates as the row factory reads it."""
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def load(db: sqlite3.Connection) -> Model:
    figures: dict[int, dict[str, int]] = {}
    for run_id, name, value in db.execute("SELECT run_id, name, value FROM run_figures"):
        figures.setdefault(run_id, {})[name] = value
    points: dict[int, list[tuple[int, int, int, int]]] = {}
    for run_id, ns, live, blocks, resident in db.execute(
            "SELECT run_id, ns, live_bytes, live_blocks, resident_bytes FROM timeline ORDER BY run_id, ns"):
        points.setdefault(run_id, []).append((ns, live, blocks, resident))
    runs = [RunInfo(row[1], row[2], row[3], row[4], row[5], bool(row[6]), bool(row[7]), bool(row[8]), row[9],
                    bool(row[10]), row[11], figures.get(row[0], {}), row[12], tuple(points.get(row[0], ())),
                    row[13], bool(row[14]))
            for row in db.execute("SELECT id, pid, ppid, program, command_line, elapsed_ns, call_graph, final, "
                                  "checkpoint, end_signal, forked, leak_depth, start_unix_ns, lsan_suppressions, "
                                  "running FROM runs ORDER BY id")]
    summary = dict(db.execute("SELECT name, value FROM summary"))
    functions = {}
    for row in db.execute("SELECT * FROM functions ORDER BY id"):
        functions[row[0]] = FunctionRow(row[0], row[1], row[2], row[3], row[4], row[5], row[6], tuple(row[7:11]),
                                        tuple(row[11:15]), row[15], row[16], row[17], row[18], row[1])
    edges = [EdgeRow(row[0], row[1], row[2], tuple(row[3:7])) for row in db.execute(
        "SELECT * FROM edges ORDER BY caller_id, callee_id")]
    members: dict[int, list[int]] = {}
    for function in functions.values():
        if function.cycle is not None:
            members.setdefault(function.cycle, []).append(function.id)
    cycles = {row[0]: CycleRow(row[0], row[1], row[2], row[3], row[4], tuple(members.get(row[0], ())))
              for row in db.execute(
                  "SELECT id, self_bytes, total_bytes, called, internal_calls FROM cycles ORDER BY id")}
    bins = [BinRow(*row) for row in db.execute(
        "SELECT size, allocs, frees, bytes, bytes_freed, types, temporaries, peak_blocks, peak_bytes FROM bins "
        "ORDER BY size")]
    frames: dict[int, list[LeakFrame]] = {}
    for leak_id, function, file, line in db.execute(
            "SELECT leak_id, function_id, file, line FROM leak_frames ORDER BY leak_id, position"):
        frames.setdefault(leak_id, []).append(LeakFrame(function, file, line))
    leaks = [LeakRow(row[1], row[2], row[3], row[4], tuple(frames.get(row[0], ())), row[5]) for row in db.execute(
        "SELECT id, allocs, frees, bytes, bytes_freed, runtime FROM leaks ORDER BY id")]
    # The two big tables are read without the connection's row factory,
    # which looks at every value: only their text columns can hold a BLOB.
    raw = db.cursor()
    raw.row_factory = None
    path_nodes = {node: PathNodeRow(parent, function, _text(file), line, bool(inlined))
                  for node, parent, function, file, line, inlined in raw.execute(
                      "SELECT id, parent_id, function_id, file, line, inlined FROM path_nodes ORDER BY id")}
    paths = [PathRow(row[0], row[1], row[2], tuple(row[3:7]), tuple(row[7:11]), _text(row[14]), row[11], row[12],
                     row[13])
             for row in raw.execute("SELECT * FROM paths ORDER BY node_id")]
    model = Model(runs, summary, functions, edges, cycles, bins, leaks, path_nodes=path_nodes, paths=paths,
                  replays=load_replays(db))
    for edge in edges:
        model.callers.setdefault(edge.callee, []).append(edge)
        model.callees.setdefault(edge.caller, []).append(edge)
    return model
