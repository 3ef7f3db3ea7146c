"""mprof-replay on traces written by an independent writer (trace_writer.py),
whose figures are worked out by hand from the events below, not by the code
under test."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from trace_writer import (
    ALLOC,
    CALLOC,
    DELETE,
    FREE,
    FREE_FUNCTION,
    MALLOC,
    MEMALIGN,
    NEW,
    NS_PER_TICK,
    REALLOC,
    REALLOC_FUNCTION,
    TICKS_PER_SEQUENCE,
    Event,
    write_trace,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
REPLAYER = Path(os.environ.get("MPROF_REPLAYER", REPO_ROOT / "build" / "mprof-replay"))
LIBRARIES = Path("/usr/lib/x86_64-linux-gnu")
ALLOCATORS = [None, "libjemalloc.so.2", "libtcmalloc_minimal.so.4", "libmimalloc.so.2"]

pytestmark = pytest.mark.skipif(not REPLAYER.exists(), reason=f"{REPLAYER} is not built")

# Two threads. In the one order (the `at`s):
#  1 T0 malloc(100) -> 0x1000             live 100  blocks 1
#  2 T0 calloc(50) -> 0x2000              live 150  blocks 2
#  3 T1 new(30) -> 0x3000                 live 180  blocks 3
#  4 T0 realloc(0x1000, 400), which moves: the old block goes at 4, the new one
#    comes back at 6 as 0x3000, which T1 freed at 5 in between
#                                          live 480  blocks 3
#  5 T1 free(0x3000)                      live 450  blocks 2
#  7 T1 free(0x2000): T0's calloc         live 400  blocks 1
#  8 T0 memalign(64, 200) -> 0x2000 again  live 600  blocks 2
#  9 T1 malloc(24) -> 0x5000              live 624  blocks 3
# 10 T0 realloc(0x3000, 0), which frees   live 224  blocks 2
# 11 T1 free(0x9000): no such block, dropped
# 12 T1 free(0x2000): T0's memalign       live 24   blocks 1
# 13 T0 realloc(0x5000, 48) in place: T1's block
#                                          live 48   blocks 1
# 14 T0 realloc(0x7000, 10): no such block, so an allocation
#                                          live 58   blocks 2
# 15 T1 delete(0x7000): T0's              live 48   blocks 1
HAND = {
    0: [
        Event(ALLOC, MALLOC, 0x1000, at=1, size=100),
        Event(ALLOC, CALLOC, 0x2000, at=2, size=50),
        Event(REALLOC, REALLOC_FUNCTION, 0x3000, at=4, returned_at=6, size=400, old_address=0x1000),
        Event(ALLOC, MEMALIGN, 0x2000, at=8, size=200, alignment=64),
        Event(FREE, REALLOC_FUNCTION, 0x3000, at=10),
        Event(REALLOC, REALLOC_FUNCTION, 0x5000, at=13, size=48, old_address=0x5000),
        Event(REALLOC, REALLOC_FUNCTION, 0x7000, at=14, size=10, old_address=0x7000),
    ],
    1: [
        Event(ALLOC, NEW, 0x3000, at=3, size=30),
        Event(FREE, FREE_FUNCTION, 0x3000, at=5),
        Event(FREE, FREE_FUNCTION, 0x2000, at=7),
        Event(ALLOC, MALLOC, 0x5000, at=9, size=24),
        Event(FREE, FREE_FUNCTION, 0x9000, at=11),
        Event(FREE, FREE_FUNCTION, 0x2000, at=12),
        Event(FREE, DELETE, 0x7000, at=15),
    ],
}
HAND_LIVE = [100, 150, 180, 480, 450, 400, 600, 624, 224, 24, 48, 58, 48]


def fnv1a(values: list[int]) -> str:
    digest = 0xCBF29CE484222325
    for value in values:
        for byte in value.to_bytes(8, "little"):
            digest = ((digest ^ byte) * 0x100000001B3) % (1 << 64)
    return f"{digest:016x}"


# Sequence numbers: 1 to 13 for at 1 to 13, then 13.5 (the return of the
# realloc at 13) 14, at 14 15, 14.5 16, at 15 17: the events span 16 numbers.
HAND_FIGURES = {
    "events": 14,
    "threads": 2,
    "allocations": 6,  # malloc, calloc, new, memalign, malloc, and the realloc of no block
    "frees": 5,  # at 5, 7, 10 (the realloc to 0), 12 and 15
    "reallocs": 2,  # at 4 and 13
    "bytes_allocated": 100 + 50 + 30 + 400 + 200 + 24 + 48 + 10,
    "peak_live_bytes": 624,
    "peak_live_blocks": 3,
    "unmatched_frees": 1,
    "duration_ns": 16 * TICKS_PER_SEQUENCE * NS_PER_TICK,
    "max_size": 400,
    "live_digest": fnv1a(HAND_LIVE),
}
COMPARED = ("allocations", "frees", "reallocs", "bytes_allocated", "peak_live_bytes", "peak_live_blocks",
            "live_digest")


def replay(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPLAYER), *map(str, args)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def figures(*args: str | Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    completed = replay(*args, env=env)
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""
    result: dict[str, Any] = json.loads(completed.stdout)
    return result


@pytest.fixture
def hand_prepared(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    trace = tmp_path / "hand.trace"
    write_trace(trace, HAND, block_events=2)
    prepared = tmp_path / "hand.replay"
    return prepared, figures("prepare", trace, prepared)


def test_prepare_gives_the_hand_worked_figures(hand_prepared: tuple[Path, dict[str, Any]]) -> None:
    prepared, prepared_figures = hand_prepared
    assert prepared_figures == HAND_FIGURES
    assert stat.S_IMODE(prepared.stat().st_mode) == 0o600
    assert [p.name for p in prepared.parent.iterdir() if p.name.startswith("hand.replay")] == ["hand.replay"]


@pytest.mark.parametrize("block_events, sequence_step", [(1, 1), (1000, 1), (3, 5)])
def test_blocks_and_gaps_in_the_numbering_change_nothing_but_time(tmp_path: Path, block_events: int,
                                                                   sequence_step: int) -> None:
    trace = tmp_path / "hand.trace"
    write_trace(trace, HAND, block_events=block_events, sequence_step=sequence_step)
    result = figures("prepare", trace, tmp_path / "hand.replay")
    assert result == {**HAND_FIGURES, "duration_ns": HAND_FIGURES["duration_ns"] * sequence_step}


def preload(library: str | None) -> dict[str, str]:
    if library is None:
        return {}
    if not (LIBRARIES / library).exists():
        pytest.skip(f"{library} is not installed")
    return {"LD_PRELOAD": str(LIBRARIES / library)}


@pytest.mark.parametrize("library", ALLOCATORS)
def test_the_recorded_order_replays_prepares_figures_exactly(hand_prepared: tuple[Path, dict[str, Any]],
                                                            library: str | None) -> None:
    prepared, expected = hand_prepared
    result = figures("run", prepared, "--order", "recorded", env=preload(library))
    assert {key: result[key] for key in COMPARED} == {key: expected[key] for key in COMPARED}
    assert result["order"] == "recorded"
    assert Path(result["allocator_library"]).name == (library or "libc.so.6")
    assert result["samples"][-1][:2] == [13, 48]  # every event played, 48 bytes left live
    for key in ("wall_ns", "alloc_ns", "realloc_ns", "free_ns", "baseline_resident_bytes", "baseline_mapped_bytes"):
        assert result[key] >= 0, key


@pytest.mark.parametrize("library", ALLOCATORS)
def test_the_threads_order_replays_the_same_calls(hand_prepared: tuple[Path, dict[str, Any]],
                                                 library: str | None) -> None:
    prepared, expected = hand_prepared
    result = figures("run", prepared, env=preload(library))
    assert result["order"] == "threads" and result["live_digest"] is None
    for key in ("allocations", "frees", "reallocs", "bytes_allocated"):
        assert result[key] == expected[key], key
    # Threads run ahead of or behind the recorded order, never beyond all that was allocated.
    assert 0 < result["peak_live_bytes"] <= HAND_FIGURES["bytes_allocated"]


def test_the_null_allocator_replays_the_same_figures(hand_prepared: tuple[Path, dict[str, Any]]) -> None:
    prepared, expected = hand_prepared
    result = figures("run", prepared, "--null", "--order", "recorded")
    assert {key: result[key] for key in COMPARED} == {key: expected[key] for key in COMPARED}
    assert result["allocator_library"] == "none"


def test_the_synthetic_workload_adds_up_and_repeats(tmp_path: Path) -> None:
    prepared = tmp_path / "synthetic.replay"
    completed = replay("synthetic", prepared, "--operations", "20000", "--seed", "7")
    assert completed.returncode == 0, completed.stderr
    made = json.loads(completed.stdout)
    assert made["events"] == 20000 and made["threads"] == 1
    assert made["unmatched_frees"] == 0 and made["duration_ns"] == 0
    assert made["allocations"] + made["frees"] + made["reallocs"] == 20000
    left = made["allocations"] - made["frees"]  # a realloc neither adds a block nor removes one
    assert 0 < left <= made["peak_live_blocks"] <= made["allocations"]
    assert 1 <= made["max_size"] <= 1000
    calls = made["allocations"] + made["reallocs"]
    assert 400 * calls < made["bytes_allocated"] < 600 * calls  # sizes uniform in 1..1000: 500.5 on average
    assert made["peak_live_bytes"] <= made["bytes_allocated"]

    again = replay("synthetic", tmp_path / "again.replay", "--operations", "20000", "--seed", "7")
    assert again.stdout == completed.stdout
    assert (tmp_path / "again.replay").read_bytes() == prepared.read_bytes()
    other = replay("synthetic", tmp_path / "other.replay", "--operations", "20000", "--seed", "8")
    assert json.loads(other.stdout)["live_digest"] != made["live_digest"]

    for null in ([], ["--null"]):
        played = figures("run", prepared, "--order", "recorded", *null)
        assert {key: played[key] for key in COMPARED} == {key: made[key] for key in COMPARED}
        events, live = played["samples"][-1][:2]
        assert events == 20000 and 0 < live <= made["peak_live_bytes"]
        assert len(played["samples"]) == 1001  # 1000 marks of 20 events, and the end


def damaged(path: Path, layout_damage: str) -> None:
    layout = write_trace(path, HAND, block_events=2)
    data = bytearray(path.read_bytes())
    first_offset = layout.blocks[0][0]
    if layout_damage == "truncated":
        data = data[:first_offset + 32 + 3]
    elif layout_damage == "zstd":
        body = first_offset + 32
        data[body:body + 4] = bytes(b ^ 0xFF for b in data[body:body + 4])  # the frame's magic number
    elif layout_damage == "magic":
        data[:8] = b"MPROFDAT"
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage, message", [
    ("truncated", "truncated at byte"),
    ("zstd", "corrupt zstd frame"),
    ("magic", "bad magic"),
    ("no end", "no end block"),
])
def test_a_damaged_trace_gets_one_line_and_no_prepared_file(tmp_path: Path, damage: str, message: str) -> None:
    trace = tmp_path / "damaged.trace"
    if damage == "no end":
        write_trace(trace, HAND, block_events=2, end=False)
    else:
        damaged(trace, damage)
    out = tmp_path / "out.replay"
    completed = replay("prepare", trace, out)
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert completed.stderr.count("\n") == 1 and completed.stderr.startswith(f"mprof-replay: {trace}: ")
    assert message in completed.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["damaged.trace"]


def test_an_end_block_that_miscounts_is_refused(tmp_path: Path) -> None:
    trace = tmp_path / "hand.trace"
    layout = write_trace(trace, HAND)
    data = bytearray(trace.read_bytes())
    end_offset = layout.blocks[-1][0]
    data[end_offset + 32] += 1  # events written
    trace.write_bytes(bytes(data))
    completed = replay("prepare", trace, tmp_path / "out.replay")
    assert completed.returncode == 2 and completed.stderr.count("\n") == 1
    assert not (tmp_path / "out.replay").exists()


@pytest.mark.parametrize("damage", ["magic", "short"])
def test_a_bad_prepared_file_is_refused(hand_prepared: tuple[Path, dict[str, Any]], damage: str) -> None:
    prepared, _ = hand_prepared
    data = prepared.read_bytes()
    prepared.write_bytes(b"NOTAFILE" + data[8:] if damage == "magic" else data[:-5])
    completed = replay("run", prepared)
    assert completed.returncode == 2 and completed.stdout == ""
    assert completed.stderr.count("\n") == 1 and completed.stderr.startswith(f"mprof-replay: {prepared}: ")
