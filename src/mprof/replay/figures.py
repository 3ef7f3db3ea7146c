"""The figures of a replay: what mprof-replay measured (its JSON, checked),
and what the papers made of it: Gloger's waste, Detlefs, Dosser and Zorn's
cost per call and heap expansion, medians over the repeats."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from ..reducer.errors import MprofError

ORDERS = ("threads", "recorded")


def _whole(data: Mapping[str, object], key: str, where: str) -> int:
    value = data.get(key)
    # bool is an int to Python; JSON's true is no count.
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise MprofError(f"{where}: no whole number {key!r} in its figures")
    return value


def _digest(data: Mapping[str, object], key: str, where: str) -> int:
    # mprof-replay writes the 64-bit digest as 16 hexadecimal digits, which
    # no JSON reader rounds to a double.
    value = data.get(key)
    if isinstance(value, str):
        try:
            return int(value, 16)
        except ValueError:
            pass
    return _whole(data, key, where)


@dataclass(frozen=True)
class Workload:
    """The trace as mprof-replay prepare (or synthetic) found it."""
    events: int
    threads: int
    allocations: int
    frees: int
    reallocs: int
    bytes_allocated: int
    peak_live_bytes: int
    peak_live_blocks: int
    unmatched_frees: int
    duration_ns: int  # from the first event to the last as recorded; 0 for a synthetic workload
    max_size: int  # the largest block asked for
    live_digest: int  # of the live bytes after each event, in the recorded order

    @classmethod
    def from_json(cls, data: Mapping[str, object], where: str) -> Workload:
        return cls(**{field.name: (_digest if field.name == "live_digest" else _whole)(data, field.name, where)
                      for field in fields(cls)})


@dataclass(frozen=True)
class Sample:
    """A moment of a replay: its events done so far, the bytes live, and the
    process's resident and mapped memory less its own before the replay."""
    events: int
    live_bytes: int
    resident_bytes: int
    mapped_bytes: int


# The counts a replay must reproduce exactly, whatever the allocator.
_COUNTS = ("events", "allocations", "frees", "reallocs", "bytes_allocated")


@dataclass(frozen=True)
class Replay:
    """One mprof-replay run: one allocator, one repeat, its own process."""
    allocator_library: str | None
    order: str
    events: int
    allocations: int
    frees: int
    reallocs: int
    bytes_allocated: int
    peak_live_bytes: int
    peak_live_blocks: int
    live_digest: int | None  # only in the recorded order, where the live-bytes curve is the trace's
    wall_ns: int
    user_ns: int
    system_ns: int
    alloc_ns: int  # inside the allocation calls, all of them
    realloc_ns: int
    free_ns: int
    baseline_resident_bytes: int  # the replayer's own before the replay
    baseline_mapped_bytes: int
    peak_resident_bytes: int  # the high-water mark less the baseline
    peak_mapped_bytes: int
    live_at_peak_bytes: int  # live when the resident set was at its highest
    samples: tuple[Sample, ...]

    @classmethod
    def from_json(cls, data: Mapping[str, object], where: str) -> Replay:
        library = data.get("allocator_library")
        order = data.get("order")
        digest = data.get("live_digest")
        raw_samples = data.get("samples")
        if library is not None and not isinstance(library, str):
            raise MprofError(f"{where}: allocator_library is not a string")
        if order not in ORDERS:
            raise MprofError(f"{where}: order is {order!r}, not one of {', '.join(ORDERS)}")
        if not isinstance(raw_samples, list):
            raise MprofError(f"{where}: no list of samples in its figures")
        samples = []
        for sample in raw_samples:
            if (not isinstance(sample, list) or len(sample) != 4
                    or not all(isinstance(n, int) and not isinstance(n, bool) for n in sample)):
                raise MprofError(f"{where}: a sample is not four whole numbers")
            samples.append(Sample(*sample))
        numbers = {field.name: _whole(data, field.name, where) for field in fields(cls)
                   if field.name not in ("allocator_library", "order", "live_digest", "samples")}
        return cls(allocator_library=library, order=str(order),
                   live_digest=None if digest is None else _digest(data, "live_digest", where),
                   samples=tuple(samples), **numbers)


def check(replay: Replay, workload: Workload, order: str, where: str) -> None:
    """A replay that did not play the trace as recorded measured something
    else: refuse its figures."""
    if replay.order != order:
        raise MprofError(f"{where}: replayed in the {replay.order} order, not the {order} one asked for")
    compared = list(_COUNTS)
    # Threads replayed as threads interleave their own way: each block is
    # the same, the moments at which they are live together are not.
    if workload.threads == 1 or order == "recorded":
        compared += ["peak_live_bytes", "peak_live_blocks"]
    for name in compared:
        got, expected = getattr(replay, name), getattr(workload, name)
        if got != expected:
            raise MprofError(f"{where}: replayed {name.replace('_', ' ')} {got}, the trace has {expected}")
    if replay.live_digest is not None and replay.live_digest != workload.live_digest:
        raise MprofError(f"{where}: the live bytes after some event differ from the trace's")


