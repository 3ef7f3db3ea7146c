"""The mprof tables as text, in the layout of the paper's Figures 2 to 5,
and the program summary."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import legends
from .model import CycleRow, LeakRow, Model

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


def caller_first_ranks(model: Model) -> dict[int, int]:
    """A topological order of the call graph with cycles condensed: callers
    before callees, ties by name, so that equal totals list main first."""
    def node(function_id: int) -> tuple[int, int]:
        cycle = model.functions[function_id].cycle
        return (1, cycle) if cycle is not None else (0, function_id)

    successors: dict[tuple[int, int], set[tuple[int, int]]] = {}
    pending: dict[tuple[int, int], int] = {node(f): 0 for f in model.functions}
    for edge in model.edges:
        caller, callee = node(edge.caller), node(edge.callee)
        if caller != callee and callee not in successors.setdefault(caller, set()):
            successors[caller].add(callee)
            pending[callee] += 1

    def name(key: tuple[int, int]) -> str:
        return f"<cycle {key[1]}>" if key[0] else model.functions[key[1]].name

    ready = sorted((k for k, count in pending.items() if count == 0), key=name)
    ranks: dict[tuple[int, int], int] = {}
    while ready:
        key = ready.pop(0)
        ranks[key] = len(ranks)
        for successor in sorted(successors.get(key, ()), key=name):
            pending[successor] -= 1
            if pending[successor] == 0:
                ready.append(successor)
    return {f: ranks.get(node(f), len(ranks)) for f in model.functions}


def call_graph(model: Model, options: Options) -> str:
    if not model.call_graph:
        return "Allocation call graph: not recorded (the profile was taken in mprof- mode)."
    total = model.total_bytes or sum(sum(f.self_bytes) for f in model.functions.values())
    ranks = caller_first_ranks(model)
    # An entry per function, and gprof's entry for each cycle as a whole
    # just before its members; ordered by self+desc, callers first on ties.
    entries: list[tuple[str, int]] = [("function", f.id) for f in model.functions.values()]
    entries += [("cycle", c.number) for c in model.cycles.values()]

    def order(entry: tuple[str, int]) -> tuple[int, int, int, int, str]:
        kind, key = entry
        if kind == "cycle":
            cycle = model.cycles[key]
            return (-cycle.total_bytes, ranks[cycle.members[0]], 0, -1, f"<cycle {key}>")
        f = model.functions[key]
        return (-f.total_bytes, ranks[key], 1, sum(f.self_bytes), f.name)

    entries.sort(key=order)
    size_of = {("cycle", c.number): c.total_bytes for c in model.cycles.values()}
    size_of.update({("function", f.id): f.total_bytes for f in model.functions.values()})
    entries = [e for e in entries if not total or size_of[e] * 100 >= options.cutoff * total]
    index = {entry: n for n, entry in enumerate(entries)}
    rule = "-" * 110
    lines = [legends.GRAPH, "",
             f"{'index':<6} {'self+desc':>9} {'self':>13} {'(%)':>5}  {'  s   m   l   x':<15}  "
             f"{'  s   m   l   x':<15}  {'called':>17}  name",
             f"{'':<6} {'':>9} {'':>13} {'':>5}  {'-- size ------':<15}  {'-- frac ------':<15}", rule]

    def name(function_id: int) -> str:
        number = index.get(("function", function_id))
        return f"{model.label(function_id)} [{number}]" if number is not None else model.label(function_id)

    def related(edge_bytes: tuple[int, ...], frac_of: int | None, calls: str, who: str) -> str:
        """A caller or callee line; frac_of None: both ends in one cycle,
        where bytes over an edge count recursion again, so only calls show."""
        if frac_of is None:
            return f"{'':<6} {'':>9} {'':>13} {'':>5}  {'':<15}  {'':<15}  {calls:>17}      {who}"
        return (f"{'':<6} {'':>9} {sum(edge_bytes):>13,} {'':>5}  {classes(edge_bytes, sum(edge_bytes))}  "
                f"{classes(edge_bytes, frac_of):<15}  {calls:>17}      {who}")

    for kind, key in entries:
        if kind == "cycle":
            lines += _cycle_entry(model, model.cycles[key], index, total, name, related)
            lines.append(rule)
            continue
        entry = model.functions[key]
        same_cycle = {m for m in model.cycles[entry.cycle].members} if entry.cycle is not None else {entry.id}
        callers = sorted(model.callers.get(entry.id, []), key=lambda e: (-sum(e.bytes), e.caller))
        callees = sorted(model.callees.get(entry.id, []), key=lambda e: (-sum(e.bytes), e.callee))
        into = sum(sum(e.bytes) for e in callers if e.caller not in same_cycle)
        for edge in callers:
            inside = edge.caller in same_cycle
            lines.append(related(edge.bytes, None if inside else into,
                                 f"{edge.calls:,}/{entry.called + entry.recursive_calls:,}", name(edge.caller)))
        called = f"{entry.called:,}" + (f"+{entry.recursive_calls:,}" if entry.recursive_calls else "")
        self_bytes = sum(entry.self_bytes)
        lines.append(f"{'[' + str(index[(kind, key)]) + ']':<6} "
                     f"{entry.total_bytes * 100 / total if total else 0:>9.1f} "
                     f"{self_bytes:>13,} {parenthesised(self_bytes, total):>5}  "
                     f"{classes(entry.self_bytes, self_bytes)}  {'':<15}  {called:>17}  {name(entry.id)}")
        for edge in callees:
            callee = model.functions[edge.callee]
            inside = edge.callee in same_cycle
            lines.append(related(edge.bytes, None if inside else entry.total_bytes,
                                 f"{edge.calls:,}/{callee.called + callee.recursive_calls:,}", name(edge.callee)))
        lines.append(rule)
    return "\n".join(lines)


def _cycle_entry(model: Model, cycle: CycleRow, index: dict[tuple[str, int], int], total: int,
                 name: Callable[[int], str], related: Callable[..., str]) -> list[str]:
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
    lines = [related(tuple(row[1:]), into, f"{row[0]:,}/{cycle.called:,}", name(caller))
             for caller, row in sorted(outside.items(), key=lambda item: (-sum(item[1][1:]), item[0]))]
    lines.append(f"{'[' + str(index[('cycle', cycle.number)]) + ']':<6} "
                 f"{cycle.total_bytes * 100 / total if total else 0:>9.1f} {cycle.self_bytes:>13,} "
                 f"{parenthesised(cycle.self_bytes, total):>5}  {'':<15}  {'':<15}  "
                 f"{f'{cycle.called:,}+{cycle.internal_calls:,}':>17}  <cycle {cycle.number} as a whole> "
                 f"[{index[('cycle', cycle.number)]}]")
    for member in sorted(cycle.members, key=lambda m: (-sum(model.functions[m].self_bytes), model.functions[m].name)):
        function = model.functions[member]
        self_bytes = sum(function.self_bytes)
        lines.append(f"{'':<6} {'':>9} {self_bytes:>13,} {'':>5}  {classes(function.self_bytes, self_bytes)}  "
                     f"{'':<15}  {f'{function.called:,}+{function.recursive_calls:,}':>17}      {name(member)}")
    return lines
