"""The comparison as text, in Gloger's layout: the workload block, then one
row per allocator with the units on a second heading line.  The columns'
cell texts serve the HTML report too."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..reducer.escape import printable
from .figures import Figures, Workload

MB = 1_000_000  # the papers' megabyte


def _fixed(value: float | None, digits: int, scale: float = 1) -> str:
    return "-" if value is None else f"{value / scale:.{digits}f}"


def _percent(value: float | None) -> str:
    # Times 100 rather than over 0.01, which is no exact binary fraction.
    return "-" if value is None else f"{value * 100:.1f}"


@dataclass(frozen=True)
class Column:
    title: str
    unit: str
    cell: Callable[[Figures], str]


COLUMNS: tuple[Column, ...] = (
    Column("User", "/s", lambda f: _fixed(f.user_ns, 3, 1e9)),
    Column("Sys", "/s", lambda f: _fixed(f.system_ns, 3, 1e9)),
    Column("ns/malloc", "", lambda f: _fixed(f.ns_per_malloc, 1)),
    Column("ns/free", "", lambda f: _fixed(f.ns_per_free, 1)),
    Column("Peak", "/MB", lambda f: _fixed(f.peak_resident_bytes, 2, MB)),
    Column("Live at peak", "/MB", lambda f: _fixed(f.live_at_peak_bytes, 2, MB)),
    Column("Waste at peak", "/%", lambda f: _percent(f.waste_at_peak)),
    Column("Average waste", "/%", lambda f: _percent(f.average_waste)),
    Column("Heap expansion", "(x)", lambda f: _fixed(f.heap_expansion, 2)),
    Column("Mapped", "/MB", lambda f: _fixed(f.peak_mapped_bytes, 2, MB)),
)
NAME_TITLE = "Implement."


def workload_rows(workload: Workload) -> list[tuple[str, str]]:
    """Gloger's block above each table: the operations, the most bytes live
    at once, and the time the program took to make them (none for a
    synthetic workload)."""
    duration = f"{workload.duration_ns / 1e9:.4f} s" if workload.duration_ns else "-"
    return [("Operations", str(workload.events)), ("malloc", str(workload.allocations)),
            ("free", str(workload.frees)), ("realloc", str(workload.reallocs)),
            ("max. size", str(workload.peak_live_bytes)), ("time", duration)]


def workload_lines(workload: Workload) -> list[str]:
    rows = workload_rows(workload)
    label = max(len(name) for name, _ in rows)
    value = max(len(text) for _, text in rows)
    return [f"{name:<{label}}  {text:>{value}}" for name, text in rows]


def table_lines(rows: Sequence[tuple[str, Figures]]) -> list[str]:
    """One row per allocator, numbers right-aligned under their headings."""
    names = [printable(name) for name, _ in rows]
    cells = [[column.cell(figures) for column in COLUMNS] for _, figures in rows]
    name_width = max([len(NAME_TITLE), *map(len, names)])
    widths = [max([len(column.title), len(column.unit), *(len(row[n]) for row in cells)])
              for n, column in enumerate(COLUMNS)]

    def line(first: str, texts: Sequence[str]) -> str:
        numbers = (f"{text:>{width}}" for text, width in zip(texts, widths, strict=True))
        return "  ".join([f"{first:<{name_width}}", *numbers])

    lines = [line(NAME_TITLE, [column.title for column in COLUMNS]),
             line("", [column.unit for column in COLUMNS]).rstrip()]
    lines += [line(name, row) for name, row in zip(names, cells, strict=True)]
    return lines


def render(source: str, order: str, repeat: int, workload: Workload, rows: Sequence[tuple[str, Figures]]) -> str:
    threads = f"{workload.threads} thread{'s' if workload.threads != 1 else ''}"
    heading = (f"Replay of {printable(source)}: {threads}, replayed in the {order} order, "
               f"medians of {repeat} replay{'s' if repeat != 1 else ''}")
    notes = ["ns/malloc and ns/free: less the do-nothing replay's; Peak: resident set; MB: 10^6 bytes."]
    return "\n".join([heading, "", *workload_lines(workload), "", *table_lines(rows), "", *notes]) + "\n"
