"""The four mprof tables as JSON-ready rows for the HTML page, whose script
draws them a page at a time, sorts and filters them.

A cell is a string (numbers already formatted, as the text tables write
them), a function, a link, or a list of these (a leak path, a name with its
cycle).  A function is {"f": id}, or its id alone, and shows its name; {"f": id, "v": "l"}
its label (with <cycle N>), {"f": id, "v": "g"} its label and [index],
{"f": id, "v": "e"} its name unlinked (on its own entry's line); the
names are in one table for the page, [id, name, label, index, signature],
because a big call graph names each function many times.  It links to the function's call
graph entry when there is one.  A link is {"t": text, "h": anchor}; either
may have a "title", hover text.  A path is {"p": elements, "z": 1 when it
does not reach main}, its elements shown joined by " > "; a fold among them
is {"fold": parts, "t": label}: frames of a long path shown as one element
until it is clicked.  A row is {"c": cells, "id": its anchor,
"b": rows above it, "a": rows below it, "f": what the name filter matches
when the last cell is not enough}: the call graph's callers are above an
entry, its callees or a cycle's members below.  Names travel as JSON text
and the script sets them with textContent, so nothing here is ever markup."""

from __future__ import annotations

import array
import functools
import json
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from jinja2.utils import htmlsafe_json_dumps
from markupsafe import Markup

from ..leak_kinds import LOST, UNKNOWN
from . import folding, leak_summary, page_core, tables
from .model import Model
from .tables import GraphEntry, Related, parenthesised, percent

Cell = str | int | dict[str, Any] | list[str | int | dict[str, Any]]
Row = dict[str, Any]


@dataclass(frozen=True)
class EncodedRows:
    """A table's rows already as the page's JSON, safe in its <script>
    (the tojson filter's escapes): a big table written by the library
    rather than a Python object a cell."""
    json: Markup
    count: int

    def __len__(self) -> int:
        return self.count


def encoded(rows: list[Row] | EncodedRows) -> Markup:
    """Rows as the page's JSON, as the tojson filter writes them."""
    if isinstance(rows, EncodedRows):
        return rows.json
    return htmlsafe_json_dumps(rows, dumps=json.dumps, sort_keys=False, separators=(",", ":"))


@dataclass(frozen=True)
class GraphTables:
    """What the call graph gives the page, its rows already the page's
    JSON: made in a process of their own while the other tables and the
    flame graphs are made (html.render)."""
    # id, name, label if not the name, entry index, full signature if not
    # the name, short name (a path's, FunctionRow.short) if not the name
    functions: list[tuple[int, str, str | None, int | None, str | None, str | None]]
    graph: EncodedRows  # empty in mprof- mode


@dataclass(frozen=True)
class HtmlTables:
    functions: list[tuple[int, str, str | None, int | None, str | None, str | None]]
    peak: list[Row] | EncodedRows  # none for several processes: the peak is one process's
    leaks: list[Row]
    bins: list[Row]
    bin_total: list[str]
    direct: list[Row]
    direct_total: list[str]
    graph: EncodedRows


def function_anchor(function_id: int) -> str:
    return f"fn-{function_id}"


def cycle_anchor(number: int) -> str:
    return f"cycle-{number}"


def graph_tables(model: Model) -> GraphTables:
    entries = tables.graph_entries(model, 0.0) if model.call_graph else []  # every entry, whatever its share
    index = {entry.key: entry.index for entry in entries if entry.kind == "function"}
    functions = []
    for f in model.functions.values():
        label = model.label(f.id)
        functions.append((f.id, f.name, label if label != f.name else None, index.get(f.id),
                          f.full_name if f.full_name != f.name else None,
                          f.path_name if f.path_name != f.name else None))
    rows = graph_rows(model, entries)
    return GraphTables(functions, EncodedRows(encoded(rows), len(rows)))


def build(model: Model, runtime: bool = False, graph: Callable[[], GraphTables] | None = None,
          kinds: Collection[str] = LOST) -> HtmlTables:
    """The page's tables; graph gives the call graph's, made elsewhere, once
    the others are made here."""
    bins, bin_total = bin_rows(model)
    direct, direct_total = direct_rows(model)
    peak: list[Row] | EncodedRows = peak_rows(model) if len(model.runs) <= 1 else []
    leaks = leak_rows(model, runtime, kinds)
    made = graph() if graph else graph_tables(model)
    return HtmlTables(made.functions, peak, leaks, bins, bin_total, direct, direct_total, made.graph)


def _function(function_id: int, view: str = "", title: str = "") -> int | dict[str, Any]:
    if not view and not title:
        return function_id  # a big page holds hundreds of thousands of frames
    cell: dict[str, Any] = {"f": function_id}
    if view:
        cell["v"] = view
    if title:
        cell["title"] = title
    return cell


