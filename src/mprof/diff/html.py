"""mprof diff --html: one self-contained page of the comparison, drawn with
the report's templates (report/templates/diff.html): the totals,
differential flame graphs, and each view's largest changes."""

from __future__ import annotations

from dataclasses import dataclass

from ..report.flame import Flame
from ..report.html import environment
from .compare import Comparison, measure_index
from .flame import differential
from .text import COLUMNS, Options, describe, shown, signed

# Rows of each view on the page; the JSON output has them all.
PAGE_ROWS = 50


@dataclass(frozen=True)
class FlameView:
    id: str
    title: str
    unit: str
    graph: Flame


@dataclass(frozen=True)
class TableView:
    title: str
    heading: str  # of the label column
    rows: list[tuple[list[str], str, str]]  # changes, label, status
    changed: int


def render(comparison: Comparison, options: Options) -> str:
    totals = [(measure.what, comparison.totals.base[index], comparison.totals.new[index],
               signed(comparison.totals.change(index))) for index, measure in enumerate(comparison.measures)]
    flames = [FlameView(f"diff-{name}", title, comparison.measures[measure_index(comparison.measures, name)].unit,
                        differential(comparison, name))
              for name, title in (("alloc_space", "Bytes allocated"), ("leak_space", "Bytes leaked"),
                                  ("peak_space", "Bytes live at the peak"))]
    columns = [measure_index(comparison.measures, name) for name, _ in COLUMNS]
    tables = []
    for view in comparison.views:
        rows, changed = shown(comparison, view, Options(options.sort, options.cutoff, PAGE_ROWS))
        tables.append(TableView(view.title, view.heading,
                                [([signed(row.change(index)) for index in columns], row.label,
                                  "" if row.status == "changed" else row.status) for row in rows], changed))
    sort = comparison.measures[measure_index(comparison.measures, options.sort)]
    return environment().get_template("diff.html").render(
        base=describe(comparison.base), new=describe(comparison.new), totals=totals, flames=flames,
        headings=[heading for _, heading in COLUMNS], tables=tables, sort=sort.what)
