"""The live view in the test's own process, from snapshots written by hand
(tests/python/datafile_builder.py, straight from mprof(5)) as a process
like tests/targets/grower.c would answer them: what sample.take reads of
each, and the screens view.lines makes of three of them, checked whole.

The program of the snapshots: main > grow_cache > remember keeps blocks of
512 bytes, main > churn > scratch makes and frees blocks of 24 bytes at
once (temporaries), and main calls two static functions named helper, one
in the program and one in a library, which read as one path."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from datafile_builder import DataFileBuilder
from hand_profiles import NamedFrames, recorded
from mprof.live.sample import PathFigures, Sample, take
from mprof.live.view import ViewState, lines
from mprof.reducer import profile as profile_module
from mprof.reducer.symbolize import Frame

MAIN, GROW_CACHE, REMEMBER, CHURN, SCRATCH, HELPER_A, HELPER_B = 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000, \
    0x7000
# Each address is one frame: (function, module).
FRAMES = {MAIN: ("main", "/bin/prog"), GROW_CACHE: ("grow_cache", "/bin/prog"), REMEMBER: ("remember", "/bin/prog"),
          CHURN: ("churn", "/bin/prog"), SCRATCH: ("scratch", "/bin/prog"), HELPER_A: ("helper", "/bin/prog"),
          HELPER_B: ("helper", "/lib/libplugin.so")}
CACHE, CHURNED, HELPED = ("main", "grow_cache", "remember"), ("main", "churn", "scratch"), ("main", "helper")
# Paths through a library's frames, which a path too long for its column
# folds (report/folding.py).
LIBRARY = "/lib/libworker.so"
# ENTER is the library's function main calls, which stays; the library's
# frames it calls fold.
RUN_QUEUE, DISPATCH, INVOKE, SCHEDULE, HANDLE, LONG_X, SHORT_X, LY, H, ENTER = range(0x8000, 0x8a00, 0x100)
FRAMES |= {ENTER: ("e", LIBRARY), RUN_QUEUE: ("run_queue_task", LIBRARY), DISPATCH: ("dispatch_one", LIBRARY),
           INVOKE: ("invoke_handler", LIBRARY), SCHEDULE: ("schedule_next", LIBRARY), HANDLE: ("handle", "/bin/prog"),
           LONG_X: ("lxxxxxxxxxxxx", LIBRARY), SHORT_X: ("lxxxx", LIBRARY), LY: ("ly", LIBRARY), H: ("h", "/bin/prog")}


class FramesInFiles(NamedFrames):
    """The resolver's stand-in: each address one frame of FRAMES."""

    def resolve(self, addresses: Iterable[int], progress: object = None) -> dict[int, list[Frame]]:
        return {a: [Frame(FRAMES[a][0], "prog.c", 1, FRAMES[a][1], a, False)] for a in addresses}


@pytest.fixture(autouse=True)
def frames_in_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profile_module, "Resolver", FramesInFiles)


def snapshot(directory: Path, name: str, elapsed_s: float, kept: int, churned: int, helper_a_freed: int,
             peak: tuple[int, float], timeline: Sequence[tuple[float, int, int, int]], **fields: object) -> Path:
    """A snapshot of the program elapsed_s seconds in: kept blocks kept,
    churned made and freed at once, helper's blocks (3 of 64 bytes in the
    program's, helper_a_freed of them freed; 2 in the library's), its peak (bytes, seconds) and
    its timeline (seconds, live bytes, live blocks, resident bytes)."""
    builder: DataFileBuilder = recorded([((MAIN, GROW_CACHE, REMEMBER), 512, kept, 0),
                                         ((MAIN, CHURN, SCRATCH), 24, churned, churned),
                                         ((MAIN, HELPER_A), 64, 3, helper_a_freed),
                                         ((MAIN, HELPER_B), 64, 2, 0)],
                                        flags=0x1,  # call graph; neither final nor a checkpoint: a snapshot
                                        pid=4242, elapsed_ns=int(elapsed_s * 1e9),
                                        timeline=[(int(s * 1e9), live, blocks, resident)
                                                  for s, live, blocks, resident in timeline], **fields)
    # Every block of churn's a temporary (freed before the next allocation).
    builder.paths = [(*path, churned) if path[0] == (SCRATCH, CHURN, MAIN) else path for path in builder.paths]
    builder.summary[5], builder.summary[23] = peak[0], int(peak[1] * 1e9)  # max_live_bytes, peak_ns
    (directory / name).write_bytes(builder.build())
    return directory / name


