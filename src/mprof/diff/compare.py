"""Two profiles side by side: for every call path, function, direct
allocation site and size bin, each measure in the base and in the new
profile.

Functions are known by their whole name and their module's file name (or
for the executable's, as the program's), not by address, so that two
builds of a program compare: a path is its
functions from the outermost in, a site its function and the file name and
line of its call.  Every figure is a sum over the profiles' whole call
paths (report/measures.py), bins aside, which are the bin tables'.

A big program's profiles hold hundreds of thousands of path nodes each:
the walk over them and the sums of every row are libmprof-reduce's
(reduce/diffwalk.c, through walk_core.py), which reads each side's paths
from its database.  A row becomes a Python object, with its label and
frames, only when a report asks for it: the text shows a few of each view.
tests/python/reference_diff.py is the same comparison in Python."""

from __future__ import annotations

import array
import bisect
import functools
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..report.folding import SEPARATOR, Frame, OwnCode
from ..report.measures import FIELDS, Measure, as_sums
from ..report.model import Model
from ..report.tables import NO_CHAIN
from . import walk_core

# A function across two builds: its whole demangled name and its module's file name.
FunctionKey = tuple[str, str]


class Row:
    """One thing compared: each measure's figure in base and new."""

    __slots__ = ("label", "key", "base", "new", "_frames", "_whole_frames")

    def __init__(self, label: str, key: object, base: list[int], new: list[int],
                 frames: tuple[Frame, ...] | Callable[[], tuple[Frame, ...]] = (),
                 whole_frames: Callable[[], tuple[Frame, ...]] | None = None) -> None:
        self.label = label  # as the reports show it
        self.key = key  # what matched it in both profiles
        self.base = base
        self.new = new
        # A path's, outermost first, named short; made when first asked for.
        self._frames = frames
        # The same named whole, for rows that would read the same short.
        self._whole_frames = whole_frames

    @property
    def whole_frames(self) -> tuple[Frame, ...]:
        return self._whole_frames() if self._whole_frames else self.frames

    @property
    def frames(self) -> tuple[Frame, ...]:
        frames = self._frames
        if callable(frames):
            frames = self._frames = frames()
        return frames

    def __repr__(self) -> str:
        return f"Row({self.label!r}, {self.key!r}, {self.base!r}, {self.new!r})"

    def change(self, index: int) -> int:
        return self.new[index] - self.base[index]

    @property
    def changed(self) -> bool:
        return self.base != self.new

    @property
    def status(self) -> str:
        """new or gone when one profile has none of it, else changed."""
        return "new" if not any(self.base) else "gone" if not any(self.new) else "changed"


class View:
    """The rows of one kind (paths, functions...), in the order a walk of
    the base's paths, then the new's, first meets them: added one by one
    (bins), or the walk's (_Table)."""

    def __init__(self, name: str, title: str, table: _Table | None = None) -> None:
        self.name = name  # paths, functions, cumulative, sites, bins
        self.title = title
        self._table = table
        self._rows: dict[object, Row] = {}

    @property
    def heading(self) -> str:
        """Of the column that names a row."""
        return {"bins": "size", "paths": "path"}.get(self.name, "function")

    def add(self, key: object, label: str, side: int, values: list[int], frames: tuple[Frame, ...] = ()) -> None:
        row = self._rows.get(key)
        if row is None:
            row = self._rows[key] = Row(label, key, [0] * len(values), [0] * len(values), frames)
        elif side == 1:
            # The new profile names it, where both do.
            row.label = label
            row._frames = frames
        figures = row.new if side else row.base
        for index, value in enumerate(values):
            figures[index] += value

    @property
    def rows(self) -> dict[object, Row]:
        """Every row, by what matched it."""
        if self._table is None:
            return self._rows
        return {row.key: row for row in self._table.rows(range(self._table.count))}

    def largest(self, index: int) -> list[Row]:
        """The changed rows, largest change of measure index first."""
        return self.shown(index)[0]

    def shown(self, index: int, threshold: float | None = None, top: int | None = None) -> tuple[list[Row], int]:
        """The changed rows, largest change of measure index first (ties by
        label): with a threshold only those whose change is not 0 and at
        least that, the first top of them; and how many changed in all."""
        if self._table is not None:
            return self._table.shown(index, threshold, top)
        changed = [row for row in self._rows.values() if row.changed]
        rows = sorted(changed, key=lambda row: (-abs(row.change(index)), row.label))
        if threshold is not None:
            rows = [row for row in rows if row.change(index) and abs(row.change(index)) >= threshold]
        return (rows if top is None else rows[:top]), len(changed)

    def flame(self, index: int) -> PathsFlame:
        """The paths' differential flame graph of measure index (flame.py)."""
        if self._table is None or self.name != "paths":
            raise ValueError(f"the {self.name} view has no flame graph")
        return PathsFlame(self._table, index)


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
    modules: dict[str, str] = {}  # each module's name in a key, found once
    keys = {}
    for function_id, function in model.functions.items():
        module = modules.get(function.module)
        if module is None:
            module = os.path.basename(function.module)
            module = modules[function.module] = PROGRAM if module in programs else module
        keys[function_id] = (function.full_name, module)
    return keys


