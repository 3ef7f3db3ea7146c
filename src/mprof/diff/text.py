"""mprof diff as text: the totals of both profiles, then for each view the
rows whose figures changed, the largest change of the chosen measure
first."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..report.folding import fold_paths, named_short
from ..report.model import Model
from .compare import Comparison, Row, View, measure_index

# The measures a row shows, by pprof name, and their column headings.
COLUMNS = (("alloc_space", "bytes"), ("alloc_objects", "blocks"), ("leak_space", "leaked"),
           ("peak_space", "at peak"), ("temp_objects", "temporaries"))
WIDTH = 13
PATH_WIDTH = 100  # as the report's


@dataclass(frozen=True)
class Options:
    sort: str  # a measure's name
    cutoff: float  # percent of the larger total of the sort measure
    top: int | None  # rows per view; None: all
    path_width: int | None = PATH_WIDTH  # longer paths fold library frames (report/folding.py); None: never


def signed(value: int) -> str:
    return f"{value:+,}" if value else "0"


def _percent(base: int, new: int) -> str:
    if base == new:
        return ""
    if base == 0:
        return "new"
    return f"{(new - base) * 100 / base:+,.1f}%"


def describe(model: Model) -> str:
    if len(model.runs) == 1:
        run = model.runs[0]
        return f"pid {run.pid}: {run.command_line or run.program}"
    programs = sorted({os.path.basename(run.program) for run in model.runs})
    return f"{len(model.runs)} processes of {', '.join(programs)}"


def _totals(comparison: Comparison) -> list[str]:
    width = max(len(measure.what) for measure in comparison.measures)
    lines = [f"{'':{width}}  {'base':>{WIDTH}}  {'new':>{WIDTH}}  {'change':>{WIDTH}}"]
    for index, measure in enumerate(comparison.measures):
        base, new = comparison.totals.base[index], comparison.totals.new[index]
        lines.append(f"{measure.what:{width}}  {base:>{WIDTH},}  {new:>{WIDTH},}  {signed(new - base):>{WIDTH}}"
                     f"  {_percent(base, new)}".rstrip())
    return lines


def shown(comparison: Comparison, view: View, options: Options) -> tuple[list[Row], int]:
    """The rows a view shows, and how many changed in all."""
    index = measure_index(comparison.measures, options.sort)
    threshold = None
    if options.cutoff:
        # A share of the larger total, so that a measure that fell to
        # nothing still has a scale.
        threshold = max(comparison.totals.base[index], comparison.totals.new[index]) * options.cutoff / 100
    return view.shown(index, threshold, options.top)


def _view(comparison: Comparison, view: View, options: Options) -> list[str]:
    rows, changed = shown(comparison, view, options)
    measure = comparison.measures[measure_index(comparison.measures, options.sort)]
    which = f"the {len(rows):,} largest of {changed:,} changed" if len(rows) < changed else f"{changed:,} changed"
    lines = [f"{view.title}, by change in {measure.what} (new - base): {which}"]
    if not rows:
        return lines + ["  none"]
    columns = [(measure_index(comparison.measures, name), heading) for name, heading in COLUMNS]
    lines.append("".join(f"{heading:>{WIDTH}} " for _, heading in columns) + " " + view.heading)
    with_paths = [row for row in rows if row.frames]
    short = named_short([row.key for row in with_paths], [tuple(frame.text for frame in row.frames)
                                                          for row in with_paths])
    paths = iter(fold_paths([row.frames if short[n] else row.whole_frames for n, row in enumerate(with_paths)],
                            [False] * len(with_paths), options.path_width))
    for row in rows:
        label = next(paths).text if row.frames else row.label
        lines.append("".join(f"{signed(row.change(index)):>{WIDTH}} " for index, _ in columns) +
                     f" {label}" + (f"  ({row.status})" if row.status != "changed" else ""))
    return lines


def render(comparison: Comparison, options: Options) -> str:
    lines = ["mprof diff: what changed from the base profile to the new one",
             f"  base  {describe(comparison.base)}", f"  new   {describe(comparison.new)}", ""]
    lines += _totals(comparison)
    for view in comparison.views:
        lines += ["", *_view(comparison, view, options)]
    return "\n".join(lines) + "\n"