MIB = 1 << 20
TIMELINE = [(0.5, 4352, 12, 4 * MIB), (1.0, 4352, 12, 4 * MIB)]


def three_samples(directory: Path) -> list[Sample]:
    """At 1, 2 and 4 seconds: the cache grows by 16 blocks a second (8,
    24, 40), churn makes 200 blocks a second (200, 600, 1,000), and the
    program's helper frees its last two blocks after the second sample."""
    return [take(snapshot(directory, "1.mprof", 1.0, 8, 200, 1, (4352, 1.0), TIMELINE)),
            take(snapshot(directory, "2.mprof", 2.0, 24, 600, 1, (12544, 2.0),
                          [*TIMELINE, (2.0, 12544, 28, 5 * MIB)])),
            take(snapshot(directory, "4.mprof", 4.0, 40, 1000, 3, (20800, 3.9),
                          [*TIMELINE, (2.0, 12544, 28, 5 * MIB), (3.0, 16000, 35, 6 * MIB),
                           (4.0, 20608, 42, 6 * MIB)]))]


def test_a_sample_has_the_snapshots_figures_and_a_path_per_name(tmp_path: Path) -> None:
    """The whole program's figures from the summary (live: allocated less
    freed), the run's time and timeline as written, and each path's: the
    two helpers, two functions of one name, are one path of both's
    figures."""
    sample = three_samples(tmp_path)[2]
    # 40 of 512 bytes, 1,000 of 24 freed, 3 + 2 of 64 of which 3 freed.
    assert (sample.elapsed_ns, sample.allocs, sample.live_blocks, sample.live_bytes, sample.peak_bytes,
            sample.peak_ns) == (4_000_000_000, 1045, 42, 20_608, 20_800, 3_900_000_000)
    assert sample.timeline == ((500_000_000, 4352, 12, 4 * MIB, 0), (1_000_000_000, 4352, 12, 4 * MIB, 0),
                               (2_000_000_000, 12544, 28, 5 * MIB, 0), (3_000_000_000, 16000, 35, 6 * MIB, 0),
                               (4_000_000_000, 20608, 42, 6 * MIB, 0))
    assert sample.warnings == []
    by_name = {function.full_name: key for key, function in sample.model.functions.items()}
    helpers = sorted(key for key, function in sample.model.functions.items() if function.name == "helper")
    assert len(helpers) == 2 and sample.model.runs[0].command_line == "prog --flag"
    paths = {names: (figures.names, figures.allocs, figures.live_blocks, figures.live_bytes, figures.temporaries)
             for names, figures in sample.paths.items()}
    assert paths == {CACHE: (CACHE, 40, 40, 20_480, 0), CHURNED: (CHURNED, 1000, 0, 0, 1000),
                     HELPED: (HELPED, 5, 2, 128, 0)}
    assert sample.paths[CACHE].functions == (by_name["main"], by_name["grow_cache"], by_name["remember"])
    assert sample.paths[CHURNED].functions == (by_name["main"], by_name["churn"], by_name["scratch"])
    # The helper row's functions are one helper's, whichever came first.
    [helper] = [function for function in sample.paths[HELPED].functions[1:]]
    assert sample.paths[HELPED].functions[0] == by_name["main"] and helper in helpers