def _bin_label(size: int) -> str:
    return f"> {size - 1}" if size > 1024 else str(size)


class _Side:
    """What names one profile's rows: its functions' keys and names, and
    the frames of its paths, each looked up once."""

    def __init__(self, model: Model, keys: dict[int, FunctionKey]) -> None:
        self.model = model
        self.keys = keys
        self.names = {function_id: function.name for function_id, function in model.functions.items()}
        # A key's name, for the view of functions with their callees: its
        # last function's (as a dict made over the functions keeps it).
        self.key_names = {key: self.names[function_id] for function_id, key in keys.items()}
        self._chains: dict[int, tuple[int, ...]] = {}
        self._own: OwnCode | None = None

    def chains(self, walk: walk_core.Walk, side: int, nodes: Iterable[int]) -> dict[int, tuple[int, ...]]:
        """The functions of the paths that end at nodes, outermost first."""
        wanted = [node for node in dict.fromkeys(nodes) if node not in self._chains]
        if wanted:
            for node, chain in zip(wanted, walk.chains(side, wanted), strict=True):
                self._chains[node] = tuple(chain)
        return self._chains

    def sites(self, nodes: Sequence[int]) -> dict[int, tuple[str, int]]:
        """The file and line of each node."""
        return {node: (file.decode("utf-8", "surrogateescape") if isinstance(file, bytes) else file, line)
                for node, file, line in self.model.tree.db.execute(
                    "SELECT id, file, line FROM path_nodes WHERE id IN (SELECT value FROM json_each(?))",
                    (json.dumps(list(nodes)),))}

    def frames(self, chain: tuple[int, ...], whole: bool = False) -> tuple[Frame, ...]:
        """The chain's frames, named short, or whole (FunctionRow.path_name,
        name)."""
        if self._own is None:
            self._own = OwnCode(self.model)
        return tuple(map(self._own.named_frame if whole else self._own.short_frame, chain))


class _Table:
    """A view's rows as the walk summed them (walk_core.Table), each made
    a Row when first asked for."""

    def __init__(self, walk: walk_core.Walk, sides: tuple[_Side, _Side], keys: list[object], kind: int) -> None:
        self.walk = walk
        self.sides = sides
        self._keys = keys  # by number; 0, the empty chain
        self._kind = kind
        self.arrays = walk.table(kind)
        self.count = self.arrays.count
        self._made: dict[int, Row] = {}
        self._changed: dict[int, tuple[array.array[int], array.array[int]]] = {}

    def named_by(self, number: int) -> tuple[int, int]:
        """The side that names a row (the new, where it has it) and the node
        of the row's path there."""
        side = 1 if self.arrays.seen[1][number] else 0
        return side, self.arrays.nodes[side][number]

    def rows(self, numbers: Iterable[int]) -> list[Row]:
        numbers = list(numbers)
        wanted = [number for number in dict.fromkeys(numbers) if number not in self._made]
        if wanted:
            self._make(wanted)
        return [self._made[number] for number in numbers]

    def _make(self, numbers: list[int]) -> None:
        arrays, width, kind = self.arrays, self.walk.width, self._kind
        named = {number: self.named_by(number) for number in numbers}
        chains: list[dict[int, tuple[int, ...]]] = [{}, {}]
        sites: list[dict[int, tuple[str, int]]] = [{}, {}]
        if kind != walk_core.CUMULATIVE:
            for side in (0, 1):
                nodes = [node for s, node in named.values() if s == side and node != walk_core.NO_NODE]
                chains[side] = self.sides[side].chains(self.walk, side, nodes)
                if kind == walk_core.SITES:
                    sites[side] = self.sides[side].sites(nodes)
        for number in numbers:
            base = arrays.figures[0][number * width:(number + 1) * width].tolist()
            new = arrays.figures[1][number * width:(number + 1) * width].tolist()
            side, node = named[number]
            names = self.sides[side]
            if kind == walk_core.CUMULATIVE:
                key = self._keys[arrays.identity[number]]
                label = NO_CHAIN if key == NO_CHAIN else names.key_names[key]  # type: ignore[index]
                self._made[number] = Row(label, key, base, new)
                continue
            if node == walk_core.NO_NODE:
                self._made[number] = Row(NO_CHAIN, NO_CHAIN, base, new)
                continue
            chain = chains[side][node]
            innermost = chain[-1]
            if kind == walk_core.PATHS:
                self._made[number] = Row(SEPARATOR.join(map(names.names.__getitem__, chain)),
                                         tuple(map(names.keys.__getitem__, chain)), base, new,
                                         functools.partial(names.frames, chain),
                                         functools.partial(names.frames, chain, True))
            elif kind == walk_core.FUNCTIONS:
                self._made[number] = Row(names.names[innermost], names.keys[innermost], base, new)
            else:
                file, line = sites[side][node]
                where = f"{os.path.basename(file)}:{line}" if file else "?"
                self._made[number] = Row(f"{names.names[innermost]} ({where})",
                                         (names.keys[innermost], os.path.basename(file), line), base, new)

    def shown(self, index: int, threshold: float | None, top: int | None) -> tuple[list[Row], int]:
        """As View.shown: only the rows shown, and the others of the same
        change as the last (which its label may come after), become Rows."""
        if index not in self._changed:
            self._changed[index] = self.walk.changed(self._kind, index, self.count)
        order, sizes = self._changed[index]
        changed = end = len(order)
        if threshold is not None:
            # Largest first: the rows kept come before the first whose change is 0 or below.
            limit = threshold
            end = bisect.bisect_left(sizes, True, key=lambda size: not size or size < limit)
        if top is not None:
            end = min(end, top)
        if not end:
            return [], changed
        last = sizes[end - 1]
        stop = bisect.bisect_left(sizes, True, lo=end, key=lambda size: size < last)
        rows = self.rows(order[:stop])
        ranked = sorted(range(stop), key=lambda n: (-sizes[n], rows[n].label))
        return [rows[n] for n in ranked[:end]], changed


