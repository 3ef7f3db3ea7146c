"""The call paths of all the data files, symbolized: a tree of frames, each
node a function called from its parent node's frame at one file and line,
with frames above main dropped (start-up code) and inlined functions as
frames of their own.  Each path keeps its figures, exact from the program's
entry down: the flame graphs are drawn from it.  libmprof-reduce holds the
tree (core.Tree)."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import core
from .callgraph import CallGraph
from .frames_table import FramesTable, Names
from .records import DataFile


@dataclass
class PathTree:
    tree: core.Tree = field(default_factory=core.Tree)
    names: Names = field(default_factory=Names)  # what the tree's numbers stand for


def add_run(tree: PathTree, graph: CallGraph, data: DataFile, table: FramesTable) -> None:
    """Adds one data file's paths, its addresses' frames in table (numbered
    by tree.names).  The functions of its frames, start-up code aside, go
    into graph, where the first frame seen of each names its file and line."""
    for at in tree.tree.add(data.calls, table.first, table.numbered, table.from_main, len(tree.names.functions)):
        graph.function(table.frames[at])
