"""The flame graphs and size chart of the HTML report, on models built by
hand: the flame graphs are the whole call paths, exact; their caps."""

from __future__ import annotations

import zlib
from dataclasses import replace

import pytest

from mprof.report import flame, size_chart, tables
from mprof.report.model import BinRow, EdgeRow, FunctionRow, Model, PathNodeRow, PathRow, PathTree, RunInfo


def function(id: int, name: str, own: int = 0, total: int = 0, cycle: int | None = None) -> FunctionRow:
    return FunctionRow(id, name, "prog", "prog.c", id, cycle, 1 if own else 0, (0, own, 0, 0), (0, 0, 0, 0), 0,
                       total, 1, 0)


def model(functions: list[FunctionRow], edges: list[tuple[int, int, int]], bins: list[BinRow] | None = None) -> Model:
    rows = [EdgeRow(caller, callee, 1, (0, bytes, 0, 0)) for caller, callee, bytes in edges]
    result = Model([RunInfo(1, 0, "prog", "prog", 1, True, True, False, 0, False, 5)], {}, {f.id: f for f in functions},
                   rows, {}, bins or [], [])
    for edge in rows:
        result.callers.setdefault(edge.callee, []).append(edge)
        result.callees.setdefault(edge.caller, []).append(edge)
    return result


# A path: its frames outermost first, each a function id or (function id,
# line of its call), then its bytes, the bytes freed, and what in the
# runtime keeps them.
Path = tuple[tuple[int | tuple[int, int], ...], int, int, str]


def path_model(names: dict[int, str], paths: list[Path], call_graph: bool = True,
               unwound: tuple[PathRow, ...] = ()) -> Model:
    """Functions by id and the paths, as the database holds them; unwound,
    paths of no caller."""
    functions = [FunctionRow(id, name, "prog", "prog.c", id, None, 0, (0,) * 4, (0,) * 4, 0, 0, 0, 0)
                 for id, name in names.items()]
    index: dict[tuple[int | None, int, int], int] = {}
    nodes: dict[int, PathNodeRow] = {}
    rows = []
    for frames, allocated, freed, runtime in paths:
        parent: int | None = None
        for frame in frames:
            function, line = frame if isinstance(frame, tuple) else (frame, 1)
            key = (parent, function, line)
            if key not in index:
                index[key] = len(index) + 1
                nodes[index[key]] = PathNodeRow(parent, function, "prog.c", line)
            parent = index[key]
        rows.append(PathRow(parent, 1, 1 if freed else 0, (0, allocated, 0, 0), (0, freed, 0, 0), runtime))
    return Model([RunInfo(1, 0, "prog", "prog", 1, call_graph, True, False, 0, False, 5)], {},
                 {f.id: f for f in functions}, [], {}, [], [], tree=PathTree.of(nodes, rows + list(unwound), names))


def paths(graph: flame.Flame) -> dict[str, int]:
    """'main > a > w' -> bytes, for every frame."""
    names: list[str] = []
    result = {}
    for frame in graph.frames:
        names[frame.depth:] = [frame.name]
        result[" > ".join(names[1:])] = frame.bytes
    return result


MAIN, A, B, W, X, Y = 1, 2, 3, 4, 5, 6
NAMES = {MAIN: "main", A: "a", B: "b", W: "w", X: "x", Y: "y"}


def test_a_tree_is_exact_and_laid_out_widest_first() -> None:
    graph = flame.allocation_flame(path_model(NAMES, [((MAIN, A, W), 300, 0, ""), ((MAIN, B, W), 100, 0, "")]))
    assert graph is not None
    assert paths(graph) == {"": 400, "main": 400, "main > a": 300, "main > a > w": 300, "main > b": 100,
                            "main > b > w": 100}
    b = next(f for f in graph.frames if f.name == "b")
    assert (b.x, b.width, b.depth) == (0.75, 0.25, 2)


