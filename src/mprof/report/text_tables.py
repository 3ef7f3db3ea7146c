"""The mprof tables as text, in the layout of the paper's Figures 2 to 5,
the program summary, and the process table of several processes."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ..leak_kinds import KINDS, LOST, OPTION_NAMES, UNKNOWN
from . import folding, leak_summary, legends, processes, summary, tables
from .model import Model
from .tables import EVERY_ROW, PATH_WIDTH, GraphEntry, Limit, Related, parenthesised, percent, shown_count

Row = TypeVar("Row")

TABLES = ("summary", "peak", "leaks", "temporaries", "bins", "direct", "graph")
# The columns a report is laid out for when no terminal says (a pipe, a file).
SCREEN_WIDTH = 120


@dataclass(frozen=True)
class Options:
    tables: tuple[str, ...] = TABLES
    cutoff: float = 0.0  # percent; rows below it are left out
    call_sites: bool = False  # leak paths name file:line of each call
    wide: bool = False  # paths are never shortened
    path_width: int = PATH_WIDTH  # longer paths fold their library frames (folding.py)
    limit: Limit = EVERY_ROW  # how many rows of each table to show, after the cutoff
    runtime: bool = False  # the leak table lists what the C and C++ runtimes keep on purpose
    leak_kinds: Collection[str] = LOST  # the kinds the leak table lists (--leak-kinds); blocks not classified always
    screen_width: int = SCREEN_WIDTH  # the terminal's columns: the glance's lines are cut to them


def shown_rows(rows: Sequence[Row], weight: Callable[[Row], int], total: int, options: Options) -> list[Row]:
    """The rows, in their order, that a table shows: those of at least the
    cutoff's share of total, then as many of them as the limit takes."""
    above = [row for row in rows if not total or weight(row) * 100 >= options.cutoff * total]
    return above[:shown_count([weight(row) for row in above], total, options.limit)]


def left_out(shown: int, rows: int) -> list[str]:
    """The line under a table that did not show all its rows: how many, and
    how to see them."""
    if shown == rows:
        return []
    return [f"  {rows - shown:,} of {rows:,} rows left out: --all shows every row, --top N the first N, "
            f"--cutoff PERCENT those above a share of the total"]


def classes(parts: Sequence[int], whole: int) -> str:
    return " ".join(f"{percent(p, whole):>3}" for p in parts)


def render(model: Model, options: Options) -> str:
    sections = [process_table(model)] if processes.merged(model) else []
    # Where, before how much: on a small terminal's first screen too.
    if "summary" in options.tables and (glance := glance_lines(model, options)):
        sections.append("\n".join(glance))
    for table in options.tables:
        if table == "summary":
            sections.append(summary_table(model))
        elif table == "peak":
            sections.append(peak_table(model, options))
        elif table == "leaks":
            sections.append(leak_table(model, options))
        elif table == "temporaries":
            sections.append(temporaries_table(model, options))
        elif table == "bins":
            sections.append(bin_table(model, options))
        elif table == "direct":
            sections.append(direct_table(model, options))
        elif table == "graph":
            sections.append(call_graph(model, options))
    return "\n\n".join(sections) + "\n"


def process_table(model: Model) -> str:
    """The processes whose figures the tables add up, each with its own."""
    rows = processes.process_rows(model)
    lines = [f"Processes: {len(rows)}, added up in the tables below; --pid PID or --program NAME reports some alone",
             "", f"{'pid':>8} {'ppid':>8} {'origin':<8} {'allocations':>12} {'bytes':>15} {'peak live':>13} "
                 f"{'kept at exit':>13}  command"]
    for row in rows:
        lines.append(f"{row.pid:>8} {row.ppid:>8} {row.origin:<8} {row.allocations:>12,} {row.bytes:>15,} "
                     f"{row.peak_live:>13,} {row.kept:>13,}  {row.command}")
    return "\n".join(lines)


