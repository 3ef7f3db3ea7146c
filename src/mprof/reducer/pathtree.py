"""The call paths of all the data files, symbolized: a tree of frames, each
node a function called from its parent node's frame at one file and line,
with frames above main dropped (start-up code) and inlined functions as
frames of their own.  Each path keeps its figures, exact from the program's
entry down: the flame graphs are drawn from it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .callgraph import CLASSES, CallGraph, FunctionKey
from .records import DataFile
from .symbolize import Frame

# The empty path: an allocation whose caller could not be found.
EMPTY = -1


@dataclass(frozen=True)
class FrameNode:
    parent: int  # EMPTY: an outermost frame
    function: FunctionKey
    file: str  # where this frame made its call (the innermost: the allocation)
    line: int
    inlined: bool  # inlined into its parent's code: one machine frame with it


@dataclass
class PathFigures:
    allocs: int = 0
    frees: int = 0
    bytes: list[int] = field(default_factory=lambda: [0] * CLASSES)
    freed: list[int] = field(default_factory=lambda: [0] * CLASSES)
    temporaries: int = 0
    peak_blocks: int = 0
    peak_bytes: int = 0


@dataclass
class PathTree:
    nodes: list[FrameNode] = field(default_factory=list)  # parents first
    index: dict[FrameNode, int] = field(default_factory=dict)
    paths: dict[int, PathFigures] = field(default_factory=dict)  # by innermost node, or EMPTY

    def node(self, parent: int, function: FunctionKey, frame: Frame) -> int:
        key = FrameNode(parent, function, frame.file, frame.line, frame.inlined)
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = len(self.nodes)
            self.nodes.append(key)
        return found


def _outermost_first(frames: Sequence[Frame]) -> tuple[list[Frame], bool]:
    """An address's frames outermost first, from main on when main is among
    them (not inlined): then whatever called main is start-up code."""
    ordered = list(reversed(frames))
    for position, frame in enumerate(ordered):
        if frame.function == "main" and not frame.inlined:
            return ordered[position:], True
    return ordered, False


def _start_up(data: DataFile, frames: Mapping[int, Sequence[Frame]]) -> set[int]:
    """The nodes that call main, directly or not: start-up code, whose
    frames no path keeps (the call graph leaves them out too)."""
    found: set[int] = set()
    for node in data.nodes:
        if any(frame.function == "main" and not frame.inlined for frame in frames[node.addr]):
            parent = node.parent
            while parent >= 0 and parent not in found:
                found.add(parent)
                parent = data.nodes[parent].parent
    return found


def add_run(tree: PathTree, graph: CallGraph, data: DataFile, frames: Mapping[int, Sequence[Frame]]) -> None:
    """Adds one data file's paths; frames has every address resolved, and
    graph names the functions."""
    start_up = _start_up(data, frames)
    # The frame node each of the file's nodes ends at, parents first.
    ends: list[int] = []
    for index, node in enumerate(data.nodes):
        if index in start_up:
            ends.append(EMPTY)
            continue
        outermost, from_main = _outermost_first(frames[node.addr])
        parent = EMPTY if from_main or node.parent < 0 else ends[node.parent]
        for frame in outermost:
            parent = tree.node(parent, graph.function(frame), frame)
        ends.append(parent)
    for path in data.paths:
        figures = tree.paths.setdefault(ends[path.node] if path.node >= 0 else EMPTY, PathFigures())
        figures.allocs += path.allocs
        figures.frees += path.frees
        figures.temporaries += path.temporaries
        figures.peak_blocks += path.peak_blocks
        figures.peak_bytes += path.peak_bytes
        for c in range(CLASSES):
            figures.bytes[c] += path.bytes[c]
            figures.freed[c] += path.freed[c]