def test_below_a_shared_function_each_path_keeps_its_own_bytes() -> None:
    # a > w > x and b > w > y: w's two callers allocate very different
    # amounts through it.  Shared out by the caller/callee pairs' bytes, as
    # the graph once was, x would get 225 under a and 75 under b.
    graph = flame.allocation_flame(path_model(NAMES, [((MAIN, A, W, X), 300, 0, ""), ((MAIN, B, W, Y), 100, 0, "")]))
    assert graph is not None
    assert paths(graph) == {"": 400, "main": 400, "main > a": 300, "main > a > w": 300, "main > a > w > x": 300,
                            "main > b": 100, "main > b > w": 100, "main > b > w > y": 100}


def test_recursion_is_drawn_as_it_happened() -> None:
    # main > a > b > a > b allocates 60: a frame for each call.
    graph = flame.allocation_flame(path_model(NAMES, [((MAIN, A, B, A, B), 60, 0, ""), ((MAIN, A, B), 4, 0, "")]))
    assert graph is not None
    assert paths(graph) == {"": 64, "main": 64, "main > a": 64, "main > a > b": 64, "main > a > b > a": 60,
                            "main > a > b > a > b": 60}


def test_calls_of_one_function_from_two_lines_are_one_frame() -> None:
    # main calls w from its lines 5 and 6; w calls x from its line 9 under
    # both: one frame each, whose bytes add up.
    graph = flame.allocation_flame(path_model(NAMES, [
        (((MAIN, 5), W, (X, 9)), 10, 0, ""), (((MAIN, 6), W, (X, 9)), 20, 0, "")]))
    assert graph is not None
    assert paths(graph) == {"": 30, "main": 30, "main > w": 30, "main > w > x": 30}


def test_allocations_without_a_caller_have_a_frame_of_their_own() -> None:
    graph = flame.allocation_flame(path_model(NAMES, [((MAIN, W), 30, 0, ""), ((), 10, 0, "")]))
    assert graph is not None
    assert paths(graph) == {"": 40, "main": 30, "main > w": 30, "(no call chain)": 10}


def test_narrow_frames_and_frames_beyond_the_cap_are_left_out() -> None:
    names = {1: "main", **{i: f"leaf{i}" for i in range(2, 2002)}}
    wide = path_model(names, [((1, i), 1, 0, "") for i in range(2, 2002)])
    narrow = flame.allocation_flame(wide)  # each leaf is 0.05% of the whole
    assert narrow is not None and [f.name for f in narrow.frames] == ["all", "main"] and narrow.omitted == 2000
    capped = flame.allocation_flame(wide, min_share=0, max_frames=100)
    assert capped is not None and len(capped.frames) == 100 and capped.omitted == 2000 - 98


def test_no_allocation_flame_without_call_graph() -> None:
    assert flame.allocation_flame(path_model(NAMES, [((W,), 8, 0, "")], call_graph=False)) is None


def test_a_root_of_one_byte_and_a_graph_of_only_its_root() -> None:
    one = path_model(NAMES, [((MAIN,), 1, 0, "")])
    graph = flame.allocation_flame(one)
    assert graph is not None and [(f.name, f.bytes) for f in graph.frames] == [("all", 1), ("main", 1)]
    alone = flame.allocation_flame(one, max_frames=1)
    assert alone is not None and (len(alone.frames), alone.depth, alone.omitted) == (1, 1, 1)


def test_the_widest_are_kept_under_the_cap_and_empty_children_are_not_counted() -> None:
    # main's callees of 30, 20 and 10 bytes, and one of 0: room for three
    # frames keeps main and the 30.
    names = {1: "main", 2: "ten", 3: "thirty", 4: "twenty", 5: "none"}
    graph = flame.allocation_flame(path_model(names, [((1, 2), 10, 0, ""), ((1, 3), 30, 0, ""), ((1, 4), 20, 0, ""),
                                                      ((1, 5), 0, 0, "")]), max_frames=3)
    assert graph is not None
    assert [f.name for f in graph.frames] == ["all", "main", "thirty"] and graph.omitted == 2


def test_a_name_that_was_not_utf8_keeps_a_colour() -> None:
    name = "f\udcff"  # a byte that was not UTF-8, as surrogateescape keeps it
    graph = flame.allocation_flame(path_model({1: name}, [((1,), 8, 0, "")]))
    assert graph is not None
    assert graph.frames[1].tone == zlib.crc32(b"f\xed\xb3\xbf") % 100  # the surrogate as UTF-8 would spell it