def summary_table(model: Model) -> str:
    if processes.merged(model):
        lines = ["Program summary (the processes above, added up)"]
    else:
        lines = ["Program summary"]
        for run in model.runs:
            origin = "fork child" if run.forked else "process"
            notes = "".join(f"  ({note})" for note in summary.run_notes(run))
            lines.append(f"  {origin} {run.pid}: {run.command_line or run.program}{notes}")
    rows = summary.rows(model)
    width = max(13, *(len(label) for label, _ in rows))
    lines += [f"  {label:<{width}} {value}" for label, value in rows]
    lines += [f"  {line}" for line in leak_summary.summary_lines(model)]
    return "\n".join(lines)


# Rows of each table the glance shows.
GLANCE_ROWS = 3
_GLANCE_LABEL = 12


def glance_lines(model: Model, options: Options) -> list[str]:
    """Where, on the first screen: the first rows of the peak, leak and
    temporaries tables that follow (those options.tables holds), a line
    each, cut to the screen's width; none for a report of several
    processes, whose peak is each one's."""
    if processes.merged(model):
        return []
    lines: list[str] = []

    def add(label: str, figures: list[str], paths: Sequence[folding.ShownPath], notes: Sequence[str] = ()) -> None:
        for n, (figure, path) in enumerate(zip(figures, paths, strict=True)):
            note = notes[n] if notes else ""
            line = f"  {label if n == 0 else '':<{_GLANCE_LABEL}}{figure}  {_inner_end(path, room - len(note))}{note}"
            lines.append(line if len(line) <= options.screen_width else line[:options.screen_width - 3] + "...")

    room = max(options.screen_width - _GLANCE_LABEL - 22, 20)
    width = None if options.wide else room
    if "peak" in options.tables:
        peak = model.summary.get("max_live_bytes", 0)
        rows = list(tables.peak_paths(model, GLANCE_ROWS))
        add("peak", [f"{row.bytes:>10,} B {parenthesised(row.bytes, peak):>5}" for row in rows],
            tables.shown_whole_paths(model, rows, width))
    if "leaks" in options.tables:
        classified = leak_summary.classified(model)
        label = "lost" if classified else "never freed"
        leaks = tables.leak_paths(model, False, options.runtime, {*options.leak_kinds, UNKNOWN})[:GLANCE_ROWS]
        total = tables.leak_share_total(model, options.runtime)
        if leaks:
            # The kinds said where the table lists more than the lost.
            only_lost = not classified or set(options.leak_kinds) <= set(LOST)
            add(label, [f"{row.kept:>10,} B {parenthesised(row.kept, total):>5}" for row in leaks],
                tables.shown_leak_paths(model, leaks, False, width),
                ["" if only_lost else f"  [{row.kind}]" for row in leaks])
        else:
            lines.append(f"  {label:<{_GLANCE_LABEL}}{'':>18}  nothing")
    if "temporaries" in options.tables:
        count = model.summary.get("temporary_allocs", 0)
        rows = list(tables.temporary_paths(model, GLANCE_ROWS))
        add("temporaries", [f"{row.blocks:>10,}   {parenthesised(row.blocks, count):>5}" for row in rows],
            tables.shown_whole_paths(model, rows, width))
    if not lines:
        return []
    return ["At a glance: the first rows of the tables below the summary", *lines]


def _inner_end(path: folding.ShownPath, room: int) -> str:
    """A path in room characters where it can be, keeping what says where:
    its innermost own frame and what follows, its outer elements left out
    ("... >") first; then that frame and the call it made alone."""
    parts = [element.label if isinstance(element, folding.Fold) else element.text for element in path.elements]
    own = [n for n, element in enumerate(path.elements) if isinstance(element, folding.Frame) and element.own]
    innermost = own[-1] if own else max(len(parts) - 2, 0)
    text = path.text
    for start in range(1, innermost + 1):
        if len(text) <= room:
            return text
        text = folding.whole(parts[start:], True)
    if len(text) > room and len(parts) > innermost + 2:
        text = folding.whole(parts[innermost:innermost + 2] + ["..."], innermost > 0)
    return text


