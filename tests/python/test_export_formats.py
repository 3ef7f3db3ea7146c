"""The collapsed stacks and the differential flame graph on models built by
hand: what a name may not hold, paths without a caller, merged lines, the
colours of a change and the widths of what shrank to nothing."""

from __future__ import annotations

import dataclasses
import gzip

from mprof.diff import flame as diff_flame
from mprof.diff import html as diff_html
from mprof.diff import text
from mprof.diff.compare import compare
from mprof.export import pprof, profile_pb2
from mprof.export.collapsed import collapsed
from mprof.report.measures import by_name, measures
from mprof.report.model import Model, PathRow
from test_flame import path_model


def test_collapsed_lines_are_sorted_merged_and_keep_separators_out_of_names() -> None:
    model = path_model({1: "main", 2: "operator;", 3: "a\nb", 4: "leaf"}, [
        ((1, (4, 10)), 100, 0, ""),
        ((1, (4, 11)), 50, 0, ""),  # another line of the same call: one stack
        ((1, 2, 3), 7, 7, ""),
    ], unwound=(PathRow(None, 2, 0, (0, 3, 0, 0), (0, 0, 0, 0)),))
    assert collapsed(model, by_name("alloc_space")) == (
        b"(no call chain) 3\n"
        b"main;leaf 150\n"
        b"main;operator:;a b 7\n")
    # Never freed: the freed path has no line.
    assert collapsed(model, by_name("leak_space")) == b"(no call chain) 3\nmain;leaf 150\n"


def test_collapsed_leaves_out_the_runtimes_blocks_unless_asked() -> None:
    model = path_model({1: "main", 2: "fopen"}, [((1, 2), 4096, 0, "stdio buffer"), ((1,), 10, 0, "")])
    assert collapsed(model, by_name("leak_space")) == b"main 10\n"
    assert collapsed(model, by_name("leak_space", runtime=True)) == b"main 10\nmain;fopen 4096\n"


def test_the_first_pprof_mapping_is_the_programs() -> None:
    # The only path allocates in libstdc++'s operator new: its mapping would
    # come first if mappings came in the order paths reach them.
    model = path_model({1: "main", 2: "operator new"}, [((1, 2), 64, 0, "")])
    model.functions[2] = model.functions[2]._replace(module="/lib/x86_64-linux-gnu/libstdc++.so.6")
    profile = profile_pb2.Profile.FromString(gzip.decompress(pprof.profile(model, measures(), "alloc_space")))
    assert [profile.string_table[mapping.filename] for mapping in profile.mapping] == [
        "prog", "/lib/x86_64-linux-gnu/libstdc++.so.6"]


def test_a_change_is_coloured_by_its_size_against_the_larger_figure() -> None:
    assert diff_flame.tone(100, 100) == diff_flame.UNCHANGED == 40
    assert diff_flame.tone(0, 0) == 40
    assert diff_flame.tone(0, 5) == 90  # grew from nothing: the deepest red
    assert diff_flame.tone(5, 0) == 0  # shrank to nothing: the deepest blue
    assert diff_flame.tone(100, 80) == 30  # a fifth less: the lightest blue
    assert diff_flame.tone(80, 100) == 60
    assert diff_flame.tone(100, 50) == 10  # halved: four steps of a quarter, two down
    assert diff_flame.tone(50, 100) == 80


def test_what_shrank_to_nothing_keeps_its_width() -> None:
    names = {1: "main", 2: "old", 3: "new"}
    base = path_model(names, [((1, 2), 300, 0, "")])
    new = path_model(names, [((1, 3), 100, 0, "")])
    graph = diff_flame.differential(compare(base, new, measures()), "alloc_space")
    widths = {frame.name: (frame.bytes, frame.tone) for frame in graph.frames}
    # Each path as wide as the larger of its figures, the root their sum.
    # main went from 300 to 100: two thirds less, two steps of blue.
    assert widths == {"all": (400, 10), "main": (400, 10), "old": (300, 0), "new": (100, 90)}
    assert [frame.detail for frame in graph.frames if frame.name == "old"] == [
        "base 300, new 0 bytes (-300, -100.0%)"]


