"""libmprof-reduce (reduce/ in the tree) through ctypes: the loops over a
data file's call path tree, which holds hundreds of thousands of nodes in a
big program's file, run in C, and Python reads back arrays.  reduce.h
says what each call does; the classes here own what it returns."""

from __future__ import annotations

import array
import ctypes
import functools
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from .. import source_tree
from .errors import MprofError

PATH_FIGURES = 13  # PATH's, then the leak kinds' blocks and bytes (LEAK's, 0 when none)
KIND_FIGURES = 8
FIGURES = PATH_FIGURES + KIND_FIGURES
BELOW = 5
LEAK_FIGURES = 4 + KIND_FIGURES  # allocations, frees, bytes, bytes freed, then the kinds
_OK, _CORRUPT, _NO_MEMORY, _DATABASE, _OVERFLOW = 0, 1, 2, 3, 4

_u64p = ctypes.POINTER(ctypes.c_uint64)
_i64p = ctypes.POINTER(ctypes.c_int64)
_u32p = ctypes.POINTER(ctypes.c_uint32)


class _Nodes(ctypes.Structure):
    """pathrows.h's struct pr_nodes."""
    _fields_ = [("count", ctypes.c_size_t), ("id", _i64p), ("parent", _i64p), ("function", _i64p), ("line", _i64p),
                ("inlined", ctypes.POINTER(ctypes.c_uint8))]


class _Calls(ctypes.Structure):
    _fields_ = [("node_count", ctypes.c_size_t), ("parent", _i64p), ("address", _u32p),
                ("path_count", ctypes.c_size_t), ("path_node", _i64p), ("figures", _u64p)]


class _Totals(ctypes.Structure):
    _fields_ = [("site_count", ctypes.c_size_t), ("site_address", _u32p), ("site_figures", _u64p),
                ("leak_count", ctypes.c_size_t), ("leak_node", _i64p), ("leak_chain", _u32p),
                ("leak_chain_end", _u64p), ("leak_figures", _u64p),
                ("pair_count", ctypes.c_size_t), ("pair_caller", _u32p), ("pair_callee", _u32p),
                ("pair_figures", _u64p)]


class _Frame(ctypes.Structure):
    """struct mr_frame: a symbolized frame as numbers."""
    _fields_ = [("function", ctypes.c_uint32), ("file", ctypes.c_uint32), ("line", ctypes.c_uint32),
                ("inlined", ctypes.c_uint32)]


class _Numbered(ctypes.Structure):
    _fields_ = [("tree", ctypes.c_void_p), ("node_count", ctypes.c_size_t), ("node_parent", _u64p),
                ("node_frame", ctypes.POINTER(_Frame)), ("path_count", ctypes.c_size_t), ("path_node", _u64p),
                ("path_order", ctypes.POINTER(ctypes.c_size_t)), ("path_chain", _u32p),
                ("chain_count", ctypes.c_size_t), ("chain_innermost", _i64p), ("chain_groups", _u32p),
                ("chain_outside", _i64p)]


def library_path() -> Path:
    """MPROF_REDUCE (set by the installed launcher), or the one the source
    tree built."""
    configured = os.environ.get("MPROF_REDUCE")
    return Path(configured) if configured else source_tree.BUILD / "libmprof-reduce.so"