def whole_path_table(model: Model, options: Options, heading: list[str], rows: tables.RankedPaths,
                     weight: int, total: int, figures: Callable[[tables.WholePath], str], empty: str) -> str:
    """A table of whole call paths: heading, then each shown row's figures
    and its path, or the line empty when there is no row; weight, the
    column (RankedPaths.column) the cutoff and the limit count."""
    # Which rows show is a matter of their figures: only those rows' paths
    # are looked up.
    weights = rows.column(weight)
    above = [n for n, value in enumerate(weights) if not total or value * 100 >= options.cutoff * total]
    shown = [rows[n] for n in above[:shown_count([weights[n] for n in above], total, options.limit)]]
    paths = tables.shown_whole_paths(model, shown, None if options.wide else options.path_width)
    lines = heading + [f"{figures(row)}  {path.text}" for row, path in zip(shown, paths, strict=True)]
    if not rows.whole_count:
        lines.append(empty)
    return "\n".join(lines + left_out(len(shown), rows.whole_count))


def peak_table(model: Model, options: Options) -> str:
    if processes.merged(model):
        return ("Peak table: the peak is one process's; report one with --pid or --program "
                "(each process's peak is in the process table).")
    peak = model.summary.get("max_live_bytes", 0)
    heading = [legends.PEAK, "", summary.peak_moment(model), "", f"{'blocks':>10} {'bytes':>13} {'(%)':>5}  path"]
    return whole_path_table(
        model, options, heading, tables.peak_paths(model, options.limit.rows), 1, peak,
        lambda row: f"{row.blocks:>10,} {row.bytes:>13,} {parenthesised(row.bytes, peak):>5}",
        f"{'':>10} {'':>13} {'':>5}  (nothing was live)")


def temporaries_table(model: Model, options: Options) -> str:
    total = model.summary.get("temporary_allocs", 0)
    return whole_path_table(
        model, options, [legends.TEMPORARIES, "", f"{'count':>12} {'(%)':>5}  path"],
        tables.temporary_paths(model, options.limit.rows), 0, total,
        lambda row: f"{row.blocks:>12,} {parenthesised(row.blocks, total):>5}",
        f"{'':>12} {'':>5}  (no temporary allocation)")


def leak_table(model: Model, options: Options) -> str:
    kinds = leak_summary.classified(model)
    rows = tables.leak_paths(model, options.call_sites, options.runtime, {*options.leak_kinds, UNKNOWN})
    kept_total = tables.leak_share_total(model, options.runtime)
    kind_column = f"  {'kind':<{_KIND_WIDTH}}" if kinds else ""
    lines = [legends.LEAKS_CLASSIFIED + "\n" + legends.LEAK_KINDS if kinds else legends.LEAKS,
             *leak_summary.not_classified_lines(model),
             "", f"{'objects':>10} {'bytes':>12} {'(%)':>5}{kind_column}  path"]
    shown = shown_rows(rows, lambda row: row.kept, kept_total, options)
    paths = tables.shown_leak_paths(model, shown, options.call_sites, None if options.wide else options.path_width)
    for row, shown_path in zip(shown, paths, strict=True):
        path = shown_path.text
        if row.runtime:
            path += f"  [runtime: {row.runtime}]"
        kind = f"  {row.kind:<{_KIND_WIDTH}}" if kinds else ""
        lines.append(f"{row.objects:>10,} {row.kept:>12,} {parenthesised(row.kept, kept_total):>5}{kind}  {path}")
    if not rows:
        lines.append(f"{'':>10} {'':>12} {'':>5}{' ' * len(kind_column)}  "
                     f"({'nothing lost' if kinds else 'nothing kept'})")
    lines += left_out(len(shown), len(rows))
    notes = [*_unlisted_kinds(model, options), tables.suppressed_note(model),
             "" if options.runtime else tables.runtime_note(model, "--include-runtime")]
    return "\n".join(lines + [f"  {note}" for note in notes if note])


_KIND_WIDTH = max(len(kind) for kind in KINDS)


