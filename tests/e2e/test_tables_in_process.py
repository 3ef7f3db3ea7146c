"""The reducer and the report tables run in the test's own process (as
`mprof report` and `mprof db` do), on real programs profiled by the real
monitor, compared line for line with tables written out by hand from what
the programs are known to do.  In-process, so that mutation testing
(`make mutate`, mutmut) sees which code each test runs.

widgets 10000: 10,000 widgets of 204 bytes, 4,913 red (kept) and 5,087 blue
(freed); boundaries: tests/targets/boundaries.c's table of sizes (its
figures are worked out in test_boundaries.py); recursion three 100: a()
-> c() -> b() -> a() nine calls deep, one 40-byte block each time; tables:
tests/targets/tables.c, ties, merged leak paths and the 1% boundary."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from e2e_support import BUILD, TARGETS, Targets, monitor_env
from mprof.cli.main import main

WIDGETS_TABLES = """\
Memory leak table: partial call paths (the last callers before the
allocation, outermost first) whose blocks were allocated and never freed.
  objects  blocks still allocated at exit (or at the snapshot or checkpoint)
  bytes    their bytes, and (%) their share of all bytes kept
  path     callers, outermost first; "..." when the path continues above;
           [4 std::] stands for four library frames, folded (--wide)
Leak kinds: the blocks were not classified (no LEAK section in the data file); listed as never freed

   objects        bytes   (%)  path
     4,913    1,002,252 (100)  main > make_red_widget > make_widget

Allocation bin table: blocks by size, 0 to 1024 bytes, and one bin above.
  allocs   blocks allocated;  bytes, and (%) their share of all bytes
  frees    blocks freed;  kept, and (%) bytes never freed
  types    program types of exactly this size

   size     allocs         bytes   (%)      frees          kept   (%)  types
    204     10,000     2,040,000 (100)      5,087     1,002,252 (100)  widget
<total>     10,000     2,040,000            5,087     1,002,252

Direct allocation table: functions that called the allocator themselves.
  % mem    share of all bytes allocated;  bytes  allocated
  s m l x  % of all bytes allocated, by size class: s 0-32, m 33-256,
           l 257-2048, x > 2048 (blank: less than 1%)
  kept     bytes never freed, and % of all bytes kept, by size class
  calls    allocations made

                    -- % mem(size) -                 - % all kept --
% mem         bytes   s   m   l   x      bytes kept   s   m   l   x        calls  name
          2,040,000     100               1,002,252     100               10,000  <total>
  100     2,040,000     100               1,002,252     100               10,000  make_widget

