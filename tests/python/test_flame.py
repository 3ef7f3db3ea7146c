"""The flame graphs and size chart of the HTML report, on models built by
hand: where the allocation graph is exact, where it estimates, the caps."""

from __future__ import annotations

import zlib

from mprof.report import flame, size_chart
from mprof.report.model import BinRow, CycleRow, EdgeRow, FunctionRow, LeakFrame, LeakRow, Model, RunInfo


def function(id: int, name: str, own: int = 0, total: int = 0, cycle: int | None = None) -> FunctionRow:
    return FunctionRow(id, name, "prog", "prog.c", id, cycle, 1 if own else 0, (0, own, 0, 0), (0, 0, 0, 0), 0,
                       total, 1, 0)


def model(functions: list[FunctionRow], edges: list[tuple[int, int, int]], cycles: dict[int, CycleRow] | None = None,
          leaks: list[LeakRow] | None = None, bins: list[BinRow] | None = None) -> Model:
    rows = [EdgeRow(caller, callee, 1, (0, bytes, 0, 0)) for caller, callee, bytes in edges]
    result = Model([RunInfo(1, 0, "prog", "prog", 1, True, True, False, 0, False, 5)], {}, {f.id: f for f in functions},
                   rows, cycles or {}, bins or [], leaks or [])
    for edge in rows:
        result.callers.setdefault(edge.callee, []).append(edge)
        result.callees.setdefault(edge.caller, []).append(edge)
    return result


def paths(graph: flame.Flame) -> dict[str, int]:
    """'main > a > w' -> bytes, for every frame."""
    names: list[str] = []
    result = {}
    for frame in graph.frames:
        names[frame.depth:] = [frame.name]
        result[" > ".join(names[1:])] = frame.bytes
    return result


def test_a_tree_is_exact_and_laid_out_widest_first() -> None:
    graph = flame.allocation_flame(model(
        [function(1, "main", total=400), function(2, "a", total=300), function(3, "b", total=100),
         function(4, "w", own=400, total=400)],
        [(1, 2, 300), (1, 3, 100), (2, 4, 300), (3, 4, 100)]))
    assert graph is not None
    assert paths(graph) == {"": 400, "main": 400, "main > a": 300, "main > a > w": 300, "main > b": 100,
                            "main > b > w": 100}
    b = next(f for f in graph.frames if f.name == "b")
    assert (b.x, b.width, b.depth) == (0.75, 0.25, 2)


def test_below_a_shared_function_bytes_split_in_proportion() -> None:
    # a > w > x and b > w > y really, but the pairs cannot tell: w's bytes
    # under a are split 3:1 between x and y, as its edges are.
    graph = flame.allocation_flame(model(
        [function(1, "main", total=400), function(2, "a", total=300), function(3, "b", total=100),
         function(4, "w", total=400), function(5, "x", own=300, total=300), function(6, "y", own=100, total=100)],
        [(1, 2, 300), (1, 3, 100), (2, 4, 300), (3, 4, 100), (4, 5, 300), (4, 6, 100)]))
    assert graph is not None
    found = paths(graph)
    assert (found["main > a > w > x"], found["main > a > w > y"]) == (225, 75)
    assert (found["main > b > w > x"], found["main > b > w > y"]) == (75, 25)


def test_a_cycle_is_one_frame_naming_its_members() -> None:
    graph = flame.allocation_flame(model(
        [function(1, "main", total=60), function(2, "even", total=60, cycle=1),
         function(3, "odd", own=60, total=60, cycle=1)],
        [(1, 2, 60), (2, 3, 60), (3, 2, 40)], cycles={1: CycleRow(1, 60, 60, 1, 5, (2, 3))}))
    assert graph is not None
    assert paths(graph) == {"": 60, "main": 60, "main > <cycle 1 as a whole>": 60}
    assert graph.frames[-1].search == "<cycle 1 as a whole> members: even, odd"


def test_narrow_frames_and_frames_beyond_the_cap_are_left_out() -> None:
    leaves = [function(i, f"leaf{i}", own=1, total=1) for i in range(2, 2002)]
    wide = model([function(1, "main", total=2000), *leaves], [(1, i, 1) for i in range(2, 2002)])
    narrow = flame.allocation_flame(wide)  # each leaf is 0.05% of the whole
    assert narrow is not None and [f.name for f in narrow.frames] == ["all", "main"] and narrow.omitted == 2000
    capped = flame.allocation_flame(wide, min_share=0, max_frames=100)
    assert capped is not None and len(capped.frames) == 100 and capped.omitted == 2000 - 98


