"""The mprof tables as text, in the layout of the paper's Figures 2 to 5,
and the program summary."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from . import legends
from .model import LeakRow, Model

TABLES = ("summary", "leaks", "bins", "direct", "graph")


@dataclass(frozen=True)
class Options:
    tables: tuple[str, ...] = TABLES
    cutoff: float = 0.0  # percent; rows below it are left out
    call_sites: bool = False  # leak paths name file:line of each call
    wide: bool = False  # leak paths are never shortened
    path_width: int = 100


def percent(part: int, whole: int) -> str:
    """Whole percent, blank below 1% as in the paper."""
    if whole <= 0 or part * 100 < whole:
        return ""
    return f"{part * 100 // whole}"


def parenthesised(part: int, whole: int) -> str:
    share = percent(part, whole)
    return f"({share})" if share else ""


def classes(parts: Sequence[int], whole: int) -> str:
    return " ".join(f"{percent(p, whole):>3}" for p in parts)


def render(model: Model, options: Options) -> str:
    sections = []
    for table in options.tables:
        if table == "summary":
            sections.append(summary_table(model))
        elif table == "leaks":
            sections.append(leak_table(model, options))
        elif table == "bins":
            sections.append(bin_table(model, options))
        elif table == "direct":
            sections.append(direct_table(model, options))
        elif table == "graph":
            sections.append(call_graph(model, options))
    return "\n\n".join(sections) + "\n"


def summary_table(model: Model) -> str:
    s = model.summary
    allocs, allocated = s.get("allocs", 0), s.get("bytes_allocated", 0)
    seconds = s.get("elapsed_ns", 0) / 1e9
    lines = ["Program summary"]
    for run in model.runs:
        origin = "fork child" if run.forked else "process"
        lines.append(f"  {origin} {run.pid}: {run.command_line or run.program}"
                     f"{'' if run.final else '  (snapshot)'}{'' if run.call_graph else '  (mprof- mode)'}")
    rows = [
        ("allocations", f"{allocs:,} blocks, {allocated:,} bytes, {allocated / allocs if allocs else 0:,.1f} "
                        "bytes on average"),
        ("frees", f"{s.get('frees', 0):,} blocks, {s.get('bytes_freed', 0):,} bytes"),
        ("kept at exit", f"{allocs - s.get('frees', 0):,} blocks, {model.kept_bytes:,} bytes"),
        ("most live", f"{s.get('max_live_objects', 0):,} blocks, {s.get('max_live_bytes', 0):,} bytes"),
        ("run time", f"{seconds:.3f} s, {allocated / seconds if seconds else 0:,.0f} bytes/s, "
                     f"{allocs / seconds if seconds else 0:,.0f} allocations/s"),
        ("calls", ", ".join(f"{name} {s.get(key, 0):,}" for name, key in (
            ("malloc", "malloc_calls"), ("calloc", "calloc_calls"), ("realloc", "realloc_calls"),
            ("memalign", "memalign_calls"), ("new", "new_calls"), ("free", "free_calls"),
            ("delete", "delete_calls")))),
        ("unusual", ", ".join(f"{name} {s.get(key, 0):,}" for name, key in (
            ("free(NULL)", "free_null"), ("unknown frees", "unknown_frees"), ("failed", "failed_allocs"),
            ("early", "early_allocs"), ("untracked", "untracked_allocs"),
            ("inherited frees", "inherited_frees"), ("truncated chains", "truncated_chains")))),
    ]
    lines += [f"  {label:<13} {value}" for label, value in rows]
    return "\n".join(lines)


def _path(model: Model, leak: LeakRow, options: Options) -> str:
    names = []
    for frame in reversed(leak.frames):
        name = model.functions[frame.function].name
        if options.call_sites and frame.line:
            name += f":{frame.line}"
        names.append(name)
    text = " > ".join(names)
    if leak.frames and model.functions[leak.frames[-1].function].name != "main":
        text = "... > " + text
    if not options.wide and len(text) > options.path_width:
        text = "... " + text[len(text) - options.path_width + 4:]
    return text


def leak_table(model: Model, options: Options) -> str:
    kept_total = model.kept_bytes
    merged: dict[str, list[int]] = {}
    for leak in model.leaks:
        kept = leak.bytes - leak.bytes_freed
        if leak.allocs == leak.frees:
            continue
        row = merged.setdefault(_path(model, leak, options), [0, 0])
        row[0] += leak.allocs - leak.frees
        row[1] += kept
    rows = sorted(merged.items(), key=lambda item: (-item[1][1], item[0]))
    lines = [legends.LEAKS, "", f"{'objects':>10} {'bytes':>12} {'(%)':>5}  path"]
    for path, (objects, kept) in rows:
        if kept_total and kept * 100 < options.cutoff * kept_total:
            continue
        lines.append(f"{objects:>10,} {kept:>12,} {parenthesised(kept, kept_total):>5}  {path}")
    if not rows:
        lines.append(f"{'':>10} {'':>12} {'':>5}  (nothing kept)")
    return "\n".join(lines)


def bin_table(model: Model, options: Options) -> str:
    allocated = sum(b.bytes for b in model.bins)
    kept_total = sum(b.bytes - b.bytes_freed for b in model.bins)
    lines = [legends.BINS, "",
             f"{'size':>7} {'allocs':>10} {'bytes':>13} {'(%)':>5} {'frees':>10} {'kept':>13} {'(%)':>5}  types"]
    for b in model.bins:
        if allocated and b.bytes * 100 < options.cutoff * allocated and b.bytes_freed == b.bytes:
            continue
        size = "> 1024" if b.size > 1024 else str(b.size)
        kept = b.bytes - b.bytes_freed
        lines.append(f"{size:>7} {b.allocs:>10,} {b.bytes:>13,} {parenthesised(b.bytes, allocated):>5} "
                     f"{b.frees:>10,} {kept:>13,} {parenthesised(kept, kept_total):>5}  {b.types}".rstrip())
    lines.append(f"{'<total>':>7} {sum(b.allocs for b in model.bins):>10,} {allocated:>13,} {'':>5} "
                 f"{sum(b.frees for b in model.bins):>10,} {kept_total:>13,}")
    return "\n".join(lines)


def _direct_row(label: str, total: int, allocated: tuple[int, ...], kept: tuple[int, ...], calls: int,
                all_allocated: int, all_kept: int) -> str:
    return (f"{percent(total, all_allocated) if label != '<total>' else '':>5} {total:>13,} "
            f"{classes(allocated, all_allocated)}   {sum(kept):>13,} {classes(kept, all_kept)}   "
            f"{calls:>10,}  {label}")


def direct_table(model: Model, options: Options) -> str:
    allocators = [f for f in model.functions.values() if f.self_calls]
    all_allocated = sum(sum(f.self_bytes) for f in allocators)
    all_kept = sum(sum(f.kept_bytes) for f in allocators)
    header = (f"{'% mem':>5} {'bytes':>13} {'  s   m   l   x':<15}   {'bytes kept':>13} {'  s   m   l   x':<15}   "
              f"{'calls':>10}  name")
    sub = f"{'':>5} {'':>13} {'-- % mem(size) -':<15}   {'':>13} {'- % all kept --':<15}"
    totals_by_class = tuple(sum(f.self_bytes[c] for f in allocators) for c in range(4))
    kept_by_class = tuple(sum(f.kept_bytes[c] for f in allocators) for c in range(4))
    lines = [legends.DIRECT, "", sub, header,
             _direct_row("<total>", all_allocated, totals_by_class, kept_by_class,
                         sum(f.self_calls for f in allocators), all_allocated, all_kept)]
    for f in sorted(allocators, key=lambda f: (-sum(f.self_bytes), f.name)):
        if all_allocated and sum(f.self_bytes) * 100 < options.cutoff * all_allocated:
            continue
        lines.append(_direct_row(model.label(f.id), sum(f.self_bytes), f.self_bytes, f.kept_bytes, f.self_calls,
                                 all_allocated, all_kept))
    return "\n".join(lines)


def call_graph(model: Model, options: Options) -> str:
    if not model.call_graph:
        return "Allocation call graph: not recorded (the profile was taken in mprof- mode)."
    total = model.total_bytes or sum(sum(f.self_bytes) for f in model.functions.values())
    # Ties go to the function that allocates less itself, so a caller comes
    # before the callees it shares its total with (main first, as gprof).
    entries = sorted(model.functions.values(), key=lambda f: (-f.total_bytes, sum(f.self_bytes), f.name, f.id))
    entries = [f for f in entries if not total or f.total_bytes * 100 >= options.cutoff * total]
    index = {f.id: n for n, f in enumerate(entries)}
    rule = "-" * 110
    lines = [legends.GRAPH, "",
             f"{'index':<6} {'self+desc':>9} {'self':>13} {'(%)':>5}  {'  s   m   l   x':<15}  "
             f"{'  s   m   l   x':<15}  {'called':>17}  name",
             f"{'':<6} {'':>9} {'':>13} {'':>5}  {'-- size ------':<15}  {'-- frac ------':<15}", rule]

    def name(function_id: int) -> str:
        number = index.get(function_id)
        return f"{model.label(function_id)} [{number}]" if number is not None else model.label(function_id)

    for entry in entries:
        callers = sorted(model.callers.get(entry.id, []), key=lambda e: (-sum(e.bytes), e.caller))
        callees = sorted(model.callees.get(entry.id, []), key=lambda e: (-sum(e.bytes), e.callee))
        into = [sum(e.bytes[c] for e in callers if e.caller != entry.id) for c in range(4)]
        for edge in callers:
            calls = f"{edge.calls:,}/{entry.called + entry.recursive_calls:,}"
            lines.append(f"{'':<6} {'':>9} {sum(edge.bytes):>13,} {'':>5}  {classes(edge.bytes, sum(edge.bytes))}  "
                         f"{classes(edge.bytes, sum(into)) if edge.caller != entry.id else '':<15}  "
                         f"{calls:>17}      {name(edge.caller)}")
        called = f"{entry.called:,}" + (f"+{entry.recursive_calls:,}" if entry.recursive_calls else "")
        self_bytes = sum(entry.self_bytes)
        lines.append(f"{'[' + str(index[entry.id]) + ']':<6} {entry.total_bytes * 100 / total if total else 0:>9.1f} "
                     f"{self_bytes:>13,} {parenthesised(self_bytes, total):>5}  "
                     f"{classes(entry.self_bytes, self_bytes)}  {'':<15}  {called:>17}  {name(entry.id)}")
        for edge in callees:
            callee = model.functions[edge.callee]
            calls = f"{edge.calls:,}/{callee.called + callee.recursive_calls:,}"
            lines.append(f"{'':<6} {'':>9} {sum(edge.bytes):>13,} {'':>5}  {classes(edge.bytes, sum(edge.bytes))}  "
                         f"{classes(edge.bytes, entry.total_bytes) if edge.callee != entry.id else '':<15}  "
                         f"{calls:>17}      {name(edge.callee)}")
        lines.append(rule)
    for cycle in model.cycles.values():
        members = ", ".join(f"{model.functions[m].name} [{index[m]}]" if m in index else model.functions[m].name
                            for m in cycle.members)
        lines.append(f"<cycle {cycle.number}> as a whole: {cycle.total_bytes:,} bytes with descendants, "
                     f"{cycle.self_bytes:,} allocated by its members, called {cycle.called:,} times "
                     f"(+{cycle.internal_calls:,} within); members: {members}")
    return "\n".join(lines)