def test_a_sample_names_functions_as_reports_do_and_passes_on_the_reductions_warnings(tmp_path: Path) -> None:
    """A name with a control character is printed escaped, as every report
    prints it (the key too: it is what the rows show), and a C++ name
    short; the warning of a setting the monitor refused comes with the
    sample, unprinted."""
    FRAMES[GROW_CACHE] = ("grow\x1bcache", "/bin/prog")
    FRAMES[REMEMBER] = ("ns::Cache::remember(unsigned long)", "/bin/prog")
    try:
        path = snapshot(tmp_path, "s.mprof", 1.0, 8, 0, 0, (4096, 1.0), [],
                        refused_settings=b"MPROF_DEPTH=5000\0")
        sample = take(path)
    finally:
        FRAMES[GROW_CACHE], FRAMES[REMEMBER] = ("grow_cache", "/bin/prog"), ("remember", "/bin/prog")
    assert sample.warnings == [f"{path}: the monitor did not accept MPROF_DEPTH=5000 and kept its default"]
    names = ("main", "grow\\x1bcache", "ns::Cache::remember(unsigned long)")
    assert names in sample.paths
    assert [sample.model.functions[f].name for f in sample.paths[names].functions] == [
        "main", "grow\\x1bcache", "ns::Cache::remember"]


def test_a_path_of_no_frame_is_one_row_of_no_names(tmp_path: Path) -> None:
    """Blocks recorded with no call path (mprof(5): the empty path) are the
    row of the empty name, with no functions."""
    builder = recorded([((), 32, 3, 1), ((MAIN, GROW_CACHE, REMEMBER), 512, 2, 0)], flags=0x1)
    (tmp_path / "e.mprof").write_bytes(builder.build())
    sample = take(tmp_path / "e.mprof")
    assert sample.paths[()] == PathFigures((), (), 3, 2, 64, 0)
    assert (sample.live_blocks, sample.live_bytes, sample.peak_bytes, sample.peak_ns) == (4, 1088, 0, 0)


HEADING = "    live bytes blocks allocs/s  temps  growth  path"
KEYS = "[l:live  a:allocs/s  t:temps  g:growth  c:classify  q:quit]"


def test_the_screen_of_the_third_sample_in_each_order(tmp_path: Path) -> None:
    """The screen after three samples, whole: the figures of the last, its
    live bytes and resident set over the run, and the paths with their
    allocations a second since the sample before (2 seconds: 16 kept and
    400 churned blocks) and growth since the first (cache: 32 blocks of
    512 bytes; helper: 2 blocks of 64 freed)."""
    state = ViewState(4242)
    for sample in three_samples(tmp_path):
        state.add(sample)
    state.resident = 6 * MIB + 12_345
    top = ["mprof top  pid 4242  at 0:00:04  prog --flag",
           "live 20,608 bytes in 42 blocks   peak 20,800 bytes at 0:00:03",
           "resident 6,303,801 bytes   growth +16,256 bytes since the view began",
           # 4,352, 12,544, 16,000 and 20,608 bytes of 20,608: levels 2, 5, 7 and 8 of 8
           "live        20.1 KiB |..=*#",
           "resident     6.0 MiB |++*##"]
    cache = "        20,480     40        8      0  +16.0K  main > grow_cache > remember"
    helper = "           128      2        0      0    -128  main > helper"
    churn = "             0      0      200  1,000       0  main > churn > scratch"
    assert lines(state, 80, 24) == [*top, f"by live bytes   {KEYS}", "", HEADING, cache, helper]
    assert state.choose("a")
    assert lines(state, 80, 24) == [*top, f"by allocations/s   {KEYS}", "", HEADING, churn, cache]
    assert state.choose("t")
    assert lines(state, 80, 24) == [*top, f"by temporaries   {KEYS}", "", HEADING, churn]
    assert state.choose("g")
    state.note = "warning: something"
    # 92 columns in one line: at 80 the keys get a line of their own.
    assert lines(state, 80, 24) == [*top, "by growth since the view began", KEYS, "warning: something",
                                    HEADING, cache, helper]
    assert lines(state, 92, 24)[len(top)] == f"by growth since the view began   {KEYS}"
    assert lines(state, 91, 24)[len(top):len(top) + 2] == ["by growth since the view began", KEYS]