def _unlisted_kinds(model: Model, options: Options) -> list[str]:
    """A line for each kind the table does not list but has blocks of, the
    runtimes' own aside unless listed."""
    if not leak_summary.classified(model):
        return []
    found: dict[str, list[int]] = {}
    for leak in model.leaks:
        if leak.kind in KINDS and leak.kind not in options.leak_kinds and (options.runtime or not leak.runtime):
            row = found.setdefault(leak.kind, [0, 0])
            row[0] += leak.blocks
            row[1] += leak.bytes
    names = {words: name for name, words in OPTION_NAMES.items()}
    return [f"{kind.capitalize()}, not listed: {tables.blocks(found[kind][0])}, {found[kind][1]:,} bytes; "
            f"--leak-kinds={names[kind]} lists them" for kind in KINDS if kind in found]


def bin_table(model: Model, options: Options) -> str:
    totals = tables.bin_totals(model)
    allocated, kept_total = totals.bytes, totals.kept
    lines = [legends.BINS, "",
             f"{'size':>7} {'allocs':>10} {'bytes':>13} {'(%)':>5} {'frees':>10} {'kept':>13} {'(%)':>5}  types"]
    above = [b for b in model.bins
             if not allocated or b.bytes * 100 >= options.cutoff * allocated or b.bytes_freed != b.bytes]
    # The largest bins are shown, in the order of their sizes.
    largest = sorted(above, key=lambda b: -b.bytes)
    shown = {b.size for b in largest[:shown_count([b.bytes for b in largest], allocated, options.limit)]}
    for b in above:
        if b.size not in shown:
            continue
        size = "> 1024" if b.size > 1024 else str(b.size)
        kept = b.bytes - b.bytes_freed
        lines.append(f"{size:>7} {b.allocs:>10,} {b.bytes:>13,} {parenthesised(b.bytes, allocated):>5} "
                     f"{b.frees:>10,} {kept:>13,} {parenthesised(kept, kept_total):>5}  "
                     f"{tables.types_text(tables.bin_types(b), options.wide)}".rstrip())
    lines.append(f"{'<total>':>7} {totals.allocs:>10,} {allocated:>13,} {'':>5} "
                 f"{totals.frees:>10,} {kept_total:>13,}")
    return "\n".join(lines + left_out(len(shown), len(model.bins)))


def _direct_row(label: str, total: int, allocated: tuple[int, ...], kept: tuple[int, ...], calls: int,
                all_allocated: int, all_kept: int) -> str:
    return (f"{percent(total, all_allocated) if label != '<total>' else '':>5} {total:>13,} "
            f"{classes(allocated, all_allocated)}   {sum(kept):>13,} {classes(kept, all_kept)}   "
            f"{calls:>10,}  {label}")


def direct_table(model: Model, options: Options) -> str:
    allocators = tables.allocators(model)
    totals = tables.direct_totals(allocators)
    all_allocated, all_kept = totals.bytes, totals.kept
    header = (f"{'% mem':>5} {'bytes':>13} {'  s   m   l   x':<15}   {'bytes kept':>13} {'  s   m   l   x':<15}   "
              f"{'calls':>10}  name")
    sub = f"{'':>5} {'':>13} {'-- % mem(size) -':<15}   {'':>13} {'- % all kept --':<15}"
    lines = [legends.DIRECT, "", sub, header,
             _direct_row("<total>", all_allocated, totals.by_class, totals.kept_by_class, totals.calls,
                         all_allocated, all_kept)]
    shown = shown_rows(allocators, lambda f: sum(f.self_bytes), all_allocated, options)
    callers = tables.own_callers(model, [f.id for f in shown])
    for f in shown:
        via = tables.via_text(model, callers.get(f.id, []), sum(f.self_bytes))
        lines.append(_direct_row(model.label(f.id) + (f"  ({via})" if via else ""), sum(f.self_bytes), f.self_bytes,
                                 f.kept_bytes, f.self_calls, all_allocated, all_kept))
    return "\n".join(lines + left_out(len(shown), len(allocators)))


