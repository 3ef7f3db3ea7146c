"""Read-only queries of a profile database: plain rows for the reporters."""

from __future__ import annotations

import array
import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, NamedTuple

from ..leak_kinds import KINDS, UNKNOWN
from ..reducer import core
from ..reducer.pools import MAPPED_FRAMES, POOL_MODULE

if TYPE_CHECKING:
    from .replays import StoredReplay

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
    # Its memory over time: (ns from its start, live bytes, live blocks, resident bytes, bytes the program
    # mapped itself), oldest first.
    timeline: tuple[tuple[int, int, int, int, int], ...] = ()
    lsan_suppressions: str = ""  # what its __lsan_default_suppressions returned
    running: bool = False  # a checkpoint whose process still ran when the profile was made
    attached: bool = False  # recorded from mprof attach on: blocks allocated before were unknown
    scan: LeakScanInfo | None = None  # how its live blocks were classified; None: they were not


@dataclass(frozen=True)
class LeakScanInfo:
    """schema.sql's runs columns of a classified run."""
    flags: int
    threads_stopped: int
    threads_unstopped: int
    root_bytes: int
    block_bytes: int
    ns: int


# The rows a big program has thousands or tens of thousands of (functions,
# edges, leaks and their frames) are named tuples, made several times as
# fast as a frozen dataclass's instances.
class FunctionRow(NamedTuple):
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
    # is what reports show, shortened by display.for_display as far as no
    # other function's reads the same.
    signature: str = ""
    # Shorter still, where other functions may read the same: the name a
    # path shows, whose other frames tell its row apart (tables.py).
    short: str = ""

    @property
    def full_name(self) -> str:
        return self.signature or self.name

    @property
    def path_name(self) -> str:
        return self.short or self.name


class EdgeRow(NamedTuple):
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


class LeakFrame(NamedTuple):
    function: int
    file: str
    line: int


class LeakRow(NamedTuple):
    """A partial chain's blocks of one leak kind (schema.sql's leaks)."""
    kind: str  # memcheck's words (reducer/leak_kinds.py), or unknown: not classified
    blocks: int
    bytes: int
    frames: tuple[LeakFrame, ...]  # innermost first
    runtime: str = ""  # what in the C or C++ runtime keeps its blocks on purpose; "": the program, or lost
    # The whole chain's, all kinds: blocks allocated and freed, bytes allocated and freed.
    chain: tuple[int, int, int, int] = (0, 0, 0, 0)


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
    # Blocks and bytes by leak kind, mprof(5)'s LEAK order, of the runs classified.
    kinds: tuple[int, int, int, int, int, int, int, int] = (0, 0, 0, 0, 0, 0, 0, 0)


def of_kind(path: PathRow, kind: str) -> tuple[int, int]:
    """A path's blocks and bytes of one leak kind; unknown: those live
    that no classified run named, of the runs not classified."""
    if kind in KINDS:
        at = 2 * KINDS.index(kind)
        return path.kinds[at], path.kinds[at + 1]
    assert kind == UNKNOWN
    return (path.allocs - path.frees - sum(path.kinds[0::2]),
            sum(path.bytes) - sum(path.freed) - sum(path.kinds[1::2]))


@dataclass(frozen=True)
class SuppressedRow:
    """What one leak suppression (report/suppressions.py) took out."""
    pattern: str
    origin: str  # FILE:LINE, or the program's __lsan_default_suppressions
    objects: int
    bytes: int


@dataclass(frozen=True)
class NodeArrays:
    """Every node of a tree by its index, the order of the nodes' ids:
    compact columns (8 bytes a node) for what walks the whole tree."""
    first: int  # the first node's id
    ids: array.array[int]  # each node's id, ascending
    parent: array.array[int]  # each node's parent's index, -1 for an outermost node
    function: array.array[int]
    positions: dict[int, int] | None  # index by id, None when the ids run from first without a gap
    start: array.array[int]  # the children of index n: child[start[n + 1]:start[n + 2]] (core.children)
    child: array.array[int]

    def index(self, node: int) -> int:
        return node - self.first if self.positions is None else self.positions[node]

    def children(self, index: int) -> array.array[int]:
        """Of the node at index, -1 for the outermost nodes, in id order."""
        return self.child[self.start[index + 1]:self.start[index + 2]]


