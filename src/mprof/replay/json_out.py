"""The comparison as JSON: the workload, and for each allocator the medians,
every repeat's figures and measurements, and its median run's samples."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from .figures import Comparison, Replay


def digest(value: int | None) -> str | None:
    """As mprof-replay prints it: 16 hexadecimal digits, which no JSON
    reader rounds to a double."""
    return None if value is None else f"{value:016x}"


def _measured(replay: Replay) -> dict[str, Any]:
    # The samples of every run would be most of the output; those of the
    # median run are given once, beside the medians.
    measured = asdict(replay)
    del measured["samples"]
    measured["live_digest"] = digest(replay.live_digest)
    return measured


def as_json(comparison: Comparison) -> dict[str, Any]:
    return {
        "source": comparison.source,
        "synthetic": comparison.synthetic,
        "order": comparison.order,
        "repeat": comparison.repeat,
        "workload": {**asdict(comparison.workload), "live_digest": digest(comparison.workload.live_digest)},
        "null": [{"round": number, "measured": _measured(replay)}
                 for number, replay in enumerate(comparison.nulls, start=1)],
        "allocators": [{
            "name": allocator.name,
            "library": allocator.library,
            "median": asdict(allocator.median),
            "median_round": allocator.median_run + 1,
            "runs": [{"round": number, "figures": asdict(figures), "measured": _measured(replay)}
                     for number, (figures, replay)
                     in enumerate(zip(allocator.figures, allocator.runs, strict=True), start=1)],
            "samples": [[s.events, s.live_bytes, s.resident_bytes, s.mapped_bytes] for s in allocator.samples],
        } for allocator in comparison.allocators],
    }
