"""What the live view shows, as lines of text: the process's figures, its
memory over the run, its leak kinds when the user asked for them
(leaks.py), and the top whole call paths by the chosen order.  Kept apart
from the terminal (screen.py) so that what it says can be checked without
one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..report import tables
from .leaks import leak_lines
from .numbers import compact, duration
from .sample import PathFigures, Sample


@dataclass(frozen=True)
class Order:
    key: str  # the key that chooses it
    title: str
    label: str  # its name in the keys line
    figure: Callable[[PathRow], float]


@dataclass(frozen=True)
class PathRow:
    figures: PathFigures
    allocs_per_second: float  # since the sample before, else since the start
    growth: int  # live bytes since the view's first sample


ORDERS = (
    Order("l", "live bytes", "live", lambda row: row.figures.live_bytes),
    Order("a", "allocations/s", "allocs/s", lambda row: row.allocs_per_second),
    Order("t", "temporaries", "temps", lambda row: row.figures.temporaries),
    Order("g", "growth since the view began", "growth", lambda row: row.growth),
)
ORDER_KEYS = "".join(order.key for order in ORDERS)
# Asks for one answer with the live blocks classified: never on its own,
# as the process stops every thread for the scan.
CLASSIFY_KEY = "c"
# Short enough to share a line with "by allocations/s" in 80 columns.
KEYS = "[" + "  ".join([*(f"{order.key}:{order.label}" for order in ORDERS), f"{CLASSIFY_KEY}:classify",
                        "q:quit"]) + "]"
# The sparklines' levels, in ASCII: a plain terminal has no block characters.
LEVELS = " _.-~=+*#"


@dataclass
class ViewState:
    """The samples the view compares, and what the user chose."""
    pid: int
    first: Sample | None = None  # the view's first: growth is counted from it
    previous: Sample | None = None
    current: Sample | None = None
    order: Order = ORDERS[0]
    resident: int | None = None  # the resident set, read by the viewer itself
    ended: bool = False
    note: str = ""  # a line for the user: waiting, a warning
    classified: Sample | None = None  # the last sample with the live blocks classified, shown until the next
    classifying: bool = False  # asked to classify, not yet answered
    refused: bool = False  # the answer to the last ask to classify came without the leak kinds

    def add(self, sample: Sample, asked_to_classify: bool = False) -> None:
        """asked_to_classify: the sample answers a request to classify."""
        if self.first is None:
            self.first = sample
        self.previous, self.current = self.current, sample
        if sample.classified:
            self.classified, self.classifying, self.refused = sample, False, False
        elif asked_to_classify:
            self.classifying, self.refused = False, True

    def choose(self, key: str) -> bool:
        for order in ORDERS:
            if order.key == key:
                self.order = order
                return True
        return False

    def rows(self) -> list[PathRow]:
        current = self.current
        if current is None:
            return []
        previous, first = self.previous, self.first
        assert first is not None
        seconds = ((current.elapsed_ns - previous.elapsed_ns) if previous else current.elapsed_ns) / 1e9
        rows = []
        for key, figures in current.paths.items():
            before = previous.paths.get(key) if previous else None
            allocs = figures.allocs - (before.allocs if before else 0)
            started = first.paths.get(key)
            rows.append(PathRow(figures, allocs / seconds if seconds > 0 else 0.0,
                                figures.live_bytes - (started.live_bytes if started else 0)))
        figure = self.order.figure
        rows = [row for row in rows if figure(row)]
        rows.sort(key=lambda row: (-figure(row), -row.figures.live_bytes, row.figures.names))
        return rows


def _size(value: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    raise AssertionError


def sparkline(values: list[int], width: int) -> str:
    """values (oldest first) as width characters, each the highest of the
    values it stands for, scaled to the highest of all."""
    if not values or width <= 0:
        return ""
    # Fewer values than width: a column each.
    count = min(width, len(values))
    columns = [max(values[n * len(values) // count:(n + 1) * len(values) // count]) for n in range(count)]
    top = max(columns) or 1
    return "".join(LEVELS[min(len(LEVELS) - 1, value * (len(LEVELS) - 1) // top + (value > 0))] for value in columns)


def lines(state: ViewState, width: int, height: int) -> list[str]:
    """The screen, a line each, none wider than width; no more than height."""
    current = state.current
    program = current.model.runs[0].command_line or current.model.runs[0].program if current else ""
    status = "ended" if state.ended else f"at {duration(current.elapsed_ns)}" if current else "waiting"
    out = [f"mprof top  pid {state.pid}  {status}  {program}"]
    if current is None:
        out += ["", state.note or "waiting for the first figures"]
    else:
        resident = f"{state.resident:,} bytes" if state.resident is not None else "-"
        out.append(f"live {current.live_bytes:,} bytes in {tables.blocks(current.live_blocks)}   "
                   f"peak {current.peak_bytes:,} bytes at {duration(current.peak_ns)}")
        assert state.first is not None
        out.append(f"resident {resident}   growth {current.live_bytes - state.first.live_bytes:+,} bytes "
                   "since the view began")
        points = current.timeline
        for label, column in (("live", 1), ("resident", 3)):
            values = [point[column] for point in points]
            out.append(f"{label:<8} {_size(max(values, default=0)):>11} |{sparkline(values, width - 22)}")
        out += leak_lines(state.classified, state.classifying, state.refused, width)
        # Two lines where one would be cut: the keys are the way out.
        by, hint = f"by {state.order.title}", KEYS
        out += [f"{by}   {hint}"] if len(by) + 3 + len(hint) <= width else [by, hint]
        out.append(state.note)
        heading = f"{'live bytes':>14} {'blocks':>6} {'allocs/s':>8} {'temps':>6} {'growth':>7}  path"
        out.append(heading)
        rows = state.rows()[:max(0, height - len(out))]
        shown = tables.shown_whole_paths(
            current.model, [tables.WholePath(row.figures.functions, row.figures.live_blocks, row.figures.live_bytes)
                            for row in rows], max(20, width - len(heading) + len("path")))
        for row, path in zip(rows, shown, strict=True):
            out.append(f"{row.figures.live_bytes:>14,} {compact(row.figures.live_blocks):>6} "
                       f"{compact(row.allocs_per_second):>8} {compact(row.figures.temporaries):>6} "
                       f"{compact(row.growth, binary=True, sign=True):>7}  {path.text}")
        if not rows:
            out.append(f"{'':>14} (no path has any {state.order.title})")
    return [line[:width] for line in out[:height]]
