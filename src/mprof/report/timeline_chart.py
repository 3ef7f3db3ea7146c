"""Memory over the run as a line chart: the live bytes, the resident set and
the memory the program mapped itself at each point the monitor took
(mprof(5)'s TIME), with the exact peak put in where it came, whether or not
a point fell on it; laid out on a 1000 x 200 grid for the page to scale."""

from __future__ import annotations

from dataclasses import dataclass

from .model import Model

WIDTH, HEIGHT = 1000, 200


@dataclass(frozen=True)
class TimelineChart:
    live: str  # SVG polyline points, "x,y x,y ..."
    resident: str  # the same for the resident set; empty when never read
    mapped: str  # and for the regions the program mapped itself; empty when it mapped none
    peak_x: float
    peak_y: float
    peak_bytes: int
    peak_seconds: float
    top_bytes: int  # what the chart's top edge stands for
    end_seconds: float  # and its right edge


def chart(model: Model) -> TimelineChart | None:
    """None for several processes (each has its own) or without points."""
    if len(model.runs) != 1 or not model.runs[0].timeline:
        return None
    run = model.runs[0]
    peak_bytes = model.summary.get("max_live_bytes", 0)
    peak_ns = model.summary.get("peak_ns", 0)
    points = sorted([*run.timeline, (peak_ns, peak_bytes, 0, 0, 0)], key=lambda point: point[0])
    end_ns = max(run.elapsed_ns, points[-1][0], 1)
    top = max(peak_bytes, *(max(point[3], point[4]) for point in points), 1)

    def x(ns: int) -> float:
        return round(ns * WIDTH / end_ns, 2)

    def y(size: int) -> float:
        return round(HEIGHT - size * HEIGHT / top, 2)

    live = " ".join(f"{x(ns)},{y(size)}" for ns, size, _, _, _ in points)
    resident = " ".join(f"{x(ns)},{y(size)}" for ns, _, _, size, _ in run.timeline if size)
    mapped = (" ".join(f"{x(point[0])},{y(point[4])}" for point in run.timeline)
              if any(point[4] for point in run.timeline) else "")
    return TimelineChart(live, resident, mapped, x(peak_ns), y(peak_bytes), peak_bytes, peak_ns / 1e9, top,
                         end_ns / 1e9)