def test_the_first_samples_rates_are_since_the_start(tmp_path: Path) -> None:
    """With one sample, allocations a second are over the whole run (1
    second), and growth is none."""
    state = ViewState(4242)
    state.add(three_samples(tmp_path)[0])
    assert state.choose("a")
    assert lines(state, 80, 24)[2:] == [
        "resident -   growth +0 bytes since the view began",
        "live         4.2 KiB |##",
        "resident     4.0 MiB |##",
        f"by allocations/s   {KEYS}", "", HEADING,
        "             0      0      200    200       0  main > churn > scratch",
        "         4,096      8        8      0       0  main > grow_cache > remember",
        "           256      4        5      0       0  main > helper"]


def test_a_screen_too_small_is_cut(tmp_path: Path) -> None:
    """Lines no wider than the terminal, and no more of them; the paths
    the height leaves room for."""
    state = ViewState(4242)
    for sample in three_samples(tmp_path):
        state.add(sample)
    full = lines(state, 80, 24)
    assert lines(state, 80, 9) == full[:9]
    assert lines(state, 80, 5) == full[:5]
    # Too narrow for the order and the keys on one line: the keys have a
    # line of their own, cut as every line is.
    assert lines(state, 40, 24) == [line[:40] for line in full[:5]] + ["by live bytes", KEYS[:40]] + [
        line[:40] for line in full[6:8]] + [
        "        20,480     40        8      0  +", "           128      2        0      0   "]


def test_the_screen_before_any_figures_and_after_the_end(tmp_path: Path) -> None:
    state = ViewState(4242)
    assert lines(state, 80, 24) == ["mprof top  pid 4242  waiting  ", "", "waiting for the first figures"]
    state.note = "no figures yet"
    state.ended = True
    assert lines(state, 80, 24) == ["mprof top  pid 4242  ended  ", "", "no figures yet"]
    # A program with no command line is named by its path.
    state.add(take(snapshot(tmp_path, "s.mprof", 1.0, 8, 0, 0, (4096, 1.0), [], cmdline=b"")))
    assert lines(state, 80, 24)[0] == "mprof top  pid 4242  ended  /bin/prog"
    assert state.choose("t")
    assert lines(state, 80, 24)[3:] == [
        "live             0 B |", "resident         0 B |", f"by temporaries   {KEYS}", "no figures yet",
        HEADING, "               (no path has any temporaries)"]


def test_the_row_of_two_functions_of_one_name_adds_up_both(tmp_path: Path) -> None:
    """Each figure of the helpers' row is the sum of both paths' (figures
    all different), and its functions are those of the first (the
    reduction's first group: the program's helper, recorded first)."""
    builder = recorded([((MAIN, HELPER_A), 64, 3, 1), ((MAIN, HELPER_B), 64, 5, 0)], flags=0x1)
    builder.paths = [(*path, 1 if path[0] == (HELPER_A, MAIN) else 2) for path in builder.paths]  # temporaries
    (tmp_path / "h.mprof").write_bytes(builder.build())
    sample = take(tmp_path / "h.mprof")
    functions = {(function.full_name, function.module): key for key, function in sample.model.functions.items()}
    assert sample.paths == {HELPED: PathFigures(HELPED, (functions["main", "/bin/prog"],
                                                         functions["helper", "/bin/prog"]), 8, 7, 448, 3)}


