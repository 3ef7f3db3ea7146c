"""Long call paths made short enough to read, keeping what a developer
looks for: the outermost frame, every frame of the program's own code, the
first library frame each own frame calls (the API it used) and the
allocating function stay; the library frames between them fold into one
element that says how many frames it holds (`main > Cache::get >
std::vector<>::vector > [3 std::] > std::__new_allocator<int>::allocate`).
Folding is a table's business, not a row's: two rows must never read the
same, so the frames that tell them apart are unfolded again.

Own code is a frame whose module is the executable or a library outside
the system's library directories, and whose function is not one of the
standard libraries' templates or generics instantiated into it (std::,
__gnu_cxx::, Rust's std::, core::, alloc::)."""

from __future__ import annotations

import array
import functools
import itertools
import os
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from . import fold_core, page_core
from .model import Model
from .names import rust_path, short_name

# Where a distribution installs its shared libraries: a module in one of
# them is the system's, whoever's program loaded it.
SYSTEM_DIRECTORIES = ("/lib/", "/lib32/", "/lib64/", "/libx32/", "/usr/lib/", "/usr/lib32/", "/usr/lib64/",
                      "/usr/libx32/", "/usr/libexec/")
# The standard libraries' namespaces (C++ and Rust), whose templates and
# generics are compiled into the program's own module; and the crates
# Rust's standard library is built of, linked into every Rust program.
LIBRARY_NAMESPACES = ("std::", "__gnu_cxx::", "__cxxabiv1::", "__gnu_debug::", "core::", "alloc::",
                      "addr2line::", "adler::", "gimli::", "hashbrown::", "libc::", "memchr::", "miniz_oxide::",
                      "object::", "panic_unwind::", "rustc_demangle::", "std_detect::", "compiler_builtins::")
SEPARATOR = " > "
PARTIAL = "..."
# A path of no frame at all: the monitor could not unwind even the
# allocation's caller.
NO_CHAIN = "(no call chain)"


@dataclass(frozen=True)
class Frame:
    text: str  # as the path shows it
    own: bool  # the program's own code
    origin: str  # what a fold holding it names: its namespace ("std::") or its module's file name


def _fold_label(frames: Sequence[Frame]) -> str:
    """[4 std::]: how many frames, and whose when no more than two origins
    and none the program's own."""
    origins = list(dict.fromkeys(frame.origin for frame in frames))
    if any(frame.own for frame in frames) or len(origins) > 2:
        what = "frame" if len(frames) == 1 else "frames"
    else:
        what = ", ".join(origins)
    return f"[{len(frames)} {what}]"


@dataclass(frozen=True)
class Fold:
    """Consecutive frames shown as one element."""
    frames: tuple[Frame, ...]

    @functools.cached_property
    def label(self) -> str:
        return _fold_label(self.frames)


Element = Frame | Fold


@dataclass(frozen=True)
class ShownPath:
    """A path as a table shows it: "..." above when it does not reach
    main, then its elements, outermost first."""
    partial: bool
    elements: tuple[Element, ...]
    # Its frames named whole (FunctionRow.name), not short: another row
    # would read the same (tables.py).
    whole_names: bool = False

    @property
    def text(self) -> str:
        return render(self.elements, self.partial)


def library_namespace(name: str) -> str:
    """The standard library namespace a function belongs to ("std::"), or
    "" for any other; a Rust impl (`<alloc::vec::Vec<T> as Drop>::drop`)
    belongs to its type's."""
    name = rust_path(name)  # v0 names keep crate disambiguators: alloc[f1e2...]::vec
    body = name[1:] if name.startswith("<") else short_name(name)
    return next((namespace for namespace in LIBRARY_NAMESPACES if body.startswith(namespace)), "")


class OwnCode:
    """Which of a profile's functions are the program's own code, each
    worked out once."""

    def __init__(self, model: Model) -> None:
        self._model = model
        self._programs = frozenset(run.program for run in model.runs)  # the executables' paths
        self._known: dict[int, tuple[bool, str]] = {}  # function id: own, origin
        self._frames: dict[int, Frame] = {}
        self._short_frames: dict[int, Frame] = {}

    def _system_module(self, module: str) -> bool:
        return module not in self._programs and (module.startswith(SYSTEM_DIRECTORIES) or not module.startswith("/"))

    def _classified(self, function_id: int) -> tuple[bool, str]:
        known = self._known.get(function_id)
        if known is None:
            function = self._model.functions[function_id]
            namespace = library_namespace(function.full_name)
            if self._system_module(function.module):
                known = (False, namespace or os.path.basename(function.module))
            else:
                known = (not namespace, namespace)
            self._known[function_id] = known
        return known

    def owns(self, function_id: int) -> bool:
        return self._classified(function_id)[0]

    def frame(self, function_id: int, text: str) -> Frame:
        return Frame(text, *self._classified(function_id))

    def named_frame(self, function_id: int) -> Frame:
        """The frame of a function shown by its name, made once."""
        frame = self._frames.get(function_id)
        if frame is None:
            frame = self._frames[function_id] = self.frame(function_id, self._model.functions[function_id].name)
        return frame

    def short_frame(self, function_id: int) -> Frame:
        """The frame of a function shown by its short name, which another
        function's may read as (FunctionRow.short), made once."""
        frame = self._short_frames.get(function_id)
        if frame is None:
            function = self._model.functions[function_id]
            frame = self._short_frames[function_id] = self.frame(function_id, function.path_name)
        return frame


