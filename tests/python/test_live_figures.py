"""The live view's figures that do not need a process: the compact numbers
of its columns, its sparklines, and what each order puts first given two
samples whose figures are written out here."""

from __future__ import annotations

from mprof.live.sample import PathFigures, Sample
from mprof.live.view import ViewState, compact, lines, sparkline
from mprof.report.model import Model, RunInfo


def test_compact_numbers_fit_six_characters() -> None:
    assert [compact(value) for value in (0, 7, 4902, 9999, 10_000, 14_015, 140_150, 999_499, 999_500, 1_234_567,
                                         5_000_000_000_000)] == [
        "0", "7", "4,902", "9,999", "10.0k", "14.0k", "140k", "999k", "1.0M", "1.2M", "5000G"]
    assert [compact(value, binary=True, sign=True) for value in (0, -5, 10_240, 2_379_776, -3 << 30)] == [
        "0", "-5", "+10.0K", "+2.3M", "-3.0G"]


def test_a_sparkline_keeps_each_columns_highest() -> None:
    assert sparkline([], 10) == ""
    assert sparkline([0, 8, 4, 2], 4) == " #=-"
    # Two values a column: the higher of each pair, scaled to the highest.
    assert sparkline([0, 1, 8, 0, 4, 4, 0, 0], 4) == ".#= "
    # Fewer values than columns (a run's first seconds): a column each, not
    # the first value over and over.
    assert sparkline([0, 5, 15, 25, 35, 45, 55, 65, 80], 58) == " _.-~=+*#"
    assert sparkline([8, 0, 1], 3) == "# ."
    # Three values in two columns: the first alone, then the higher of the
    # other two; a value above none gets the lowest mark.
    assert sparkline([1, 0, 80], 2) == "_#"
    assert sparkline([0, 0], 5) == "  "
    assert sparkline([5], 0) == ""
    assert sparkline([3, 8, 1], 1) == "#"


def _sample(elapsed_s: float, paths: dict[str, tuple[int, int, int]]) -> Sample:
    """paths: name -> (allocations, live bytes, temporaries)."""
    figures = {(name,): PathFigures((name,), (), allocs, 1, live, temporaries)
               for name, (allocs, live, temporaries) in paths.items()}
    run = RunInfo(1, 0, "/bin/app", "app", int(elapsed_s * 1e9), True, False, False, 0, False, 5)
    return Sample(model=Model([run], {}, {}, [], {}, [], []), elapsed_ns=int(elapsed_s * 1e9), allocs=0, live_blocks=0,
                  live_bytes=sum(live for _, live, _ in paths.values()), peak_bytes=0, peak_ns=0, timeline=(),
                  paths=figures, warnings=[])


def test_each_order_ranks_the_paths_by_its_figure() -> None:
    state = ViewState(pid=1)
    state.add(_sample(1.0, {"cache": (10, 1000, 0), "churn": (500, 0, 500), "steady": (5, 5000, 0)}))
    state.add(_sample(3.0, {"cache": (30, 3000, 0), "churn": (2500, 0, 2500), "steady": (5, 5000, 0),
                            "new": (1, 100, 0)}))
    by = {}
    for key in "latg":
        assert state.choose(key)
        by[key] = [(row.figures.names[0], row.allocs_per_second, row.growth) for row in state.rows()]
    assert by["l"] == [("steady", 0.0, 0), ("cache", 10.0, 2000), ("new", 0.5, 100)]
    assert [name for name, _, _ in by["a"]] == ["churn", "cache", "new"]  # 1000, 10 and 0.5 a second
    assert [name for name, _, _ in by["t"]] == ["churn"]
    assert by["g"] == [("cache", 10.0, 2000), ("new", 0.5, 100)]  # steady did not grow, churn holds nothing
    assert not state.choose("x")


def test_growth_is_since_the_first_sample_and_the_rate_since_the_one_before() -> None:
    """Three samples: a path's growth, and the process's, count from the
    view's first, whatever the samples between; allocations a second count
    from the sample before."""
    state = ViewState(pid=1)
    state.add(_sample(1.0, {"cache": (10, 1000, 0), "churn": (500, 0, 500), "steady": (5, 5000, 0)}))
    state.add(_sample(3.0, {"cache": (30, 3000, 0), "churn": (2500, 0, 2500), "steady": (5, 5000, 0),
                            "new": (1, 100, 0)}))
    state.add(_sample(4.0, {"cache": (50, 5000, 0), "churn": (2600, 0, 2600), "steady": (5, 4500, 0),
                            "new": (1, 100, 0), "late": (2, 64, 0)}))
    by = {}
    for key in "lag":
        assert state.choose(key)
        by[key] = [(row.figures.names[0], row.allocs_per_second, row.growth) for row in state.rows()]
    # cache: 40 blocks of 100 bytes since the first sample, 20 in the last
    # second; steady freed 500 bytes; new came before the last sample and
    # late in it.
    assert by["l"] == [("cache", 20.0, 4000), ("steady", 0.0, -500), ("new", 0.0, 100), ("late", 2.0, 64)]
    assert by["a"] == [("churn", 100.0, 0), ("cache", 20.0, 4000), ("late", 2.0, 64)]
    assert by["g"] == [("cache", 20.0, 4000), ("new", 0.0, 100), ("late", 2.0, 64), ("steady", 0.0, -500)]
    # The process: 6,000 live bytes in the first sample, 9,664 now.
    assert lines(state, 80, 3)[1:] == ["live 9,664 bytes in 0 blocks   peak 0 bytes at 0:00:00",
                                       "resident -   growth +3,664 bytes since the view began"]


