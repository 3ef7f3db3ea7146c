"""mprof diff's comparison as it was made in Python before the walk went
to libmprof-reduce (reduce/diffwalk.c): a row for every path of both
profiles added one by one, a walk of every node, and the differential
flame graph built from every path row.  Kept for test_diff_walk.py to
compare the library's rows with: slow, plain and obviously right."""

from __future__ import annotations

import operator
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from mprof.report.flame import Candidate, Flame, expand
from mprof.report.folding import SEPARATOR, Frame, OwnCode
from mprof.report.measures import Measure
from mprof.report.model import Model, PathRow, PathTree
from mprof.report.tables import NO_CHAIN


def signed(value: int) -> str:
    return f"{value:+,}" if value else "0"


# A function across two builds: its whole demangled name and its module's file name.
FunctionKey = tuple[str, str]


@dataclass
class Row:
    """One thing compared: each measure's figure in base and new."""
    label: str  # as the reports show it
    key: object  # what matched it in both profiles
    base: list[int]
    new: list[int]
    frames: tuple[Frame, ...] = ()  # a path's, outermost first

    def change(self, index: int) -> int:
        return self.new[index] - self.base[index]

    @property
    def changed(self) -> bool:
        return self.base != self.new

    @property
    def status(self) -> str:
        """new or gone when one profile has none of it, else changed."""
        return "new" if not any(self.base) else "gone" if not any(self.new) else "changed"


@dataclass
class View:
    """The rows of one kind (paths, functions...), in no order yet."""
    name: str  # paths, functions, cumulative, sites, bins
    title: str
    rows: dict[object, Row] = field(default_factory=dict)

    @property
    def heading(self) -> str:
        """Of the column that names a row."""
        return {"bins": "size", "paths": "path"}.get(self.name, "function")

    def add(self, key: object, label: str, side: int, values: list[int], frames: tuple[Frame, ...] = ()) -> None:
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = Row(label, key, [0] * len(values), [0] * len(values), frames)
        elif side == 1:
            # The new profile names it, where both do.
            row.label = label
            row.frames = frames
        figures = row.new if side else row.base
        for index, value in enumerate(values):
            figures[index] += value

    def largest(self, index: int) -> list[Row]:
        """The changed rows, largest change of measure index first."""
        changed = [row for row in self.rows.values() if row.changed]
        return sorted(changed, key=lambda row: (-abs(row.change(index)), row.label))


@dataclass
class Comparison:
    measures: tuple[Measure, ...]
    base: Model
    new: Model
    totals: Row
    views: list[View]

    def view(self, name: str) -> View:
        return next(view for view in self.views if view.name == name)


# The module of a function of the program's executable, whatever its file
# is called in either build (app, app-old).
PROGRAM = "(program)"


def function_keys(model: Model) -> dict[int, FunctionKey]:
    """Each function of model by its key."""
    programs = {os.path.basename(run.program) for run in model.runs}
    keys = {}
    for function_id, function in model.functions.items():
        module = os.path.basename(function.module)
        keys[function_id] = (function.full_name, PROGRAM if module in programs else module)
    return keys


def _bin_label(size: int) -> str:
    return f"> {size - 1}" if size > 1024 else str(size)


def _add_profile(views: dict[str, View], totals: Row, model: Model, side: int,
                 measures: tuple[Measure, ...]) -> None:
    figures = totals.new if side else totals.base
    keys = function_keys(model)
    counted: list[tuple[PathRow, list[int]]] = []
    for path in model.paths:
        values = [measure.of(path) for measure in measures]
        if not any(values):
            continue
        for index, value in enumerate(values):
            figures[index] += value
        counted.append((path, values))
    tree = model.tree
    chains = _walk(views["cumulative"], model, side, keys, counted)
    sites = _innermost_sites(tree)
    # Each function's frame and name, made once: a path's are looked up.
    own = OwnCode(model)
    frame_of = {function: own.named_frame(function) for function in set(tree.functions_of_nodes().values())}
    names = {function_id: function.name for function_id, function in model.functions.items()}
    for path, values in counted:
        if path.node is None:
            for view in ("paths", "functions", "sites"):
                views[view].add(NO_CHAIN, NO_CHAIN, side, values)
            continue
        chain = chains[path.node]
        path_keys = tuple(map(keys.__getitem__, chain))
        views["paths"].add(path_keys, SEPARATOR.join(map(names.__getitem__, chain)), side, values,
                           tuple(map(frame_of.__getitem__, chain)))
        innermost = chain[-1]
        views["functions"].add(path_keys[-1], names[innermost], side, values)
        file, line = sites[path.node]
        site = (path_keys[-1], os.path.basename(file), line)
        where = f"{os.path.basename(file)}:{line}" if file else "?"
        views["sites"].add(site, f"{names[innermost]} ({where})", side, values)
    for row in model.bins:
        views["bins"].add(row.size, _bin_label(row.size), side, [measure.of_bin(row) for measure in measures])


def _children(tree: PathTree) -> dict[int | None, list[int]]:
    """Each node's children (None: the outermost frames), in the order of their ids."""
    below: dict[int | None, list[int]] = {}
    for node, parent in tree.parents().items():
        below.setdefault(parent, []).append(node)
    return below


def _innermost_sites(tree: PathTree) -> dict[int, tuple[str, int]]:
    """The file and line of each path's innermost frame, by its node."""
    return {node: (file.decode("utf-8", "surrogateescape") if isinstance(file, bytes) else file, line)
            for node, file, line in tree.db.execute(
        "SELECT p.node_id, n.file, n.line FROM paths AS p JOIN path_nodes AS n ON n.id = p.node_id")}