def _path_cell(path: folding.ShownPath, parts_of: list[int | dict[str, Any]]) -> list[Any]:
    """A path as a cell: {"p": its elements, "z": 1 when it does not reach
    main, "s": 1 when its functions are named short, as the text's rows},
    which the page shows joined by " > " after "... > " for z; an element
    is a frame's function part (parts_of, outermost first), or a folded
    run, {"fold": its frames' parts, "t": the fold's label}, for the page to
    open on a click."""
    shown: list[Any] = []
    at = 0
    for element in path.elements:
        if isinstance(element, folding.Fold):
            count = len(element.frames)
            shown.append({"fold": parts_of[at:at + count], "t": element.label})
            at += count
        else:
            shown.append(parts_of[at])
            at += 1
    cell: dict[str, Any] = {"p": shown}
    if path.partial:
        cell["z"] = 1
    if not path.whole_names:
        cell["s"] = 1
    return [cell]


def leak_rows(model: Model, runtime: bool = False, kinds: Collection[str] = LOST) -> list[Row]:
    """objects, bytes, (%), path: each name on the path links to its entry,
    library runs of a long path folded (folding.py); what the runtimes keep
    on purpose only with runtime, and marked; of the leak kinds asked for,
    each row marked with its kind where the blocks were classified."""
    kept_total = tables.leak_share_total(model, runtime)
    paths = tables.leak_paths(model, False, runtime, {*kinds, UNKNOWN})
    marked = leak_summary.classified(model)
    rows = []
    for path, shown in zip(paths, tables.shown_leak_paths(model, paths, False, tables.PATH_WIDTH), strict=True):
        parts = [_function(frame.function, title=f"called at {frame.file}:{frame.line}" if frame.line else "")
                 for frame in reversed(path.frames)]
        cell = _path_cell(shown, parts) if path.frames else [tables.NO_CHAIN]
        if marked:
            cell.append(f"  [{path.kind}]")
        if path.runtime:
            cell.append(f"  [runtime: {path.runtime}]")
        rows.append({"c": [f"{path.objects:,}", f"{path.kept:,}", parenthesised(path.kept, kept_total), cell]})
    return rows


def peak_rows(model: Model) -> EncodedRows:
    """blocks, bytes, (%), path: what held the memory at the peak, by whole
    call path, long paths folded as the leak table's.  Tens of thousands of
    paths a hundred frames deep: the library walks them, folds them and
    writes their JSON, Python names only the functions and the folds."""
    peak = model.summary.get("max_live_bytes", 0)
    paths = tables.peak_paths(model)
    nodes = model.tree.arrays()
    ends = array.array("q", [-1 if node is None else nodes.index(node) for node in paths.nodes()])
    stops, functions = page_core.chains(nodes.parent, nodes.function, ends)
    folded = folding.fold_chains(model, stops, functions, tables.PATH_WIDTH)
    labels = [_json_text(label) for label in folded.labels]
    text = page_core.path_rows(array.array("q", paths.column(0)), array.array("q", paths.column(1)), peak, stops,
                               functions, folded.partial, folded.short_names, folded.runs, labels)
    return EncodedRows(Markup(text), len(paths))


@functools.cache
def _json_text(text: str) -> bytes:
    """A string as the tojson filter writes it (ASCII, <>&' escaped)."""
    return str(htmlsafe_json_dumps(text, dumps=json.dumps)).encode("ascii")


def bin_rows(model: Model) -> tuple[list[Row], list[str]]:
    """size, allocs, bytes, (%), frees, kept, (%), types (the most likely,
    all of them on hover); and the <total> line."""
    totals = tables.bin_totals(model)
    rows = []
    for b in model.bins:
        kept = b.bytes - b.bytes_freed
        types = tables.bin_types(b)
        shown: Cell = {"t": tables.types_text(types, False), "title": "\n".join(types)} if types else ""
        # The name filter looks for every type, not only those shown.
        rows.append({"c": ["> 1024" if b.size > 1024 else str(b.size), f"{b.allocs:,}", f"{b.bytes:,}",
                           parenthesised(b.bytes, totals.bytes), f"{b.frees:,}", f"{kept:,}",
                           parenthesised(kept, totals.kept), shown], "f": ", ".join(types)})
    total = ["<total>", f"{totals.allocs:,}", f"{totals.bytes:,}", "", f"{totals.frees:,}", f"{totals.kept:,}", "",
             ""]
    return rows, total