def path_frames(model: Model, function_ids: Sequence[int], texts: Sequence[str] | None = None,
                own: OwnCode | None = None) -> list[Frame]:
    """The frames of a path of functions, outermost first, shown as texts
    (their names unless given); own, the classifier of a whole table."""
    own = own or OwnCode(model)
    if texts is None:
        return [own.named_frame(function_id) for function_id in function_ids]
    return [own.frame(function_id, texts[n]) for n, function_id in enumerate(function_ids)]


def whole(texts: Sequence[str], partial: bool) -> str:
    """A path of these frames' texts, outermost first, unfolded."""
    return SEPARATOR.join(([PARTIAL] if partial else []) + list(texts)) if texts else NO_CHAIN


def render(elements: Sequence[Element], partial: bool) -> str:
    """A path as a table shows it, each fold by its label."""
    return whole([e.label if isinstance(e, Fold) else e.text for e in elements], partial)


def _numbered(kinds: Sequence[Frame]) -> tuple[array.array[int], array.array[int], array.array[int], list[bytes],
                                                array.array[int]]:
    """What fold_core.folded_runs takes of a table's distinct frames: each
    one's text and origin as numbers of distinct strings, and whether it is
    own code; the strings, and their lengths in characters."""
    strings: dict[str, int] = {}
    kind_text, kind_origin, kind_own = array.array("I"), array.array("I"), array.array("B")
    for frame in kinds:
        kind_text.append(strings.setdefault(frame.text, len(strings)))
        kind_origin.append(strings.setdefault(frame.origin, len(strings)))
        kind_own.append(1 if frame.own else 0)
    # The library compares texts by their bytes: surrogatepass keeps a
    # name's undecodable bytes (surrogateescape) one to one.
    return (kind_text, kind_origin, kind_own, [text.encode("utf-8", "surrogatepass") for text in strings],
            array.array("I", map(len, strings)))


def fold_paths(paths: Sequence[Sequence[Frame]], partial: Sequence[bool], width: int | None) -> list[ShownPath]:
    """Each path, outermost first, as a table shows it: whole when it fits
    in width characters (or width is None), else folded; where paths would
    then read the same, the innermost folded frame that tells them apart is
    shown, one at a time, until they differ.

    A path too long folds its library frames between the outermost and the
    innermost, but the first of each run that an own frame calls; of those,
    a lone frame only when it is longer than its fold ("[1 origin]").  Own
    frames never fold: a path of many may stay longer than width.  Rows
    read the same when their texts are equal; those of a group fold the
    positions of its first row, and each round opens, in every row of each
    group, the innermost of them where some row's frame reads differently
    from the first row's (or where a row has no frame: a frame named like a
    fold can make a shorter row read as a longer one), or else the
    innermost.

    The loops run in libmprof-reduce (reduce/fold.c), on numbers: each
    distinct frame object once, each distinct string (texts, origins) once,
    so that frames read the same when their texts' numbers are equal."""
    count = len(paths)
    if width is None or not count:
        return [ShownPath(partial[n], tuple(frames)) for n, frames in enumerate(paths)]
    flat = list(itertools.chain.from_iterable(paths))
    # Rows share their frames (OwnCode makes a function's once a table):
    # the library numbers the objects, and each one's strings are read once.
    frame_kind, kind_first = fold_core.kinds(array.array("Q", map(id, flat)))
    run_count, run_start, run_end, run_number = fold_core.folded_runs(
        array.array("I", map(len, paths)), array.array("B", [1 if partial[n] else 0 for n in range(count)]),
        frame_kind, *_numbered([flat[n] for n in kind_first]), width)
    # Elements made only where a path folds; runs of the same frames share
    # their Fold (it is immutable, and its label is then worked out once).
    folds: list[Fold] = []
    shown: list[ShownPath] = []
    runs_of = zip(run_start, run_end, run_number, strict=True)
    # partial holds a flag a path at least: read above.
    for frames, runs, part in zip(paths, run_count, partial, strict=False):
        if not runs:
            shown.append(ShownPath(part, tuple(frames)))
            continue
        elements: list[Element] = []
        at = 0
        for start, end, fold in itertools.islice(runs_of, runs):
            if fold == len(folds):
                folds.append(Fold(tuple(frames[start:end])))
            elements += frames[at:start]
            elements.append(folds[fold])
            at = end
        elements += frames[at:]
        shown.append(ShownPath(part, tuple(elements)))
    return shown


