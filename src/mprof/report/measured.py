"""The measures as libmprof-reduce sums a path's columns (reduce/pathrows.h's
struct pr_measures), for the C walks over a profile's paths: the exports'
(export/export_core.py) and the flame graphs' sums by node (nodesums.h)."""

from __future__ import annotations

import array
import ctypes
import functools
from collections.abc import Sequence
from typing import Any

from ..reducer.core import address, check, library
from .measures import Measure, as_sums
from .model import Model

DATABASE = 3  # reduce.h's MR_DATABASE: SQLite's words in the error buffer


class PrMeasures(ctypes.Structure):
    _fields_ = [("width", ctypes.c_uint), ("coefficients", ctypes.c_void_p), ("gates", ctypes.c_char_p),
                ("suppressed", ctypes.c_void_p), ("suppressed_count", ctypes.c_size_t),
                ("values", ctypes.c_void_p), ("value_count", ctypes.c_size_t)]


class Counted:
    """The measures as struct pr_measures, and what it points at; the
    suppressed paths, by place in tree.rows(), the model's unless given;
    values, each path's figure of each measure ("q", path by path in
    model.paths's order), where the measures alone do not say them."""

    def __init__(self, model: Model, chosen: Sequence[Measure], suppressed: Sequence[int] | None = None,
                 values: array.array[int] | None = None) -> None:
        sums = as_sums(chosen) if values is None else None
        if sums is not None:
            self.coefficients, self.gates = sums
        else:
            self.coefficients, self.gates = array.array("q"), b""
            if values is None:
                values = array.array("q", [measure.of(path) for path in model.paths for measure in chosen])
            assert len(values) == len(chosen) * len(model.paths)
        self.values = values
        # values given are never NULL, even for a profile of no paths: NULL
        # would say that the measures' sums stand instead, and there are none.
        self._no_values = array.array("q", [0])
        if suppressed is None:
            suppressed = sorted(n for n, pattern in model.path_suppressions.items() if pattern)
        self.suppressed = array.array("q", suppressed)
        self.struct = PrMeasures(len(chosen), address(self.coefficients), self.gates or None,
                                 address(self.suppressed), len(self.suppressed),
                                 None if self.values is None else address(self.values or self._no_values),
                                 0 if self.values is None else len(self.values))


def checked(status: int, error: Any) -> None:
    """check(), and a database the walk could not read as a bug that says
    SQLite's words."""
    if status == DATABASE:
        raise AssertionError(f"the profile's call paths cannot be read: {error.value.decode(errors='replace')}")
    check(status)


@functools.cache
def _node_sums() -> Any:
    function = library().ns_node_sums
    function.restype = ctypes.c_int
    function.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(PrMeasures), ctypes.c_void_p,
                         ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    return function


def node_sums(model: Model, chosen: Sequence[Measure], ids: array.array[int],
              suppressed: Sequence[int] | None = None) -> list[tuple[array.array[int], int]]:
    """Each measure's figures of the model's paths summed by the node each
    ends at, in the order of ids ("q", the nodes' ids ascending), and the
    sum of the paths of no caller (nodesums.h); suppressed as Counted's.
    OverflowError past 64 bits."""
    counted = Counted(model, chosen, suppressed)
    width, count = len(chosen), len(ids)
    sums = array.array("q", bytes(8 * max(width * count, 1)))
    unwound = array.array("q", bytes(8 * max(width, 1)))
    database = model.tree.serialized()
    error = ctypes.create_string_buffer(512)
    checked(_node_sums()(database, len(database), ctypes.byref(counted.struct), address(ids), count,
                         address(sums), address(unwound), error, len(error)), error)
    return [(sums[m * count:(m + 1) * count], unwound[m]) for m in range(width)]
