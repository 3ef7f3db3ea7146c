"""mprof diff's walk in libmprof-reduce (reduce/diffwalk.h), through
ctypes, loaded by the reducer's loader: each profile's path tree read
from its database and summed into the rows diff compares, in C, and read
back as arrays (compare.py makes rows of them)."""

from __future__ import annotations

import array
import ctypes
import functools
from collections.abc import Sequence
from typing import Any

from ..reducer.core import address, check, copied, library

PATHS, FUNCTIONS, SITES, CUMULATIVE = 0, 1, 2, 3
NO_NODE = -(2 ** 63)  # the node of a path of no caller
NONE = 2 ** 32 - 1
_DATABASE = 3

_i64p = ctypes.POINTER(ctypes.c_int64)
_u32p = ctypes.POINTER(ctypes.c_uint32)
_u8p = ctypes.POINTER(ctypes.c_uint8)


class _View(ctypes.Structure):
    _fields_ = [("count", ctypes.c_size_t), ("figures", _i64p * 2), ("node", _i64p * 2), ("seen", _u8p * 2),
                ("identity", _u32p)]


class _Flame(ctypes.Structure):
    _fields_ = [("count", ctypes.c_size_t), ("chain", _u32p), ("row", _u32p), ("depth", _u32p),
                ("sums", _i64p), ("first_child", _u32p), ("next_sibling", _u32p)]


@functools.cache
def _functions() -> Any:
    loaded = library()
    signatures: dict[str, tuple[Any, list[Any]]] = {
        "dw_new": (ctypes.c_void_p, [ctypes.c_uint, ctypes.c_uint32]),
        "dw_free": (None, [ctypes.c_void_p]),
        "dw_add": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint, ctypes.c_char_p, ctypes.c_size_t,
                                  ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                                  ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                                  ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]),
        "dw_totals": (_i64p, [ctypes.c_void_p, ctypes.c_uint]),
        "dw_view": (None, [ctypes.c_void_p, ctypes.c_uint, ctypes.POINTER(_View)]),
        "dw_changed": (ctypes.c_size_t, [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p,
                                         ctypes.c_void_p]),
        "dw_chains": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint, ctypes.c_void_p, ctypes.c_size_t,
                                     ctypes.c_void_p, ctypes.c_void_p]),
        "dw_flame_make": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_uint, ctypes.POINTER(ctypes.POINTER(_Flame))]),
        "dw_flame_free": (None, [ctypes.POINTER(_Flame)]),
    }
    for name, (result, arguments) in signatures.items():
        function = getattr(loaded, name)
        function.restype = result
        function.argtypes = arguments
    return loaded


class Table:
    """A view's rows (diffwalk.h, dw_view) as arrays: width figures a row
    for each side, the node that names the row on each side, whether
    each side has it, and what identifies it."""

    def __init__(self, view: _View, width: int) -> None:
        self.count: int = view.count
        self.figures = [copied(view.figures[side], view.count * width, "q") for side in (0, 1)]
        self.nodes = [copied(view.node[side], view.count, "q") for side in (0, 1)]
        self.seen = [copied(view.seen[side], view.count, "B") for side in (0, 1)]
        self.identity = copied(view.identity, view.count, "I")


class FlameTree:
    """The differential flame graph's tree (diffwalk.h, dw_flame) as
    arrays: node 0 the root."""

    def __init__(self, flame: _Flame) -> None:
        count = flame.count
        self.chain = copied(flame.chain, count, "I")
        self.row = copied(flame.row, count, "I")
        self.depth = copied(flame.depth, count, "I")
        self.sums = copied(flame.sums, count * 3, "q")
        self.first_child = copied(flame.first_child, count, "I")
        self.next_sibling = copied(flame.next_sibling, count, "I")

    def children(self, node: int) -> list[int]:
        found = []
        child = self.first_child[node]
        while child != NONE:
            found.append(child)
            child = self.next_sibling[child]
        return found


class Walk:
    """Both profiles' rows, as the library sums them (dw_compare)."""

    def __init__(self, width: int, key_count: int) -> None:
        self._library = _functions()
        self.width = width
        self._compare = self._library.dw_new(width, key_count)
        if not self._compare:
            raise MemoryError("libmprof-reduce ran out of memory")

    def __del__(self) -> None:
        if getattr(self, "_compare", None):
            self._library.dw_free(self._compare)

    def add(self, side: int, database: bytes, function_ids: array.array[int], function_keys: array.array[int],
            coefficients: array.array[int], gates: bytes, suppressed: array.array[int],
            values: array.array[int] | None) -> None:
        """A profile (dw_add): its database as sqlite3's serialize() makes
        it; values, when the measures are not sums of a path's columns (None
        also where the profile has no path: there is nothing to count)."""
        error = ctypes.create_string_buffer(512)
        status = self._library.dw_add(
            self._compare, side, database, len(database), address(function_ids), address(function_keys),
            len(function_ids), address(coefficients), gates, address(suppressed), len(suppressed),
            None if values is None else address(values), 0 if values is None else len(values), error, len(error))
        if status == _DATABASE:
            raise AssertionError(f"the profile's call paths cannot be read: {error.value.decode(errors='replace')}")
        check(status)

    def totals(self, side: int) -> list[int]:
        return copied(self._library.dw_totals(self._compare, side), self.width, "q").tolist()

    def table(self, kind: int) -> Table:
        view = _View()
        self._library.dw_view(self._compare, kind, ctypes.byref(view))
        return Table(view, self.width)

    def changed(self, kind: int, index: int, count: int) -> tuple[array.array[int], array.array[int]]:
        """The rows of the view that changed, the largest change of figure
        index first (ties in the rows' order), and the size of each one's
        change; count, the view's rows."""
        rows = array.array("I", bytes(4 * max(count, 1)))
        sizes = array.array("Q", bytes(8 * max(count, 1)))
        found = self._library.dw_changed(self._compare, kind, index, address(rows), address(sizes))
        if found > count:
            raise MemoryError("libmprof-reduce ran out of memory")
        return rows[:found], sizes[:found]

    def chains(self, side: int, nodes: Sequence[int]) -> list[list[int]]:
        """The functions of the side's paths that end at nodes, outermost first."""
        wanted = array.array("q", nodes)
        ends = array.array("Q", bytes(8 * max(len(wanted), 1)))
        check(self._library.dw_chains(self._compare, side, address(wanted), len(wanted), address(ends), None))
        functions = array.array("q", bytes(8 * max(ends[len(wanted) - 1] if wanted else 0, 1)))
        check(self._library.dw_chains(self._compare, side, address(wanted), len(wanted), address(ends),
                                      address(functions)))
        every, stops = functions.tolist(), ends[:len(wanted)].tolist()
        return [every[start:stop] for start, stop in zip([0, *stops], stops, strict=False)]

    def flame(self, index: int) -> FlameTree:
        out = ctypes.POINTER(_Flame)()
        check(self._library.dw_flame_make(self._compare, index, ctypes.byref(out)))
        try:
            return FlameTree(out.contents)
        finally:
            self._library.dw_flame_free(out)