@functools.cache
def library() -> Any:
    path = library_path()
    try:
        loaded = ctypes.CDLL(os.fspath(path))
    except OSError as error:
        raise MprofError(f"{path}: cannot load the reducer's library (run make first): {error}") from None
    signatures: dict[str, tuple[Any, list[Any]]] = {
        "mr_calls_decode": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                                           ctypes.c_uint64, ctypes.c_uint64, ctypes.POINTER(ctypes.POINTER(_Calls))]),
        "mr_calls_free": (None, [ctypes.POINTER(_Calls)]),
        "mr_calls_used": (None, [ctypes.POINTER(_Calls), ctypes.c_void_p]),
        "mr_calls_kinds": (None, [ctypes.POINTER(_Calls), ctypes.c_size_t, _u64p, _u64p]),
        "mr_totals_make": (ctypes.c_int, [ctypes.POINTER(_Calls), ctypes.c_uint, ctypes.c_int,
                                          ctypes.POINTER(ctypes.POINTER(_Totals))]),
        "mr_totals_free": (None, [ctypes.POINTER(_Totals)]),
        "mr_graph_make": (ctypes.c_int, [ctypes.POINTER(_Calls), ctypes.c_uint, ctypes.c_int, ctypes.c_void_p,
                                         ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                                         ctypes.c_size_t, ctypes.POINTER(ctypes.POINTER(_Graph))]),
        "mr_graph_free": (None, [ctypes.POINTER(_Graph)]),
        "mr_tree_new": (ctypes.c_void_p, []),
        "mr_tree_free": (None, [ctypes.c_void_p]),
        "mr_tree_add": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(_Calls), ctypes.c_void_p, ctypes.c_void_p,
                                       ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p,
                                       ctypes.POINTER(ctypes.c_size_t)]),
        "mr_tree_number": (ctypes.c_int, [ctypes.c_void_p, _u32p, ctypes.c_char_p, ctypes.c_size_t,
                                          ctypes.POINTER(ctypes.POINTER(_Numbered))]),
        "mr_numbered_free": (None, [ctypes.POINTER(_Numbered)]),
        "mr_write_start": (ctypes.c_int, [ctypes.POINTER(_Numbered), ctypes.c_char_p, ctypes.c_void_p,
                                          ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                          ctypes.POINTER(ctypes.c_void_p)]),
        "mr_write_finish": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]),
        "mr_subtree_sums": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]),
        "mr_children": (None, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p]),
        "pr_nodes_read": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.POINTER(_Nodes)),
                                         ctypes.c_char_p, ctypes.c_size_t]),
        "pr_nodes_delete": (None, [ctypes.POINTER(_Nodes)]),
    }
    for name, (result, arguments) in signatures.items():
        function = getattr(loaded, name)
        function.restype = result
        function.argtypes = arguments
    return loaded


def check(status: int) -> None:
    """Raises what a library call's status says went wrong, if anything."""
    if status == _OVERFLOW:
        raise OverflowError("figures add up past 64 bits")
    if status == _NO_MEMORY:
        raise MemoryError("libmprof-reduce ran out of memory")
    if status != _OK:
        raise AssertionError(f"libmprof-reduce refused its input ({status})")


ArrayCode = Literal["q", "Q", "I", "B"]


def copied(pointer: Any, count: int, code: ArrayCode) -> array.array[int]:
    """count values from a C array, in one copy."""
    values = array.array(code)
    if count:
        values.frombytes(ctypes.string_at(pointer, count * values.itemsize))
    return values


def _ints(pointer: Any, count: int, code: ArrayCode) -> list[int]:
    """count values from a C array, as Python ints, in one copy."""
    return copied(pointer, count, code).tolist()


def _runs(ends: Any, items: Any, count: int) -> list[list[int]]:
    """count runs of uint32 items laid end to end, each ending where ends
    (uint64) says."""
    found = _ints(ends, count, "Q")
    values = _ints(items, found[-1] if found else 0, "I")
    return [values[start:end] for start, end in zip([0, *found], found, strict=False)]