def test_equal_frames_beyond_the_cap_are_kept_in_the_order_found() -> None:
    # Five leaves of 10 bytes, found l5 first: with room for two, l5 and l4
    # are drawn (then laid out by name), the other three counted as omitted.
    names = {9: "main", **{i: f"l{i}" for i in (5, 4, 3, 2, 1)}}
    wide = path_model(names, [((9, i), 10, 0, "") for i in (5, 4, 3, 2, 1)])
    graph = flame.allocation_flame(wide, max_frames=4)
    assert graph is not None
    assert [f.name for f in graph.frames] == ["all", "main", "l4", "l5"] and graph.omitted == 3
    # A frame exactly at the share threshold is drawn.
    graph = flame.allocation_flame(wide, min_share=0.2)
    assert graph is not None and len(graph.frames) == 7 and graph.omitted == 0


def tone(name: str) -> int:
    """A frame's colour, 0-99, from its name alone (flame.Frame.tone), so a
    function keeps its colour from one report to the next."""
    return zlib.crc32(name.encode()) % 100


def frame_rows(graph: flame.Flame) -> list[tuple]:
    for frame in graph.frames:
        assert type(frame.bytes) is int and frame.tone == tone(frame.name)
    return [(f.name, f.bytes, f.depth, f.x, f.width, f.parent, f.detail) for f in graph.frames]


def test_the_never_freed_graph_adds_what_each_path_keeps() -> None:
    model = path_model(NAMES, [
        ((MAIN, A, W), 90, 30, ""),  # 60 kept
        ((MAIN, (A, 4)), 2, 1, ""),  # one byte kept, from another line of a
        ((MAIN, (A, 6)), 5, 5, ""),  # nothing kept
        ((MAIN, B, X), 7, 0, "stdio buffer"),  # the runtime's: left out
    ])
    assert frame_rows(flame.leak_flame(model)) == [
        ("all", 61, 0, 0.0, 1.0, -1, ""),
        ("main", 61, 1, 0.0, 1.0, 0, ""),
        ("a", 61, 2, 0.0, 1.0, 1, ""),
        ("w", 60, 3, 0.0, 60 / 61, 2, "")]
    assert paths(flame.leak_flame(model, runtime=True)) == {"": 68, "main": 68, "main > a": 61, "main > a > w": 60,
                                                            "main > b": 7, "main > b > x": 7}


def test_the_never_freed_graph_leaves_out_what_a_suppression_took() -> None:
    model = path_model(NAMES, [
        ((MAIN, A, W), 90, 30, ""),  # 60 kept
        ((MAIN, B, X), 20, 0, ""),  # 20 kept, suppressed
        ((MAIN, B), 4, 0, "stdio buffer"),  # the runtime's
    ])
    suppressed = next(n for n, row in enumerate(model.tree.rows()) if sum(row.bytes) == 20)
    model = replace(model, path_suppressions={suppressed: "leak:x"})
    kept = {"": 60, "main": 60, "main > a": 60, "main > a > w": 60}
    assert paths(flame.leak_flame(model)) == kept
    assert paths(flame.leak_flame(model, runtime=True)) == {**kept, "": 64, "main": 64, "main > b": 4}
    # The page's graphs, made in one walk, are the same as each made alone.
    for runtime in (False, True):
        together = flame.page_flames(model, runtime)
        assert together.leak == flame.leak_flame(model, runtime=runtime)
        assert together.allocation == flame.allocation_flame(model)
        assert together.peak == flame.peak_flame(model) and together.temporary == flame.temporary_flame(model)
    assert paths(flame.allocation_flame(model)) == {"": 114, "main": 114, "main > a": 90, "main > a > w": 90,
                                                    "main > b": 24, "main > b > x": 20}


def test_nothing_kept_is_an_empty_graph_and_one_byte_is_not() -> None:
    assert flame.leak_flame(path_model(NAMES, [((MAIN,), 8, 8, "")])) == flame.Flame([], 0, 0, 0)
    one = flame.leak_flame(path_model(NAMES, [((MAIN,), 1, 0, "")]))
    assert frame_rows(one) == [("all", 1, 0, 0.0, 1.0, -1, ""), ("main", 1, 1, 0.0, 1.0, 0, "")]