def call_graph(model: Model, options: Options) -> str:
    if not model.call_graph:
        return "Allocation call graph: not recorded (the profile was taken in mprof- mode)."
    total = model.table_bytes
    above = tables.graph_order(model, options.cutoff)
    # An entry's share is its own bytes: the entries shown account for the
    # bytes allocated, their callers above them.
    shown = above[:shown_count([_self_bytes(model, kind, key) for kind, key in above], total, options.limit)]
    entries = [tables.graph_entry(model, kind, key, index) for index, (kind, key) in enumerate(shown)]
    index = {(entry.kind, entry.key): entry.index for entry in entries}
    rule = "-" * 110
    lines = [legends.GRAPH, "",
             f"{'index':<6} {'self+desc':>9} {'self':>13} {'(%)':>5}  {'  s   m   l   x':<15}  "
             f"{'  s   m   l   x':<15}  {'called':>17}  name",
             f"{'':<6} {'':>9} {'':>13} {'':>5}  {'-- size ------':<15}  {'-- frac ------'}", rule]

    def name(function_id: int) -> str:
        number = index.get(("function", function_id))
        return f"{model.label(function_id)} [{number}]" if number is not None else model.label(function_id)

    def related(line: Related) -> str:
        calls = f"{line.calls:,}/{line.all_calls:,}"
        if line.frac_of is None:
            return f"{'':<6} {'':>9} {'':>13} {'':>5}  {'':<15}  {'':<15}  {calls:>17}      {name(line.function)}"
        return (f"{'':<6} {'':>9} {sum(line.bytes):>13,} {'':>5}  {classes(line.bytes, sum(line.bytes))}  "
                f"{classes(line.bytes, line.frac_of):<15}  {calls:>17}      {name(line.function)}")

    most = options.limit.related
    for entry in entries:
        lines += [related(line) for line in entry.callers[:most]]
        if entry.kind == "cycle":
            lines += _cycle_line(model, entry, total, name, most)
        else:
            f = model.functions[entry.key]
            called = f"{f.called:,}" + (f"+{f.recursive_calls:,}" if f.recursive_calls else "")
            self_bytes = sum(f.self_bytes)
            lines.append(f"{'[' + str(entry.index) + ']':<6} {f.total_bytes * 100 / total if total else 0:>9.1f} "
                         f"{self_bytes:>13,} {parenthesised(self_bytes, total):>5}  "
                         f"{classes(f.self_bytes, self_bytes)}  {'':<15}  {called:>17}  {name(f.id)}")
        lines += [related(line) for line in entry.callees[:most]]
        lines += _more_related(entry, most)
        lines.append(rule)
    return "\n".join(lines + left_out(len(entries), len(model.functions) + len(model.cycles)))


def _more_related(entry: GraphEntry, most: int | None) -> list[str]:
    """The line that says how many callers, callees or members the entry
    did not show."""
    if most is None:
        return []
    hidden = [(len(lines) - most, what) for lines, what in
              ((entry.callers, "callers"), (entry.callees, "callees"), (entry.members, "members")) if len(lines) > most]
    if not hidden:
        return []
    counts = ", ".join(f"{count:,} more {what}" for count, what in hidden)
    return [f"{'':<6} {'':>9} {'':>13} {'':>5}  ({counts}: --all shows them)"]


def _self_bytes(model: Model, kind: str, key: int) -> int:
    # A cycle's bytes are its members', counted at their own entries.
    return 0 if kind == "cycle" else sum(model.functions[key].self_bytes)


def _cycle_line(model: Model, entry: GraphEntry, total: int, name: Callable[[int], str],
                most: int | None) -> list[str]:
    """gprof's <cycle N as a whole> line, its members below."""
    cycle = model.cycles[entry.key]
    lines = [f"{'[' + str(entry.index) + ']':<6} "
             f"{cycle.total_bytes * 100 / total if total else 0:>9.1f} {cycle.self_bytes:>13,} "
             f"{parenthesised(cycle.self_bytes, total):>5}  {'':<15}  {'':<15}  "
             f"{f'{cycle.called:,}+{cycle.internal_calls:,}':>17}  <cycle {cycle.number} as a whole> "
             f"[{entry.index}]"]
    for member in entry.members[:most]:
        function = model.functions[member]
        self_bytes = sum(function.self_bytes)
        lines.append(f"{'':<6} {'':>9} {self_bytes:>13,} {'':>5}  {classes(function.self_bytes, self_bytes)}  "
                     f"{'':<15}  {f'{function.called:,}+{function.recursive_calls:,}':>17}      {name(member)}")
    return lines
