"""Read-only queries of the replay tables of a profile database (mprof
replay --db): each replay's workload, its allocators' median figures and
the footprint of their median runs."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, fields

from ..replay.figures import Figures, Sample, Workload


@dataclass(frozen=True)
class StoredAllocator:
    name: str
    library: str
    median_round: int
    figures: Figures  # medians over the repeats
    samples: tuple[Sample, ...]  # of the median round's replay


@dataclass(frozen=True)
class StoredReplay:
    source: str
    synthetic: bool
    order: str
    repeats: int
    start_unix_ns: int
    workload: Workload
    allocators: tuple[StoredAllocator, ...]


_FIGURES = tuple(field.name for field in fields(Figures))
_WORKLOAD = tuple(field.name for field in fields(Workload))


def load(db: sqlite3.Connection) -> list[StoredReplay]:
    """Every replay, oldest first."""
    samples: dict[tuple[int, int], list[Sample]] = {}
    for replay_id, position, *values in db.execute(
            "SELECT replay_id, position, events, live_bytes, resident_bytes, mapped_bytes FROM replay_samples "
            "ORDER BY replay_id, position, sample"):
        samples.setdefault((replay_id, position), []).append(Sample(*values))
    allocators: dict[int, list[StoredAllocator]] = {}
    for replay_id, position, name, library, median_round, *values in db.execute(
            f"SELECT replay_id, position, allocator, library, median_round, {', '.join(_FIGURES)} "
            "FROM replay_allocators ORDER BY replay_id, position"):
        allocators.setdefault(replay_id, []).append(StoredAllocator(
            name, library, median_round, Figures(*values), tuple(samples.get((replay_id, position), ()))))
    replays = []
    for replay_id, source, synthetic, order, repeats, start, *values in db.execute(
            f"SELECT id, source, synthetic, event_order, repeats, start_unix_ns, {', '.join(_WORKLOAD)} "
            "FROM replays ORDER BY id"):
        row = dict(zip(_WORKLOAD, values, strict=True))
        # The digest is an unsigned 64-bit value, stored as its two's complement.
        row["live_digest"] %= 1 << 64
        workload = Workload(**row)
        replays.append(StoredReplay(source, bool(synthetic), order, repeats, start, workload,
                                    tuple(allocators.get(replay_id, ()))))
    return replays