class PathTree:
    """The whole call paths (schema.sql's path_nodes and paths), kept in an
    in-memory SQLite database of their own: a report asks for what it shows
    (the figures of the paths, the functions of the few it names) rather
    than every frame of every path becoming a Python object.  What must see
    every path reads compact columns, each read once: the paths' figures
    (rows), and each node's parent, function, and file, line and inlined
    flag."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db  # holds path_nodes and paths, and an index of each node's children
        self.db.row_factory = None
        self.db.text_factory = _lossless_text
        self._rows: list[PathRow] | None = None
        self._parent: dict[int, int | None] | None = None
        self._function: dict[int, int] | None = None
        self._details: dict[int, tuple[bytes | str, int, int]] | None = None
        self._texts: dict[bytes | str, str] = {}
        self._functions: dict[int, tuple[int, ...]] = {}
        self._arrays: NodeArrays | None = None
        self._serialized: bytes | None = None
        self._chains: dict[int, tuple[int, ...]] = {}  # the functions of paths by their nodes' indexes
        # A file's text as its bytes where they are UTF-8 (decoded once
        # each, _text), else through the text factory.
        (encoding,) = db.execute("PRAGMA encoding").fetchone()
        self._bytes = encoding == "UTF-8"

    @classmethod
    def copy(cls, source: sqlite3.Connection) -> PathTree:
        """The path tables of a profile database, copied whole into memory
        (SQLite's backup, page by page)."""
        db = sqlite3.connect(":memory:")
        source.backup(db)
        return cls(db)

    @classmethod
    def of(cls, nodes: Mapping[int, PathNodeRow], paths: Iterable[PathRow], names: Mapping[int, str]) -> PathTree:
        """A tree of rows built by hand (tests, synthetic profiles); names,
        the functions' whole names by id, which order paths of equal
        figures."""
        db = sqlite3.connect(":memory:")
        db.executescript(
            "CREATE TABLE path_nodes (id INTEGER PRIMARY KEY, parent_id INTEGER, function_id INTEGER NOT NULL, "
            "file TEXT NOT NULL, line INTEGER NOT NULL, inlined INTEGER NOT NULL);"
            "CREATE TABLE paths (node_id INTEGER UNIQUE, allocs INTEGER, frees INTEGER, bytes_s INTEGER, "
            "bytes_m INTEGER, bytes_l INTEGER, bytes_x INTEGER, freed_s INTEGER, freed_m INTEGER, freed_l INTEGER, "
            "freed_x INTEGER, temporaries INTEGER, peak_blocks INTEGER, peak_bytes INTEGER, definite_blocks INTEGER, "
            "definite_bytes INTEGER, indirect_blocks INTEGER, indirect_bytes INTEGER, possible_blocks INTEGER, "
            "possible_bytes INTEGER, reachable_blocks INTEGER, reachable_bytes INTEGER, runtime TEXT, "
            "same_functions_id INTEGER, name_order INTEGER);")
        db.executemany("INSERT INTO path_nodes VALUES (?, ?, ?, ?, ?, ?)",
                       [(node, row.parent, row.function, row.file, row.line, int(row.inlined))
                        for node, row in nodes.items()])
        # schema.sql's same_functions_id, the first node of each path's
        # functions, and name_order, the place of its names among all paths'.
        functions: dict[int | None, tuple[int, ...]] = {None: ()}
        first: dict[tuple[int, ...], int] = {}
        for node in sorted(nodes):
            functions[node] = (*functions[nodes[node].parent], nodes[node].function)
            first.setdefault(functions[node], node)
        named = sorted({tuple(names[function] for function in chain) for chain in functions.values()})
        place = {chain: n for n, chain in enumerate(named)}
        db.executemany(f"INSERT INTO paths VALUES ({', '.join('?' * 25)})",
                       [(path.node, path.allocs, path.frees, *path.bytes, *path.freed, path.temporaries,
                         path.peak_blocks, path.peak_bytes, *path.kinds, path.runtime,
                         None if path.node is None else first[functions[path.node]],
                         place[tuple(names[function] for function in functions[path.node])]) for path in paths])
        return cls(db)

    @classmethod
    def empty(cls) -> PathTree:
        return cls.of({}, [], {})

    def rows(self) -> list[PathRow]:
        """Every path, in the order of their innermost nodes (none first)."""
        if self._rows is None:
            self._rows = [PathRow(row[0], row[1], row[2], row[3:7], row[7:11], row[14] or "", row[11], row[12], row[13],
                                  kinds=row[15:23])
                          for row in self.db.execute(
                              "SELECT node_id, allocs, frees, bytes_s, bytes_m, bytes_l, bytes_x, freed_s, freed_m, "
                              "freed_l, freed_x, temporaries, peak_blocks, peak_bytes, NULLIF(runtime, ''), "
                              "definite_blocks, definite_bytes, indirect_blocks, indirect_bytes, possible_blocks, "
                              "possible_bytes, reachable_blocks, reachable_bytes FROM paths ORDER BY node_id")]
        return self._rows

    def ranked(self, blocks: str, size: str, first: int | None = None) -> list[tuple[int, int, int | None]]:
        """(blocks, size, first node) of the paths of each list of functions
        (schema.sql's same_functions_id) where either figure, SQL over a
        path's columns, is not 0: most size, then blocks first, then by
        their functions' names (name_order), then by their first path;
        the first so many of them, if first."""
        return self.db.execute(
            f"SELECT SUM({blocks}), SUM({size}), MIN(node_id) FROM paths WHERE {blocks} != 0 OR {size} != 0 "
            "GROUP BY same_functions_id ORDER BY 2 DESC, 1 DESC, MIN(name_order), 3 LIMIT ?",
            (-1 if first is None else first,)).fetchall()

    def by_functions(self) -> list[tuple[int, ...]]:
        """(allocations, live blocks, live bytes, temporaries, first node,
        then the blocks and bytes of each leak kind in mprof(5)'s LEAK
        order) of the paths of each list of functions (schema.sql's
        same_functions_id), those of no frame last."""
        return self.db.execute(
            "SELECT SUM(allocs), SUM(allocs - frees), SUM(bytes_s + bytes_m + bytes_l + bytes_x - freed_s - freed_m "
            "- freed_l - freed_x), SUM(temporaries), MIN(node_id), SUM(definite_blocks), SUM(definite_bytes), "
            "SUM(indirect_blocks), SUM(indirect_bytes), SUM(possible_blocks), SUM(possible_bytes), "
            "SUM(reachable_blocks), SUM(reachable_bytes) FROM paths GROUP BY same_functions_id "
            "ORDER BY MIN(node_id) IS NULL, MIN(node_id)").fetchall()

    def ranked_count(self, blocks: str, size: str) -> int:
        """How many rows ranked() has in all."""
        (count,) = self.db.execute(f"SELECT COUNT(*) FROM (SELECT 1 FROM paths WHERE {blocks} != 0 OR {size} != 0 "
                                   "GROUP BY same_functions_id)").fetchone()
        return int(count)

    def parents(self) -> dict[int, int | None]:
        """Each node's parent (None: an outermost frame), parents first."""
        if self._parent is None:
            self._parent = dict(self.db.execute("SELECT id, parent_id FROM path_nodes ORDER BY id"))
        return self._parent

    def serialized(self) -> bytes:
        """The tree's database as sqlite3's serialize() lays it out, for the
        library's walks: made once, a copy of every page."""
        if self._serialized is None:
            self._serialized = self.db.serialize()
        return self._serialized

    def arrays(self) -> NodeArrays:
        """The nodes as compact columns, read once."""
        if self._arrays is None:
            # Read in the library: a big program's hundreds of thousands of
            # rows cost Python a quarter of a second.
            ids, parent, function = core.path_nodes(self.serialized())
            first = ids[0] if ids else 0
            dense = not ids or ids[-1] - first + 1 == len(ids)
            positions = None if dense else {node: n for n, node in enumerate(ids)}
            self._arrays = NodeArrays(first, ids, parent, function, positions, *core.children(parent))
        return self._arrays

    def functions_of_nodes(self) -> dict[int, int]:
        """Each node's function."""
        if self._function is None:
            self._function = dict(self.db.execute("SELECT id, function_id FROM path_nodes ORDER BY id"))
        return self._function

    def _file_column(self) -> str:
        return "CAST(file AS BLOB)" if self._bytes else "file"

    def _text(self, value: bytes | str) -> str:
        text = self._texts.get(value)
        if text is None:
            text = self._texts[value] = _text(value)
        return text

    def node(self, node: int) -> PathNodeRow:
        if self._details is None:
            # Text as its bytes: decoded when a node is asked for, once a file.
            self._details = {row[0]: row[1:] for row in self.db.execute(
                f"SELECT id, {self._file_column()}, line, inlined FROM path_nodes")}
        file, line, inlined = self._details[node]
        return PathNodeRow(self.parents()[node], self.functions_of_nodes()[node], self._text(file), line,
                           bool(inlined))

    def frames(self, node: int | None) -> list[PathNodeRow]:
        """The frames of the whole path that ends at node, innermost first."""
        found = []
        parents = self.parents()
        while node is not None:
            found.append(self.node(node))
            node = parents[node]
        return found

    def path_functions(self, node: int | None) -> tuple[int, ...]:
        """The functions of the whole path that ends at node, outermost
        first."""
        if node is None:
            return ()
        known = self._functions.get(node)
        if known is None:
            known = self.paths_functions([node])[node]
        return known

    # Fewer paths than this are walked up in SQL, more from the columns.
    _FEW = 2000

    def paths_functions(self, nodes: Iterable[int]) -> dict[int, tuple[int, ...]]:
        """The functions of the paths that end at nodes, outermost first."""
        nodes = list(nodes)
        wanted = [node for node in dict.fromkeys(nodes) if node not in self._functions]
        if len(wanted) < self._FEW and self._arrays is None:
            chains: dict[int, list[int]] = {node: [] for node in wanted}
            for start, function in self.db.execute(
                    "WITH RECURSIVE up(start, node, depth) AS (SELECT value, value, 0 FROM json_each(?) "
                    "UNION ALL SELECT start, parent_id, depth + 1 FROM up JOIN path_nodes ON id = node "
                    "WHERE parent_id IS NOT NULL) "
                    "SELECT start, function_id FROM up JOIN path_nodes ON id = node ORDER BY start, depth DESC",
                    (json.dumps(wanted),)):
                chains[start].append(function)
            for node, chain in chains.items():
                self._functions[node] = tuple(chain)
        else:
            tree = self.arrays()
            parents, functions = tree.parent, tree.function
            memo = self._chains
            for node in wanted:
                unknown = []
                step = tree.index(node)
                while step >= 0 and step not in memo:
                    unknown.append(step)
                    step = parents[step]
                known = memo[step] if step >= 0 else ()
                for each in reversed(unknown):
                    known = memo[each] = (*known, functions[each])
                self._functions[node] = known
        return {node: self._functions[node] for node in nodes}

    def innermost(self, functions: Iterable[int]) -> list[tuple[int, int, int]]:
        """(node, function, bytes allocated) of the paths whose innermost
        frame is one of functions, in the order of rows()."""
        return self.db.execute(
            "SELECT p.node_id, n.function_id, p.bytes_s + p.bytes_m + p.bytes_l + p.bytes_x FROM paths AS p "
            "JOIN path_nodes AS n ON n.id = p.node_id WHERE n.function_id IN (SELECT value FROM json_each(?)) "
            "ORDER BY p.node_id", (json.dumps(sorted(set(functions))),)).fetchall()

    def lines(self) -> dict[int, tuple[int, int]]:
        """Each node's line and inlined flag (1: inlined into its parent)."""
        return {node: (line, inlined) for node, line, inlined in self.db.execute(
            "SELECT id, line, inlined FROM path_nodes")}

    def allocating(self) -> list[int]:
        """The functions of the paths' innermost frames."""
        return [function for (function,) in self.db.execute(
            "SELECT DISTINCT n.function_id FROM paths AS p JOIN path_nodes AS n ON n.id = p.node_id")]

    def first_above(self, nodes: Iterable[int], wanted: Callable[[int], bool]) -> dict[int, int | None]:
        """For each node, the function of the innermost frame above it
        (its callers) that wanted takes, or None: a walk up all the paths
        at once, a step of each a query."""
        found: dict[int, int | None] = {}
        reached = {node: node for node in nodes}  # a node still walked: the frame it has reached
        while reached:
            above = {node: (parent, function) for node, parent, function in self.db.execute(
                "SELECT c.id, p.id, p.function_id FROM path_nodes AS c JOIN path_nodes AS p ON p.id = c.parent_id "
                "WHERE c.id IN (SELECT value FROM json_each(?))", (json.dumps(sorted(set(reached.values()))),))}
            still = {}
            for node, at in reached.items():
                step = above.get(at)
                if step is None:
                    found[node] = None
                elif wanted(step[1]):
                    found[node] = step[1]
                else:
                    still[node] = step[0]
            reached = still
        return found


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
    tree: PathTree = field(default_factory=PathTree.empty)  # the whole call paths
    replays: list[StoredReplay] = field(default_factory=list)  # mprof replay --db's, oldest first
    # Never-freed blocks leak suppressions took out of the leak rows, most first.
    suppressed: list[SuppressedRow] = field(default_factory=list)
    # The suppression each suppressed path fell under, by its place in tree.rows().
    path_suppressions: dict[int, str] = field(default_factory=dict)
    # False: loaded without edges and leaks (load's leaks_and_calls), which
    # the leak and call graph tables then refuse to show as empty.
    leaks_and_calls: bool = True

    @property
    def paths(self) -> list[PathRow]:
        """Every whole path, in the order of their innermost nodes, each
        with the suppression its never-freed blocks fell under."""
        rows = self.tree.rows()
        if not self.path_suppressions:
            return rows
        return [replace(row, suppressed=self.path_suppressions[n]) if n in self.path_suppressions else row
                for n, row in enumerate(rows)]

    @property
    def suppressed_bytes(self) -> int:
        return sum(row.bytes for row in self.suppressed)

    @property
    def total_bytes(self) -> int:
        """The heap's bytes allocated (the summary's)."""
        return self.summary["bytes_allocated"]

    @property
    def kept_bytes(self) -> int:
        """The heap's bytes never freed (the summary's)."""
        return self.summary["bytes_allocated"] - self.summary["bytes_freed"]

    def _mapped_functions(self) -> list[FunctionRow]:
        return [f for f in self.functions.values() if f.module == POOL_MODULE and f.name in MAPPED_FRAMES.values()]

    @property
    def table_bytes(self) -> int:
        """The bytes the rows of the tables of paths and functions are of:
        the heap's, and those of the regions the program mapped itself,
        which the heap's figures leave out (the regions are rows too)."""
        return self.total_bytes + sum(sum(f.self_bytes) for f in self._mapped_functions())

    @property
    def table_kept_bytes(self) -> int:
        """The same of the bytes never freed: the regions left mapped too."""
        return self.kept_bytes + sum(sum(f.kept_bytes) for f in self._mapped_functions())

    @property
    def call_graph(self) -> bool:
        return any(run.call_graph for run in self.runs)

    def path_functions(self, node: int | None) -> tuple[int, ...]:
        """The functions of the whole path that ends at node, outermost
        first."""
        return self.tree.path_functions(node)

    def frames(self, node: int | None) -> list[PathNodeRow]:
        """The frames of the whole path that ends at node, innermost first;
        none for None, an allocation whose caller was not found."""
        return self.tree.frames(node)

    def label(self, function_id: int) -> str:
        """gprof's way: name, <cycle N> for a member of a cycle."""
        function = self.functions[function_id]
        return function.name if function.cycle is None else f"{function.name} <cycle {function.cycle}>"


def _lossless_text(value: bytes) -> str:
    return value.decode("utf-8", "surrogateescape")


def _text(value: str | bytes) -> str:
    """A text column's value: a BLOB holds the bytes of non-UTF-8 text
    (schema.sql), read back as surrogates as the row factory reads it."""
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def load(db: sqlite3.Connection, leaks_and_calls: bool = True) -> Model:
    """The profile in a database; text stored as TEXT that is not UTF-8
    (a hand's edit: the reducer stores such text as a BLOB) is read as its
    bytes, undecodable ones as surrogates, as a BLOB is.  SQLite's own
    decoding is tried first: calling Python for each text value would
    take a tenth of a big profile's report.  Without leaks_and_calls, the
    leak rows and the call graph's edges are left out: mprof diff and
    export show neither, and a big program has tens of thousands of each."""
    try:
        return _load(db, leaks_and_calls)
    except sqlite3.OperationalError as error:
        if not str(error).startswith("Could not decode to UTF-8"):
            raise
    db.text_factory = _lossless_text
    return _load(db, leaks_and_calls)


def _replays(db: sqlite3.Connection) -> list[StoredReplay]:
    """mprof replay --db's replays, read by a module imported only when
    there are any: its figures' dataclasses take a tenth of a report's
    imports."""
    if not db.execute("SELECT EXISTS (SELECT 1 FROM replays)").fetchone()[0]:
        return []
    from .replays import load as load_replays

    return load_replays(db)


def _leaks(raw: sqlite3.Cursor) -> list[LeakRow]:
    frames: dict[int, list[LeakFrame]] = {}
    files: dict[str | bytes, str] = {}
    for leak_id, function, file, line in raw.execute(
            "SELECT leak_id, function_id, file, line FROM leak_frames ORDER BY leak_id, position"):
        text = files.get(file)
        if text is None:
            text = files[file] = _text(file)
        frames.setdefault(leak_id, []).append(LeakFrame(function, text, line))
    return [LeakRow(row[1], row[2], row[3], tuple(frames.get(row[0], ())), row[4], row[5:9]) for row in raw.execute(
        "SELECT id, kind, blocks, bytes, runtime, chain_allocs, chain_frees, chain_bytes, chain_bytes_freed "
        "FROM leaks ORDER BY id")]


def _load(db: sqlite3.Connection, leaks_and_calls: bool) -> Model:
    figures: dict[int, dict[str, int]] = {}
    for run_id, name, value in db.execute("SELECT run_id, name, value FROM run_figures"):
        figures.setdefault(run_id, {})[name] = value
    points: dict[int, list[tuple[int, int, int, int, int]]] = {}
    for run_id, ns, live, blocks, resident, mapped in db.execute(
            "SELECT run_id, ns, live_bytes, live_blocks, resident_bytes, mapped_bytes FROM timeline "
            "ORDER BY run_id, ns"):
        points.setdefault(run_id, []).append((ns, live, blocks, resident, mapped))
    runs = [RunInfo(row[1], row[2], row[3], row[4], row[5], bool(row[6]), bool(row[7]), bool(row[8]), row[9],
                    bool(row[10]), row[11], figures.get(row[0], {}), row[12], tuple(points.get(row[0], ())),
                    row[13], bool(row[14]), bool(row[15]), LeakScanInfo(*row[17:23]) if row[16] else None)
            for row in db.execute("SELECT id, pid, ppid, program, command_line, elapsed_ns, call_graph, final, "
                                  "checkpoint, end_signal, forked, leak_depth, start_unix_ns, lsan_suppressions, "
                                  "running, attached, classified, leak_flags, threads_stopped, threads_unstopped, "
                                  "root_bytes_scanned, block_bytes_scanned, scan_ns FROM runs ORDER BY id")]
    summary = dict(db.execute("SELECT name, value FROM summary"))
    # The big tables are read without the connection's row factory, which
    # looks at every value: only their text columns can hold a BLOB.
    raw = db.cursor()
    raw.row_factory = None
    functions = {}
    for row in raw.execute("SELECT * FROM functions ORDER BY id"):
        name = _text(row[1])
        functions[row[0]] = FunctionRow(row[0], name, _text(row[2]), _text(row[3]), row[4], row[5], row[6],
                                        row[7:11], row[11:15], row[15], row[16], row[17], row[18], name)
    edges = [EdgeRow(row[0], row[1], row[2], row[3:7]) for row in raw.execute(
        "SELECT * FROM edges ORDER BY caller_id, callee_id")] if leaks_and_calls else []
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
    leaks = _leaks(raw) if leaks_and_calls else []
    model = Model(runs, summary, functions, edges, cycles, bins, leaks, tree=PathTree.copy(db),
                  replays=_replays(db), leaks_and_calls=leaks_and_calls)
    for edge in edges:
        model.callers.setdefault(edge.callee, []).append(edge)
        model.callees.setdefault(edge.caller, []).append(edge)
    return model
