"""The call paths of all the data files, symbolized: a tree of frames, each
node a function called from its parent node's frame at one file and line,
with frames above main dropped (start-up code) and inlined functions as
frames of their own.  Each path keeps its figures, exact from the program's
entry down: the flame graphs are drawn from it.  libmprof-reduce holds the
tree (core.Tree); here functions and files get the numbers it knows them by."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from . import core
from .callgraph import CallGraph, FunctionKey
from .records import DataFile
from .symbolize import Frame


@dataclass
class PathTree:
    tree: core.Tree = field(default_factory=core.Tree)
    functions: list[FunctionKey] = field(default_factory=list)  # by number
    files: list[str] = field(default_factory=list)  # by number
    _function_numbers: dict[FunctionKey, int] = field(default_factory=dict)
    _file_numbers: dict[str, int] = field(default_factory=dict)

    def function(self, key: FunctionKey) -> int:
        number = self._function_numbers.get(key)
        if number is None:
            number = self._function_numbers[key] = len(self.functions)
            self.functions.append(key)
        return number

    def file(self, name: str) -> int:
        number = self._file_numbers.get(name)
        if number is None:
            number = self._file_numbers[name] = len(self.files)
            self.files.append(name)
        return number


def _outermost_first(frames: Sequence[Frame]) -> tuple[list[Frame], bool]:
    """An address's frames outermost first, from main on when main is among
    them (not inlined): then whatever called main is start-up code."""
    ordered = list(reversed(frames))
    for position, frame in enumerate(ordered):
        if frame.function == "main" and not frame.inlined:
            return ordered[position:], True
    return ordered, False


def add_run(tree: PathTree, graph: CallGraph, data: DataFile, frames: Mapping[int, Sequence[Frame]]) -> None:
    """Adds one data file's paths; frames has every address its nodes name
    resolved.  The functions of its frames, start-up code aside, go into
    graph, where the first frame seen of each names its file and line."""
    used = set(data.calls.used_addresses(len(data.addresses)))
    numbered: list[list[tuple[int, int, int, bool]]] = []
    from_main: list[bool] = []
    outermost_frames: list[list[Frame]] = []
    for index, address in enumerate(data.addresses):
        outermost, starts_at_main = _outermost_first(frames[address]) if index in used else ([], False)
        outermost_frames.append(outermost)
        numbered.append([(tree.function((frame.function, frame.module)), tree.file(frame.file), frame.line,
                          frame.inlined) for frame in outermost])
        from_main.append(starts_at_main)
    for address, position in tree.tree.add(data.calls, numbered, from_main, len(tree.functions)):
        graph.function(outermost_frames[address][position])