Allocation call graph: one entry per function on an allocation chain,
sorted by self+desc.  Callers above the entry's line, callees below.
  entry line  self+desc  % of all bytes allocated by the function and
                         its descendants (its cycle's, for a member)
              self       bytes it allocated directly, and their (%)
              s m l x    % of its own bytes in each size class
              called     calls on allocation chains, + recursive calls
  callers     self       bytes allocated on behalf of this caller
              s m l x    % of those bytes in each size class
              frac       % of all bytes requested of the entry, by class
              called     calls from this caller / all calls of the entry
  callees     self       bytes this callee allocated for the entry
              frac       % of the entry's self+desc bytes, by class
              called     calls of the callee from the entry / all its calls

index  self+desc          self   (%)    s   m   l   x    s   m   l   x             called  name
                                      -- size ------   -- frac ------
--------------------------------------------------------------------------------------------------------------
[0]        100.0             0                                                          0  main [0]
                     1,037,748            100               50                5,087/5,087      make_blue_widget [2]
                     1,002,252            100               49                4,913/4,913      make_red_widget [3]
--------------------------------------------------------------------------------------------------------------
                     1,037,748            100               50               5,087/10,000      make_blue_widget [2]
                     1,002,252            100               49               4,913/10,000      make_red_widget [3]
[1]        100.0     2,040,000 (100)      100                                      10,000  make_widget [1]
--------------------------------------------------------------------------------------------------------------
                     1,037,748            100              100                5,087/5,087      main [0]
[2]         50.9             0                                                      5,087  make_blue_widget [2]
                     1,037,748            100              100               5,087/10,000      make_widget [1]
--------------------------------------------------------------------------------------------------------------
                     1,002,252            100              100                4,913/4,913      main [0]
[3]         49.1             0                                                      4,913  make_red_widget [3]
                     1,002,252            100              100               4,913/10,000      make_widget [1]
--------------------------------------------------------------------------------------------------------------
"""

BOUNDARIES_TABLES = """\
Memory leak table: partial call paths (the last callers before the
allocation, outermost first) whose blocks were allocated and never freed.
  objects  blocks still allocated at exit (or at the snapshot or checkpoint)
  bytes    their bytes, and (%) their share of all bytes kept
  path     callers, outermost first; "..." when the path continues above;
           [4 std::] stands for four library frames, folded (--wide)
Leak kinds: the blocks were not classified (no LEAK section in the data file); listed as never freed

   objects        bytes   (%)  path
         4      105,122  (98)  main > above_1024 > allocate_each
         8        1,619   (1)  main > below_1025 > allocate_each

Allocation bin table: blocks by size, 0 to 1024 bytes, and one bin above.
  allocs   blocks allocated;  bytes, and (%) their share of all bytes
  frees    blocks freed;  kept, and (%) bytes never freed
  types    program types of exactly this size

   size     allocs         bytes   (%)      frees          kept   (%)  types
      0          1             0                0             0
      1          2             2                1             1
     16          3            48                2            16
     32          4           128                3            32
     33          5           165                4            33
    256          6         1,536                5           256
    257          7         1,799                6           257
   1024          8         8,192                7         1,024
 > 1024         42     1,252,244  (99)         38       105,122  (98)
<total>         78     1,264,114               66       106,741

Direct allocation table: functions that called the allocator themselves.
  % mem    share of all bytes allocated;  bytes  allocated
  s m l x  % of all bytes allocated, by size class: s 0-32, m 33-256,
           l 257-2048, x > 2048 (blank: less than 1%)
  kept     bytes never freed, and % of all bytes kept, by size class
  calls    allocations made

                    -- % mem(size) -                 - % all kept --
% mem         bytes   s   m   l   x      bytes kept   s   m   l   x        calls  name
          1,264,114           3  96         106,741           4  95           78  <total>
  100     1,264,114           3  96         106,741           4  95           78  allocate_each

Allocation call graph: one entry per function on an allocation chain,
sorted by self+desc.  Callers above the entry's line, callees below.
  entry line  self+desc  % of all bytes allocated by the function and
                         its descendants (its cycle's, for a member)
              self       bytes it allocated directly, and their (%)
              s m l x    % of its own bytes in each size class
              called     calls on allocation chains, + recursive calls
  callers     self       bytes allocated on behalf of this caller
              s m l x    % of those bytes in each size class
              frac       % of all bytes requested of the entry, by class
              called     calls from this caller / all calls of the entry
  callees     self       bytes this callee allocated for the entry
              frac       % of the entry's self+desc bytes, by class
              called     calls of the callee from the entry / all its calls

index  self+desc          self   (%)    s   m   l   x    s   m   l   x             called  name
                                      -- size ------   -- frac ------
--------------------------------------------------------------------------------------------------------------
[0]        100.0             0                                                          0  main [0]
                     1,252,244                  2  97            2  96              42/42      above_1024 [2]
                        11,870          1  14  84                                   36/36      below_1025 [3]
--------------------------------------------------------------------------------------------------------------
                     1,252,244                  2  97            2  96              42/78      above_1024 [2]
                        11,870          1  14  84                                   36/78      below_1025 [3]
[1]        100.0     1,264,114 (100)            3  96                                  78  allocate_each [1]
--------------------------------------------------------------------------------------------------------------
                     1,252,244                  2  97            2  97              42/42      main [0]
[2]         99.1             0                                                         42  above_1024 [2]
                     1,252,244                  2  97            2  97              42/78      allocate_each [1]
--------------------------------------------------------------------------------------------------------------
                        11,870          1  14  84        1  14  84                  36/36      main [0]
[3]          0.9             0                                                         36  below_1025 [3]
                        11,870          1  14  84        1  14  84                  36/78      allocate_each [1]
--------------------------------------------------------------------------------------------------------------
"""

TABLES_TABLES = """\
Memory leak table: partial call paths (the last callers before the
allocation, outermost first) whose blocks were allocated and never freed.
  objects  blocks still allocated at exit (or at the snapshot or checkpoint)
  bytes    their bytes, and (%) their share of all bytes kept
  path     callers, outermost first; "..." when the path continues above;
           [4 std::] stands for four library frames, folded (--wide)
Leak kinds: the blocks were not classified (no LEAK section in the data file); listed as never freed

   objects        bytes   (%)  path
         2        2,000 (100)  main > twice > keep_block

Allocation bin table: blocks by size, 0 to 1024 bytes, and one bin above.
  allocs   blocks allocated;  bytes, and (%) their share of all bytes
  frees    blocks freed;  kept, and (%) bytes never freed
  types    program types of exactly this size

   size     allocs         bytes   (%)      frees          kept   (%)  types
      1          1             1                1             0
    999          1           999                1             0
   1000         99        99,000  (99)         97         2,000 (100)
<total>        101       100,000               99         2,000

Direct allocation table: functions that called the allocator themselves.
  % mem    share of all bytes allocated;  bytes  allocated
  s m l x  % of all bytes allocated, by size class: s 0-32, m 33-256,
           l 257-2048, x > 2048 (blank: less than 1%)
  kept     bytes never freed, and % of all bytes kept, by size class
  calls    allocations made

                    -- % mem(size) -                 - % all kept --
% mem         bytes   s   m   l   x      bytes kept   s   m   l   x        calls  name
            100,000          99               2,000         100              101  <total>
   76        76,001          76                   0                           77  worker
   10        10,000          10                   0                           10  alpha
   10        10,000          10                   0                           10  beta
    2         2,000           2               2,000         100                2  keep_block
    1         1,000           1                   0                            1  one_percent
                999                               0                            1  under_one

Allocation call graph: one entry per function on an allocation chain,
sorted by self+desc.  Callers above the entry's line, callees below.
  entry line  self+desc  % of all bytes allocated by the function and
                         its descendants (its cycle's, for a member)
              self       bytes it allocated directly, and their (%)
              s m l x    % of its own bytes in each size class
              called     calls on allocation chains, + recursive calls
  callers     self       bytes allocated on behalf of this caller
              s m l x    % of those bytes in each size class
              frac       % of all bytes requested of the entry, by class
              called     calls from this caller / all calls of the entry
  callees     self       bytes this callee allocated for the entry
              frac       % of the entry's self+desc bytes, by class
              called     calls of the callee from the entry / all its calls

index  self+desc          self   (%)    s   m   l   x    s   m   l   x             called  name
                                      -- size ------   -- frac ------
--------------------------------------------------------------------------------------------------------------
[0]        100.0             0                                                          0  main [0]
                        76,001                 99               76                  77/77      wrapper [1]
                        10,000                100               10                  10/10      alpha [3]
                        10,000                100               10                  10/10      beta [4]
                         2,000                100                2                    2/2      twice [5]
                         1,000                100                1                    1/1      one_percent [7]
                           999                100                                     1/1      under_one [8]
--------------------------------------------------------------------------------------------------------------
                        76,001                 99               99                  77/77      main [0]
[1]         76.0             0                                                         77  wrapper [1]
                        76,001                 99               99                  77/77      worker [2]
--------------------------------------------------------------------------------------------------------------
                        76,001                 99               99                  77/77      wrapper [1]
[2]         76.0        76,001  (76)           99                                      77  worker [2]
--------------------------------------------------------------------------------------------------------------
                        10,000                100              100                  10/10      main [0]
[3]         10.0        10,000  (10)          100                                      10  alpha [3]
--------------------------------------------------------------------------------------------------------------
                        10,000                100              100                  10/10      main [0]
[4]         10.0        10,000  (10)          100                                      10  beta [4]
--------------------------------------------------------------------------------------------------------------
                         2,000                100              100                    2/2      main [0]
[5]          2.0             0                                                          2  twice [5]
                         2,000                100              100                    2/2      keep_block [6]
--------------------------------------------------------------------------------------------------------------
                         2,000                100              100                    2/2      twice [5]
[6]          2.0         2,000   (2)          100                                       2  keep_block [6]
--------------------------------------------------------------------------------------------------------------
                         1,000                100              100                    1/1      main [0]
[7]          1.0         1,000   (1)          100                                       1  one_percent [7]
--------------------------------------------------------------------------------------------------------------
                           999                100              100                    1/1      main [0]
[8]          1.0           999                100                                       1  under_one [8]
--------------------------------------------------------------------------------------------------------------
"""

RECURSION_GRAPH = """\
Allocation call graph: one entry per function on an allocation chain,
sorted by self+desc.  Callers above the entry's line, callees below.
  entry line  self+desc  % of all bytes allocated by the function and
                         its descendants (its cycle's, for a member)
              self       bytes it allocated directly, and their (%)
              s m l x    % of its own bytes in each size class
              called     calls on allocation chains, + recursive calls
  callers     self       bytes allocated on behalf of this caller
              s m l x    % of those bytes in each size class
              frac       % of all bytes requested of the entry, by class
              called     calls from this caller / all calls of the entry
  callees     self       bytes this callee allocated for the entry
              frac       % of the entry's self+desc bytes, by class
              called     calls of the callee from the entry / all its calls

index  self+desc          self   (%)    s   m   l   x    s   m   l   x             called  name
                                      -- size ------   -- frac ------
--------------------------------------------------------------------------------------------------------------
[0]        100.0             0                                                          0  main [0]
                         4,000            100              100                    100/400      a <cycle 1> [4]
--------------------------------------------------------------------------------------------------------------
                         4,000            100              100                    100/100      main [0]
[1]        100.0         4,000 (100)                                              100+900  <cycle 1 as a whole> [1]
                         4,000            100                                     100+300      a <cycle 1> [4]
                             0                                                      0+300      b <cycle 1> [2]
                             0                                                      0+300      c <cycle 1> [3]
--------------------------------------------------------------------------------------------------------------
                                                                                  300/300      c <cycle 1> [3]
[2]        100.0             0                                                      0+300  b <cycle 1> [2]
                                                                                  300/400      a <cycle 1> [4]
--------------------------------------------------------------------------------------------------------------
                                                                                  300/300      a <cycle 1> [4]
[3]        100.0             0                                                      0+300  c <cycle 1> [3]
                                                                                  300/300      b <cycle 1> [2]
--------------------------------------------------------------------------------------------------------------
                                                                                  300/400      b <cycle 1> [2]
                         4,000            100              100                    100/400      main [0]
[4]        100.0         4,000 (100)      100                                     100+300  a <cycle 1> [4]
                                                                                  300/300      c <cycle 1> [3]
--------------------------------------------------------------------------------------------------------------
"""


@pytest.fixture(scope="module")
def data_files(targets: Targets, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("in-process")
    commands = {"widgets": [BUILD / "widgets"], "boundaries": [targets.build("boundaries")],
                "recursion": [targets.build("recursion"), "three", "100"], "tables": [targets.build("tables")],
                "minus": [BUILD / "widgets", "2000"]}
    files = {}
    for name, command in commands.items():
        files[name] = directory / f"{name}.mprof"
        # Not classified, whatever the monitor can: these are the paper's
        # tables of blocks never freed (the kinds have tests of their own).
        settings = {"MPROF_LEAK_CHECK": "0", **({"MPROF_CALL_GRAPH": "0"} if name == "minus" else {})}
        subprocess.run([str(part) for part in command], env=monitor_env(files[name], **settings), check=True,
                       capture_output=True, timeout=60)
    return files


def mprof(capsys: pytest.CaptureFixture[str], *arguments: str | Path) -> str:
    assert main([str(argument) for argument in arguments]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


def test_widgets_tables(data_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    text = mprof(capsys, "report", "--tables", "leaks,bins,direct,graph", data_files["widgets"])
    assert text.splitlines() == WIDGETS_TABLES.splitlines()


def test_boundaries_tables(data_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    text = mprof(capsys, "report", "--tables", "leaks,bins,direct,graph", data_files["boundaries"])
    assert text.splitlines() == BOUNDARIES_TABLES.splitlines()


def test_ties_merges_and_the_one_percent_boundary(data_files: dict[str, Path],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    text = mprof(capsys, "report", "--all", "--tables", "leaks,bins,direct,graph", data_files["tables"])
    assert text.splitlines() == TABLES_TABLES.splitlines()


def test_call_sites_split_a_merged_leak_path(data_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    source = (TARGETS / "tables.c").read_text().splitlines()

    def line_of(text: str) -> int:
        [number] = [n for n, line in enumerate(source, start=1) if text in line]
        return number

    text = mprof(capsys, "report", "--tables", "leaks", "--call-sites", data_files["tables"])
    main, block = line_of("    twice();"), line_of("return malloc(1000);")
    assert text.splitlines()[-2:] == [
        f"         1        1,000  (50)  main (tables.c:{main}) > twice (tables.c:{line_of('kept[0] = keep')}) > "
        f"keep_block (tables.c:{block})",
        f"         1        1,000  (50)  main (tables.c:{main}) > twice (tables.c:{line_of('kept[1] = keep')}) > "
        f"keep_block (tables.c:{block})"]


def test_recursion_call_graph(data_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    text = mprof(capsys, "report", "--tables", "graph", data_files["recursion"])
    assert text.splitlines() == RECURSION_GRAPH.splitlines()


def test_recursion_leaks_and_cycle_in_json(data_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    report = json.loads(mprof(capsys, "report", "--format", "json", data_files["recursion"]))
    # The leak depth is 5: the innermost five frames of a > c > b > a ..., so
    # the path starts inside the cycle, below main.
    [leak] = report["leaks"]
    assert (leak["path"], leak["kept_objects"], leak["kept_bytes"]) == ("... > b > a > c > b > a", 100, 4000)
    assert [frame["function"] for frame in leak["frames"]] == ["b", "a", "c", "b", "a"]
    [cycle] = report["cycles"]
    assert cycle == {"number": 1, "members": ["a", "b", "c"], "self_bytes": 4000, "total_bytes": 4000,
                     "called": 100, "internal_calls": 900}
    graph = {entry["function"]: entry for entry in report["call_graph"]}
    assert {name: (entry["cycle"], entry["self_bytes"], entry["total_bytes"], entry["called"],
                   entry["recursive_calls"]) for name, entry in graph.items()} == {
        "main": (None, 0, 4000, 0, 0), "a <cycle 1>": (1, 4000, 4000, 100, 300),
        "b <cycle 1>": (1, 0, 4000, 0, 300), "c <cycle 1>": (1, 0, 4000, 0, 300)}


def test_widgets_summary(data_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    lines = mprof(capsys, "report", "--tables", "summary", data_files["widgets"]).splitlines()
    assert lines[0] == "Program summary"
    assert re.fullmatch(r"  process \d+: \S+/build/widgets", lines[1])
    assert lines[2:5] == [
        "  allocations   10,000 blocks, 2,040,000 bytes, 204.0 bytes on average",
        "  frees         5,087 blocks, 1,037,748 bytes",
        "  kept at exit  4,913 blocks, 1,002,252 bytes"]
    # All widgets are made before any is consumed: the peak is the 10,000th
    # allocation.  The last one made is red (kept), so no widget is freed
    # before the next is made: no temporaries.
    assert re.fullmatch(r"  most live     10,000 blocks, 2,040,000 bytes; the bytes at \d+\.\d{3} s, allocation 10,000",
                        lines[5])
    assert lines[6] == "  temporaries   0 blocks freed before their thread allocated again, 0.0% of all allocations"
    assert re.fullmatch(r"  run time      \d+\.\d{3} s, [\d,]+ bytes/s, [\d,]+ allocations/s", lines[7])
    # The calls made, the unusual events that happened.
    assert lines[8] == "  calls         malloc 10,000, free 5,087"
    # early and untracked count libc's and the monitor's own start-up, not widgets'.
    assert re.fullmatch(r"  unusual       (early [1-9][\d,]*(, untracked [1-9][\d,]*)?|untracked [1-9][\d,]*|none)",
                        lines[9])
    assert len(lines) == 10


def test_widgets_json(data_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    report = json.loads(mprof(capsys, "report", "--format", "json", data_files["widgets"]))
    [leak] = report["leaks"]
    assert {key: leak[key] for key in ("path", "allocs", "frees", "kept_objects", "bytes", "kept_bytes")} == {
        "path": "main > make_red_widget > make_widget", "allocs": 4913, "frees": 0, "kept_objects": 4913,
        "bytes": 4913 * 204, "kept_bytes": 4913 * 204}
    assert [(frame["function"], Path(frame["file"]).name) for frame in leak["frames"]] == [
        ("main", "widgets.c"), ("make_red_widget", "widgets.c"), ("make_widget", "widgets.c")]
    assert report["bins"] == [{"size": 204, "label": "204", "allocs": 10000, "frees": 5087, "bytes": 2040000,
                               "kept_bytes": 4913 * 204, "temporaries": 0, "peak_blocks": 10000,
                               "peak_bytes": 2040000, "types": ["widget"]}]
    [direct] = report["direct"]
    assert {key: direct[key] for key in direct if key != "module"} == {
        "function": "make_widget", "signature": "make_widget", "calls": 10000, "bytes": 2040000,
        "bytes_by_class": {"s": 0, "m": 2040000, "l": 0, "x": 0}, "kept_bytes": 4913 * 204,
        "kept_by_class": {"s": 0, "m": 4913 * 204, "l": 0, "x": 0}, "kept_objects": 4913,
        "via": []}  # make_widget is the program's own
    graph = {entry["function"]: entry for entry in report["call_graph"]}
    assert list(graph) == ["main", "make_widget", "make_blue_widget", "make_red_widget"]
    assert graph["main"]["total_bytes"] == 2040000
    assert [(c["function"], c["calls"], c["bytes"]) for c in graph["main"]["callees"]] == [
        ("make_blue_widget", 5087, 5087 * 204), ("make_red_widget", 4913, 4913 * 204)]
    assert [(c["function"], c["calls"], c["bytes"]) for c in graph["make_widget"]["callers"]] == [
        ("make_blue_widget", 5087, 5087 * 204), ("make_red_widget", 4913, 4913 * 204)]
    assert (graph["make_widget"]["self_bytes"], graph["make_widget"]["called"]) == (2040000, 10000)
    assert report["cycles"] == []


def test_cutoff_leaves_out_small_rows(data_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    # boundaries: below_1025 has 0.9% of the bytes and 1.5% of the kept ones;
    # allocate_each and main 100%, above_1024 99.1%.
    text = mprof(capsys, "report", "--tables", "leaks,graph", "--cutoff", "1.2", data_files["boundaries"])
    assert "main > above_1024 > allocate_each" in text and "main > below_1025" in text
    assert [line.split()[-2] for line in text.splitlines() if line.startswith("[")] == [
        "main", "allocate_each", "above_1024"]
    text = mprof(capsys, "report", "--tables", "leaks", "--cutoff", "1.6", data_files["boundaries"])
    assert "main > above_1024 > allocate_each" in text and "below_1025" not in text


def test_database_gives_the_same_report(data_files: dict[str, Path], capsys: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    database = tmp_path / "widgets.db"
    assert mprof(capsys, "db", data_files["widgets"], "-o", database) == ""
    from_database = mprof(capsys, "report", "--tables", "leaks,bins,direct,graph", database)
    assert from_database.splitlines() == WIDGETS_TABLES.splitlines()


def test_minus_mode_has_no_call_graph(data_files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    report = json.loads(mprof(capsys, "report", "--format", "json", data_files["minus"]))
    assert (report["call_graph"], report["cycles"], report["runs"][0]["call_graph"]) == ([], [], False)
    # widgets 2000: 999 red.
    assert [(leak["path"], leak["kept_objects"]) for leak in report["leaks"]] == [
        ("main > make_red_widget > make_widget", 999)]
    text = mprof(capsys, "report", "--tables", "graph", data_files["minus"])
    assert "not recorded" in text