class PathsFlame:
    """The differential flame graph of a measure over the paths (flame.py):
    the walk's tree of the paths that have a figure on either side, each
    frame named as the first row through it names it."""

    def __init__(self, table: _Table, index: int) -> None:
        self._table = table
        self._tree = table.walk.flame(index)

    def base(self, node: int) -> int:
        return self._tree.sums[3 * node]

    def new(self, node: int) -> int:
        return self._tree.sums[3 * node + 1]

    def width(self, node: int) -> int:
        """The larger figure of each path through it, summed."""
        return self._tree.sums[3 * node + 2]

    def children(self, node: int) -> list[tuple[int, str]]:
        """Its children, in the order the rows first passed through them,
        and their names."""
        tree, table = self._tree, self._table
        children = tree.children(node)
        named = {child: table.named_by(tree.row[child]) for child in children if tree.chain[child]}
        chains = [table.sides[side].chains(table.walk, side, [n for s, n in named.values() if s == side])
                  for side in (0, 1)]
        found = []
        for child in children:
            if child not in named:
                found.append((child, NO_CHAIN))
                continue
            side, path_node = named[child]
            found.append((child, table.sides[side].names[chains[side][path_node][tree.depth[child]]]))
        return found


def compare(base: Model, new: Model, measures: tuple[Measure, ...]) -> Comparison:
    width = len(measures)
    sums = as_sums(measures)
    coefficients, gates = sums or (array.array("q", bytes(8 * FIELDS * width)), bytes(width))
    # Keys by number, both profiles' in one numbering; 0, the empty chain.
    keys: list[object] = [NO_CHAIN]
    numbers: dict[object, int] = {}
    sides = []
    for model in (base, new):
        function_keys_of = function_keys(model)
        ids = sorted(function_keys_of)
        numbered = array.array("I")
        for function_id in ids:
            key = function_keys_of[function_id]
            number = numbers.get(key)
            if number is None:
                number = numbers[key] = len(keys)
                keys.append(key)
            numbered.append(number)
        sides.append((_Side(model, function_keys_of), array.array("q", ids), numbered))
    walk = walk_core.Walk(width, len(keys))
    for side, (named, function_ids, numbered) in enumerate(sides):
        model = named.model
        values = None
        if sums is None and model.paths:
            values = array.array("q", [measure.of(path) for path in model.paths for measure in measures])
        suppressed = array.array("q", sorted(n for n, pattern in model.path_suppressions.items() if pattern))
        walk.add(side, model.tree.serialized(), function_ids, numbered, coefficients, gates, suppressed, values)
    names = (sides[0][0], sides[1][0])
    views = [View(name, title, _Table(walk, names, keys, kind)) for name, title, kind in (
        ("paths", "Call paths", walk_core.PATHS), ("functions", "Functions, own allocations", walk_core.FUNCTIONS),
        ("cumulative", "Functions with their callees", walk_core.CUMULATIVE),
        ("sites", "Direct allocation sites", walk_core.SITES))]
    bins = View("bins", "Allocation bins")
    for side, model in enumerate((base, new)):
        for row in model.bins:
            bins.add(row.size, _bin_label(row.size), side, [measure.of_bin(row) for measure in measures])
    totals = Row("<total>", None, walk.totals(0), walk.totals(1))
    return Comparison(measures, base, new, totals, [*views, bins])


def measure_index(measures: Iterable[Measure], name: str) -> int:
    return next(index for index, measure in enumerate(measures) if measure.name == name)
