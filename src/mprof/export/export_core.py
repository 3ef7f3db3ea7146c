"""mprof export's walks in libmprof-reduce (reduce/export.h), through
ctypes, loaded by the reducer's loader: a profile's paths read from its
database and walked in C, which encodes pprof's samples, locations and
functions and writes collapsed stacks; Python names what they hold."""

from __future__ import annotations

import array
import ctypes
import functools
from collections.abc import Sequence
from typing import Any

from ..reducer.core import address, check, copied, library
from ..report.measured import Counted, PrMeasures, checked
from ..report.measures import Measure
from ..report.model import Model

EX_FUNCTION, EX_LOCATION, EX_NO_CHAIN = 0, 1, 2

_u8p = ctypes.POINTER(ctypes.c_uint8)
_i64p = ctypes.POINTER(ctypes.c_int64)
_u64p = ctypes.POINTER(ctypes.c_uint64)


class _Pprof(ctypes.Structure):
    _fields_ = [("path_count", ctypes.c_size_t), ("counted", _u8p),
                ("event_count", ctypes.c_size_t), ("event_kind", _u8p), ("event_function", _i64p),
                ("event_path", _u64p), ("runtime_count", ctypes.c_size_t), ("runtime_path", _u64p),
                ("runtime_rowid", _i64p), ("function_count", ctypes.c_size_t),
                ("location_count", ctypes.c_size_t), ("bytes", ctypes.c_void_p), ("size", ctypes.c_size_t),
                ("locations_at", ctypes.c_size_t), ("functions_at", ctypes.c_size_t), ("walk", ctypes.c_void_p)]


@functools.cache
def _functions() -> Any:
    loaded = library()
    signatures: dict[str, tuple[Any, list[Any]]] = {
        "ex_pprof_walk": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(PrMeasures),
                                         ctypes.POINTER(ctypes.POINTER(_Pprof)), ctypes.c_char_p, ctypes.c_size_t]),
        "ex_pprof_encode": (ctypes.c_int, [ctypes.POINTER(_Pprof)] + [ctypes.c_void_p] * 8 + [ctypes.c_size_t]),
        "ex_pprof_free": (None, [ctypes.POINTER(_Pprof)]),
        "ex_collapsed": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(PrMeasures),
                                        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p,
                                        ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32,
                                        ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                                        ctypes.c_char_p, ctypes.c_size_t]),
        "ex_collapsed_free": (None, [ctypes.c_void_p]),
    }
    for name, (result, arguments) in signatures.items():
        function = getattr(loaded, name)
        function.restype = result
        function.argtypes = arguments
    return loaded


class PprofWalk:
    """The pprof walk of a model's paths (ex_pprof_walk): what it met, as
    arrays, for Python to name, and then the encoding."""

    def __init__(self, model: Model, chosen: Sequence[Measure], values: array.array[int] | None = None) -> None:
        """values: each path's figures, as Counted takes them, where the
        measures do not say them."""
        self._library = _functions()
        counted = Counted(model, chosen, values=values)
        database = model.tree.serialized()
        error = ctypes.create_string_buffer(512)
        self._pointer = ctypes.POINTER(_Pprof)()
        checked(self._library.ex_pprof_walk(database, len(database), ctypes.byref(counted.struct),
                                             ctypes.byref(self._pointer), error, len(error)), error)
        found = self._pointer.contents
        self.counted = ctypes.string_at(found.counted, found.path_count) if found.path_count else b""
        self.event_kinds = ctypes.string_at(found.event_kind, found.event_count) if found.event_count else b""
        self.event_functions = copied(found.event_function, found.event_count, "q")
        self.event_paths = copied(found.event_path, found.event_count, "Q")
        self.runtime_paths = copied(found.runtime_path, found.runtime_count, "Q")
        self.runtime_rowids = copied(found.runtime_rowid, found.runtime_count, "q")
        self.function_count: int = found.function_count
        self.location_count: int = found.location_count

    def __del__(self) -> None:
        if getattr(self, "_pointer", None):
            self._library.ex_pprof_free(self._pointer)

    def encode(self, functions: Sequence[array.array[int]], mappings: array.array[int],
               labels: Sequence[array.array[int]]) -> tuple[bytes, bytes, bytes]:
        """Profile's samples, locations and functions, encoded:
        functions, four arrays (name, system name, file name, start line)
        by pprof id - 1; each location's mapping id; labels, three arrays
        (path, key, value)."""
        assert len(mappings) == self.location_count and all(len(f) == self.function_count for f in functions)
        check(self._library.ex_pprof_encode(self._pointer, *map(address, functions), address(mappings),
                                            *map(address, labels), len(labels[0])))
        found = self._pointer.contents
        encoded = ctypes.string_at(found.bytes, found.size) if found.size else b""
        return (encoded[:found.locations_at], encoded[found.locations_at:found.functions_at],
                encoded[found.functions_at:])


def collapsed(model: Model, measure: Measure, function_ids: array.array[int], name_of: array.array[int],
              names: Sequence[bytes], no_chain: int) -> bytes:
    """ex_collapsed's text: function_ids ascending, name_of each one's
    place in names, sorted and distinct; no_chain, the place of the name
    of a path of no chain."""
    loaded = _functions()
    counted = Counted(model, (measure,))
    database = model.tree.serialized()
    ends = array.array("Q")
    end = 0
    for name in names:
        end += len(name)
        ends.append(end)
    error = ctypes.create_string_buffer(512)
    text = ctypes.c_void_p()
    size = ctypes.c_size_t()
    checked(loaded.ex_collapsed(database, len(database), ctypes.byref(counted.struct), address(function_ids),
                                 address(name_of), len(function_ids), b"".join(names), address(ends), len(names),
                                 no_chain, ctypes.byref(text), ctypes.byref(size), error, len(error)), error)
    try:
        return ctypes.string_at(text, size.value) if size.value else b""
    finally:
        loaded.ex_collapsed_free(text)