class Calls:
    """One data file's call paths, decoded: nodes (parent, address index
    into the file's ADDR table) and paths (node, FIGURES figures), as
    lists; and the C arrays they came from, for the other calls here."""

    def __init__(self, pointer: Any) -> None:
        self._pointer = pointer
        calls = pointer.contents
        self.node_count: int = calls.node_count
        self.path_count: int = calls.path_count
        self._free = library().mr_calls_free

    def __del__(self) -> None:
        if getattr(self, "_pointer", None):
            self._free(self._pointer)

    def used_addresses(self, address_count: int) -> list[int]:
        """The address indices below address_count that nodes name, in order."""
        used = (ctypes.c_uint8 * max(address_count, 1))()
        library().mr_calls_used(self._pointer, used)
        return [index for index in range(address_count) if used[index]]

    def set_kinds(self, kinds: Mapping[int, Sequence[int]]) -> None:
        """Sets the leak kinds' KIND_FIGURES figures of the paths kinds
        holds, by path index (LEAK's, checked)."""
        paths = sorted(kinds)
        library().mr_calls_kinds(self._pointer, len(paths), (ctypes.c_uint64 * max(len(paths), 1))(*paths),
                                 (ctypes.c_uint64 * max(len(paths) * KIND_FIGURES, 1))(
                                     *(value for path in paths for value in kinds[path])))
        self.__dict__.pop("figures", None)

    @functools.cached_property
    def parents(self) -> list[int]:
        return _ints(self._pointer.contents.parent, self.node_count, "q")

    @functools.cached_property
    def addresses(self) -> list[int]:
        return _ints(self._pointer.contents.address, self.node_count, "I")

    @functools.cached_property
    def path_nodes(self) -> list[int]:
        return _ints(self._pointer.contents.path_node, self.path_count, "q")

    @functools.cached_property
    def figures(self) -> list[int]:
        """FIGURES values a path, paths one after the other."""
        return _ints(self._pointer.contents.figures, self.path_count * FIGURES, "Q")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Calls):
            return NotImplemented
        return (self.parents, self.addresses, self.path_nodes, self.figures) == (
            other.parents, other.addresses, other.path_nodes, other.figures)

    __hash__ = None  # type: ignore[assignment]


def _address_of(payload: bytes | memoryview) -> Any:
    """Where a payload's bytes are, without copying them when they are
    writable (the reader's bytearray): a big file's NODE and PATH are tens
    of megabytes."""
    if isinstance(payload, memoryview) and not payload.readonly and payload.contiguous and len(payload):
        return ctypes.addressof(ctypes.c_char.from_buffer(payload))
    return bytes(payload)


def decode(nodes: bytes | memoryview, paths: bytes | memoryview, address_count: int, max_depth: int) -> Calls | None:
    """The NODE and PATH payloads decoded; None when either is corrupt
    (sections.py then says how)."""
    out = ctypes.POINTER(_Calls)()
    status = library().mr_calls_decode(_address_of(nodes), len(nodes), _address_of(paths), len(paths),
                                       address_count, max_depth, ctypes.byref(out))
    if status == _CORRUPT:
        return None
    check(status)
    return Calls(out)


class Totals:
    """What a file's tree adds up to (reduce.h, mr_totals), as lists:
    site addresses (indices) and FIGURES figures each; leak chains as
    their address indices, innermost first, and 4 figures each; pairs as caller and callee
    indices and BELOW figures each."""

    def __init__(self, calls: Calls, leak_depth: int, call_graph: bool) -> None:
        loaded = library()
        out = ctypes.POINTER(_Totals)()
        check(loaded.mr_totals_make(calls._pointer, leak_depth, int(call_graph), ctypes.byref(out)))
        try:
            t = out.contents
            self.site_addresses = _ints(t.site_address, t.site_count, "I")
            self.site_figures = _ints(t.site_figures, t.site_count * FIGURES, "Q")
            self.leak_chains = _runs(t.leak_chain_end, t.leak_chain, t.leak_count)
            self.leak_figures = _ints(t.leak_figures, t.leak_count * LEAK_FIGURES, "Q")
            self.pair_callers = _ints(t.pair_caller, t.pair_count, "I")
            self.pair_callees = _ints(t.pair_callee, t.pair_count, "I")
            self.pair_figures = _ints(t.pair_figures, t.pair_count * BELOW, "Q")
        finally:
            loaded.mr_totals_free(out)


class _Graph(ctypes.Structure):
    _fields_ = [("function_count", ctypes.c_size_t), ("self", _u64p),
                ("site_count", ctypes.c_size_t), ("site_module", _u32p), ("site_offset", _u64p),
                ("site_frame", _u32p), ("site_figures", _u64p),
                ("leak_count", ctypes.c_size_t), ("leak_end", _u64p), ("leak_frames", _u32p), ("leak_figures", _u64p),
                ("edge_count", ctypes.c_size_t), ("edge_caller", _u32p), ("edge_callee", _u32p),
                ("edge_figures", _u64p), ("taken_count", ctypes.c_size_t), ("taken", _u32p)]


