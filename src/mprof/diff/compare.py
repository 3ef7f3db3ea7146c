"""Two profiles side by side: for every call path, function, direct
allocation site and size bin, each measure in the base and in the new
profile.

Functions are known by their whole name and their module's file name (or
for the executable's, as the program's), not by address, so that two
builds of a program compare: a path is its
functions from the outermost in, a site its function and the file name and
line of its call.  Every figure is a sum over the profiles' whole call
paths (report/measures.py), bins aside, which are the bin tables'."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..report.folding import Frame, OwnCode, path_frames
from ..report.measures import Measure
from ..report.model import Model, PathRow
from ..report.tables import NO_CHAIN

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
    own = OwnCode(model)
    for path in model.paths:
        values = [measure.of(path) for measure in measures]
        if not any(values):
            continue
        for index, value in enumerate(values):
            figures[index] += value
        _add_path(views, model, keys, own, side, path, values)
    for row in model.bins:
        views["bins"].add(row.size, _bin_label(row.size), side, [measure.of_bin(row) for measure in measures])


def _add_path(views: dict[str, View], model: Model, function_key: dict[int, FunctionKey], own: OwnCode, side: int,
              path: PathRow, values: list[int]) -> None:
    def name_of(function_id: int) -> str:
        return model.functions[function_id].name

    outermost_first = list(reversed(model.frames(path.node)))
    if not outermost_first:
        for view in ("paths", "functions", "cumulative", "sites"):
            views[view].add(NO_CHAIN, NO_CHAIN, side, values)
        return
    keys = tuple(function_key[row.function] for row in outermost_first)
    frames = tuple(path_frames(model, [row.function for row in outermost_first], own=own))
    views["paths"].add(keys, " > ".join(frame.text for frame in frames), side, values, frames)
    innermost = outermost_first[-1]
    views["functions"].add(keys[-1], name_of(innermost.function), side, values)
    site = (keys[-1], os.path.basename(innermost.file), innermost.line)
    where = f"{os.path.basename(innermost.file)}:{innermost.line}" if innermost.file else "?"
    views["sites"].add(site, f"{name_of(innermost.function)} ({where})", side, values)
    # Self and descendants: each function on the path once, however often
    # it recurs on it.
    seen: set[FunctionKey] = set()
    for key, row in zip(keys, outermost_first, strict=True):
        if key not in seen:
            seen.add(key)
            views["cumulative"].add(key, name_of(row.function), side, values)


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
