"""libmprof-reduce's walks for the HTML page (reduce/page.h) through
ctypes, loaded by the reducer's loader: the functions of the paths a table
shows, and a table of whole paths written as the page's JSON, so that no
frame of a big table becomes a Python object."""

from __future__ import annotations

import array
import ctypes
import functools
from typing import Any

from ..reducer import core
from ..reducer.core import address


class _PathRows(ctypes.Structure):
    """struct pg_path_rows; the arrays are the addresses of array.arrays
    the caller keeps."""
    _fields_ = [("row_count", ctypes.c_size_t), ("count", ctypes.c_void_p), ("size", ctypes.c_void_p),
                ("whole", ctypes.c_int64), ("stops", ctypes.c_void_p), ("functions", ctypes.c_void_p),
                ("partial", ctypes.c_void_p), ("run_count", ctypes.c_void_p), ("run_start", ctypes.c_void_p),
                ("run_end", ctypes.c_void_p), ("run_number", ctypes.c_void_p), ("label_count", ctypes.c_size_t),
                ("label_end", ctypes.c_void_p), ("labels", ctypes.c_char_p), ("short_names", ctypes.c_void_p)]


@functools.cache
def _library() -> Any:
    """The reducer's library, with page.h's signatures set."""
    loaded = core.library()
    signatures: dict[str, tuple[Any, list[Any]]] = {
        "pg_chains": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
                                     ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p]),
        "pg_path_rows": (ctypes.c_int, [ctypes.POINTER(_PathRows), ctypes.POINTER(ctypes.c_void_p),
                                        ctypes.POINTER(ctypes.c_size_t)]),
        "pg_text_free": (None, [ctypes.c_void_p]),
        "pg_fold_labels": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                                          ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t] + [ctypes.c_void_p] * 4
                           + [ctypes.c_size_t] + [ctypes.c_void_p] * 4),
    }
    for name, (result, arguments) in signatures.items():
        function = getattr(loaded, name)
        function.restype = result
        function.argtypes = arguments
    return loaded


def chains(parent: array.array[int], function: array.array[int],
           ends: array.array[int]) -> tuple[array.array[int], array.array[int]]:
    """The functions of the paths that end at the nodes of indexes ends
    ("q", -1: a path of no frame), outermost first, laid end to end
    ("q"); and where each path's end ("Q")."""
    assert parent.typecode == function.typecode == ends.typecode == "q" and len(parent) == len(function)
    library = _library()
    stops = array.array("Q", bytes(8 * max(len(ends), 1)))
    core.check(library.pg_chains(address(parent), address(function), len(parent), address(ends), len(ends),
                                 address(stops), None))
    total = stops[len(ends) - 1] if len(ends) else 0
    functions = array.array("q", bytes(8 * max(total, 1)))
    core.check(library.pg_chains(address(parent), address(function), len(parent), address(ends), len(ends),
                                 address(stops), address(functions)))
    return stops[:len(ends)], functions[:total]


NONE = 0xFFFFFFFF  # page.h's PG_NONE


def fold_labels(stops: array.array[int], frame_kind: array.array[int], kind_origin: array.array[int],
                kind_own: array.array[int], runs: tuple[array.array[int], ...],
                ) -> tuple[array.array[int], array.array[int], array.array[int], array.array[int]]:
    """What each run number's label says (pg_fold_labels): how many frames
    it folds ("I"), whether the label counts them alone ("B"), else its
    first and second origins ("I", NONE: one); stops as chains() gives
    them, frame_kind, kind_origin and kind_own as fold_core takes them,
    runs as fold_core.folded_runs gives them."""
    run_count, run_start, run_end, run_number = runs
    labels = max(run_number) + 1 if run_number else 0
    folded, first, second = (array.array("I", [0]) * max(labels, 1) for _ in range(3))
    counted = array.array("B", [0]) * max(labels, 1)
    core.check(_library().pg_fold_labels(
        address(stops), len(stops), address(frame_kind), len(frame_kind), address(kind_origin),
        address(kind_own), len(kind_own), address(run_count), address(run_start), address(run_end),
        address(run_number), labels, address(folded), address(counted), address(first), address(second)))
    return folded[:labels], counted[:labels], first[:labels], second[:labels]


def path_rows(count: array.array[int], size: array.array[int], whole: int, stops: array.array[int],
              functions: array.array[int], partial: array.array[int], short_names: array.array[int],
              runs: tuple[array.array[int], ...], labels: list[bytes]) -> str:
    """A table of whole paths as the page's JSON (pg_path_rows): count and
    size ("q"), each row's figures; whole, what the share is of; stops and
    functions as chains() gives them; partial and short_names ("B"), whether
    each row does not reach main and names its functions short; runs, the
    four arrays of fold_core.folded_runs ("I"); labels, each run number's
    label as JSON text safe in a page's <script>."""
    run_count, run_start, run_end, run_number = runs
    # The library reads as far as these say: the paths' functions up to
    # the last stop, as many runs as the rows count.
    assert len(count) == len(size) == len(stops) == len(partial) == len(short_names) == len(run_count)
    assert (stops[-1] if stops else 0) <= len(functions)
    assert sum(run_count) == len(run_start) == len(run_end) == len(run_number)
    label_end = array.array("Q", [0]) * len(labels)
    end = 0
    for n, label in enumerate(labels):
        end += len(label)
        label_end[n] = end
    table = _PathRows(len(count), address(count), address(size), whole, address(stops), address(functions),
                      address(partial), address(run_count), address(run_start), address(run_end),
                      address(run_number), len(labels), address(label_end), b"".join(labels),
                      address(short_names))
    library = _library()
    out = ctypes.c_void_p()
    written = ctypes.c_size_t()
    core.check(library.pg_path_rows(ctypes.byref(table), ctypes.byref(out), ctypes.byref(written)))
    try:
        return ctypes.string_at(out, written.value).decode("ascii")
    finally:
        library.pg_text_free(out)