SELF = 10


class Graph:
    """One file's call graph (reduce.h, mr_graph), as lists: SELF figures
    a function (calls, frees, bytes and bytes freed by class); sites as the
    frame that made them (which names the module and offset) and FIGURES
    figures; leaks as their frames (indices, innermost first) and 4
    figures; edges as caller, callee and BELOW figures; the frames each
    function was first taken at."""

    def __init__(self, calls: Calls, leak_depth: int, call_graph: bool, first: array.array[int],
                 frames: array.array[int], from_main: bytes, site_module: array.array[int],
                 site_offset: array.array[int], function_count: int) -> None:
        loaded = library()
        out = ctypes.POINTER(_Graph)()
        status = loaded.mr_graph_make(calls._pointer, leak_depth, int(call_graph), first.buffer_info()[0],
                                       frames.buffer_info()[0], from_main, site_module.buffer_info()[0],
                                       site_offset.buffer_info()[0], function_count, ctypes.byref(out))
        check(status)
        try:
            g = out.contents
            self.self = _ints(g.self, function_count * SELF, "Q")
            self.site_frames = _ints(g.site_frame, g.site_count, "I")
            self.site_figures = _ints(g.site_figures, g.site_count * FIGURES, "Q")
            self.leak_frames = _runs(g.leak_end, g.leak_frames, g.leak_count)
            self.leak_figures = _ints(g.leak_figures, g.leak_count * LEAK_FIGURES, "Q")
            self.edge_callers = _ints(g.edge_caller, g.edge_count, "I")
            self.edge_callees = _ints(g.edge_callee, g.edge_count, "I")
            self.edge_figures = _ints(g.edge_figures, g.edge_count * BELOW, "Q")
            self.taken = _ints(g.taken, g.taken_count, "I")
        finally:
            loaded.mr_graph_free(out)


class _Text(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_char_p), ("size", ctypes.c_size_t), ("utf8", ctypes.c_int)]


def _texts(values: Sequence[str | bytes]) -> Any:
    """Texts as the library takes them: str is UTF-8, bytes are not."""
    texts = (_Text * max(len(values), 1))()
    for index, value in enumerate(values):
        raw = value.encode() if isinstance(value, str) else value
        texts[index] = _Text(raw, len(raw), isinstance(value, str))
    return texts


class Numbered:
    """The tree as the database holds it (reduce.h, mr_numbered): the
    chains of its paths, for the runtime-block rules, as lists, and the
    rest written straight into the database.  It holds its tree."""

    def __init__(self, pointer: Any, tree: Tree) -> None:
        self._pointer = pointer
        self._tree = tree
        self._library = library()
        n = pointer.contents
        self.chain_innermost = _ints(n.chain_innermost, n.chain_count, "q")
        self.chain_groups = _ints(n.chain_groups, n.chain_count, "I")
        self.chain_outside = _ints(n.chain_outside, n.chain_count, "q")

    def __del__(self) -> None:
        if getattr(self, "_pointer", None):
            self._library.mr_numbered_free(self._pointer)

    def start_writing(self, database: Path, function_ids: Sequence[int], function_ranks: Sequence[int],
                      files: Sequence[str | bytes], runtime: Sequence[int], runtimes: Sequence[str]) -> Writing:
        """Starts writing into the database's path_nodes and paths (reduce.h,
        mr_write_start); runtime by chain."""
        arrays = ((ctypes.c_int64 * max(len(function_ids), 1))(*function_ids),
                  (ctypes.c_uint32 * max(len(function_ranks), 1))(*function_ranks), _texts(files),
                  (ctypes.c_uint32 * max(len(runtime), 1))(*runtime), _texts(runtimes))
        job = ctypes.c_void_p()
        check(self._library.mr_write_start(self._pointer, os.fsencode(database), *arrays, ctypes.byref(job)))
        return Writing(job, database, (self, arrays))


