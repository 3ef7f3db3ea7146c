"""The call graph built from the call paths' caller/callee pairs, with
hand-made data files and frames: cycles merged, no byte counted twice
(paper, Figure 7)."""

from __future__ import annotations

from datafile_builder import DataFileBuilder
from mprof.reducer import callgraph, datafile, frames_table
from mprof.reducer.symbolize import Frame

MAIN, F_CALLS_G, G_CALLS_F, G_CALLS_MALLOC = 0x1010, 0x2020, 0x3030, 0x3040


def frame(name: str, inlined: bool = False, line: int = 1) -> Frame:
    return Frame(name, "prog.c", line, "/bin/prog", 0, inlined)


def graph_of(builder: DataFileBuilder, frames: dict[int, list[Frame]]) -> callgraph.CallGraph:
    graph = callgraph.CallGraph()
    data = datafile.parse(builder.build())
    names = frames_table.Names()
    callgraph.add_run(graph, data, frames_table.frames_table(data, frames, names), names)
    callgraph.finish(graph)
    return graph


def test_figure_7_credits_main_once() -> None:
    # main -> F -> G -> F -> G -> malloc(10): F->G appears twice in the chain.
    builder = DataFileBuilder(
        leak_depth=5,
        paths=[((G_CALLS_MALLOC, F_CALLS_G, G_CALLS_F, F_CALLS_G, MAIN), 1, 0, (10, 0, 0, 0), (0, 0, 0, 0))],
    )
    frames = {MAIN: [frame("main")], F_CALLS_G: [frame("F")], G_CALLS_F: [frame("G")],
              G_CALLS_MALLOC: [frame("G")]}
    graph = graph_of(builder, frames)
    main, f, g = (graph.functions[(name, "/bin/prog")] for name in ("main", "F", "G"))
    assert main.total_bytes == 10  # not 20, though F -> G carries 20
    assert sum(graph.edges[(("F", "/bin/prog"), ("G", "/bin/prog"))].bytes) == 20
    assert f.cycle == g.cycle == 1 and main.cycle is None
    assert (f.total_bytes, g.total_bytes) == (10, 10)
    [cycle] = graph.cycles
    assert (cycle.self_bytes, cycle.total_bytes, cycle.called, cycle.internal_calls) == (10, 10, 1, 3)
    assert (f.called, f.recursive_calls, g.called, g.recursive_calls) == (1, 1, 0, 2)
    assert sum(g.self_bytes) == 10 and g.self_calls == 1


def test_chain_without_recursion_and_start_up_frames_dropped() -> None:
    start, libc_main, make_red, make_widget = 0x100, 0x200, 0x1100, 0x1200
    builder = DataFileBuilder(
        paths=[((make_widget, make_red, MAIN, libc_main, start), 3, 1, (0, 612, 0, 0), (0, 204, 0, 0))],
    )
    frames = {start: [frame("_start")], libc_main: [frame("__libc_start_call_main")], MAIN: [frame("main")],
              make_red: [frame("make_red_widget")], make_widget: [frame("make_widget")]}
    graph = graph_of(builder, frames)
    names = {name for name, _ in graph.functions}
    assert "_start" not in names and "__libc_start_call_main" not in names
    assert graph.functions[("main", "/bin/prog")].total_bytes == 612
    widget = graph.functions[("make_widget", "/bin/prog")]
    assert (widget.self_calls, widget.kept_objects, widget.kept_bytes, widget.called) == (3, 2, [0, 408, 0, 0], 3)
    [leak] = graph.leaks.values()
    assert [key[0] for key, _, _ in leak.frames] == ["make_widget", "make_red_widget", "main"]
    assert not graph.cycles


def test_inlined_frames_become_functions_of_the_chain() -> None:
    # main calls outer at MAIN; outer's call to malloc is in helper, inlined into outer.
    site = 0x4000
    builder = DataFileBuilder(paths=[((site, MAIN), 2, 0, (64, 0, 0, 0), (0, 0, 0, 0))])
    frames = {MAIN: [frame("main")], site: [frame("helper", inlined=True, line=7), frame("outer", line=20)]}
    graph = graph_of(builder, frames)
    helper = graph.functions[("helper", "/bin/prog")]
    outer = graph.functions[("outer", "/bin/prog")]
    assert sum(helper.self_bytes) == 64 and sum(outer.self_bytes) == 0
    assert outer.total_bytes == 64 and helper.called == 2
    assert graph.edges[(("main", "/bin/prog"), ("outer", "/bin/prog"))].calls == 2
    assert graph.edges[(("outer", "/bin/prog"), ("helper", "/bin/prog"))].calls == 2