def _walk(view: View, model: Model, side: int, keys: dict[int, FunctionKey],
          counted: list[tuple[PathRow, list[int]]]) -> dict[int, tuple[int, ...]]:
    """One walk down the tree of paths: the functions of each counted path,
    outermost first, by its node; and the view of self and descendants:
    each function's figures summed over the paths it is on, each path once
    however often the function recurs on it.  A path counts for the subtree
    of each node that is the outermost of its function on the way down, as
    the difference of running sums at the node's entry and exit.  The rows
    come in the order a walk of the paths would first meet them: by their
    first path, then outermost first."""
    tree = model.tree
    children = _children(tree)
    node_functions = tree.functions_of_nodes()
    width = len(counted[0][1]) if counted else 0
    by_node: dict[int, tuple[int, list[int]]] = {}
    first: dict[object, tuple[int, int]] = {}  # a row's first path and place on it
    sums: dict[object, tuple[int, ...]] = {}
    for index, (path, values) in enumerate(counted):
        if path.node is None:
            first.setdefault(NO_CHAIN, (index, 0))
            sums[NO_CHAIN] = tuple(map(operator.add, sums.get(NO_CHAIN, (0,) * width), values))
        else:
            by_node[path.node] = (index, values)
    never = len(counted)
    running: tuple[int, ...] = (0,) * width
    on_chain: dict[FunctionKey, int] = {}
    # A node being walked: its function's key, whether it is the outermost
    # of it, the running sums at its entry, its depth, the first path below.
    walked: list[list[Any]] = []
    chain: list[int] = []  # the functions down to the node walked
    chains: dict[int, tuple[int, ...]] = {}
    todo: list[int | None] = list(reversed(children.get(None, [])))
    while todo:
        node = todo.pop()
        if node is None:
            key, outermost, entry, depth, below = walked.pop()
            chain.pop()
            on_chain[key] -= 1
            if outermost and below < never:
                change = tuple(map(operator.sub, running, entry))
                known = sums.get(key)
                sums[key] = change if known is None else tuple(map(operator.add, known, change))
                place = (below, depth)
                if key not in first or place < first[key]:
                    first[key] = place
            if walked and below < walked[-1][4]:
                walked[-1][4] = below
            continue
        function = node_functions[node]
        chain.append(function)
        key = keys[function]
        count = on_chain.get(key, 0)
        on_chain[key] = count + 1
        state = [key, count == 0, running, len(walked), never]
        own = by_node.get(node)
        if own is not None:
            state[4] = own[0]
            running = tuple(map(operator.add, running, own[1]))
            chains[node] = tuple(chain)
        walked.append(state)
        todo.append(None)
        below_node = children.get(node)
        if below_node:
            todo.extend(reversed(below_node))
    names = {key: model.functions[function_id].name for function_id, key in keys.items()}
    for key in sorted(first, key=first.__getitem__):
        view.add(key, NO_CHAIN if key == NO_CHAIN else names[cast(FunctionKey, key)], side, list(sums[key]))
    return chains


def compare(base: Model, new: Model, measures: tuple[Measure, ...]) -> Comparison:
    views = {name: View(name, title) for name, title in (
        ("paths", "Call paths"), ("functions", "Functions, own allocations"),
        ("cumulative", "Functions with their callees"), ("sites", "Direct allocation sites"),
        ("bins", "Allocation bins"))}
    zeros = [0] * len(measures)
    totals = Row("<total>", None, list(zeros), list(zeros))
    for side, model in enumerate((base, new)):
        _add_profile(views, totals, model, side, measures)
    return Comparison(measures, base, new, totals, list(views.values()))


def measure_index(measures: Iterable[Measure], name: str) -> int:
    return next(index for index, measure in enumerate(measures) if measure.name == name)


# Tones as diff/flame.py has them.
UNCHANGED = 40


def tone(base: int, new: int) -> int:
    """The colour of a change: its size relative to the larger figure, in
    four steps each way."""
    larger = max(base, new)
    if not larger or base == new:
        return UNCHANGED
    steps = min(3, int(abs(new - base) * 4 / larger))
    return (3 - steps) * 10 if new < base else (6 + steps) * 10


@dataclass
class _Node:
    name: str
    base: int = 0
    new: int = 0
    width: int = 0  # the larger figure of each path through it, summed
    children: dict[FunctionKey | str, _Node] = field(default_factory=dict)


def differential(comparison: Comparison, measure: str) -> Flame:
    """The differential flame graph as diff/flame.py drew it from every path row."""
    index = measure_index(comparison.measures, measure)
    unit = comparison.measures[index].unit
    root = _Node("all")
    for row in comparison.view("paths").rows.values():
        base, new = row.base[index], row.new[index]
        if not base and not new:
            continue
        # A path row's key is its functions' keys.
        keys = cast(tuple[FunctionKey, ...], row.key)
        frames = zip(keys, [frame.text for frame in row.frames], strict=True) if row.frames else [(NO_CHAIN, NO_CHAIN)]
        node = root
        node.base += base
        node.new += new
        for key, name in frames:
            child = node.children.get(key)
            if child is None:
                child = node.children[key] = _Node(name)
            child.base += base
            child.new += new
            child.width += max(base, new)
            node = child
        root.width += max(base, new)

    def detail(node: _Node) -> str:
        percent = f", {(node.new - node.base) * 100 / node.base:+.1f}%" if node.base else ""
        return f"base {node.base:,}, new {node.new:,} {unit} ({signed(node.new - node.base)}{percent})"

    def children(key: object, value: int) -> list[Candidate]:
        node = root if key is None else key
        assert isinstance(node, _Node)
        return [(child.name, detail(child), child.width, child) for child in node.children.values()]

    def colour(name: str, key: object) -> int:
        node = root if key is None else key
        assert isinstance(node, _Node)
        return tone(node.base, node.new)

    return expand("all", root.width, children, tone=colour)
