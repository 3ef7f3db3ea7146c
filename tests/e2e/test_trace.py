"""The trace (MPROF_TRACE, mprof run --trace): a real program's allocation
events, read back with an independent reader written from mprof(5), and
played back by the real replayer against real allocators."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

import trace_reading
from e2e_support import BUILD, Run, Targets, mprof
from trace_reading import Event

MALLOC, CALLOC, REALLOC, MEMALIGN, FREE = 6, 7, 8, 9, 11
REPLAYER = BUILD / "mprof-replay"
ALLOCATORS = {
    "jemalloc": "libjemalloc.so.2",
    "tcmalloc": "libtcmalloc_minimal.so.4",
    "mimalloc": "libmimalloc.so.2",
}


@pytest.mark.parametrize("blocks", ["headers", "map"])
def test_the_trace_holds_the_programs_events_in_order(profile: Callable[..., Run], targets: Targets,
                                                        blocks: str, tmp_path: Path) -> None:
    trace_path = tmp_path / "out.mprof.trace"
    run = profile([targets.build("trace_events")], MPROF_TRACE=str(trace_path), MPROF_BLOCKS=blocks)
    assert run.completed.stdout == "0\n"
    assert run.completed.stderr == ""
    assert stat.S_IMODE(os.stat(trace_path).st_mode) == 0o600
    trace = trace_reading.read(trace_path)
    events = trace.events
    # The program's own calls, in its order (main's printf allocates stdout's buffer after them).
    shape = [(e.op, e.function, e.size, e.alignment, e.sequence) for e in events[:12]]
    assert shape == [
        (1, MALLOC, 100, 0, 1), (1, CALLOC, 100, 0, 2), (1, MALLOC, 24, 0, 3),
        (3, REALLOC, 4000, 0, 4),  # the old block released at 4, the new one returned at 5
        (1, MEMALIGN, 200, 64, 6), (1, MEMALIGN, 8192, 4096, 7),
        (2, FREE, 0, 0, 8), (2, REALLOC, 0, 0, 9),  # realloc(p, 0) frees
        (2, FREE, 0, 0, 10), (2, FREE, 0, 0, 11), (2, FREE, 0, 0, 12),
        (1, MALLOC, 77, 0, 13),
    ]
    grown, zeroed, barrier, moved, aligned, paged = events[:6]
    assert moved.later == 1 and moved.old_address == grown.address
    assert [e.address for e in events[6:11]] == [zeroed.address, moved.address, barrier.address,
                                                  aligned.address, paged.address]
    assert aligned.address % 64 == 0 and paged.address % 4096 == 0
    assert {e.thread for e in events} == {0}
    assert trace.end_events == len(events)
    assert trace.end_sequence == max(e.sequence + e.later for e in events)
    # Each allocation names its entry in the data file's PATH section.
    data = run.data()
    per_entry = Counter(e.path for e in events if e.op != 2)
    assert per_entry == Counter({i + 1: p.allocs for i, p in enumerate(data.paths) if p.allocs})


@pytest.mark.parametrize("blocks", ["headers", "map"])
def test_blocks_freed_by_another_thread_are_the_ones_it_was_handed(profile: Callable[..., Run], targets: Targets,
                                                                    blocks: str, tmp_path: Path) -> None:
    trace_path = tmp_path / "out.mprof.trace"
    profile([targets.build("trace_events"), "threads"], MPROF_TRACE=str(trace_path), MPROF_BLOCKS=blocks)
    events = trace_reading.read(trace_path).events
    handed = [e for e in events if e.op == 1 and e.function == MALLOC and 16 <= e.size < 116 and e.thread == 0
              and e.sequence > 13]
    assert [e.size for e in handed] == [16 + i % 100 for i in range(1000)]
    worker = {e.thread for e in events} - {0}
    assert len(worker) == 1
    (other,) = worker
    frees_there = [e for e in events if e.thread == other and e.op == 2]
    assert [e.address for e in frees_there] == [e.address for e in handed]
    returned = [e for e in events if e.thread == other and e.op == 1 and e.size == 48]
    assert len(returned) == 10
    # In the one order, every free is of a block live at that point, and the
    # worker's blocks are freed by the main thread.
    live: dict[int, Event] = {}
    for event in events:
        if event.op == 3:
            assert live.pop(event.old_address, None) is not None
        if event.op == 2:
            allocated = live.pop(event.address)
            if allocated in returned:
                assert event.thread == 0
        else:
            assert event.address not in live
            live[event.address] = event
    assert sorted(e.size for e in live.values() if e.thread == 0 and e.size == 77) == [77]



def test_mprof_run_trace_writes_it_beside_the_data_file(targets: Targets, tmp_path: Path) -> None:
    output = tmp_path / "run.mprof"
    completed = mprof("run", "--trace", "--quiet", "-o", output, "--", targets.build("trace_events"))
    assert completed.stdout == "0\n"
    trace = trace_reading.read(tmp_path / "run.mprof.trace")
    assert [e.size for e in trace.events[:3]] == [100, 100, 24]
    assert not list(tmp_path.glob("*.tmp.*"))


def test_mprof_run_lists_the_trace_of_each_process(targets: Targets, tmp_path: Path) -> None:
    output = tmp_path / "out.mprof"
    completed = mprof("run", "--trace", "-o", output, "--", targets.build("forkexec"), targets.build("leaf"))
    lines = completed.stderr.splitlines()
    assert "mprof: the run wrote 4 data files:" in lines
    # The parent, its two fork children and the program the second executes.
    listed = lines[lines.index("mprof: the run wrote 4 traces:") + 1:]
    paths = sorted(tmp_path.glob("out.mprof.trace*"))
    assert sorted(line.split(" (pid ")[0].strip() for line in listed) == [str(path) for path in paths]
    for line in listed:
        path, _, rest = line.strip().partition(" (pid ")
        assert rest.startswith(f"{trace_reading.read(Path(path)).pid}, ")
    assert Counter(line.rsplit("/", 1)[1] for line in listed) == {"forkexec)": 3, "leaf)": 1}


def _prepare(trace: Path, prepared: Path) -> dict[str, int]:
    completed = subprocess.run([REPLAYER, "prepare", trace, prepared], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    figures: dict[str, int] = json.loads(completed.stdout)
    return figures


def _library(name: str) -> Path | None:
    for directory in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"):
        if (Path(directory) / name).exists():
            return Path(directory) / name
    return None


def test_a_recorded_trace_replays_with_the_recorded_figures(profile: Callable[..., Run], targets: Targets,
                                                             tmp_path: Path) -> None:
    trace_path = tmp_path / "out.mprof.trace"
    run = profile([targets.build("trace_events"), "threads"], MPROF_TRACE=str(trace_path))
    summary = run.data().summary
    prepared = _prepare(trace_path, tmp_path / "out.replay")
    # The data file counts a realloc as a free of the old block and an
    # allocation of the new one; the trace as one event.
    assert prepared["allocations"] + prepared["reallocs"] == summary.allocs
    assert prepared["frees"] + prepared["reallocs"] == summary.frees
    assert prepared["bytes_allocated"] == summary.bytes_allocated
    assert prepared["peak_live_bytes"] == summary.max_live_bytes
    assert prepared["unmatched_frees"] == 0
    assert prepared["threads"] == 2
    for allocator in [None, *ALLOCATORS]:
        environment = dict(os.environ)
        if allocator:
            library = _library(ALLOCATORS[allocator])
            if library is None:
                pytest.fail(f"{ALLOCATORS[allocator]} is missing: make check installs it")
            environment["LD_PRELOAD"] = str(library)
        completed = subprocess.run([REPLAYER, "run", tmp_path / "out.replay", "--order", "recorded"],
                                   capture_output=True, text=True, env=environment, timeout=120)
        assert completed.returncode == 0, completed.stderr
        replayed = json.loads(completed.stdout)
        for key in ("allocations", "frees", "reallocs", "bytes_allocated", "peak_live_bytes", "live_digest"):
            assert replayed[key] == prepared[key], (allocator, key)
        if allocator:
            assert Path(replayed["allocator_library"]).name == ALLOCATORS[allocator]


def test_each_process_writes_a_trace_of_its_own(profile: Callable[..., Run], targets: Targets,
                                                 tmp_path: Path) -> None:
    trace_path = tmp_path / "out.mprof.trace"
    profile([targets.build("forkexec"), targets.build("leaf")], MPROF_TRACE=str(trace_path))
    traces = [trace_reading.read(path) for path in sorted(tmp_path.glob("out.mprof.trace*"))]
    # The parent, its two fork children, and the program the second executes.
    assert len(traces) == 4
    by_sizes = {frozenset(e.size for e in trace.events if e.op == 1): trace for trace in traces}
    first_child = next(trace for sizes, trace in by_sizes.items() if 200 in sizes)
    # Its own twenty blocks (all but two freed at once), numbered from 1;
    # not the free of the block it inherited.
    assert [e.op for e in first_child.events] == [1, 1] + [1, 2] * 18
    assert [e.sequence for e in first_child.events] == list(range(1, 39))
    assert {e.size for e in first_child.events if e.op == 1} == {200}
    parent = next(trace for sizes, trace in by_sizes.items() if 100 in sizes)
    assert parent.pid not in {trace.pid for trace in traces if trace is not parent}


@pytest.mark.parametrize("damage, message", [
    (lambda data: data[:-10], "truncated at byte"),
    (lambda data: data[:-48], "no end block: the trace was cut short"),
    (lambda data: b"MPROFDAT" + data[8:], "not an mprof trace (bad magic)"),
    (lambda data: data[:64 + 32 + 4] + bytes(b ^ 0x5A for b in data[100:140]) + data[140:], "corrupt zstd frame"),
])
def test_a_damaged_trace_gets_one_line_and_no_prepared_file(profile: Callable[..., Run], targets: Targets,
                                                             tmp_path: Path, damage: Callable[[bytes], bytes],
                                                             message: str) -> None:
    trace_path = tmp_path / "out.mprof.trace"
    profile([targets.build("trace_events")], MPROF_TRACE=str(trace_path))
    damaged = tmp_path / "damaged.trace"
    damaged.write_bytes(damage(trace_path.read_bytes()))
    completed = subprocess.run([REPLAYER, "prepare", damaged, tmp_path / "out.replay"], capture_output=True,
                               text=True, timeout=60)
    assert completed.returncode == 2
    assert completed.stderr.startswith(f"mprof-replay: {damaged}: ") and message in completed.stderr
    assert completed.stderr.count("\n") == 1 and completed.stdout == ""
    assert not list(tmp_path.glob("out.replay*"))


def test_the_synthetic_workload_is_glogers_and_replays_exactly(tmp_path: Path) -> None:
    prepared = tmp_path / "synthetic.replay"
    completed = subprocess.run([REPLAYER, "synthetic", prepared, "--operations", "20000", "--seed", "7"],
                               capture_output=True, text=True, timeout=60, check=True)
    figures = json.loads(completed.stdout)
    assert figures["events"] == 20000
    assert figures["allocations"] + figures["frees"] + figures["reallocs"] == 20000
    assert 1 <= figures["max_size"] <= 1000
    again = subprocess.run([REPLAYER, "synthetic", tmp_path / "again.replay", "--operations", "20000", "--seed", "7"],
                           capture_output=True, text=True, timeout=60, check=True)
    assert again.stdout == completed.stdout
    assert (tmp_path / "again.replay").read_bytes() == prepared.read_bytes()
    for null in ([], ["--null"]):
        replayed = json.loads(subprocess.run([REPLAYER, "run", prepared, "--order", "recorded", *null],
                                             capture_output=True, text=True, timeout=60, check=True).stdout)
        for key in ("allocations", "frees", "reallocs", "bytes_allocated", "peak_live_bytes", "live_digest"):
            assert replayed[key] == figures[key], key
        assert Path(replayed["allocator_library"]).name == ("none" if null else "libc.so.6")
