"""libmprof-reduce's folding of a table's paths (reduce/fold.h) through
ctypes, loaded by the reducer's loader: fold_paths (folding.py) numbers
the frames and their strings, and the library says which frames fold."""

from __future__ import annotations

import array
import ctypes
import functools
import itertools
from typing import Any

from ..reducer import core


class _Table(ctypes.Structure):
    """struct mr_fold_table; the arrays are the addresses of array.arrays
    the caller keeps."""
    _fields_ = [("path_count", ctypes.c_size_t), ("frame_count", ctypes.c_void_p), ("partial", ctypes.c_void_p),
                ("frame_kind", ctypes.c_void_p), ("kind_count", ctypes.c_size_t), ("kind_text", ctypes.c_void_p),
                ("kind_origin", ctypes.c_void_p), ("kind_own", ctypes.c_void_p), ("string_count", ctypes.c_size_t),
                ("string_end", ctypes.c_void_p), ("string_length", ctypes.c_void_p), ("bytes", ctypes.c_char_p),
                ("width", ctypes.c_int64)]


@functools.cache
def _library() -> Any:
    """The reducer's library, with fold.h's signatures set."""
    library = core.library()
    library.mr_fold_paths.restype = ctypes.c_int
    library.mr_fold_paths.argtypes = [ctypes.POINTER(_Table), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                      ctypes.c_void_p]
    library.mr_fold_kinds.restype = ctypes.c_int
    library.mr_fold_kinds.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p,
                                      ctypes.POINTER(ctypes.c_size_t)]
    return library


# Widths past any path's length: a width that does not fit in 64 bits
# folds as this one does.
_WIDEST = 1 << 62


def kinds(identity: array.array[int]) -> tuple[array.array[int], list[int]]:
    """The frames numbered by their identities (64-bit, "Q" or "q") in the
    order they first come (mr_fold_kinds): each frame's number ("I"), and
    each number's first frame."""
    assert identity.itemsize == 8
    frames = len(identity)
    frame_kind = array.array("I", [0]) * frames
    kind_first = array.array("I", [0]) * max(frames, 1)
    count = ctypes.c_size_t()
    core.check(_library().mr_fold_kinds(core.address(identity), frames, core.address(frame_kind),
                                        core.address(kind_first), ctypes.byref(count)))
    return frame_kind, kind_first[:count.value].tolist()


def folded_runs(frame_count: array.array[int], partial: array.array[int], frame_kind: array.array[int],
                kind_text: array.array[int], kind_origin: array.array[int], kind_own: array.array[int],
                strings: list[bytes], string_length: array.array[int],
                width: int) -> tuple[array.array[int], array.array[int], array.array[int], array.array[int]]:
    """For each path, how many runs of its frames fold, and for each run,
    path after path, its first position, the position after its last, and
    its number, shared by the runs of the same frames (reduce/fold.h:
    mr_fold_paths).  Arrays are uint32 ("I"), but partial and kind_own,
    bytes ("B"); strings, each distinct string's bytes, numbered by their
    places."""
    frames = len(frame_kind)
    string_end = array.array("Q", itertools.accumulate(map(len, strings)))
    table = _Table(len(frame_count), core.address(frame_count), core.address(partial), core.address(frame_kind),
                   len(kind_text), core.address(kind_text), core.address(kind_origin), core.address(kind_own),
                   len(strings), core.address(string_end), core.address(string_length), b"".join(strings),
                   max(-_WIDEST, min(width, _WIDEST)))
    run_count = array.array("I", [0]) * len(frame_count)
    run_start, run_end, run_number = (array.array("I", [0]) * max(frames, 1) for _ in range(3))
    core.check(_library().mr_fold_paths(ctypes.byref(table), core.address(run_count), core.address(run_start),
                                        core.address(run_end), core.address(run_number)))
    runs = sum(run_count)
    return run_count, run_start[:runs], run_end[:runs], run_number[:runs]