def test_the_diff_text_opens_with_the_totals_their_change_and_its_share() -> None:
    # Base: 300 bytes kept, 100 freed; new: 450 kept, the same 100 freed.
    names = {1: "main", 2: "keep", 3: "scratch"}
    base = path_model(names, [((1, 2), 300, 0, ""), ((1, 3), 100, 100, "")])
    new = path_model(names, [((1, 2), 450, 0, ""), ((1, 3), 100, 100, "")])
    lines = text.render(compare(base, new, measures()), text.Options("alloc_space", 0, 20)).splitlines()
    start = lines.index(f"{'':23}  {'base':>13}  {'new':>13}  {'change':>13}")
    assert lines[start + 1:start + 8] == [
        f"{'blocks allocated':23}  {2:>13}  {2:>13}  {'0':>13}",
        f"{'bytes allocated':23}  {400:>13}  {550:>13}  {'+150':>13}  +37.5%",
        f"{'blocks leaked':23}  {1:>13}  {1:>13}  {'0':>13}",
        f"{'bytes leaked':23}  {300:>13}  {450:>13}  {'+150':>13}  +50.0%",
        f"{'blocks live at the peak':23}  {0:>13}  {0:>13}  {'0':>13}",
        f"{'bytes live at the peak':23}  {0:>13}  {0:>13}  {'0':>13}",
        f"{'temporary blocks':23}  {0:>13}  {0:>13}  {'0':>13}"]


def test_a_long_path_folds_its_library_frames_unless_wide() -> None:
    # The program's own function_number_01, 11 and 12; the library's
    # (std::) 2 to 10, of which 2 is the call function_number_01 made.
    names = {n: f"function_number_{n:02}" if n in (1, 11, 12) else f"std::function_number_{n:02}" for n in range(1, 13)}
    base = path_model(names, [(tuple(range(1, 13)), 100, 0, "")])
    new = path_model(names, [(tuple(range(1, 13)), 300, 0, "")])
    comparison = compare(base, new, measures())
    short = text.render(comparison, text.Options("alloc_space", 0, 20))
    paths = short.split("Call paths", 1)[1]
    row = next(line for line in paths.splitlines() if line.split()[:1] == ["+200"])
    assert row.split("  ")[-1] == ("function_number_01 > std::function_number_02 > [8 std::] > function_number_11 > "
                                   "function_number_12")
    wide = text.render(comparison, text.Options("alloc_space", 0, 20, path_width=None))
    assert " > ".join(names.values()) in wide


def test_the_diff_page_escapes_every_name() -> None:
    names = {1: "main", 2: "std::map<int, std::string>::operator[]&", 3: "</script><b>x</b>"}
    base = path_model(names, [((1, 2), 10, 0, "")])
    new = path_model(names, [((1, 2, 3), 30, 0, "")])
    page = diff_html.render(compare(base, new, measures()), text.Options("alloc_space", 0, None))
    assert "std::map&lt;int, std::string&gt;::operator[]&amp;" in page
    assert "&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;" in page
    assert "<b>x</b>" not in page and "operator[]&<" not in page


def test_diff_paths_name_functions_short_unless_two_rows_would_read_the_same() -> None:
    """As the report's tables: two constructors read std::vector<>::vector where their callers tell the rows
    apart, and by their distinguishing names where nothing else does."""
    names = {1: "main", 2: "Cache::get", 3: "Store::put", 4: "std::vector<>::vector(unsigned long)",
             5: "std::vector<>::vector(std::vector<> const&)"}

    def shortened(model: Model) -> Model:
        return dataclasses.replace(model, functions={
            key: row._replace(short="std::vector<>::vector" if key in (4, 5) else "")
            for key, row in model.functions.items()})

    def changed_paths(paths: list[tuple[int, ...]]) -> list[str]:
        base = shortened(path_model(names, [(path, 100, 0, "") for path in paths]))
        new = shortened(path_model(names, [(path, 300, 0, "") for path in paths]))
        rendered = text.render(compare(base, new, measures()), text.Options("alloc_space", 0, 20))
        section = rendered.split("Call paths", 1)[1].split("\n\n", 1)[0]
        return sorted(line.split("  ")[-1] for line in section.splitlines() if line.split()[:1] == ["+200"])

    assert changed_paths([(1, 2, 4), (1, 3, 5)]) == ["main > Cache::get > std::vector<>::vector",
                                                     "main > Store::put > std::vector<>::vector"]
    assert changed_paths([(1, 2, 4), (1, 2, 5)]) == ["main > Cache::get > std::vector<>::vector(std::vector<> const&)",
                                                     "main > Cache::get > std::vector<>::vector(unsigned long)"]
