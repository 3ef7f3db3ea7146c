"""Long call paths made short enough to read, keeping what a developer
looks for: the outermost frame, every frame of the program's own code and
the allocating function stay; runs of library frames between them fold
into one element that says how many frames it holds (`main > Cache::get >
[4 std::] > std::__new_allocator<int>::allocate`).  Folding is a table's
business, not a row's: two rows must never read the same, so the frames
that tell them apart are unfolded again.

Own code is a frame whose module is the executable or a library outside
the system's library directories, and whose function is not one of the
standard libraries' templates or generics instantiated into it (std::,
__gnu_cxx::, Rust's std::, core::, alloc::)."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

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

    @property
    def label(self) -> str:
        return _fold_label(self.frames)


Element = Frame | Fold


@dataclass(frozen=True)
class ShownPath:
    """A path as a table shows it: "..." above when it does not reach
    main, then its elements, outermost first."""
    partial: bool
    elements: tuple[Element, ...]

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


def path_frames(model: Model, function_ids: Sequence[int], texts: Sequence[str] | None = None,
                own: OwnCode | None = None) -> list[Frame]:
    """The frames of a path of functions, outermost first, shown as texts
    (their names unless given); own, the classifier of a whole table."""
    own = own or OwnCode(model)
    return [own.frame(function_id, texts[n] if texts is not None else model.functions[function_id].name)
            for n, function_id in enumerate(function_ids)]


def whole(texts: Sequence[str], partial: bool) -> str:
    """A path of these frames' texts, outermost first, unfolded."""
    return SEPARATOR.join(([PARTIAL] if partial else []) + list(texts)) if texts else NO_CHAIN


def render(elements: Sequence[Element], partial: bool) -> str:
    """A path as a table shows it, each fold by its label."""
    return whole([e.label if isinstance(e, Fold) else e.text for e in elements], partial)


def _elements(frames: Sequence[Frame], hidden: set[int]) -> list[Element]:
    elements: list[Element] = []
    run: list[Frame] = []
    for index, frame in enumerate(frames):
        if index in hidden:
            run.append(frame)
            continue
        if run:
            elements.append(Fold(tuple(run)))
            run = []
        elements.append(frame)
    if run:
        elements.append(Fold(tuple(run)))
    return elements


def _worth_folding(frames: Sequence[Frame], hidden: set[int]) -> set[int]:
    """hidden less each lone frame no longer than the fold that would
    replace it."""
    return {n for n in hidden
            if n - 1 in hidden or n + 1 in hidden or len(frames[n].text) > len(_fold_label((frames[n],)))}


def _length(frames: Sequence[Frame], hidden: set[int], partial: bool) -> int:
    """len(render(_elements(frames, hidden), partial)), without making them."""
    parts = [len(PARTIAL)] if partial else []
    start = None
    for index, frame in enumerate(frames):
        if index in hidden:
            start = index if start is None else start
            continue
        if start is not None:
            parts.append(len(_fold_label(frames[start:index])))
            start = None
        parts.append(len(frame.text))
    if start is not None:
        parts.append(len(_fold_label(frames[start:])))
    return sum(parts) + len(SEPARATOR) * (len(parts) - 1)


def _hidden(frames: Sequence[Frame], partial: bool, width: int, shown: set[int]) -> set[int]:
    """The frames a path of more than width characters folds: its library
    frames between the outermost and the innermost, then, while it is still
    too long, its own frames from the outer end, as few as will do, all but
    the innermost of them.  Frames in shown stay."""
    last = len(frames) - 1
    library = {n for n in range(1, last) if not frames[n].own and n not in shown}
    own_outer_first = [n for n in range(1, last) if frames[n].own and n not in shown][:-1]

    def folding(count: int) -> set[int]:
        return _worth_folding(frames, library | set(own_outer_first[:count]))

    # Folding more frames makes a path shorter: the fewest that fit, found
    # by halving, or all of them.
    low, high = 0, len(own_outer_first)
    while low < high:
        middle = (low + high) // 2
        if _length(frames, folding(middle), partial) <= width:
            high = middle
        else:
            low = middle + 1
    return folding(low)


def fold_paths(paths: Sequence[Sequence[Frame]], partial: Sequence[bool], width: int | None) -> list[ShownPath]:
    """Each path, outermost first, as a table shows it: whole when it fits
    in width characters (or width is None), else folded; where paths would
    then read the same, the innermost folded frame that tells them apart is
    shown, one at a time, until they differ."""
    shown: list[set[int]] = [set() for _ in paths]

    def hidden_of(n: int) -> set[int]:
        if width is None or _length(paths[n], set(), partial[n]) <= width:
            return set()
        return _hidden(paths[n], partial[n], width, shown[n])

    def folded_of(n: int) -> ShownPath:
        return ShownPath(partial[n], tuple(_elements(paths[n], hidden[n])))

    hidden = [hidden_of(n) for n in range(len(paths))]
    folded = [folded_of(n) for n in range(len(paths))]
    texts = [path.text for path in folded]
    while True:
        readings: dict[str, list[int]] = defaultdict(list)
        for n, text in enumerate(texts):
            readings[text].append(n)
        opened = []
        for rows in readings.values():
            # Rows that read the same fold the same positions: their frames
            # line up.
            folded_positions = sorted(hidden[rows[0]], reverse=True) if len(rows) > 1 else []
            telling = [at for at in folded_positions if len({paths[n][at].text for n in rows}) > 1]
            for at in telling[:1] or folded_positions[:1]:
                for n in rows:
                    shown[n].add(at)
                opened += rows
        if not opened:
            return folded
        for n in opened:
            hidden[n] = hidden_of(n)
            folded[n] = folded_of(n)
            texts[n] = folded[n].text