def one_sample_state(directory: Path, *chains: tuple[tuple[int, ...], int]) -> ViewState:
    """The view of one snapshot of the chains given (addresses outermost
    first, blocks of 64 bytes kept)."""
    (directory / "p.mprof").write_bytes(recorded([(chain, 64, blocks, 0) for chain, blocks in chains],
                                                 flags=0x1).build())
    state = ViewState(4242)
    state.add(take(directory / "p.mprof"))
    return state


def test_rows_cut_off_leave_the_shown_ones_as_they_would_fold(tmp_path: Path) -> None:
    """Two paths that fold alike (main > e > [2 libworker.so] > handle) are
    both shown whole (allocations a second over the run's 2.5 s), to tell them apart; with room for one row, the other
    is not on the screen, and the one shown folds as it would alone."""
    state = one_sample_state(tmp_path, ((MAIN, ENTER, RUN_QUEUE, DISPATCH, HANDLE), 10),
                             ((MAIN, ENTER, INVOKE, SCHEDULE, HANDLE), 5))
    assert lines(state, 80, 24)[8:] == [
        "           640     10        4      0       0  main > e > run_queue_task > dispatch_one > handle"[:80],
        "           320      5        2      0       0  main > e > invoke_handler > schedule_next > handle"[:80]]
    assert lines(state, 80, 9)[8:] == [
        "           640     10        4      0       0  main > e > [2 libworker.so] > handle"[:80]]


def test_the_path_column_is_what_the_figures_leave_and_20_at_least(tmp_path: Path) -> None:
    """The figures take 47 columns: a path of 25 characters is whole from
    72 columns on, folded below (the column 20 wide at least, then cut to
    the line); one of 33, whole from 80 on."""
    state = one_sample_state(tmp_path, ((MAIN, ENTER, SHORT_X, LY, H), 1))
    assert [lines(state, width, 24)[-1][47:] for width in (60, 67, 71, 72)] == [
        "main > e > [2", "main > e > [2 libwor", "main > e > [2 libworker.", "main > e > lxxxx > ly > h"]
    state = one_sample_state(tmp_path, ((MAIN, ENTER, LONG_X, LY, H), 1))
    assert [lines(state, width, 24)[-1][47:] for width in (79, 80, 84)] == [
        "main > e > [2 libworker.so] > h", "main > e > lxxxxxxxxxxxx > ly > h", "main > e > lxxxxxxxxxxxx > ly > h"]


# The 4-second snapshot classified (mprof(5)'s LEAK), each path's kinds
# adding up to its live blocks: of the cache's 40 blocks of 512 bytes, 2
# definitely lost; the program's helper's 2 live blocks of 64 possibly
# lost, the library's 1 definitely and 1 indirectly lost.  By path index in
# PATH's order: definite blocks, bytes, indirect..., possible..., reachable...
SCAN = (0, 2, 0, 8192, 21_000, 150_000)
KINDS = [(0, 2, 1024, 0, 0, 0, 0, 38, 19_456), (2, 0, 0, 0, 0, 2, 128, 0, 0), (3, 1, 64, 1, 64, 0, 0, 0, 0)]


def classified_snapshot(directory: Path, name: str = "c.mprof", elapsed_s: float = 4.0) -> Path:
    return snapshot(directory, name, elapsed_s, 40, 1000, 1, (20_800, 3.9), [], leak=SCAN, leak_entries=KINDS)


def test_a_classified_sample_has_each_paths_kinds(tmp_path: Path) -> None:
    """A snapshot with a LEAK section: the blocks and bytes of each kind by
    path, the two helpers' added up as their other figures are; one
    without it: not classified, every kind 0."""
    sample = take(classified_snapshot(tmp_path))
    assert sample.classified
    assert {names: figures.kinds for names, figures in sample.paths.items()} == {
        CACHE: (2, 1024, 0, 0, 0, 0, 38, 19_456), CHURNED: (0,) * 8, HELPED: (1, 64, 1, 64, 2, 128, 0, 0)}
    plain = three_samples(tmp_path)[2]
    assert not plain.classified and all(figures.kinds == (0,) * 8 for figures in plain.paths.values())