class Writing:
    """A write of the path tables on a thread of the library's own, started
    (Numbered.start_writing): it holds what the thread reads until finish."""

    def __init__(self, job: ctypes.c_void_p, database: Path, held: object) -> None:
        self._library = library()
        self._job = job
        self._database = database
        self._held = held

    def finish(self) -> None:
        """Waits for the write; an error of SQLite's is the database's,
        in one line.  Called once, whatever came in between."""
        error = ctypes.create_string_buffer(512)
        job, self._job = self._job, ctypes.c_void_p()
        if not job:
            return
        status = self._library.mr_write_finish(job, error, len(error))
        if status == _DATABASE:
            raise MprofError(f"{self._database}: cannot write the call paths: "
                             f"{error.value.decode(errors='replace')}")
        check(status)


class Tree:
    """The frames of every file's paths merged into one tree (reduce.h, mr_tree)."""

    def __init__(self) -> None:
        self._library = library()
        self._tree = self._library.mr_tree_new()
        if not self._tree:
            raise MemoryError("libmprof-reduce ran out of memory")

    def __del__(self) -> None:
        if getattr(self, "_tree", None):
            self._library.mr_tree_free(self._tree)

    def add(self, calls: Calls, first: array.array[int], frames: array.array[int], from_main: bytes,
            function_count: int) -> list[int]:
        """Adds a file's paths, its addresses' frames laid out as
        frames_table.FramesTable lays them out, functions numbered below
        function_count.  The functions the tree took (those of frames
        outside start-up code), in the order it first took them, as the
        index of the frame it took each at first."""
        taken = array.array("I", bytes(4 * max(function_count, 1)))
        count = ctypes.c_size_t()
        check(self._library.mr_tree_add(self._tree, calls._pointer, first.buffer_info()[0], frames.buffer_info()[0],
                                         from_main, function_count, taken.buffer_info()[0], ctypes.byref(count)))
        return taken[:count.value].tolist()

    def numbered(self, groups: Sequence[int], outside: Sequence[bool]) -> Numbered:
        """groups and outside by function number (reduce.h, mr_tree_number)."""
        out = ctypes.POINTER(_Numbered)()
        check(self._library.mr_tree_number(self._tree, (ctypes.c_uint32 * max(len(groups), 1))(*groups),
                                            bytes(map(bool, outside)), len(groups), ctypes.byref(out)))
        return Numbered(out, self)


def address(values: array.array[int]) -> int | None:
    """Where an array's items are, for a library call; NULL for none."""
    return values.buffer_info()[0] if len(values) else None


def path_nodes(database: bytes) -> tuple[array.array[int], array.array[int], array.array[int]]:
    """path_nodes of a database as sqlite3's serialize() gives it, in the
    order of their ids (pr_nodes_read): each node's id, its parent's index
    (-1 for an outermost node) and its function, int64 ("q") each."""
    loaded = library()
    error = ctypes.create_string_buffer(512)
    nodes = ctypes.POINTER(_Nodes)()
    status = loaded.pr_nodes_read(database, len(database), ctypes.byref(nodes), error, len(error))
    if status == _DATABASE:
        raise AssertionError(f"the profile's call paths cannot be read: {error.value.decode(errors='replace')}")
    check(status)
    try:
        found = nodes.contents
        return (copied(found.id, found.count, "q"), copied(found.parent, found.count, "q"),
                copied(found.function, found.count, "q"))
    finally:
        loaded.pr_nodes_delete(nodes)


def subtree_sums(parent: array.array[int], values: array.array[int]) -> None:
    """Adds each node's value into its ancestors' (reduce.h,
    mr_subtree_sums): parent ("q"), each node's parent's index or -1."""
    assert parent.typecode == values.typecode == "q" and len(parent) == len(values)
    check(library().mr_subtree_sums(address(parent), len(parent), address(values)))


def children(parent: array.array[int]) -> tuple[array.array[int], array.array[int]]:
    """(start, child): the children of node n, by index, are
    child[start[n + 1]:start[n + 2]], of the outermost nodes child[start[0]:
    start[1]] (reduce.h, mr_children)."""
    assert parent.typecode == "q"
    start = array.array("Q", bytes(8 * (len(parent) + 2)))
    child = array.array("Q", bytes(8 * max(len(parent), 1)))
    library().mr_children(address(parent), len(parent), address(start), address(child))
    return start, child

