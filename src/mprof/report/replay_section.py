"""What the page's Allocators section shows of each stored replay: the
workload, the allocators side by side with the text table's cells, and the
footprint chart.  Text from the program's world is made printable here."""

from __future__ import annotations

from dataclasses import dataclass

from ..reducer.escape import printable
from ..replay import text
from .replay_chart import SERIES, ReplayChart, chart
from .replays import StoredReplay


@dataclass(frozen=True)
class AllocatorLine:
    name: str
    library: str
    series: int  # its line's colour in the chart
    cells: tuple[str, ...]  # as text.COLUMNS give them


@dataclass(frozen=True)
class ReplayView:
    source: str
    description: str
    workload: tuple[tuple[str, str], ...]  # Gloger's block: label, value
    columns: tuple[tuple[str, str], ...]  # title, unit
    rows: tuple[AllocatorLine, ...]
    chart: ReplayChart | None


def views(replays: list[StoredReplay]) -> list[ReplayView]:
    result = []
    for replay in replays:
        w = replay.workload
        threads = f"{w.threads} thread{'s' if w.threads != 1 else ''}"
        description = (f"{threads}, replayed in the {replay.order} order; each figure the median of "
                       f"{replay.repeats} replay{'s' if replay.repeats != 1 else ''}")
        workload = tuple((line[0], line[1]) for line in text.workload_rows(w))
        rows = tuple(AllocatorLine(printable(a.name), printable(a.library), index % SERIES,
                                   tuple(column.cell(a.figures) for column in text.COLUMNS))
                     for index, a in enumerate(replay.allocators))
        result.append(ReplayView(printable(replay.source), description, workload,
                                 tuple((column.title, column.unit) for column in text.COLUMNS), rows, chart(replay)))
    return result