def test_no_allocation_flame_without_call_graph() -> None:
    minus = model([function(1, "main")], [])
    minus.runs[0] = RunInfo(1, 0, "prog", "prog", 1, False, True, False, 0, False, 5)
    assert flame.allocation_flame(minus) is None


def test_leak_paths_that_do_not_reach_main_hang_under_their_own_frame() -> None:
    leaks = [LeakRow(2, 0, 64, 0, (LeakFrame(3, "prog.c", 1), LeakFrame(2, "prog.c", 2), LeakFrame(1, "prog.c", 3))),
             LeakRow(1, 1, 10, 10, (LeakFrame(3, "prog.c", 1),)),  # freed: not drawn
             LeakRow(1, 0, 16, 0, (LeakFrame(3, "prog.c", 1), LeakFrame(2, "prog.c", 5)))]
    graph = flame.leak_flame(model([function(1, "main"), function(2, "a"), function(3, "w")], [], leaks=leaks))
    assert paths(graph) == {"": 80, "main": 64, "main > a": 64, "main > a > w": 64,
                            "... (callers beyond the leak depth)": 16,
                            "... (callers beyond the leak depth) > a": 16,
                            "... (callers beyond the leak depth) > a > w": 16}


def test_size_chart_has_a_bar_per_size_or_per_range() -> None:
    few = [BinRow(size, 2, 1, size * 2, size, "") for size in (8, 204, 2000)]
    chart = size_chart.chart(model([], [], bins=few))
    assert chart.ranges is False and [bar.label for bar in chart.bars] == ["8", "204", "> 1024"]
    assert chart.bars[2].share == 1.0 and chart.bars[2].kept_share == 0.5
    many = [BinRow(size, 1, 0, size, 0, "") for size in range(0, 1026, 5)]
    chart = size_chart.chart(model([], [], bins=many))
    assert chart.ranges is True
    assert [bar.label for bar in chart.bars] == ["0", "1-8", "9-16", "17-32", "33-64", "65-128", "129-256", "257-512",
                                                 "513-1024", "> 1024"]
    assert sum(bar.allocs for bar in chart.bars) == len(many)


def tone(name: str) -> int:
    """A frame's colour, 0-99, from its name alone (flame.Frame.tone), so a
    function keeps its colour from one report to the next."""
    return zlib.crc32(name.encode()) % 100


def frame_rows(graph: flame.Flame) -> list[tuple]:
    for frame in graph.frames:
        assert type(frame.bytes) is int and frame.tone == tone(frame.name)
    return [(f.name, f.bytes, f.depth, f.x, f.width, f.parent, f.detail) for f in graph.frames]


def test_every_frame_of_a_shared_function_split_with_rounding() -> None:
    # w (8 bytes: 2 its own, 2 to x, 4 to y) is called by a (6) and b (2).
    # Under a, x gets 6 * 2/8 = 1.5, rounded half up to 2, y 6 * 4/8 = 3;
    # under b, x gets 0.5, rounded up to 1, and y 1.
    graph = flame.allocation_flame(model(
        [function(1, "main", total=8), function(2, "a", total=6), function(3, "b", total=2),
         function(4, "w", own=2, total=8), function(5, "x", own=2, total=2), function(6, "y", own=4, total=4)],
        [(1, 2, 6), (1, 3, 2), (2, 4, 6), (3, 4, 2), (4, 5, 2), (4, 6, 4)]))
    assert graph is not None
    # Pre-order, widest child leftmost, equal widths by name.
    assert frame_rows(graph) == [
        ("all", 8, 0, 0.0, 1.0, -1, ""),
        ("main", 8, 1, 0.0, 1.0, 0, ""),
        ("a", 6, 2, 0.0, 0.75, 1, ""),
        ("w", 6, 3, 0.0, 0.75, 2, ""),
        ("y", 3, 4, 0.0, 0.375, 3, ""),
        ("x", 2, 4, 0.375, 0.25, 3, ""),
        ("b", 2, 2, 0.75, 0.25, 1, ""),
        ("w", 2, 3, 0.75, 0.25, 6, ""),
        ("x", 1, 4, 0.75, 0.125, 7, ""),
        ("y", 1, 4, 0.875, 0.125, 7, "")]
    assert (graph.total, graph.depth, graph.omitted) == (8, 5, 0)