def test_a_frame_shows_a_short_name_with_its_signature_as_detail() -> None:
    model = path_model({1: "main", 2: "w"}, [((1, 2), 8, 0, "")])
    model.functions[2] = FunctionRow(2, "w", "prog", "prog.c", 2, None, 0, (0,) * 4, (0,) * 4, 0, 0, 0, 0, "w(int)")
    graph = flame.allocation_flame(model)
    assert graph is not None and [(f.name, f.detail) for f in graph.frames] == [("all", ""), ("main", ""),
                                                                                ("w", "w(int)")]


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


def test_paths_that_share_their_functions_merge_and_the_others_stay_apart() -> None:
    # main calls w from two lines, and each w calls x: the two x paths read
    # the same functions; main > a > w is a path of its own.
    model = path_model(NAMES, [((MAIN, (W, 1), X), 10, 0, ""), ((MAIN, (W, 2), X), 5, 0, ""), ((MAIN, A, W), 7, 0, "")])
    merged = tables._ranked(model, "allocs", "bytes_m", None)
    assert [(row.functions, row.blocks, row.bytes) for row in merged] == [((MAIN, W, X), 2, 15), ((MAIN, A, W), 1, 7)]


def test_the_first_rows_of_a_ranking_are_its_first_rows() -> None:
    # A table of the first screen asks for its first rows alone; they and
    # the count of all are what the whole ranking says.  Ties (4 and 4)
    # are broken by the functions' names.
    model = path_model(NAMES, [((MAIN, (W, 1), X), 10, 0, ""), ((MAIN, (W, 2), X), 5, 0, ""), ((MAIN, A, W), 4, 0, ""),
                               ((MAIN, A), 4, 0, ""), ((MAIN, W), 9, 0, "")])
    whole = tables._ranked(model, "allocs", "bytes_m", None)
    assert [(row.functions, row.bytes) for row in whole] == [
        ((MAIN, W, X), 15), ((MAIN, W), 9), ((MAIN, A), 4), ((MAIN, A, W), 4)]
    for first in range(6):
        some = tables._ranked(model, "allocs", "bytes_m", first)
        assert list(some) == list(whole)[:first] and some.whole_count == whole.whole_count == 4


def test_figures_past_64_bits_along_the_paths_are_refused() -> None:
    # Two paths of 3 * 2^61 bytes each under main: main's sum is past 2^63.
    model = path_model(NAMES, [((MAIN, W), 3 << 61, 0, ""), ((MAIN, A), 3 << 61, 0, "")])
    with pytest.raises(OverflowError):
        flame.allocation_flame(model)
    assert flame.allocation_flame(path_model(NAMES, [((MAIN, W), 3 << 61, 0, "")])) is not None


def test_nodes_numbered_with_gaps_draw_as_numbered_without() -> None:
    # A database edited by hand may number its nodes 10, 20, 30...: the
    # columns are then looked up by id, the same flame as from 1, 2, 3.
    model = path_model(NAMES, [((MAIN, (W, 1), X), 10, 0, ""), ((MAIN, (W, 2), X), 5, 0, ""), ((MAIN, A, W), 7, 0, "")])
    nodes = {node * 10: PathNodeRow(None if row.parent is None else row.parent * 10, row.function, row.file, row.line)
             for node, row in ((node, model.tree.node(node)) for node in range(1, 8))}
    rows = [replace(path, node=path.node * 10) for path in model.paths if path.node is not None]
    gapped = replace(model, tree=PathTree.of(nodes, rows, NAMES))
    assert gapped.tree.arrays().positions is not None
    frames = [(frame.name, frame.bytes, frame.depth, frame.parent) for frame in flame.allocation_flame(model).frames]
    assert [(frame.name, frame.bytes, frame.depth, frame.parent)
            for frame in flame.allocation_flame(gapped).frames] == frames
    assert frames[1:] == [("main", 22, 1, 0), ("w", 15, 2, 1), ("x", 15, 3, 2), ("a", 7, 2, 1), ("w", 7, 3, 4)]
