"""A replay's footprint as a line chart: each allocator's resident memory
over its median replay, and the bytes live, against the events replayed;
laid out on timeline_chart's 1000 x 200 grid for the page to scale."""

from __future__ import annotations

from dataclasses import dataclass

from .replays import StoredReplay
from .timeline_chart import HEIGHT, WIDTH

# Distinct colours for the allocators' lines (report.css's series-N); more
# allocators than this reuse them, their legend still tells them apart.
SERIES = 6


@dataclass(frozen=True)
class Line:
    name: str
    series: int  # its colour
    points: str  # SVG polyline points, "x,y x,y ..."
    peak_bytes: int


@dataclass(frozen=True)
class ReplayChart:
    lines: tuple[Line, ...]  # one per allocator, in the table's order
    live: str  # the bytes live, the same for every allocator
    top_bytes: int  # what the chart's top edge stands for
    end_events: int  # and its right edge


def chart(replay: StoredReplay) -> ReplayChart | None:
    """None when no allocator's replay has samples."""
    sampled = [allocator for allocator in replay.allocators if allocator.samples]
    if not sampled:
        return None
    end = max(replay.workload.events, *(sample.events for a in sampled for sample in a.samples), 1)
    top = max(replay.workload.peak_live_bytes,
              *(max(s.resident_bytes, s.live_bytes) for a in sampled for s in a.samples), 1)

    def point(events: int, size: int) -> str:
        return f"{round(events * WIDTH / end, 2)},{round(HEIGHT - size * HEIGHT / top, 2)}"

    lines = tuple(Line(allocator.name, index % SERIES,
                       " ".join(point(s.events, s.resident_bytes) for s in allocator.samples),
                       allocator.figures.peak_resident_bytes)
                  for index, allocator in enumerate(replay.allocators) if allocator.samples)
    live = " ".join(point(s.events, s.live_bytes) for s in sampled[0].samples)
    return ReplayChart(lines, live, top, end)
