"""A pushed profile: one process's allocations over an interval of its run
and what was live at the interval's end, made from the profiles of two
snapshots of it, named as the continuous-profiling servers name a heap
profile's sample types."""

from __future__ import annotations

import array
from dataclasses import dataclass, field

from ..export import pprof
from ..report.measures import Measure
from ..report.model import Model, PathRow

# What each sample holds.  The alloc and temp figures count since the
# process started and are pushed as the interval's difference; the inuse
# ones are what was live at its end, every block, the runtimes' too.
PUSHED = (
    Measure("alloc_objects", "count", "blocks allocated in the interval", lambda path: path.allocs,
            lambda row: row.allocs),
    Measure("alloc_space", "bytes", "bytes allocated in the interval", lambda path: sum(path.bytes),
            lambda row: row.bytes),
    Measure("inuse_objects", "count", "blocks live at the interval's end", lambda path: path.allocs - path.frees,
            lambda row: row.allocs - row.frees),
    Measure("inuse_space", "bytes", "bytes live at the interval's end", lambda path: sum(path.bytes) - sum(path.freed),
            lambda row: row.bytes - row.bytes_freed),
    Measure("temp_objects", "count", "temporary blocks allocated in the interval", lambda path: path.temporaries,
            lambda row: row.temporaries),
)
_SINCE_START = (True, True, False, False, True)
DEFAULT_SAMPLE = "inuse_space"


@dataclass
class PathKeys:
    """Numbers a whole call path by what its frames are, so that a path is
    the same number in every snapshot of a process (each reduction numbers
    its nodes afresh)."""
    _numbers: dict[tuple[int, str, str, str, int, bool, str], int] = field(default_factory=dict)

    def of(self, model: Model) -> list[int]:
        """The number of each of model.paths, in its order."""
        tree = model.tree
        parents = tree.parents()
        known: dict[int, int] = {}

        def number(node: int | None, runtime: str) -> int:
            if node is None:
                return self._intern((-1, "", "", "", 0, False, runtime))
            chain = []
            while node is not None and node not in known:
                chain.append(node)
                node = parents[node]
            above = -1 if node is None else known[node]
            for each in reversed(chain):
                frame = tree.node(each)
                function = model.functions[frame.function]
                above = known[each] = self._intern((above, function.full_name, function.module, frame.file,
                                                    frame.line, frame.inlined, ""))
            return above if not runtime else self._intern((above, "", "", "", 0, False, runtime))

        return [number(path.node, path.runtime) for path in model.paths]

    def _intern(self, frame: tuple[int, str, str, str, int, bool, str]) -> int:
        return self._numbers.setdefault(frame, len(self._numbers))


@dataclass
class Counts:
    """A process's figures at its last snapshot pushed: where the next
    interval starts."""
    image_start_ns: int  # the process image's start: an exec starts counting afresh
    time_ns: int
    by_path: dict[int, tuple[int, ...]]  # each path's figures of PUSHED since the start, by PathKeys number


def taken_at(model: Model) -> tuple[int, int]:
    """When the run of the profile's one process started, and when the
    profile was taken, in ns since the epoch."""
    run = model.runs[0]
    return run.start_unix_ns, run.start_unix_ns + run.elapsed_ns


def interval_profile(model: Model, keys: PathKeys, since: Counts | None) -> tuple[bytes, Counts]:
    """The gzipped pprof profile of the interval from since (None: from the
    start) to the snapshot model is the profile of, and the counts the next
    interval starts from."""
    start_ns, time_ns = taken_at(model)
    if since is not None and since.image_start_ns != start_ns:
        since = None  # an exec's new image: counted from its start
    previous = since.by_path if since is not None else {}
    numbers = keys.of(model)
    figures: dict[int, tuple[int, ...]] = {}
    for number, path in zip(numbers, model.paths, strict=True):
        own = _figures(path)
        known = figures.get(number)
        figures[number] = own if known is None else tuple(map(int.__add__, known, own))
    values = array.array("q")
    pushed: set[int] = set()
    for number in numbers:
        # Two rows of one number (never seen, but nothing forbids it): the
        # first carries both.
        if number in pushed:
            values.extend([0] * len(PUSHED))
            continue
        pushed.add(number)
        now, before = figures[number], previous.get(number)
        values.extend(max(value - before[m], 0) if cumulative and before else value
                      for m, (cumulative, value) in enumerate(zip(_SINCE_START, now, strict=True)))
    duration_ns = time_ns - (since.time_ns if since is not None else start_ns)
    data = pprof.profile(model, PUSHED, DEFAULT_SAMPLE, pprof.Interval(values, time_ns, max(duration_ns, 0)))
    return data, Counts(start_ns, time_ns, figures)


def whole_run_profile(model: Model) -> bytes:
    """The gzipped pprof profile of the runs of the profile, as one
    interval from the first one's start to the last one's end."""
    start_ns = min(run.start_unix_ns for run in model.runs)
    end_ns = max(run.start_unix_ns + run.elapsed_ns for run in model.runs)
    return pprof.profile(model, PUSHED, DEFAULT_SAMPLE, pprof.Interval(None, end_ns, end_ns - start_ns))


def _figures(path: PathRow) -> tuple[int, ...]:
    return tuple(measure.of(path) for measure in PUSHED)