def test_a_cycle_between_its_caller_and_its_callee() -> None:
    # main calls even, even and odd call each other; odd allocates 60
    # itself, and both call leaf, which allocates 40 (10 through even, 30
    # through odd): the cycle is 100, 60 its own.  Function ids are not
    # cycle numbers, so that one is never taken for the other.
    graph = flame.allocation_flame(model(
        [function(11, "main", total=100), function(12, "even", total=100, cycle=1),
         function(13, "odd", own=60, total=100, cycle=1), function(14, "leaf", own=40, total=40),
         function(1, "unused")],
        [(11, 12, 100), (12, 13, 90), (13, 12, 30), (12, 14, 10), (13, 14, 30)],
        cycles={1: CycleRow(1, 60, 100, 1, 5, (12, 13))}))
    assert graph is not None
    assert frame_rows(graph) == [
        ("all", 100, 0, 0.0, 1.0, -1, ""),
        ("main", 100, 1, 0.0, 1.0, 0, ""),
        ("<cycle 1 as a whole>", 100, 2, 0.0, 1.0, 1, "members: even, odd"),
        ("leaf", 40, 3, 0.0, 0.4, 2, "")]


def test_a_cycle_that_no_one_calls_is_a_root() -> None:
    # A thread's routine in a cycle: its frame is the cycle's total, 80 (the
    # reduction's figure, here below its own 60 and edge 40, as a guard);
    # leaf's share of it is 80 * 40/100 = 32.
    graph = flame.allocation_flame(model(
        [function(12, "even", total=80, cycle=1), function(13, "odd", own=60, total=80, cycle=1),
         function(14, "leaf", own=40, total=40), function(1, "unused")],
        [(12, 13, 90), (13, 12, 30), (13, 14, 40)], cycles={1: CycleRow(1, 60, 80, 0, 5, (12, 13))}))
    assert graph is not None
    assert [(f.name, f.bytes, f.depth) for f in graph.frames] == [
        ("all", 80, 0), ("<cycle 1 as a whole>", 80, 1), ("leaf", 32, 2)]


def test_children_stay_inside_a_parent_whose_edges_add_up_past_its_total() -> None:
    # w's total says 4 but its own 2 and edges 6 say 8: its 4 bytes under
    # main are shared by the 8, so x gets 4 * 6/8 = 3, not 6.
    graph = flame.allocation_flame(model(
        [function(1, "main", total=4), function(2, "w", own=2, total=4), function(3, "x", own=6, total=6)],
        [(1, 2, 4), (2, 3, 6)]))
    assert graph is not None
    assert [(f.name, f.bytes) for f in graph.frames] == [("all", 4), ("main", 4), ("w", 4), ("x", 3)]


def test_a_root_of_one_byte_and_a_graph_of_only_its_root() -> None:
    one = model([function(1, "main", own=1, total=1)], [])
    graph = flame.allocation_flame(one)
    assert graph is not None and [(f.name, f.bytes) for f in graph.frames] == [("all", 1), ("main", 1)]
    alone = flame.allocation_flame(one, max_frames=1)
    assert alone is not None and (len(alone.frames), alone.depth, alone.omitted) == (1, 1, 1)


def test_the_widest_are_kept_under_the_cap_and_empty_children_are_not_counted() -> None:
    # main's callees of 30, 20 and 10 bytes, and one of 0 (its share rounds
    # to nothing): room for three frames keeps main and the 30.
    graph = flame.allocation_flame(model(
        [function(1, "main", total=60), function(2, "ten", own=10, total=10), function(3, "thirty", own=30, total=30),
         function(4, "twenty", own=20, total=20), function(5, "none", total=0)],
        [(1, 2, 10), (1, 3, 30), (1, 4, 20), (1, 5, 0)]), max_frames=3)
    assert graph is not None
    assert [f.name for f in graph.frames] == ["all", "main", "thirty"] and graph.omitted == 2


def test_a_name_that_was_not_utf8_keeps_a_colour() -> None:
    name = "f\udcff"  # a byte that was not UTF-8, as surrogateescape keeps it
    graph = flame.allocation_flame(model([function(1, name, own=8, total=8)], []))
    assert graph is not None
    assert graph.frames[1].tone == zlib.crc32(b"f\xed\xb3\xbf") % 100  # the surrogate as UTF-8 would spell it