@dataclass(frozen=True)
class Figures:
    """One row of the papers' table: of one replay, or the medians of an
    allocator's.  None where the figure is undefined (no call to time, no
    memory to divide by)."""
    wall_ns: int
    user_ns: int
    system_ns: int
    ns_per_malloc: float | None  # less the do-nothing replay's
    ns_per_realloc: float | None
    ns_per_free: float | None
    peak_resident_bytes: int
    peak_mapped_bytes: int
    live_at_peak_bytes: int
    waste_at_peak: float | None  # a fraction: Gloger's waste at peak allocation time
    average_waste: float | None  # Gloger's average waste, over the samples
    heap_expansion: float | None  # Detlefs, Dosser and Zorn: maximum heap over maximum live bytes


def _per_call(total_ns: int, null_ns: int, calls: int) -> float | None:
    if calls == 0:
        return None
    # Noise can put an allocator's calls below the do-nothing replay's; a
    # negative cost means nothing, so 0 stands for "too small to measure".
    return max(0.0, (total_ns - null_ns) / calls)


def _waste(live: int, resident: int) -> float:
    # Not clamped: a resident set below the live bytes (pages of a large
    # block never touched) is what the kernel said, and shows as below 0.
    return 1 - live / resident


def figures_of(replay: Replay, null: Replay) -> Figures:
    """One replay's figures; null is the do-nothing replay of the same round,
    run moments before it on the same machine."""
    wasted = [_waste(s.live_bytes, s.resident_bytes) for s in replay.samples if s.resident_bytes > 0]
    return Figures(
        wall_ns=replay.wall_ns, user_ns=replay.user_ns, system_ns=replay.system_ns,
        ns_per_malloc=_per_call(replay.alloc_ns, null.alloc_ns, replay.allocations),
        ns_per_realloc=_per_call(replay.realloc_ns, null.realloc_ns, replay.reallocs),
        ns_per_free=_per_call(replay.free_ns, null.free_ns, replay.frees),
        peak_resident_bytes=replay.peak_resident_bytes, peak_mapped_bytes=replay.peak_mapped_bytes,
        live_at_peak_bytes=replay.live_at_peak_bytes,
        waste_at_peak=(_waste(replay.live_at_peak_bytes, replay.peak_resident_bytes)
                       if replay.peak_resident_bytes > 0 else None),
        average_waste=sum(wasted) / len(wasted) if wasted else None,
        heap_expansion=(replay.peak_resident_bytes / replay.peak_live_bytes
                        if replay.peak_live_bytes > 0 else None))


def median(rows: Sequence[Figures]) -> Figures:
    """Each figure's median over the repeats, on its own.  For an even count
    the lower of the middle two, so that every median is a value measured."""
    if not rows:
        raise ValueError("no figures to take the median of")
    values: dict[str, object] = {}
    for field in fields(Figures):
        known = [value for row in rows if (value := getattr(row, field.name)) is not None]
        values[field.name] = statistics.median_low(known) if known else None
    return Figures(**values)  # type: ignore[arg-type]


def median_run(runs: Sequence[Replay]) -> int:
    """The index of the run whose footprint is the median: its samples stand
    for the allocator's."""
    ranked = sorted(range(len(runs)), key=lambda index: (runs[index].peak_resident_bytes, index))
    return ranked[(len(ranked) - 1) // 2]


@dataclass(frozen=True)
class AllocatorResult:
    name: str  # glibc, jemalloc...
    library: str  # what the replays ran against, as mprof-replay named it
    runs: tuple[Replay, ...]  # one per repeat, in the order run
    figures: tuple[Figures, ...]  # of each run
    median: Figures
    median_run: int  # index into runs

    @property
    def samples(self) -> tuple[Sample, ...]:
        return self.runs[self.median_run].samples


def result(name: str, runs: Sequence[Replay], nulls: Sequence[Replay]) -> AllocatorResult:
    """An allocator's figures; nulls[i] is the do-nothing replay of runs[i]'s round."""
    rows = tuple(figures_of(run, null) for run, null in zip(runs, nulls, strict=True))
    return AllocatorResult(name, runs[0].allocator_library or "", tuple(runs), rows, median(rows), median_run(runs))


@dataclass(frozen=True)
class Comparison:
    """All that one mprof replay measured."""
    source: str  # the trace's path, or the synthetic workload's parameters
    synthetic: bool
    order: str
    repeat: int
    workload: Workload
    nulls: tuple[Replay, ...]  # the do-nothing replay of each round
    allocators: tuple[AllocatorResult, ...]
