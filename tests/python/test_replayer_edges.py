"""mprof-replay on edge cases of mprof(5) traces that real programs produce:
no events, odd memalign alignments, events from the wrong function."""

from __future__ import annotations

from pathlib import Path

import pytest

from test_replayer import COMPARED, figures, fnv1a, replay
from trace_writer import ALLOC, CALLOC, FREE, FREE_FUNCTION, MALLOC, MEMALIGN, REALLOC, Event, write_trace


def test_a_trace_without_events_prepares_and_plays(tmp_path: Path) -> None:
    # A process that allocated nothing once the monitor started: a header and an end block.
    trace = tmp_path / "empty.trace"
    write_trace(trace, {})
    prepared = tmp_path / "empty.replay"
    made = figures("prepare", trace, prepared)
    assert made == {"events": 0, "threads": 0, "allocations": 0, "frees": 0, "reallocs": 0, "bytes_allocated": 0,
                    "peak_live_bytes": 0, "peak_live_blocks": 0, "unmatched_frees": 0, "duration_ns": 0,
                    "max_size": 0, "live_digest": fnv1a([])}
    for null in ([], ["--null"]):
        played = figures("run", prepared, "--order", "recorded", *null)
        assert {key: played[key] for key in COMPARED} == {key: made[key] for key in COMPARED}


def test_memalign_of_an_alignment_not_a_power_of_two_replays(tmp_path: Path) -> None:
    # glibc's memalign rounds 24 up to 32 and succeeds, so the monitor records it.
    trace = tmp_path / "aligned.trace"
    write_trace(trace, {0: [Event(ALLOC, MEMALIGN, 0x1000, at=1, size=5, alignment=24),
                            Event(FREE, FREE_FUNCTION, 0x1000, at=2)]})
    prepared = tmp_path / "aligned.replay"
    made = figures("prepare", trace, prepared)
    assert (made["allocations"], made["frees"], made["live_digest"]) == (1, 1, fnv1a([5, 0]))
    for null in ([], ["--null"]):
        played = figures("run", prepared, "--order", "recorded", *null)
        assert {key: played[key] for key in COMPARED} == {key: made[key] for key in COMPARED}


@pytest.mark.parametrize("threads, step", [
    ({0: [Event(ALLOC, FREE_FUNCTION, 0x10, at=1, size=5)]}, 1),  # free() does not allocate
    ({0: [Event(ALLOC, MALLOC, 0x10, at=1, size=5), Event(FREE, MALLOC, 0x10, at=2)]}, 1),  # nor malloc() free
    ({0: [Event(ALLOC, MALLOC, 0x10, at=1, size=5),
          Event(REALLOC, CALLOC, 0x20, at=2, size=9, old_address=0x10)]}, 1),  # calloc() does not realloc
    ({0: [Event(ALLOC, MALLOC, 0x10, at=1, size=5)], 1: [Event(ALLOC, MALLOC, 0x20, at=2, size=5)]}, 0),  # one number
])
def test_a_malformed_event_is_refused(tmp_path: Path, threads: dict[int, list[Event]], step: int) -> None:
    trace = tmp_path / "bad.trace"
    write_trace(trace, threads, sequence_step=step)
    completed = replay("prepare", trace, tmp_path / "out.replay")
    assert completed.returncode == 2 and completed.stdout == ""
    assert completed.stderr.count("\n") == 1 and completed.stderr.startswith(f"mprof-replay: {trace}: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.trace"]


def test_order_takes_its_value_after_an_equals_sign(tmp_path: Path) -> None:
    trace = tmp_path / "one.trace"
    write_trace(trace, {0: [Event(ALLOC, MALLOC, 0x10, at=1, size=5)]})
    figures("prepare", trace, tmp_path / "one.replay")
    assert figures("run", tmp_path / "one.replay", "--order=recorded")["order"] == "recorded"


def test_a_block_of_the_largest_size_is_refused_by_the_null_allocator(tmp_path: Path) -> None:
    # A failed malloc(SIZE_MAX) is recorded as asked; the do-nothing
    # allocator's one region for every block cannot hold it, and the sum
    # of its size and an alignment must not wrap to a small region.
    trace = tmp_path / "huge.trace"
    write_trace(trace, {0: [Event(ALLOC, MALLOC, 0x10, at=1, size=(1 << 64) - 1)]})
    prepared = tmp_path / "huge.replay"
    assert figures("prepare", trace, prepared)["max_size"] == (1 << 64) - 1
    completed = replay("run", prepared, "--null")
    assert (completed.returncode, completed.stdout) == (2, "")
    assert completed.stderr == f"mprof-replay: {prepared}: cannot map a block of {(1 << 64) - 1} bytes\n"