def test_equal_frames_beyond_the_cap_are_kept_in_the_order_found() -> None:
    # Five leaves of 10 bytes, found l5 first: with room for two, l5 and l4
    # are drawn (then laid out by name), the other three counted as omitted.
    leaves = [function(i, f"l{i}", own=10, total=10) for i in (5, 4, 3, 2, 1)]
    wide = model([function(9, "main", total=50), *leaves], [(9, i, 10) for i in (5, 4, 3, 2, 1)])
    graph = flame.allocation_flame(wide, max_frames=4)
    assert graph is not None
    assert [f.name for f in graph.frames] == ["all", "main", "l4", "l5"] and graph.omitted == 3
    # A frame exactly at the share threshold is drawn.
    graph = flame.allocation_flame(wide, min_share=0.2)
    assert graph is not None and len(graph.frames) == 7 and graph.omitted == 0


def test_the_never_freed_graph_adds_what_each_path_keeps() -> None:
    leaks = [LeakRow(3, 1, 90, 30, (LeakFrame(3, "prog.c", 1), LeakFrame(2, "prog.c", 2), LeakFrame(1, "prog.c", 3))),
             LeakRow(2, 1, 2, 1, (LeakFrame(2, "prog.c", 4), LeakFrame(1, "prog.c", 5))),  # one byte kept
             LeakRow(1, 0, 0, 0, (LeakFrame(2, "prog.c", 6), LeakFrame(1, "prog.c", 7))),  # nothing kept
             LeakRow(4, 0, 40, 0, ())]  # no chain: not drawn
    graph = flame.leak_flame(model([function(1, "main"), function(2, "a"), function(3, "w")], [], leaks=leaks))
    assert frame_rows(graph) == [
        ("all", 61, 0, 0.0, 1.0, -1, ""),
        ("main", 61, 1, 0.0, 1.0, 0, ""),
        ("a", 61, 2, 0.0, 1.0, 1, ""),
        ("w", 60, 3, 0.0, 60 / 61, 2, "")]
    assert (graph.total, graph.depth, graph.omitted) == (61, 4, 0)


def test_nothing_kept_is_an_empty_graph_and_one_byte_is_not() -> None:
    assert flame.leak_flame(model([function(1, "main")], [])) == flame.Flame([], 0, 0, 0)
    one = flame.leak_flame(model([function(1, "main")], [], leaks=[LeakRow(1, 0, 1, 0, (LeakFrame(1, "prog.c", 1),))]))
    assert frame_rows(one) == [("all", 1, 0, 0.0, 1.0, -1, ""), ("main", 1, 1, 0.0, 1.0, 0, "")]


def test_size_chart_shares_and_ranges_at_their_edges() -> None:
    # Exactly MAX_BARS sizes: a bar each.  Shares of the widest bar and of the most blocks.
    bins = [BinRow(size, size, 0, size * 10, size * 5, "") for size in range(1, 25)]
    chart = size_chart.chart(model([], [], bins=bins))
    assert chart.ranges is False and len(chart.bars) == 24
    last = chart.bars[-1]
    assert (last.label, last.allocs, last.bytes, last.kept) == ("24", 24, 240, 120)
    assert (last.allocs_share, last.share, last.kept_share) == (1.0, 1.0, 0.5)
    assert (chart.bars[5].allocs_share, chart.bars[5].share) == (0.25, 0.25)
    # One more: ranges, each bar the sum of its sizes; 8 is the top of 1-8, 9 the bottom of 9-16.
    chart = size_chart.chart(model([], [], bins=[*bins, BinRow(1025, 1, 0, 5000, 0, "")]))
    assert chart.ranges is True
    assert [(bar.label, bar.allocs, bar.bytes) for bar in chart.bars] == [
        ("1-8", 36, 360), ("9-16", 100, 1000), ("17-32", 164, 1640), ("> 1024", 1, 5000)]
    assert [bar.allocs_share for bar in chart.bars] == [36 / 164, 100 / 164, 1.0, 1 / 164]
    # No allocations: no bars.
    assert size_chart.chart(model([], [], bins=[BinRow(8, 0, 0, 0, 0, "")])).bars == []