@dataclass(frozen=True)
class FoldedChains:
    """Paths of functions as a table shows them, in numbers: whether each
    does not reach main ("B"), whether it names its functions short ("B"),
    which of its frames fold (the runs of fold_core.folded_runs, positions
    in the path) and each run number's label."""
    partial: array.array[int]
    short_names: array.array[int]
    runs: tuple[array.array[int], array.array[int], array.array[int], array.array[int]]
    labels: list[str]


def named_short(identities: Sequence[Hashable], readings: Sequence[Hashable]) -> list[bool]:
    """Whether each path names its functions short: unless its reading (its
    functions' short names) is another path's of other functions (its
    identity).  Paths that read apart unfolded are told apart folded too:
    fold_paths opens the folds where their frames differ."""
    identities_of: dict[Hashable, set[Hashable]] = {}
    for identity, reading in zip(identities, readings, strict=True):
        identities_of.setdefault(reading, set()).add(identity)
    return [len(identities_of[reading]) == 1 for reading in readings]


def _short_names(model: Model, starts: Sequence[int], stops: Sequence[int], functions: array.array[int]
                 ) -> array.array[int]:
    """named_short of paths laid end to end (fold_chains), ("B"): only the
    paths through a function whose short name another's shares can read as
    others, and only they are read."""
    numbers: dict[str, int] = {}
    short = {key: numbers.setdefault(row.path_name, len(numbers)) for key, row in model.functions.items()}
    sharing = Counter(short.values())
    ambiguous = {key for key, number in short.items() if sharing[number] > 1}
    flags = array.array("B", [1]) * len(starts)
    rows = [row for row, (start, stop) in enumerate(zip(starts, stops, strict=True))
            if not ambiguous.isdisjoint(functions[start:stop])]
    paths = [functions[starts[row]:stops[row]] for row in rows]
    readings = [tuple(short[function] for function in path) for path in paths]
    for row, named in zip(rows, named_short([path.tobytes() for path in paths], readings), strict=True):
        flags[row] = named
    return flags


def fold_chains(model: Model, stops: Sequence[int], functions: array.array[int], width: int | None) -> FoldedChains:
    """Paths of functions laid end to end ("q", outermost first, path n's
    ending at stops[n]), each frame shown by its function's short name, or
    its whole one in a path that would read as another (_short_names),
    folded as fold_paths folds them: a function is one frame wherever it
    comes, under one name or the other, so the library numbers frames by
    the functions' ids and the names, and no frame of a path becomes an
    object."""
    own = OwnCode(model)
    starts = [0, *stops[:-1]] if stops else []
    counts = array.array("I", [stop - start for start, stop in zip(starts, stops, strict=True)])
    # A path stops short of main when its outermost frame is not main's.
    mains = {function.id for function in model.functions.values() if function.name == "main"}
    partial = array.array("B", [1 if stop > start and functions[start] not in mains else 0
                                for start, stop in zip(starts, stops, strict=True)])
    short_names = _short_names(model, starts, stops, functions)
    if width is None or not counts:
        nothing = array.array("I")
        return FoldedChains(partial, short_names, (array.array("I", bytes(4 * len(counts))), nothing, nothing,
                                                   nothing), [])
    # Each frame's identity: its function, and whether its path names it
    # short (all do, but for paths that would read as others).
    if all(short_names):
        identity = functions
    else:
        identity = array.array("q", functions)
        for row, (start, stop) in enumerate(zip(starts, stops, strict=True)):
            for n in range(start, stop):
                identity[n] = functions[n] * 2 + short_names[row]
    frame_kind, kind_first = fold_core.kinds(identity)
    numbered = _numbered([(own.short_frame if identity is functions or identity[n] & 1 else own.named_frame)(
        functions[n]) for n in kind_first])
    kind_text, kind_origin, kind_own, strings, _ = numbered
    runs = fold_core.folded_runs(counts, partial, frame_kind, *numbered, width)
    folded, counted, first, second = page_core.fold_labels(array.array("Q", stops), frame_kind, kind_origin,
                                                           kind_own, runs)
    origin = [text.decode("utf-8", "surrogatepass") for text in strings]
    labels = [f"[{count} {'frame' if count == 1 else 'frames'}]" if alone else
              f"[{count} {origin[one]}]" if other == page_core.NONE else f"[{count} {origin[one]}, {origin[other]}]"
              for count, alone, one, other in zip(folded, counted, first, second, strict=True)]
    return FoldedChains(partial, short_names, runs, labels)
