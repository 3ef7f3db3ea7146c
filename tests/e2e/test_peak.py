"""The peak and the temporaries, exact, from a program whose figures are
known (tests/targets/peak.c): what each path held when the live bytes were
highest, and which allocations were freed before their thread allocated
again; in one thread, and with the parts in threads of their own."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from e2e_support import REPO_ROOT, Targets, monitor_env, mprof, path_name, table
from mprof.cli.inputs import load_profile
from mprof.reducer import datafile
from mprof.report.model import Model

MIB = 1 << 20
LEAKED, HELD, CHURNS = 1000 * 1000, 100 * MIB, 1_000_000


def by_path(model: Model) -> dict[str, tuple[int, int, int, int]]:
    """'main > leak_outer > ...' -> (allocs, temporaries, peak blocks, peak
    bytes), for the paths through the program's own functions."""
    return {path_name(model, path): (path.allocs, path.temporaries, path.peak_blocks, path.peak_bytes)
            for path in model.paths}


@pytest.mark.parametrize("threads", [False, True])
def test_what_each_path_held_at_the_peak(targets: Targets, tmp_path: Path, threads: bool) -> None:
    output = tmp_path / "peak.mprof"
    command = [targets.build("peak"), *(["threads"] if threads else [])]
    subprocess.run(command, env=monitor_env(output), check=True, timeout=120)
    model = load_profile([output])
    paths = by_path(model)
    leak = [key for key in paths if key.endswith("leak_outer > leak_middle > leak_inner")]
    hold = [key for key in paths if key.endswith("hold")]
    churn = [key for key in paths if key.endswith("churn")]
    assert len(leak) == len(hold) == len(churn) == 1
    # The leaks and the held blocks are all live at the peak, the churn's not.
    assert paths[leak[0]] == (1000, 0, 1000, LEAKED)
    assert paths[hold[0]] == (100, 1, 100, HELD)  # the last held block is freed first: a temporary
    assert paths[churn[0]] == (CHURNS, CHURNS, 0, 0)
    # The peak's figures of every path add up to the most live bytes: what
    # else was live then (the C library's, the threads') is in other paths.
    summary = model.summary
    assert sum(path.peak_bytes for path in model.paths) == summary["max_live_bytes"]
    assert summary["max_live_bytes"] >= LEAKED + HELD
    assert summary["temporary_allocs"] >= CHURNS + 1
    # The peak came after the leaks and the held blocks were allocated, and
    # before the churn: at least 1,100 allocations in, at most a few more.
    assert 1100 <= summary["peak_allocs"] <= 1100 + 50
    assert 0 < summary["peak_ns"] < summary["elapsed_ns"]
    # The bins at the peak: the 1,000-byte and the large bins as the paths say.
    bins = {b.size: b for b in model.bins}
    assert (bins[1000].peak_blocks, bins[1000].peak_bytes) == (1000, LEAKED)
    assert (bins[1025].peak_blocks, bins[1025].peak_bytes) == (100, HELD)
    assert (bins[64].temporaries, bins[64].peak_blocks) == (CHURNS, 0)


@pytest.mark.slow
def test_highs_that_threads_reach_together(targets: Targets, tmp_path: Path) -> None:
    # tests/targets/peak_together.c: four threads churn near small highs,
    # hold 1 MiB each, make the most live blocks in swap() (16 bytes each,
    # freed by the next thread), then the most live bytes: one frees 500
    # blocks of 2,000 bytes while the others wait, then the others grow past
    # the high they had together.  Run several times: which thread settles
    # when differs.
    for run in range(3):
        output = tmp_path / f"together{run}.mprof"
        subprocess.run([targets.build("peak_together")], env=monitor_env(output), check=True, timeout=120)
        model = load_profile([output])
        paths = by_path(model)
        named = {part: [key for key in paths if key.endswith(f"part > {part}")]
                 for part in ("churn", "large", "swap", "build", "grow")}
        assert all(len(keys) == 1 for keys in named.values())
        figures = {part: paths[keys[0]] for part, keys in named.items()}
        # Each round's last block is freed before its thread allocates
        # again: a temporary.  Live at the peak: three threads' build() and
        # grow() blocks.
        assert figures["churn"] == (4 * 2000 * 64, 4 * 2000, 0, 0)
        assert figures["large"] == (4, 4, 0, 0)
        # Each thread's last block of swap() is freed before it allocates
        # again, but by the next thread: not a temporary.
        assert figures["swap"] == (4000, 0, 0, 0)
        assert figures["build"][2:] == (1500, 3_000_000)
        assert figures["grow"][2:] == (900, 1_800_000)
        summary = model.summary
        assert sum(path.peak_bytes for path in model.paths) == summary["max_live_bytes"]
        assert 4_800_000 <= summary["max_live_bytes"] < 4_800_000 + 100_000
        bins = {b.size: b for b in model.bins}
        assert (bins[1025].peak_blocks, bins[1025].peak_bytes) == (2400, 4_800_000)  # the bin above 1,024
        assert (bins[100].peak_blocks, bins[16].peak_blocks) == (0, 0)
        # The most live blocks: swap()'s 4,000 and what else was live, the
        # same blocks as at the peak beside build()'s and grow()'s (all the
        # threads had started; none allocates anywhere else meanwhile).
        others = sum(path.peak_blocks for path in model.paths) - 2400
        assert summary["max_live_objects"] == 4000 + others
        assert all(point.live_bytes <= summary["max_live_bytes"] for point in datafile.read(output).timeline)


