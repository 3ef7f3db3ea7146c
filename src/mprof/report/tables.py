"""What the mprof tables hold before any layout: which rows, merged how, in
which order.  The text, JSON and HTML reporters only format these rows, so
that the three never disagree on a figure or an order."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple, cast, overload

from .. import leak_kinds
from . import folding
from .model import BinRow, CycleRow, FunctionRow, LeakFrame, Model


def percent(part: int, whole: int) -> str:
    """Whole percent, blank below 1% as in the paper."""
    if whole <= 0 or part * 100 < whole:
        return ""
    return f"{part * 100 // whole}"


def parenthesised(part: int, whole: int) -> str:
    share = percent(part, whole)
    return f"({share})" if share else ""


def blocks(count: int) -> str:
    """"1 block", "2 blocks": but in memcheck's LEAK SUMMARY, which says
    "1 blocks" and is copied as it is."""
    return f"{count:,} block" + ("" if count == 1 else "s")


@dataclass(frozen=True)
class Limit:
    """How many of a long table's rows a reader sees: the first ones up to a
    number, or only as many as cover a share of the table's total, whichever
    is fewer, but never fewer than a floor.  The text tables are read on a
    screen; JSON and the HTML page (which pages its rows itself) keep every
    row."""
    rows: int | None = None  # None: no limit on the number of rows
    share: float | None = None  # percent of the total the rows shown must cover; None: no such rule
    floor: int = 0  # rows shown in any case, when the table has them
    related: int | None = None  # callers, callees or members shown with a call graph entry


EVERY_ROW = Limit()
# As heaptrack_print's first screen: the top entries of each table, five
# callers and callees of each; a short table is shown whole.
FIRST_SCREEN = Limit(rows=20, share=90.0, floor=10, related=5)


def shown_count(weights: Sequence[int], total: int, limit: Limit) -> int:
    """How many of the rows, in their order, limit shows: weights are what
    each row adds to the share covered, total what the share is of."""
    covered = 0
    for count, weight in enumerate(weights):
        if count >= limit.floor:
            if limit.rows is not None and count >= limit.rows:
                return count
            if limit.share is not None and total > 0 and covered * 100 >= limit.share * total:
                return count
        covered += weight
    return len(weights)


NO_CHAIN = folding.NO_CHAIN
# Characters a path may take before its library frames fold (folding.py).
PATH_WIDTH = 100


def _leak_names(model: Model, frames: tuple[LeakFrame, ...], call_sites: bool, short: bool = False) -> list[str]:
    """A leak path's names, outermost caller first, each with the file and
    line of its call with call_sites; short: FunctionRow.path_name."""
    names = []
    for frame in reversed(frames):
        function = model.functions[frame.function]
        name = function.path_name if short else function.name
        if call_sites and frame.line:
            name += f" ({os.path.basename(frame.file)}:{frame.line})"
        names.append(name)
    return names


def _partial(model: Model, outermost_first: Sequence[int]) -> bool:
    """Whether a path stops short of main (a leak chain, a thread's)."""
    return model.functions[outermost_first[0]].name != "main" if outermost_first else False


def path_text(model: Model, frames: tuple[LeakFrame, ...], call_sites: bool) -> str:
    """A whole leak path, outermost caller first, "..." above when it does
    not reach main."""
    outermost_first = [f.function for f in reversed(frames)]
    return folding.whole(_leak_names(model, frames, call_sites), _partial(model, outermost_first))


def named_whole(shown: list[folding.ShownPath], short: Sequence[bool]) -> list[folding.ShownPath]:
    """The paths folding.named_short did not name short, marked so."""
    return [path if named else dataclasses.replace(path, whole_names=True) for path, named in zip(shown, short,
                                                                                                 strict=True)]


def _reading(model: Model, functions: Sequence[int]) -> tuple[str, ...]:
    return tuple(model.functions[function].path_name for function in functions)


def shown_leak_paths(model: Model, rows: Sequence[LeakPath], call_sites: bool,
                     width: int | None) -> list[folding.ShownPath]:
    """The leak paths of a table as it shows them, folded to width
    (folding.py), their functions named short where the rows read apart so
    (folding.named_short)."""
    own = folding.OwnCode(model)
    functions = [[f.function for f in reversed(row.frames)] for row in rows]
    short = folding.named_short([tuple(path) for path in functions], [_reading(model, path) for path in functions])
    return named_whole(folding.fold_paths(
        [folding.path_frames(model, functions[n], _leak_names(model, row.frames, call_sites, short[n]), own)
         for n, row in enumerate(rows)], [_partial(model, path) for path in functions], width), short)


def shown_whole_paths(model: Model, rows: Sequence[WholePath], width: int | None) -> list[folding.ShownPath]:
    """The whole paths of a table as it shows them, folded to width, named
    as shown_leak_paths names them."""
    own = folding.OwnCode(model)
    short = folding.named_short([row.functions for row in rows], [_reading(model, row.functions) for row in rows])
    return named_whole(folding.fold_paths(
        [[(own.short_frame if short[n] else own.named_frame)(function) for function in row.functions]
         for n, row in enumerate(rows)], [_partial(model, row.functions) for row in rows], width), short)


@dataclass(frozen=True)
class LeakPath:
    """Leak records of one whole path and one leak kind, merged."""
    key: str  # the whole path, never shortened
    kind: str  # memcheck's words, or unknown (reducer/leak_kinds.py)
    objects: int
    kept: int  # bytes
    frames: tuple[LeakFrame, ...]  # of the first record merged, innermost first
    runtime: str  # what in the C or C++ runtime keeps these blocks on purpose; "": the program, or lost
    # The chains' own, all their kinds: blocks allocated and freed, bytes allocated and freed.
    chain: tuple[int, ...] = (0, 0, 0, 0)


def leak_paths(model: Model, call_sites: bool, runtime: bool = False,
               kinds: Collection[str] = leak_kinds.ALL) -> list[LeakPath]:
    """Paths with blocks kept at exit of the kinds asked for, merged by
    their functions (and the lines of their calls with call_sites),
    whatever their names read and however a report shortens them: the lost
    (and those of runs not classified) first, then the possibly lost, then
    the still reachable, each most bytes first.  The blocks the C and C++
    runtimes keep on purpose only with runtime."""
    merged: dict[tuple[str, tuple[tuple[int, str, int], ...]], list[int]] = {}
    frames: dict[tuple[str, tuple[tuple[int, str, int], ...]], tuple[LeakFrame, ...]] = {}
    kept_by: dict[tuple[str, tuple[tuple[int, str, int], ...]], str] = {}
    assert model.leaks_and_calls
    for leak in model.leaks:
        if not leak.blocks or (leak.runtime and not runtime) or leak.kind not in kinds:
            continue
        key = (leak.kind, tuple((f.function, f.file, f.line) if call_sites else (f.function, "", 0)
                                for f in leak.frames))
        row = merged.setdefault(key, [0] * 6)
        frames.setdefault(key, leak.frames)
        kept_by.setdefault(key, leak.runtime)
        for n, figure in enumerate((leak.blocks, leak.bytes, *leak.chain)):
            row[n] += figure
    rows = [LeakPath(path_text(model, frames[key], call_sites), key[0], objects, kept, frames[key], kept_by[key],
                     tuple(chain)) for key, (objects, kept, *chain) in merged.items()]
    # Ties in the order of the full names, the same in every view.
    return sorted(rows, key=lambda row: (leak_kinds.TABLE_ORDER[row.kind], -row.kept,
                                         [(model.functions[f.function].full_name, f.line)
                                          for f in reversed(row.frames)]))


@dataclass(frozen=True)
class WholePath:
    """Whole call paths of the same functions, merged, with one figure."""
    functions: tuple[int, ...]  # outermost first; empty: no caller was found
    blocks: int
    bytes: int


def path_functions(model: Model, node: int | None) -> tuple[int, ...]:
    """A whole path's functions, outermost first."""
    return model.path_functions(node)


class RankedPaths(Sequence[WholePath]):
    """Whole paths merged by their functions, most bytes (then blocks)
    first; rows of equal figures in the order of their functions' names,
    then of their first paths (as the reducer ranked them: schema.sql's
    name_order).  The figures are known at once, the functions of a row
    when it is asked for: a table that shows twenty rows looks up twenty
    paths.  It may hold only the first rows of more (whole_count)."""

    # Rows looked up at once, from the one asked for.
    _WINDOW = 64

    def __init__(self, model: Model, groups: list[tuple[int, int, int | None]], count: int | None = None) -> None:
        self._model = model
        self._groups = groups  # (blocks, size, the group's first node), in order
        self._rows: list[WholePath | None] = [None] * len(groups)
        self.whole_count = len(groups) if count is None else count  # the rows of which these are the first

    def __len__(self) -> int:
        return len(self._groups)

    def column(self, index: int) -> list[int]:
        """Each row's blocks (index 0) or bytes (1), without its functions."""
        return [size for _, size, _ in self._groups] if index else [blocks for blocks, _, _ in self._groups]

    def nodes(self) -> list[int | None]:
        """Each row's first node (None: the paths of no frame), without its
        functions."""
        return [node for _, _, node in self._groups]

    def _resolve(self, start: int, end: int) -> None:
        groups = self._groups[start:end]
        functions = self._model.tree.paths_functions(node for _, _, node in groups if node is not None)
        self._rows[start:end] = [WholePath(functions[node] if node is not None else (), blocks, size)
                                 for blocks, size, node in groups]

    @overload
    def __getitem__(self, index: int) -> WholePath: ...

    @overload
    def __getitem__(self, index: slice) -> list[WholePath]: ...

    def __getitem__(self, index: int | slice) -> WholePath | list[WholePath]:
        if isinstance(index, slice):
            return [self[n] for n in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        row = self._rows[index]
        if row is None:
            self._resolve(index, min(index + self._WINDOW, len(self._groups)))
            row = self._rows[index]
        assert row is not None
        return row

    def __iter__(self) -> Iterator[WholePath]:
        if any(row is None for row in self._rows):
            self._resolve(0, len(self._groups))
        return iter(cast(list[WholePath], self._rows))


def _ranked(model: Model, blocks: str, size: str, first: int | None) -> RankedPaths:
    """The paths' figures, blocks and size (SQL over the paths' columns),
    merged by their functions; only the first rows, if first, which SQLite
    finds without ordering them all."""
    if first is None:
        return RankedPaths(model, model.tree.ranked(blocks, size))
    return RankedPaths(model, model.tree.ranked(blocks, size, first), model.tree.ranked_count(blocks, size))


def peak_paths(model: Model, first: int | None = None) -> RankedPaths:
    """What held the memory at the peak: whole paths by bytes live then."""
    return _ranked(model, "peak_blocks", "peak_bytes", first)


def temporary_paths(model: Model, first: int | None = None) -> RankedPaths:
    """Whole paths by their temporary allocations (bytes: none counted)."""
    return _ranked(model, "temporaries", "0", first)


@dataclass(frozen=True)
class RuntimeKept:
    """Blocks the C and C++ runtimes keep on purpose, of one kind."""
    runtime: str  # "stdio buffer", ... (reducer/runtime_blocks.py)
    objects: int
    bytes: int


def runtime_kept(model: Model) -> list[RuntimeKept]:
    """What the runtimes keep on purpose, by kind, most bytes first."""
    kinds: dict[str, list[int]] = {}
    assert model.leaks_and_calls
    for leak in model.leaks:
        if leak.runtime and leak.blocks:
            row = kinds.setdefault(leak.runtime, [0, 0])
            row[0] += leak.blocks
            row[1] += leak.bytes
    return sorted((RuntimeKept(kind, objects, kept) for kind, (objects, kept) in kinds.items()),
                  key=lambda row: (-row.bytes, row.runtime))


def leak_total(model: Model, runtime: bool) -> int:
    """The bytes the leak table's shares are of: all kept, or the program's,
    less what suppressions took."""
    return (model.kept_bytes - model.suppressed_bytes
            - (0 if runtime else sum(kind.bytes for kind in runtime_kept(model))))


def leak_share_total(model: Model, runtime: bool) -> int:
    """What the leak table's rows are shares of: leak_total's bytes and the
    bytes of the regions left mapped, rows of the table too."""
    return leak_total(model, runtime) + model.table_kept_bytes - model.kept_bytes


def leaked_objects(model: Model, runtime: bool) -> int:
    """The blocks of leak_total's bytes."""
    return (model.summary["allocs"] - model.summary["frees"] - sum(row.objects for row in model.suppressed)
            - (0 if runtime else sum(kind.objects for kind in runtime_kept(model))))


def suppressed_note(model: Model) -> str:
    """The line that says what the leak suppressions took, each; empty
    when they took nothing."""
    if not model.suppressed:
        return ""
    objects = sum(row.objects for row in model.suppressed)
    each = "; ".join(f"leak:{row.pattern} ({row.origin}) {row.bytes:,}" for row in model.suppressed)
    return f"Suppressed, not listed: {blocks(objects)}, {model.suppressed_bytes:,} bytes ({each})"


def runtime_note(model: Model, option: str) -> str:
    """The line that says what the leak table leaves out as the runtimes'
    and which option lists it; empty when they keep nothing."""
    kinds = runtime_kept(model)
    if not kinds:
        return ""
    objects, kept = sum(k.objects for k in kinds), sum(k.bytes for k in kinds)
    each = ", ".join(f"{k.runtime} {k.bytes:,}" for k in kinds)
    return (f"Kept on purpose by the C and C++ runtimes until exit, not listed: {blocks(objects)}, {kept:,} bytes "
            f"({each}); {option} lists them")


def _closes(text: str, at: int) -> bool:
    """Whether the character at is a closing bracket; Rust's -> is none."""
    return text[at] in ">)]}" and text[at - 1:at + 1] != "->"


def _split_top_level(text: str) -> list[str]:
    """Comma-separated names, split only where no bracket is open: a C++
    type's template arguments hold commas too."""
    names, depth, start = [], 0, 0
    for at, character in enumerate(text):
        if character in "<([{":
            depth += 1
        elif _closes(text, at):
            depth -= 1
        elif character == "," and depth == 0:
            names.append(text[start:at].strip())
            start = at + 1
    names.append(text[start:].strip())
    return [name for name in names if name]


def _without_arguments(name: str) -> str:
    """A type's name with its template or generic arguments left out:
    std::vector<int>::value_type -> std::vector<>::value_type."""
    kept: list[str] = []
    open_brackets: list[str] = []
    for at, character in enumerate(name):
        within_arguments = "<" in open_brackets
        if character in "<([{":
            open_brackets.append(character)
            if not within_arguments:
                kept.append("<>" if character == "<" else character)
        elif _closes(name, at) and open_brackets:
            if open_brackets.pop() != "<" and "<" not in open_brackets:
                kept.append(character)
        elif not within_arguments:
            kept.append(character)
    return "".join(kept)


# Rust's types without a name of their own: primitives, what starts with
# a reference, pointer, slice, tuple, fn or <T as Trait>, and what the
# compiler made ({closure_env#0}, {vtable_type}).
_UNNAMED_TYPES = {"u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32",
                  "f64", "bool", "char", "str", "!"}


def _type_rank(name: str) -> tuple[int, bool, bool, int, str]:
    """The program's own named types first, then the standard libraries'
    and reserved names (_IO_FILE), then types without a name of their own
    (u64, &str, (usize, usize)); within each, a type before a typedef inside
    a template (vector<int>::value_type), then the shortest."""
    if (name in _UNNAMED_TYPES or name.startswith(("(", "&", "*", "[", "<", "fn(", "fn ", "dyn ", "unsafe ", "extern "))
            or "{" in name):
        kind = 2
    elif name.startswith(("_", *folding.LIBRARY_NAMESPACES)) or "::_" in name.split("<", 1)[0]:
        kind = 1
    else:
        kind = 0
    return (kind, ">::" in name, "<" in name, len(name), name)


def bin_types(row: BinRow) -> list[str]:
    """A bin's program types, the most likely to be what was allocated first."""
    return sorted(_split_top_level(row.types), key=_type_rank)


# Types a table shows of a bin, the rest counted.
SHOWN_TYPES = 2


def types_text(types: list[str], wide: bool) -> str:
    """A bin's types as a table cell: all of them with wide, else the first
    two with their template arguments left out and how many more there are."""
    if wide:
        return ", ".join(types)
    shown = list(dict.fromkeys(_without_arguments(name) for name in types))[:SHOWN_TYPES]
    more = len(types) - len(shown)
    return ", ".join(shown) + (f" and {more:,} more" if more > 0 else "")


@dataclass(frozen=True)
class BinTotals:
    allocs: int
    bytes: int
    frees: int
    kept: int


def bin_totals(model: Model) -> BinTotals:
    return BinTotals(sum(b.allocs for b in model.bins), sum(b.bytes for b in model.bins),
                     sum(b.frees for b in model.bins), sum(b.bytes - b.bytes_freed for b in model.bins))


def allocators(model: Model) -> list[FunctionRow]:
    """The direct allocation table's functions, most bytes first."""
    return sorted((f for f in model.functions.values() if f.self_calls),
                  key=lambda f: (-sum(f.self_bytes), f.full_name))


@dataclass(frozen=True)
class Via:
    """A function of the program's own code an allocator's bytes were
    allocated for, and how many."""
    function: int
    bytes: int


def own_callers(model: Model, allocating: Iterable[int] | None = None) -> dict[int, list[Via]]:
    """For each allocating function (of allocating, or every one) that is
    not the program's own code (std::__new_allocator<int>::allocate,
    strdup), the program's functions it allocated for: the innermost own
    frame of each of its paths, most bytes first."""
    own = folding.OwnCode(model)
    chosen = allocating if allocating is not None else model.tree.allocating()
    libraries = [function for function in chosen if not own.owns(function)]
    paths = model.tree.innermost(libraries) if libraries else []
    callers = model.tree.first_above((node for node, _, _ in paths), own.owns)
    found: dict[int, dict[int, int]] = {}
    for node, allocator, size in paths:
        caller = callers[node]
        if caller is not None:
            by_caller = found.setdefault(allocator, {})
            by_caller[caller] = by_caller.get(caller, 0) + size
    return {allocator: sorted((Via(caller, size) for caller, size in by_caller.items()),
                              key=lambda via: (-via.bytes, model.functions[via.function].full_name))
            for allocator, by_caller in found.items()}


def via_share(via: Via, total: int) -> str:
    """An own caller's share of its allocator's bytes: "92%", "<1%"."""
    return f"{percent(via.bytes, total) or '<1'}%"


# Own callers a direct table row names.
SHOWN_CALLERS = 2


def via_text(model: Model, callers: list[Via], total: int) -> str:
    """"via Cache::get 92%, create_session 7%": the first own callers of a
    library allocator, with their shares of its bytes."""
    if not callers:
        return ""
    shown = [f"{model.functions[via.function].name} {via_share(via, total)}" for via in callers[:SHOWN_CALLERS]]
    more = len(callers) - SHOWN_CALLERS
    return "via " + ", ".join(shown) + (f" and {more:,} more" if more > 0 else "")


@dataclass(frozen=True)
class DirectTotals:
    """The direct allocation table's <total> line."""
    bytes: int
    by_class: tuple[int, ...]
    kept: int
    kept_by_class: tuple[int, ...]
    calls: int


def direct_totals(functions: list[FunctionRow]) -> DirectTotals:
    by_class = tuple(sum(f.self_bytes[c] for f in functions) for c in range(4))
    kept_by_class = tuple(sum(f.kept_bytes[c] for f in functions) for c in range(4))
    return DirectTotals(sum(by_class), by_class, sum(kept_by_class), kept_by_class,
                        sum(f.self_calls for f in functions))


def caller_first_ranks(model: Model) -> dict[int, int]:
    """A topological order of the call graph with cycles condensed: callers
    before callees, ties by name, so that equal totals list main first."""
    # A node is a function, or a cycle as a whole: by its number, negated,
    # which no function id is (ids count from 1).
    node = {f.id: f.id if f.cycle is None else -f.cycle for f in model.functions.values()}
    name = {key: function.full_name for key, function in model.functions.items() if node[key] == key}
    name.update({-f.cycle: f"<cycle {f.cycle}>" for f in model.functions.values() if f.cycle is not None})
    successors: dict[int, set[int]] = {}
    pending = dict.fromkeys(name, 0)
    assert model.leaks_and_calls
    for edge in model.edges:
        caller, callee = node[edge.caller], node[edge.callee]
        if caller != callee:
            below = successors.setdefault(caller, set())
            if callee not in below:
                below.add(callee)
                pending[callee] += 1
    ready = sorted((key for key, count in pending.items() if count == 0), key=name.__getitem__)
    ranks: dict[int, int] = {}
    for key in ready:  # a queue: grows behind this loop
        ranks[key] = len(ranks)
        for successor in sorted(successors.get(key, ()), key=name.__getitem__):
            pending[successor] -= 1
            if pending[successor] == 0:
                ready.append(successor)
    return {f: ranks[node[f]] for f in model.functions}  # condensed, the graph has no cycle: all are ranked


class Related(NamedTuple):
    """A caller or callee line of a call graph entry: a big program's call
    graph has tens of thousands, made several times as fast as a frozen
    dataclass's instances."""
    function: int
    calls: int
    all_calls: int  # of the entry (a caller line) or of the callee (a callee line)
    bytes: tuple[int, ...]
    frac_of: int | None  # None: both ends in one cycle, where bytes count recursion again: only calls show


@dataclass(frozen=True)
class GraphEntry:
    kind: str  # "function", or "cycle" for gprof's <cycle N as a whole>
    key: int  # function id or cycle number
    index: int  # the [N] that names the entry
    callers: tuple[Related, ...]
    callees: tuple[Related, ...]  # none for a cycle: its members stand below it
    members: tuple[int, ...]  # a cycle's, most self bytes first


def graph_order(model: Model, cutoff: float) -> list[tuple[str, int]]:
    """The call graph's entries, ("function", id) or ("cycle", number):
    one per function and one per cycle just before its members, ordered by
    self+desc, callers first on ties; entries below cutoff percent of all
    bytes are left out."""
    total = model.table_bytes
    ranks = caller_first_ranks(model)
    keys: list[tuple[str, int]] = [("function", f.id) for f in model.functions.values()]
    keys += [("cycle", c.number) for c in model.cycles.values()]

    def order(entry: tuple[str, int]) -> tuple[int, int, int, int, str]:
        kind, key = entry
        if kind == "cycle":
            cycle = model.cycles[key]
            return (-cycle.total_bytes, ranks[cycle.members[0]], 0, -1, f"<cycle {key}>")
        f = model.functions[key]
        return (-f.total_bytes, ranks[key], 1, sum(f.self_bytes), f.full_name)

    def size(entry: tuple[str, int]) -> int:
        kind, key = entry
        return model.cycles[key].total_bytes if kind == "cycle" else model.functions[key].total_bytes

    keys.sort(key=order)
    return [k for k in keys if not total or size(k) * 100 >= cutoff * total]


def graph_entry(model: Model, kind: str, key: int, index: int) -> GraphEntry:
    """The entry of graph_order's key at index."""
    return _cycle_entry(model, model.cycles[key], index) if kind == "cycle" else _function_entry(model, key, index)


def graph_entries(model: Model, cutoff: float) -> list[GraphEntry]:
    """Every entry of graph_order, made."""
    return [graph_entry(model, kind, key, index) for index, (kind, key) in enumerate(graph_order(model, cutoff))]


def _function_entry(model: Model, function_id: int, index: int) -> GraphEntry:
    entry = model.functions[function_id]
    same_cycle = set(model.cycles[entry.cycle].members) if entry.cycle is not None else {entry.id}
    callers = sorted(model.callers.get(entry.id, []), key=lambda e: (-sum(e.bytes), e.caller))
    callees = sorted(model.callees.get(entry.id, []), key=lambda e: (-sum(e.bytes), e.callee))
    into = sum(sum(e.bytes) for e in callers if e.caller not in same_cycle)
    above = tuple(Related(e.caller, e.calls, entry.called + entry.recursive_calls, e.bytes,
                          None if e.caller in same_cycle else into) for e in callers)
    below = []
    for e in callees:
        callee = model.functions[e.callee]
        below.append(Related(e.callee, e.calls, callee.called + callee.recursive_calls, e.bytes,
                             None if e.callee in same_cycle else entry.total_bytes))
    return GraphEntry("function", function_id, index, above, tuple(below), ())


def _cycle_entry(model: Model, cycle: CycleRow, index: int) -> GraphEntry:
    """gprof's <cycle N as a whole>: callers from outside above, members below."""
    members = set(cycle.members)
    outside: dict[int, list[int]] = {}
    for member in cycle.members:
        for edge in model.callers.get(member, []):
            if edge.caller not in members:
                row = outside.setdefault(edge.caller, [0, 0, 0, 0, 0])
                row[0] += edge.calls
                for c in range(4):
                    row[1 + c] += edge.bytes[c]
    into = sum(sum(row[1:]) for row in outside.values())
    callers = tuple(Related(caller, row[0], cycle.called, tuple(row[1:]), into)
                    for caller, row in sorted(outside.items(), key=lambda item: (-sum(item[1][1:]), item[0])))
    ordered = sorted(cycle.members, key=lambda m: (-sum(model.functions[m].self_bytes),
                                                   model.functions[m].full_name))
    return GraphEntry("cycle", cycle.number, index, callers, (), tuple(ordered))