def test_compact_numbers_round_to_the_unit_that_fits() -> None:
    """One decimal below 99.95 of a unit, none from there; the next unit
    from 999.5; a sign only where asked for, a minus always."""
    assert [compact(value) for value in (99_949, 99_950, 10_000.0, 2.5, 12.7, -14_015, -5)] == [
        "99.9k", "100k", "10.0k", "2", "13", "-14.0k", "-5"]
    assert [compact(value, binary=True) for value in (9_999, 10_239, 1_023_487, 1_023_488, 5 << 40)] == [
        "9,999", "10.0K", "999K", "1.0M", "5120G"]
    assert [compact(value, sign=True) for value in (0, 1, 5, -1, 12_345, -12_345)] == ["0", "+1", "+5", "-1",
                                                                                      "+12.3k", "-12.3k"]


def _timed(elapsed_s: float, peak_s: float, timeline: tuple[tuple[int, int, int, int, int], ...]) -> Sample:
    run = RunInfo(1, 0, "/bin/app", "", int(elapsed_s * 1e9), True, False, False, 0, False, 5)
    return Sample(model=Model([run], {}, {}, [], {}, [], []), elapsed_ns=int(elapsed_s * 1e9), allocs=0,
                  live_blocks=0, live_bytes=0, peak_bytes=0, peak_ns=int(peak_s * 1e9), timeline=timeline, paths={},
                  warnings=[])


def test_times_and_sizes_on_the_screen() -> None:
    """The run's time and the peak's as hours:minutes:seconds, seconds
    never rounded up; the highest live and resident sizes in the largest
    binary unit below 1,024 of it (GiB at most)."""
    shown = {}
    for elapsed_s, peak_s, live, resident in ((59.9, 0.0, 1023, 1024), (3725.0, 3599.999, 1_048_575, 1 << 20),
                                              (360_000.0, 61.0, 3 << 30, 2 << 40)):
        state = ViewState(pid=7)
        state.add(_timed(elapsed_s, peak_s, ((1, live, 1, resident, 0),)))
        screen = lines(state, 80, 24)
        shown[elapsed_s] = (screen[0], screen[1].split("at ")[1], screen[3], screen[4])
    assert shown == {59.9: ("mprof top  pid 7  at 0:00:59  /bin/app", "0:00:00", "live         1,023 B |#",
                            "resident     1.0 KiB |#"),
                     3725.0: ("mprof top  pid 7  at 1:02:05  /bin/app", "0:59:59", "live     1,024.0 KiB |#",
                              "resident     1.0 MiB |#"),
                     360_000.0: ("mprof top  pid 7  at 100:00:00  /bin/app", "0:01:01", "live         3.0 GiB |#",
                                 "resident 2,048.0 GiB |#")}


def test_ties_go_to_more_live_bytes_then_by_name_and_a_rate_needs_time() -> None:
    """Paths of one figure: the one holding more first, then by their
    names; two samples of the same moment give no rate (not a division by
    zero)."""
    state = ViewState(pid=1)
    state.add(_sample(2.0, {"b": (4, 10, 4), "a": (4, 10, 4), "c": (4, 20, 4), "d": (4, 5, 0)}))
    assert state.choose("t")
    assert [row.figures.names[0] for row in state.rows()] == ["c", "a", "b"]
    assert state.choose("a")
    assert [(row.figures.names[0], row.allocs_per_second) for row in state.rows()] == [
        ("c", 2.0), ("a", 2.0), ("b", 2.0), ("d", 2.0)]
    state.add(_sample(2.0, {"b": (8, 10, 4), "a": (4, 10, 4)}))
    assert state.choose("l")
    assert [(row.figures.names[0], row.allocs_per_second) for row in state.rows()] == [("a", 0.0), ("b", 0.0)]


def test_a_sparkline_spans_the_width_the_line_leaves() -> None:
    """At 80 columns a sparkline has 58 (after "resident     6.0 MiB |"):
    116 points, two a column; the first half of the run at 0."""
    state = ViewState(pid=7)
    state.add(_timed(1.0, 0.0, tuple((n, 0 if n < 58 else 1024, 1, 0 if n < 58 else 4096, 0) for n in range(116))))
    assert lines(state, 80, 24)[3:5] == ["live         1.0 KiB |" + " " * 29 + "#" * 29,
                                         "resident     4.0 KiB |" + " " * 29 + "#" * 29]