@pytest.mark.slow
def test_threads_that_grow_at_once_and_changes_the_program_orders(targets: Targets, tmp_path: Path) -> None:
    # tests/targets/peak_growing.c: two threads grow together, nearly every
    # allocation a new high (the threads log their changes, live.h); the
    # first's 10 MiB is the peak; then, the live bytes at their high, the
    # threads take turns, each woken by the other: a free in the first,
    # then an allocation of a byte less in the second, 1,000 times, and the
    # 10 MiB freed before 10 MiB less a byte is allocated.  In the order of
    # the changes' stamps (mprof(5)), none of the second's turns is live at
    # the peak.  Run several times: how the threads interleave differs.
    for run in range(3):
        output = tmp_path / f"growing{run}.mprof"
        subprocess.run([targets.build("peak_growing", "-pthread")], env=monitor_env(output), check=True,
                       timeout=120)
        model = load_profile([output])
        paths = by_path(model)
        named = {name: [paths[key] for key in paths if key.endswith(name)]
                 for name in ("first > grow_a", "second > grow_b", "first > big_a", "second > handoff_b",
                              "second > late_b", "first > passing", "second > passing")}
        assert all(len(found) == 1 for found in named.values())
        part = {name: found[0] for name, found in named.items()}
        assert part["first > grow_a"] == (50_000, 0, 50_000, 5_000_000)
        assert part["second > grow_b"] == (50_000, 0, 50_000, 10_000_000)
        assert part["first > big_a"] == (1, 1, 1, 10 * MIB)  # freed before its thread allocates again
        assert part["second > handoff_b"][2:] == (0, 0)
        assert part["second > late_b"] == (1, 1, 0, 0)
        assert part["first > passing"] == (50_000, 50_000, 0, 0)
        assert part["second > passing"] == (50_000, 50_000, 0, 0)
        summary = model.summary
        assert sum(path.peak_bytes for path in model.paths) == summary["max_live_bytes"]
        grown = 5_000_000 + 10_000_000 + 10 * MIB
        assert grown <= summary["max_live_bytes"] < grown + 100_000
        # Every allocation of the growth came before the peak, nothing of the turns.
        assert 200_001 <= summary["peak_allocs"] <= 200_001 + 50
        bins = {b.size: b for b in model.bins}
        assert (bins[100].peak_blocks, bins[200].peak_blocks, bins[99].peak_blocks) == (50_000, 50_000, 0)


@pytest.mark.slow
@pytest.mark.parametrize("logged", [False, True])
def test_a_peak_whose_thread_allocates_again_first(targets: Targets, tmp_path: Path, logged: bool) -> None:
    # tests/targets/peak_lockstep.c: main() makes highs of 1 MB in 10
    # blocks, freed, then the threads: the first's rise() makes the peak, 100 blocks of
    # 100,000 bytes, each a new high; the second frees 20 of them; the
    # first's next change is an allocation, the first of again()'s 10
    # blocks of 50,000 bytes, below the high.  With logged the second has
    # first made a high of its own (2 MB, freed), so the threads log their
    # changes (live.h); else rise() reaches the highs through the ledger.
    # Run several times: the threads' turns are fixed, their timing not.
    # again()'s last block is freed before its thread allocates again: a
    # temporary, as are main's and the second's highs.
    program = targets.build("peak_lockstep", "-pthread")
    for run in range(5):
        output = tmp_path / f"lockstep{run}.mprof"
        subprocess.run([program, *(["logged"] if logged else [])], env=monitor_env(output), check=True, timeout=120)
        model = load_profile([output])
        paths = by_path(model)
        # What glibc allocated as main made the threads, before either ran
        # (live at the peak still), and the program's own.
        made = {key: value for key, value in paths.items() if "pthread_create" in key}
        own = {" > ".join(key.split(" > ")[-2:]): value for key, value in paths.items() if key not in made}
        assert own == {"main > ready": (10, 1, 0, 0), "first > rise": (100, 0, 100, 10_000_000),
                       "first > again": (10, 1, 0, 0), **({"second > high": (1, 1, 0, 0)} if logged else {})}
        before = 10 + sum(value[0] for value in made.values())
        summary = model.summary
        assert summary["allocs"] == before + int(logged) + 100 + 10
        # The peak is rise()'s last block: the allocation after main's and
        # glibc's, the second's high and rise()'s.
        assert summary["peak_allocs"] == before + int(logged) + 100
        [line] = [line for line in mprof("report", "--tables", "summary", output).stdout.splitlines()
                  if line.startswith("  most live ")]
        assert line.endswith(f" s, allocation {before + int(logged) + 100:,}"), line
        assert summary["max_live_bytes"] == 10_000_000 + sum(value[3] for value in made.values())
        assert summary["max_live_objects"] == 100 + sum(value[2] for value in made.values())
        bins = {b.size: b for b in model.bins}
        assert (bins[1025].peak_blocks, bins[1025].peak_bytes) == (100, 10_000_000)