# The leak kinds' lines, as of the classified snapshot at 4 seconds: the
# totals, then the lost paths, most bytes first.
LEAK_LINES = ["scan at 0:00:04  definitely lost indirectly lost   possibly lost still reachable",
              "bytes                      1,088              64             128          19,456",
              "blocks                         3               1               2              38",
              "         1,024      2  definitely lost  main > grow_cache > remember",
              "            64      1  definitely lost  main > helper",
              "            64      1  indirectly lost  main > helper"]


def test_the_screen_shows_the_leak_kinds_until_the_next_classification(tmp_path: Path) -> None:
    """Nothing of the kinds before they are asked for; then a line while
    they are awaited; once a classified sample has come, its kinds, in
    80 columns, above the order and the keys, through the samples after it
    (which are not classified), the label saying when a newer
    classification is awaited."""
    state = ViewState(4242)
    samples = three_samples(tmp_path)
    state.add(samples[0])
    before = lines(state, 80, 24)
    assert not any("lost" in line for line in before)
    state.classifying = True
    assert lines(state, 80, 24)[5:7] == [
        "leak kinds: classifying (the process stops its threads to scan its heap)", f"by live bytes   {KEYS}"]
    state.add(take(classified_snapshot(tmp_path)), asked_to_classify=True)
    assert not state.classifying
    screen = lines(state, 80, 24)
    assert screen[5:12] == [*LEAK_LINES, f"by live bytes   {KEYS}"]
    assert max(len(line) for line in screen) == 80
    state.add(samples[2])
    assert lines(state, 80, 24)[5:11] == LEAK_LINES
    state.classifying = True
    assert lines(state, 80, 24)[5:11] == [f"{'classifying':<16}{LEAK_LINES[0][16:]}", *LEAK_LINES[1:]]
    # Fewer lines: the path rows go first, then the lost paths.
    assert lines(state, 80, 9)[5:] == [f"{'classifying':<16}{LEAK_LINES[0][16:]}", *LEAK_LINES[1:4]]


def test_the_screen_says_when_the_process_did_not_classify(tmp_path: Path) -> None:
    """The answer to an ask to classify came without the kinds (a process
    with MPROF_LEAK_CHECK=0, or an older libmprof): said, until a
    classified answer comes."""
    state = ViewState(4242)
    samples = three_samples(tmp_path)
    state.add(samples[0])
    state.classifying = True
    state.add(samples[1], asked_to_classify=True)
    assert (state.classifying, state.refused) == (False, True)
    assert lines(state, 80, 24)[5] == "leak kinds: not classified (MPROF_LEAK_CHECK=0, or a libmprof before them)"
    state.add(samples[2])
    assert lines(state, 80, 24)[5] == "leak kinds: not classified (MPROF_LEAK_CHECK=0, or a libmprof before them)"
    state.add(take(classified_snapshot(tmp_path)), asked_to_classify=True)
    assert lines(state, 80, 24)[5:11] == LEAK_LINES


def test_a_classification_with_nothing_lost_says_so(tmp_path: Path) -> None:
    state = ViewState(4242)
    path = snapshot(tmp_path, "r.mprof", 1.0, 8, 0, 0, (4096, 1.0), [], leak=SCAN,
                    leak_entries=[(0, 0, 0, 0, 0, 0, 0, 8, 4096), (2, 0, 0, 0, 0, 0, 0, 3, 192),
                                  (3, 0, 0, 0, 0, 0, 0, 2, 128)])
    state.add(take(path), asked_to_classify=True)
    assert lines(state, 80, 24)[5:9] == [
        "scan at 0:00:01  definitely lost indirectly lost   possibly lost still reachable",
        "bytes                          0               0               0           4,416",
        "blocks                         0               0               0              13",
        "               (no block is lost)"]