def direct_rows(model: Model) -> tuple[list[Row], list[str]]:
    """% mem, bytes, s m l x, bytes kept, s m l x, calls, name (a library
    allocator's with every own caller); and <total>."""
    allocators = tables.allocators(model)
    totals = tables.direct_totals(allocators)
    callers = tables.own_callers(model)
    rows = []
    for f in allocators:
        self_bytes = sum(f.self_bytes)
        name: list[str | int | dict[str, Any]] = [_function(f.id, "l")]
        if f.id in callers:
            # A library allocator: the program's own functions it allocated for.
            name.append("  (via ")
            for n, via in enumerate(callers[f.id]):
                name += [", "] if n else []
                name += [_function(via.function), f" {tables.via_share(via, self_bytes)}"]
            name.append(")")
        rows.append({"c": [percent(self_bytes, totals.bytes), f"{self_bytes:,}",
                           *(percent(p, totals.bytes) for p in f.self_bytes), f"{sum(f.kept_bytes):,}",
                           *(percent(p, totals.kept) for p in f.kept_bytes), f"{f.self_calls:,}",
                           name if len(name) > 1 else name[0]]})
    total = ["", f"{totals.bytes:,}", *(percent(p, totals.bytes) for p in totals.by_class), f"{totals.kept:,}",
             *(percent(p, totals.kept) for p in totals.kept_by_class), f"{totals.calls:,}", "<total>"]
    return rows, total


def graph_rows(model: Model, entries: list[GraphEntry]) -> list[Row]:
    """index, self+desc, self, (%), size s m l x, frac s m l x, called, name:
    the text table's columns, one entry per row with its callers and callees."""
    total = model.table_bytes
    names: dict[int, Cell] = {}  # one cell a function: tens of thousands of lines name a few thousand

    def name(function_id: int) -> Cell:
        cell = names.get(function_id)
        if cell is None:
            cell = names[function_id] = _function(function_id, "g")
        return cell

    def related(line: Related) -> list[Cell]:
        calls = f"{line.calls:,}/{line.all_calls:,}"
        if line.frac_of is None:
            return ["", "", "", "", "", "", "", "", "", "", "", "", calls, name(line.function)]
        edge = sum(line.bytes)
        return ["", "", f"{edge:,}", "", *_shares(line.bytes, edge), *_shares(line.bytes, line.frac_of), calls,
                name(line.function)]

    rows = []
    for entry in entries:
        above = [related(line) for line in entry.callers]
        if entry.kind == "cycle":
            rows.append(_cycle_row(model, entry, total, above, name))
            continue
        f = model.functions[entry.key]
        self_bytes = sum(f.self_bytes)
        label: list[str | int | dict[str, Any]] = [_function(f.id, "e")]
        if f.cycle is not None:
            label += [" ", {"t": f"<cycle {f.cycle}>", "h": cycle_anchor(f.cycle)}]
        label.append(f" [{entry.index}]")
        called = f"{f.called:,}" + (f"+{f.recursive_calls:,}" if f.recursive_calls else "")
        line = [f"[{entry.index}]", f"{f.total_bytes * 100 / total if total else 0:.1f}", f"{self_bytes:,}",
                parenthesised(self_bytes, total), *(percent(p, self_bytes) for p in f.self_bytes), "", "", "", "",
                called, label]
        rows.append({"c": line, "id": function_anchor(f.id), "b": above,
                     "a": [related(line) for line in entry.callees]})
    return rows


def _shares(parts: tuple[int, ...], whole: int) -> list[str]:
    """tables.percent of each part, in one call: the call graph's lines
    show eight each."""
    if whole <= 0:
        return [""] * len(parts)
    return [f"{part * 100 // whole}" if part * 100 >= whole else "" for part in parts]


def _cycle_row(model: Model, entry: GraphEntry, total: int, above: list[list[Cell]],
               name: Callable[[int], Cell]) -> Row:
    """<cycle N as a whole>, its members below it, each linking to its entry."""
    cycle = model.cycles[entry.key]
    line = [f"[{entry.index}]", f"{cycle.total_bytes * 100 / total if total else 0:.1f}", f"{cycle.self_bytes:,}",
            parenthesised(cycle.self_bytes, total), "", "", "", "", "", "", "", "",
            f"{cycle.called:,}+{cycle.internal_calls:,}", f"<cycle {cycle.number} as a whole> [{entry.index}]"]
    members = []
    for member in entry.members:
        function = model.functions[member]
        self_bytes = sum(function.self_bytes)
        members.append(["", "", f"{self_bytes:,}", "", *(percent(p, self_bytes) for p in function.self_bytes),
                        "", "", "", "", f"{function.called:,}+{function.recursive_calls:,}", name(member)])
    names = " ".join(model.functions[m].name for m in entry.members)
    return {"c": line, "f": f"<cycle {cycle.number}> {names}", "id": cycle_anchor(cycle.number), "b": above,
            "a": members, "m": 1}