@pytest.mark.slow
def test_logs_merged_in_the_order_of_their_stamps_not_of_their_threads(targets: Targets, tmp_path: Path) -> None:
    # tests/targets/peak_logged_late.c: the threads log their changes from
    # the first's rise() on, and the logs are merged once, at the end; the
    # older thread's log starts first, the newer's (late()'s 5 MB) after
    # the older freed everything.  The peak is rise()'s 100 blocks of
    # 100,000 bytes, with what glibc allocated as main made the threads;
    # late()'s block merged ahead of its turn would have made one of
    # 15 MB in 101 blocks.  Every block is freed before its thread
    # allocates again (rise()'s last of its 100): a temporary.  Run several
    # times: the threads' turns are fixed, their timing not.
    program = targets.build("peak_logged_late", "-pthread")
    for run in range(3):
        output = tmp_path / f"late{run}.mprof"
        subprocess.run([program], env=monitor_env(output, MPROF_CHECKPOINT_GROWTH="off",
                                                  MPROF_CHECKPOINT_INTERVAL="off"), check=True, timeout=120)
        model = load_profile([output])
        # What glibc allocated as main made each thread (two paths of one
        # name), live at the peak still, and the program's own.
        made = [path for path in model.paths if "pthread_create" in path_name(model, path)]
        paths = by_path(model)
        own = {" > ".join(key.split(" > ")[-2:]): value for key, value in paths.items() if "pthread_create" not in key}
        assert own == {"main > ready": (10, 1, 0, 0), "first > block_of": (1, 1, 0, 0),
                       "first > rise": (100, 1, 100, 10_000_000), "high > block_of": (1, 1, 0, 0),
                       "late > block_of": (1, 1, 0, 0)}, own
        summary = model.summary
        assert summary["max_live_bytes"] == 10_000_000 + sum(path.peak_bytes for path in made)
        assert summary["max_live_objects"] == 100 + sum(path.peak_blocks for path in made)
        bins = {b.size: b for b in model.bins}
        assert (bins[1025].peak_blocks, bins[1025].peak_bytes) == (100, 10_000_000)


def test_the_logs_of_growing_threads_reach_the_file_of_a_crash(targets: Targets, tmp_path: Path) -> None:
    # peak_growing abort: the process aborts at its peak, right after two
    # threads grew together; the monitor's handler writes the final file
    # with the changes still in the threads' logs merged (live.h).
    output = tmp_path / "aborted.mprof"
    completed = subprocess.run([targets.build("peak_growing", "-pthread"), "abort"], env=monitor_env(output),
                               timeout=120)
    assert completed.returncode == -6  # SIGABRT, as without the monitor
    model = load_profile([output])
    paths = by_path(model)
    peaks = {name: [value[2:] for key, value in paths.items() if key.endswith(name)]
             for name in ("first > grow_a", "second > grow_b", "first > big_a")}
    assert peaks == {"first > grow_a": [(50_000, 5_000_000)], "second > grow_b": [(50_000, 10_000_000)],
                     "first > big_a": [(1, 10 * MIB)]}
    summary = model.summary
    assert sum(path.peak_bytes for path in model.paths) == summary["max_live_bytes"]
    grown = 5_000_000 + 10_000_000 + 10 * MIB
    assert grown <= summary["max_live_bytes"] < grown + 100_000


@pytest.mark.slow
def test_the_ledger_keeps_the_highs_exact_at_every_step(targets: Targets) -> None:
    # live_ledger.c: monitor/live.c alone, four made-up threads taking turns
    # at random through phases of growth and shrinking, two million changes
    # from eight paths; after each, the highs, what the change saw of the
    # peak and the live figures are those the program kept itself, and after
    # the logs are merged, every path's figures at the peak too.  Most
    # changes fit their thread's grant, which is what spares them a shared
    # write; the new highs of the growing phases are logged.
    monitor = REPO_ROOT / "monitor"
    program = targets.build("live_ledger", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror",
                            f"-I{monitor}", str(monitor / "live.c"))
    completed = subprocess.run([program], capture_output=True, text=True, timeout=60, check=True)
    steps, verdict, within_grants, logged = completed.stdout.split()
    assert (steps, verdict) == ("2000000", "exact")
    assert int(within_grants) > 1_000_000
    assert int(logged) > 10_000


def test_the_reports_of_the_peak_and_of_temporaries(targets: Targets, tmp_path: Path) -> None:
    output = tmp_path / "peak.mprof"
    subprocess.run([targets.build("peak")], env=monitor_env(output), check=True, timeout=120)
    text = mprof("report", "--tables", "peak,temporaries", output).stdout
    peak = table(text, "Peak table")
    # 100 MiB of 100 MiB + 1 MB and a little more: 99%; the leaks under 1%.
    assert peak[:2] == ["       100   104,857,600  (99)  main > hold",
                        "     1,000     1,000,000        main > leak_outer > leak_middle > leak_inner"]
    temporaries = table(text, "Temporary allocations")
    assert temporaries[:2] == ["   1,000,000  (99)  main > churn", "           1        main > hold"]


def test_memory_over_time(targets: Targets, tmp_path: Path) -> None:
    output = tmp_path / "peak.mprof"
    subprocess.run([targets.build("peak")], env=monitor_env(output), check=True, timeout=120)
    data = datafile.read(output)
    points = data.timeline
    # The churn alone makes a million allocations over many milliseconds: a
    # point every millisecond or so, never more than 2,000, and one for the
    # moment the file was written.
    assert 2 <= len(points) <= 2001
    assert all(a.ns < b.ns for a, b in zip(points, points[1:], strict=False))
    assert points[-1].ns <= data.header.elapsed_ns
    # No point above the exact peak; the resident set was read.
    assert all(point.live_bytes <= data.summary.max_live_bytes for point in points)
    assert all(point.resident_bytes > 0 for point in points)
    # During the churn at most one 64-byte block is live beside the 1 MB leaked.
    churning = [point for point in points if point.ns > data.summary.peak_ns + 10_000_000]
    assert churning and all(point.live_bytes - LEAKED <= 64 + 100_000 for point in churning)
    # The last point is the end: what the program kept, its 1,000 leaked
    # blocks of 1,000 bytes and no more, after its last free.
    assert (points[-1].live_bytes, points[-1].live_blocks) == (LEAKED, 1000)


@pytest.mark.parametrize(("kept", "live"), [("one", (1, 1)), ("none", (0, 0))])
def test_the_last_point_is_what_is_live_at_the_end(targets: Targets, tmp_path: Path, kept: str,
                                                    live: tuple[int, int]) -> None:
    # live_at_end.c: a block of 1 byte, kept to the end or freed; nothing
    # else allocates.  The point of the moment the file was written holds
    # the live bytes and blocks then, to the byte.
    output = tmp_path / "live.mprof"
    subprocess.run([targets.build("live_at_end"), kept], env=monitor_env(output), check=True, timeout=120)
    data = datafile.read(output)
    assert (data.summary.allocs, data.summary.frees) == (1, 1 - live[1])
    assert (data.timeline[-1].live_bytes, data.timeline[-1].live_blocks) == live


def test_the_points_of_a_long_run_stay_few_and_keep_its_highs(targets: Targets) -> None:
    # timeline_points.c ticks for 50 ms and a million times at least, with
    # points due every microsecond, so the 2,000 points fill and merge again
    # and again (50 ms alone held too few ticks on a loaded machine); the
    # one point of 1,000,000,000 live bytes in the middle survives every
    # merge after it, as each keeps the higher of two neighbours.  The
    # moment the points are read closes them: 7 bytes.
    program = targets.build("timeline_points", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror",
                            "-DTIMELINE_FIRST_INTERVAL_NS=1000u", f"-I{REPO_ROOT / 'monitor'}",
                            str(REPO_ROOT / "monitor" / "timeline.c"))
    completed = subprocess.run([program], capture_output=True, text=True, timeout=60, check=True)
    count, increasing, highs, last_live, resident = (int(field) for field in completed.stdout.split())
    assert 1000 < count <= 2001 and increasing == 1 and resident == 1
    assert (highs, last_live) == (1, 7)
