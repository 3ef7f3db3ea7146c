"""The report's tables, reduced and printed in the test's own process from
data files built by hand, with the symbol resolver replaced by a table of
known frames: every figure below is worked out by hand from the chains the
files describe (see CHAINS), not taken from the code.

The program: main calls p and q; p and q call A; A and B call each other
(a cycle); q also calls B directly, and B calls leaf.  Sizes fall in each
class: s 0-32, m 33-256, l 257-2048, x above."""

from __future__ import annotations

import html
import json
import re
import sqlite3
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from datafile_builder import SUMMARY_FIELDS, DataFileBuilder, ModuleSpec
from hand_profiles import NamedFrames, by_class, cell_text, embedded, page_rows, recorded, report, resolve_by_name
from mprof.cli.main import main
from mprof.reducer import datafile, store
from mprof.reducer import profile as profile_module
from mprof.reducer.symbolize import Frame, Progress
from mprof.report.html import human_bytes

# A return address in each function, named caller_callee.
MAIN_P, MAIN_Q, P_A, Q_A, Q_B, A_B, B_A, B_LEAF = 0x1100, 0x1200, 0x2100, 0x3100, 0x3200, 0x4100, 0x5100, 0x5200
A_MALLOC, B_MALLOC, LEAF_MALLOC = 0x4200, 0x5300, 0x6100
FUNCTION_OF = {MAIN_P: "main", MAIN_Q: "main", P_A: "p", Q_A: "q", Q_B: "q", A_B: "A", A_MALLOC: "A",
               B_A: "B", B_LEAF: "B", B_MALLOC: "B", LEAF_MALLOC: "leaf"}
LINE_OF = {address: 10 + i for i, address in enumerate(sorted(FUNCTION_OF))}

# (chain outermost first, size, blocks, blocks freed)
CHAINS = [
    ((MAIN_P, P_A, A_B, B_MALLOC), 40, 1, 0),
    ((MAIN_Q, Q_A, A_B, B_A, A_MALLOC), 300, 1, 1),
    ((MAIN_Q, Q_B, B_LEAF, LEAF_MALLOC), 3000, 1, 0),
    ((MAIN_P, P_A, A_MALLOC), 20, 2, 1),
]


class KnownFrames(NamedFrames):
    """Each address is one frame of the function FUNCTION_OF names, at
    LINE_OF's line of prog.c."""
    function_of = FUNCTION_OF
    line_of = LINE_OF


@pytest.fixture(autouse=True)
def known_frames(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(profile_module, "Resolver", KnownFrames)
    yield


def program_file(**fields: object) -> DataFileBuilder:
    """CHAINS, with their run's most live figures and calls."""
    builder = recorded(CHAINS, cmdline=b"prog\0run\0")
    assert builder.summary[0:4] == [5, 2, 3380, 320]  # allocs, frees, bytes, freed
    builder.summary[4:6] = [4, 3360]  # most live
    builder.summary[22:25] = [1, 1_250_000_000, 4]  # a temporary; the peak at 1.25 s, the 4th allocation
    builder.summary[6] = builder.summary[11] = 5  # malloc and free calls
    for name, value in fields.items():
        setattr(builder, name, value)
    return builder


# Worked out by hand from CHAINS: 3,380 bytes in all; the cycle {A, B} is on
# every chain (100%), q on 3,300 (97.6%), leaf on 3,000, p on 80.  Shares
# are rounded down; a caller's frac is of the bytes requested of the entry
# from outside its cycle (A: 380, of which q 300 = 78%); calls within the
# cycle are shown without bytes, and counted after the + (A -> B twice,
# B -> A once).
CALL_GRAPH = """\
index  self+desc          self   (%)    s   m   l   x    s   m   l   x             called  name
                                      -- size ------   -- frac ------
--------------------------------------------------------------------------------------------------------------
[0]        100.0             0                                                          0  main [0]
                         3,300                  9  90            8  88                2/2      q [4]
                            80         50  50            1   1                        3/3      p [6]
--------------------------------------------------------------------------------------------------------------
                         3,300                  9  90            8  88                2/5      q [4]
                            80         50  50            1   1                        3/5      p [6]
[1]        100.0           380  (11)                                                  5+3  <cycle 1 as a whole> [1]
                           340         11      88                                     4+1      A <cycle 1> [3]
                            40            100                                         1+2      B <cycle 1> [2]
--------------------------------------------------------------------------------------------------------------
                         3,000                    100              100                1/3      q [4]
                                                                                      2/3      A <cycle 1> [3]
[2]        100.0            40   (1)      100                                         1+2  B <cycle 1> [2]
                         3,000                    100               88                1/1      leaf [5]
                                                                                      1/5      A <cycle 1> [3]
--------------------------------------------------------------------------------------------------------------
                                                                                      1/5      B <cycle 1> [2]
                           300                100               78                    1/5      q [4]
                            80         50  50           10  10                        3/5      p [6]
[3]        100.0           340  (10)   11      88                                     4+1  A <cycle 1> [3]
                                                                                      2/3      B <cycle 1> [2]
--------------------------------------------------------------------------------------------------------------
                         3,300                  9  90            9  90                2/2      main [0]
[4]         97.6             0                                                          2  q [4]
                         3,000                    100               90                1/3      B <cycle 1> [2]
                           300                100                9                    1/5      A <cycle 1> [3]
--------------------------------------------------------------------------------------------------------------
                         3,000                    100              100                1/1      B <cycle 1> [2]
[5]         88.8         3,000  (88)              100                                   1  leaf [5]
--------------------------------------------------------------------------------------------------------------
                            80         50  50           50  50                        3/3      main [0]
[6]          2.4             0                                                          3  p [6]
                            80         50  50           50  50                        3/5      A <cycle 1> [3]
--------------------------------------------------------------------------------------------------------------
"""


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "prog.mprof"
    path.write_bytes(program_file().build())
    return path


def test_call_graph_json(program: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = json.loads(report(capsys, "report", "--format", "json", program))
    entries = {entry["function"]: entry for entry in document["call_graph"]}
    assert set(entries) == {"main", "p", "q", "A <cycle 1>", "B <cycle 1>", "leaf"}

    def edges(entry: dict, side: str) -> dict[str, tuple[int, int, list[int]]]:
        return {e["function"]: (e["calls"], e["bytes"], [e["bytes_by_class"][c] for c in "smlx"])
                for e in entry[side]}

    a, b = entries["A <cycle 1>"], entries["B <cycle 1>"]
    assert (a["module"], a["file"], a["cycle"]) == ("/bin/prog", "prog.c", 1)
    # A allocated 2 x 20 (s) and 300 (l) itself; B 40 (m); leaf 3000 (x).
    assert (a["self_bytes"], [a["self_by_class"][c] for c in "smlx"]) == (340, [40, 0, 300, 0])
    assert (b["self_bytes"], [b["self_by_class"][c] for c in "smlx"]) == (40, [0, 40, 0, 0])
    assert edges(a, "callers") == {"p": (3, 80, [40, 40, 0, 0]), "q": (1, 300, [0, 0, 300, 0]),
                                   "B <cycle 1>": (1, 300, [0, 0, 300, 0])}
    assert edges(a, "callees") == {"B <cycle 1>": (2, 340, [0, 40, 300, 0])}
    assert edges(b, "callers") == {"A <cycle 1>": (2, 340, [0, 40, 300, 0]), "q": (1, 3000, [0, 0, 0, 3000])}
    assert edges(b, "callees") == {"A <cycle 1>": (1, 300, [0, 0, 300, 0]), "leaf": (1, 3000, [0, 0, 0, 3000])}
    assert edges(entries["main"], "callees") == {"p": (3, 80, [40, 40, 0, 0]), "q": (2, 3300, [0, 0, 300, 3000])}
    assert entries["main"]["callers"] == []
    assert (entries["leaf"]["file"], entries["leaf"]["self_bytes"]) == ("prog.c", 3000)


def test_leaks_and_bins_json(program: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = json.loads(report(capsys, "report", "--format", "json", program))
    leaks = {leak["path"]: leak for leak in document["leaks"]}
    assert [(leak["path"], leak["kept_objects"], leak["kept_bytes"]) for leak in document["leaks"]] == [
        ("main > q > B > leaf", 1, 3000), ("main > p > A > B", 1, 40), ("main > p > A", 1, 20)]
    three = leaks["main > q > B > leaf"]
    # Not classified: never freed, of no known kind.
    assert (three["kind"], three["kept_objects"], three["kept_bytes"]) == ("unknown", 1, 3000)
    assert document["leak_summary"] is None
    assert [(f["function"], f["file"], f["line"]) for f in three["frames"]] == [
        ("main", "prog.c", LINE_OF[MAIN_Q]), ("q", "prog.c", LINE_OF[Q_B]), ("B", "prog.c", LINE_OF[B_LEAF]),
        ("leaf", "prog.c", LINE_OF[LEAF_MALLOC])]
    bins = [(b["size"], b["label"], b["allocs"], b["frees"], b["types"]) for b in document["bins"]]
    assert bins == [(20, "20", 2, 1, []), (40, "40", 1, 0, ["pair_t", "struct node"]), (300, "300", 1, 1, []),
                    (1025, "> 1024", 1, 0, [])]


def test_call_graph_text(program: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = report(capsys, "report", "--all", "--tables", "graph", program)
    assert text[text.index("index  self+desc"):].splitlines() == CALL_GRAPH.splitlines()


# The other three tables of program_file(), from their column headers on.
LEAK_TABLE = """\
   objects        bytes   (%)  path
         1        3,000  (98)  main > q > B > leaf
         1           40   (1)  main > p > A > B
         1           20        main > p > A
"""
BIN_TABLE = """\
   size     allocs         bytes   (%)      frees          kept   (%)  types
     20          2            40   (1)          1            20
     40          1            40   (1)          0            40   (1)  pair_t, struct node
    300          1           300   (8)          1             0
 > 1024          1         3,000  (88)          0         3,000  (98)
<total>          5         3,380                2         3,060
"""
DIRECT_TABLE = """\
% mem         bytes   s   m   l   x      bytes kept   s   m   l   x        calls  name
              3,380   1   1   8  88           3,060       1      98            5  <total>
   88         3,000              88           3,000              98            1  leaf
   10           340   1       8                  20                            3  A <cycle 1>
    1            40       1                      40       1                    1  B <cycle 1>
"""


def table_lines(text: str, header: str) -> list[str]:
    """A printed table's lines from its column header line on."""
    lines = text.splitlines()
    return lines[lines.index(header):]


def test_leak_bin_and_direct_tables(program: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, table in (("leaks", LEAK_TABLE), ("bins", BIN_TABLE), ("direct", DIRECT_TABLE)):
        text = report(capsys, "report", "--all", "--tables", name, program)
        assert table_lines(text, table.splitlines()[0]) == table.splitlines()


def summary_lines(text: str) -> list[str]:
    """The process table of several processes, and the summary."""
    lines = text.splitlines()
    return lines[next(n for n, line in enumerate(lines) if line.startswith(("Processes: ", "Program summary"))):]


PROCESS_HEADER = ["", "     pid     ppid origin    allocations           bytes     peak live  kept at exit  command"]


def test_summary_of_a_process_and_its_fork_child(program: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # The child: two blocks of 20 bytes, both freed, in one second; its
    # counters are distinct so that each reaches its own place.
    child = tmp_path / "child.mprof"
    # Both its blocks came from a pool, carved from one backing block.
    counters = [2, 2, 40, 40, 2, 40, 2, 1, 3, 4, 6, 2, 7, 1, 2, 4, 9, 6, 3, 7, 8, 4096, 0, 0, 0, 2, 2, 0, 1, 4096, 0, 0,
                0, 0, 0, 0, 0, 0, 0]
    child.write_bytes(DataFileBuilder(pid=4243, ppid=4242, flags=0x7, elapsed_ns=1_000_000_000,
                                      exe=b"/bin/prog", cmdline=b"prog\0child\0", summary=counters,
                                      bins=[(20, 2, 2, 40, 40)]).build())
    # Together: 5 + 2 blocks, 3,380 + 40 bytes; 2 + 2 freed, 320 + 40
    # bytes; the most live of either (4 blocks, 3,360 bytes), the longer
    # run time (2.5 s): 3,420 / 7 = 488.6 bytes a block, 1,368 bytes/s, 2.8
    # allocations/s.
    # Each process's own figures first: the parent's 5 blocks of 3,380
    # bytes, 320 freed, 3,360 at most live; the child's 2 of 40, all freed,
    # its own most live 40.
    assert summary_lines(report(capsys, "report", "--tables", "summary", program, child)) == [
        "Processes: 2, added up in the tables below; --pid PID or --program NAME reports some alone",
        *PROCESS_HEADER,
        "    4242        1 executed            5           3,380         3,360         3,060  prog run",
        "    4243     4242 forked              2              40            40             0  prog child",
        "",
        "Program summary (the processes above, added up)",
        "  allocations   7 blocks, 3,420 bytes, 488.6 bytes on average",
        "  frees         4 blocks, 360 bytes",
        "  kept at exit  3 blocks, 3,060 bytes",
        "  most live     per process, in the process table: the processes' peaks do not add up",
        "  temporaries   1 block freed before their thread allocated again, 14.3% of all allocations",
        "  run time      2.500 s, 1,368 bytes/s, 3 allocations/s",
        "  calls         malloc 7, calloc 1, realloc 3, memalign 4, new 6, free 7, delete 7",
        "  unusual       free(NULL) 1, unknown frees 2, failed 3, early 4, untracked 6, inherited frees 7, "
        "truncated chains 8",
        "  pools         2 objects announced, 2 freed one by one; 0 resets, trims or destructions",
        "  pool backing  1 block, 4,096 bytes, in no figure above; 0 blocks, 0 bytes freed"]
    document = json.loads(report(capsys, "report", "--format", "json", program, child))
    summary = document["summary"]
    assert (summary["kept_objects"], summary["kept_bytes"], summary["max_live_bytes"]) == (3, 3060, None)
    assert [run["figures"]["max_live_bytes"] for run in document["runs"]] == [3360, 40]
    assert (summary["average_size"], summary["elapsed_seconds"]) == (3420 / 7, 2.5)
    assert summary["allocation_rate_bytes_per_second"] == 1368.0
    assert (summary["early_frees"], summary["monitor_bytes"]) == (9, 4096)
    # The 20-byte bins of both processes add up: 4 blocks, 3 freed.
    assert [(b["size"], b["allocs"], b["frees"], b["bytes"]) for b in document["bins"]][0] == (20, 4, 3, 80)
    page = html_page(capsys, program, child)
    header = page[page.index("<header>"):page.index('<div class="cards"')]
    assert page_text(header) == ["2 processes, added up in the tables below (--pid or --program reports some alone):",
                                 "Run time 2.500 s over 2 processes"]
    assert [" ".join(html.unescape(re.sub("<[^>]+>", " ", row)).split())
            for row in re.findall(r"<tr>(.*?)</tr>", header, re.DOTALL)] == [
        "pid ppid origin allocations bytes peak live kept at exit command",
        "4242 1 executed 5 3,380 3,360 3,060 prog run", "4243 4242 forked 2 40 40 0 prog child"]
    assert page_text(page[page.index('<div class="card"><h2>Peak live'):page.index('<div class="card leak">')]) == [
        "per process", "in the table above: the peaks of several processes do not add up"]


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time is UTC, for the clock times the reports print."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_how_each_file_came_to_be_written(tmp_path: Path, capsys: pytest.CaptureFixture[str], utc: None) -> None:
    kinds = {"checkpoint": dict(flags=0x1 | 0x8, elapsed_ns=1_250_000_000),
             "snapshot": dict(flags=0x1, elapsed_ns=500_000_000),
             "segv": dict(flags=0x3, end_signal=11), "odd": dict(flags=0x2, end_signal=99)}
    paths = {}
    for pid, (name, header) in enumerate(kinds.items(), start=10):
        paths[name] = tmp_path / f"{name}.mprof"
        paths[name].write_bytes(DataFileBuilder(pid=pid, exe=b"/bin/prog", cmdline=b"prog\0run\0",
                                                **header).build())
    lines = summary_lines(report(capsys, "report", "--tables", "summary", *paths.values()))
    assert [line.split("  ")[-1] for line in lines[3:7]] == [
        # Started at 1,700,000,000.123 s (2023-11-14 22:13:20 UTC): 1.25 s
        # later; no process of pid 10 that old runs.
        "prog run (checkpoint of 2023-11-14 22:13:21, 1.250 s into the run: the process ended without writing its "
        "final file)",
        "prog run (snapshot at 0.500 s)",
        "prog run (ended by SIGSEGV)",
        "prog run (ended by signal 99) (mprof- mode)"]
    assert lines[11] == "  live at the end 0 blocks, 0 bytes"
    page = html_page(capsys, paths["odd"])
    assert page_text(page[page.index("<header>"):page.index('<p class="runtime">')]) == [
        "process 13: prog run (ended by signal 99, mprof- mode)"]
    for name, label in (("checkpoint", "live at the checkpoint"), ("snapshot", "live at the snapshot")):
        lines = summary_lines(report(capsys, "report", "--tables", "summary", paths[name]))
        assert lines[4].startswith(f"  {label} 0 blocks")


def test_summary_of_a_run_that_allocated_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "idle.mprof"
    path.write_bytes(DataFileBuilder(elapsed_ns=0).build())
    lines = summary_lines(report(capsys, "report", "--tables", "summary", path))
    assert lines[2:7] == ["  allocations   0 blocks, 0 bytes, 0.0 bytes on average",
                          "  frees         0 blocks, 0 bytes",
                          "  kept at exit  0 blocks, 0 bytes",
                          "  most live     0 blocks, 0 bytes; the bytes at 0.000 s, allocation 0",
                          "  temporaries   0 blocks freed before their thread allocated again"]


def test_database_keeps_bytes_and_64_bit_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A library loaded below its link address has a bias past 2^63; paths
    # and arguments are bytes that need not be UTF-8 (mprof(5), schema.sql).
    path, database = tmp_path / "odd.mprof", tmp_path / "odd.db"
    modules = [ModuleSpec(1 << 63, 0x1000, 0x2000, path=b"/lib/\xff.so"),
               ModuleSpec((1 << 64) - 4096, 0x3000, 0x4000, path="/lib/café.so".encode()),
               ModuleSpec((1 << 63) - 1, 0x5000, 0x6000, path=b"/lib/plain.so")]
    path.write_bytes(program_file(modules=modules, exe=b"/bin/pr\xfeg").build())
    report(capsys, "db", path, "-o", database)
    raw = sqlite3.connect(database)
    assert raw.execute("SELECT bias, path, typeof(path) FROM modules ORDER BY start").fetchall() == [
        (-(1 << 63), b"/lib/\xff.so", "blob"), (-4096, "/lib/café.so", "text"),
        ((1 << 63) - 1, "/lib/plain.so", "text")]
    assert raw.execute("SELECT program, command_line FROM runs").fetchall() == [(b"/bin/pr\xfeg", "prog run")]
    raw.close()
    with store.open_database(database) as db:
        assert db.execute("SELECT path FROM modules ORDER BY start").fetchall() == [
            ("/lib/\udcff.so",), ("/lib/café.so",), ("/lib/plain.so",)]
        assert db.execute("SELECT program FROM runs").fetchall() == [("/bin/pr\udcfeg",)]
    # The report from the database is the report from the data file.
    assert report(capsys, "report", database) == report(capsys, "report", path)


def test_a_later_file_of_the_same_process_replaces_the_earlier(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    # A checkpoint at 1 s and the final file at 2.5 s of process 4242, and
    # a copy of the final file: only the first final file is reported.
    checkpoint, final, copy = tmp_path / "cp.mprof", tmp_path / "final.mprof", tmp_path / "copy.mprof"
    checkpoint.write_bytes(program_file(flags=0x1 | 0x8, elapsed_ns=1_000_000_000).build())
    final.write_bytes(program_file().build())
    copy.write_bytes(final.read_bytes())
    assert main(["report", "--tables", "summary", str(checkpoint), str(final), str(copy)]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"mprof: warning: {checkpoint}: left out: {final} is a later file of the same process (pid 4242)",
        f"mprof: warning: {copy}: left out: {final} is a later file of the same process (pid 4242)"]
    assert summary_lines(captured.out)[1:4] == ["  process 4242: prog run",
                                                "  allocations   5 blocks, 3,380 bytes, 676.0 bytes on average",
                                                "  frees         2 blocks, 320 bytes"]


def test_progress_on_a_terminal(program: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    # Without a Progress of its own, the reducer shows it when stderr is a
    # terminal.
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    profile_module.reduce_files([datafile.read(program)])
    tasks = capsys.readouterr().err.split("\r\033[K")
    # A line is cut to the terminal's width (80 where none says, as here):
    # one that wrapped would stay on the screen.
    graph = f"mprof: building the call graph of {program}"
    assert len(graph) >= 80
    assert tasks == ["", "mprof: resolving addresses of /bin/prog (pid 4242)", graph[:76] + "...",
                     "mprof: reading the types of /bin/prog", "mprof: merging cycles", ""]


def graph_json(capsys: pytest.CaptureFixture[str], *paths: Path) -> dict[str, dict]:
    document = json.loads(report(capsys, "report", "--format", "json", *paths))
    return {entry["function"]: entry for entry in document["call_graph"]}


def edges(entry: dict, side: str) -> dict[str, tuple[int, int]]:
    return {e["function"]: (e["calls"], e["bytes"]) for e in entry[side]}


def test_two_processes_of_one_program_add_up(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = tmp_path / "1.mprof", tmp_path / "2.mprof"
    first.write_bytes(program_file(pid=1).build())
    second.write_bytes(program_file(pid=2).build())
    entries = graph_json(capsys, first, second)
    a = entries["A <cycle 1>"]
    assert (a["self_bytes"], a["called"], a["recursive_calls"]) == (680, 8, 2)
    direct = {row["function"]: row for row in json.loads(report(capsys, "report", "--format", "json", first,
                                                                 second))["direct"]}
    assert (direct["A <cycle 1>"]["calls"], direct["A <cycle 1>"]["kept_objects"]) == (6, 2)
    assert [direct["A <cycle 1>"]["kept_by_class"][c] for c in "smlx"] == [40, 0, 0, 0]
    assert edges(a, "callers") == {"p": (6, 160), "q": (2, 600), "B <cycle 1>": (2, 600)}
    assert edges(entries["B <cycle 1>"], "callees") == {"A <cycle 1>": (2, 600), "leaf": (2, 6000)}
    document = json.loads(report(capsys, "report", "--format", "json", first, second))
    assert [(leak["path"], leak["kind"], leak["kept_objects"], leak["kept_bytes"])
            for leak in document["leaks"]] == [("main > q > B > leaf", "unknown", 2, 6000),
                                                ("main > p > A > B", "unknown", 2, 80),
                                                ("main > p > A", "unknown", 2, 40)]


def test_inlined_functions_are_functions_of_the_chain(program: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # B calls leaf from helper(), inlined into B; A's allocations are made
    # in grow(), inlined into A; main calls q (twice) from dispatch(),
    # inlined into main.  Innermost first, as the resolver lists them.
    inlined = {B_LEAF: "helper", A_MALLOC: "grow", MAIN_Q: "dispatch"}

    class WithInlined(KnownFrames):
        def resolve(self, addresses: Iterable[int], progress: object = None) -> dict[int, list[Frame]]:
            frames = super().resolve(addresses)
            for address, name in inlined.items():
                frames[address] = [Frame(name, "prog.h", 7, "/bin/prog", address, True), *frames[address]]
            return frames

    monkeypatch.setattr(profile_module, "Resolver", WithInlined)
    entries = graph_json(capsys, program)
    assert edges(entries["helper"], "callers") == {"B <cycle 1>": (1, 3000)}
    assert edges(entries["helper"], "callees") == {"leaf": (1, 3000)}
    assert edges(entries["B <cycle 1>"], "callees") == {"A <cycle 1>": (1, 300), "helper": (1, 3000)}
    assert (entries["grow"]["self_bytes"], entries["grow"]["file"]) == (340, "prog.h")
    assert edges(entries["grow"], "callers") == {"A <cycle 1>": (3, 340)}
    assert entries["A <cycle 1>"]["self_bytes"] == 0
    assert edges(entries["main"], "callees") == {"p": (3, 80), "dispatch": (2, 3300)}
    assert edges(entries["dispatch"], "callees") == {"q": (2, 3300)}
    leaks = json.loads(report(capsys, "report", "--format", "json", program))["leaks"]
    assert [leak["path"] for leak in leaks] == ["main > dispatch > q > B > helper > leaf", "main > p > A > B",
                                                "main > p > A > grow"]


def test_equal_totals_list_callers_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    # main -> z -> y -> x allocates 10 bytes (freed); main -> y -> x
    # allocates 0 (kept).  All four total 10 bytes: callers come first
    # (main, z, y, x), not names (x, y, z), though y is called by main too.
    main_z, main_y, z_y, y_x, x_malloc = 0x100, 0x110, 0x200, 0x300, 0x400
    names = {main_z: "main", main_y: "main", z_y: "z", y_x: "y", x_malloc: "x"}
    path = tmp_path / "ranks.mprof"
    path.write_bytes(DataFileBuilder(
        exe=b"/bin/prog", leak_depth=5, bins=[(0, 1, 0, 0, 0), (10, 1, 1, 10, 10)],
        paths=[((x_malloc, y_x, z_y, main_z), 1, 1, (10, 0, 0, 0), (10, 0, 0, 0)),
               ((x_malloc, y_x, main_y), 1, 0, (0, 0, 0, 0), (0, 0, 0, 0))]).build())
    resolve_by_name(monkeypatch, names)
    text = report(capsys, "report", "--tables", "graph,leaks", path)
    assert [line.split()[-2] for line in text.splitlines() if line.startswith("[")] == ["main", "z", "y", "x"]
    assert "         1            0        main > y > x" in text.splitlines()


def cutoff_file(freed: bool) -> DataFileBuilder:
    """main calls big (9,899 bytes), one (101 bytes: exactly 1% of 10,100)
    and under (100 bytes: just below 1%), each once."""
    sizes = {0x2100: 9899, 0x3100: 101, 0x4100: 100}  # l... x, m, m
    summary = [0] * SUMMARY_FIELDS
    summary[0:4] = [3, 3 * freed, 10100, 10100 * freed]
    return DataFileBuilder(
        exe=b"/bin/prog", leak_depth=5, summary=summary,
        bins=sorted((min(size, 1025), 1, int(freed), size, size * freed) for size in sizes.values()),
        paths=[((a, 0x10000 + a), 1, int(freed), by_class(size, size), by_class(size, size * freed))
               for a, size in sizes.items()])


ONE_LEFT_OUT = ("  1 of 3 rows left out: --all shows every row, --top N the first N, --cutoff PERCENT those above "
                "a share of the total")

# cutoff_file's functions: each allocator, and main's call into it.
CUTOFF_NAMES = {0x2100: "big", 0x3100: "one", 0x4100: "under", 0x12100: "main", 0x13100: "main", 0x14100: "main"}


@pytest.mark.parametrize("freed", [True, False])
def test_cutoff_keeps_exactly_one_percent(freed: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    resolve_by_name(monkeypatch, CUTOFF_NAMES)
    path = tmp_path / "cutoff.mprof"
    path.write_bytes(cutoff_file(freed).build())
    text = report(capsys, "report", "--cutoff", "1", "--tables", "leaks,bins,direct,graph", path)
    lines = text.splitlines()
    assert [line.split()[-2] for line in lines if line.startswith("[")] == ["main", "big", "one"]
    # main's callee under has no entry to point to: no [N] after its name.
    assert [line.split()[-2:] for line in lines if line.endswith(("big [1]", "one [2]", "under"))][:3] == [
        ["big", "[1]"], ["one", "[2]"], ["1/1", "under"]]
    direct = lines[lines.index("% mem         bytes   s   m   l   x      bytes kept   s   m   l   x        calls  name")
                   + 2:lines.index("Allocation call graph: one entry per function on an allocation chain,") - 1]
    assert [row.split()[-1] for row in direct[:-1]] == ["big", "one"]
    assert direct[-1] == ONE_LEFT_OUT
    bins = lines[lines.index("   size     allocs         bytes   (%)      frees          kept   (%)  types") + 1:]
    # A bin is left out only when all its bytes were freed too.
    assert [row.split()[0] for row in bins[:bins.index("")]] == (["101", ">", "<total>", "1"] if freed else
                                                               ["100", "101", ">", "<total>"])
    if freed:
        assert bins[3] == ONE_LEFT_OUT
    leaks = lines[lines.index("   objects        bytes   (%)  path") + 1:]
    assert leaks[:leaks.index("")] == (["                               (nothing kept)"] if freed else [
        "         1        9,899  (98)  main > big", "         1          101   (1)  main > one", ONE_LEFT_OUT])
    # The page draws every entry, under the cutoff too, and its script hides them.
    functions = embedded(html_page(capsys, path), "functions")
    assert sorted((row[1], row[3]) for row in functions) == [("big", 1), ("main", 0), ("one", 2), ("under", 3)]


def refusal(capsys: pytest.CaptureFixture[str], *arguments: str | Path) -> str:
    assert main([str(argument) for argument in arguments]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


def test_databases_of_other_versions_and_applications(program: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    database = tmp_path / "p.db"
    report(capsys, "db", program, "-o", database)
    # The schema's version, from schema.sql: 15.
    for version, problem in ((99, "profile schema version 99 is newer than this mprof understands (15)"),
                             (11, "profile schema version 11 is older than this mprof reads (15); make it again "
                                 "from the data files with mprof db"),
                             (0, "not an mprof profile database")):
        with sqlite3.connect(database) as db:
            db.execute(f"PRAGMA user_version = {version}")
        assert refusal(capsys, "report", database) == f"mprof: {database}: {problem}\n"
    with sqlite3.connect(database) as db:
        db.execute("PRAGMA application_id = 7")
    assert refusal(capsys, "report", database) == (
        f"mprof: {database}: not an mprof profile database (an SQLite file of another application)\n")
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(store.SQLITE_MAGIC + b"\xff" * 200)
    assert refusal(capsys, "report", damaged) == (
        f"mprof: {damaged}: not a readable profile database (file is not a database)\n")


def test_a_refused_database_write_leaves_the_old_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # Each file is valid alone; together the leaf's bytes pass 2^64.
    top = (1 << 64) - 1
    first, second, database = tmp_path / "first.mprof", tmp_path / "second.mprof", tmp_path / "kept.db"
    for pid, path in enumerate((first, second), start=100):
        path.write_bytes(DataFileBuilder(pid=pid, paths=[((LEAF_MALLOC,), 1, 0, (0, 0, 0, top), (0,) * 4)]).build())
    database.write_bytes(b"before")
    # The temporary file goes beside the database, never to TMPDIR.
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "no such directory"))
    assert refusal(capsys, "db", first, second, "-o", database) == (
        f"mprof: {first}, {second}: figures add up past 64 bits, more than any run allocates\n")
    assert database.read_bytes() == b"before"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first.mprof", "kept.db", "second.mprof"]
    report(capsys, "db", first, "-o", database)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first.mprof", "kept.db", "second.mprof"]
    assert database.read_bytes().startswith(store.SQLITE_MAGIC)


def html_page(capsys: pytest.CaptureFixture[str], *paths: Path) -> str:
    """The HTML page of the profile of paths, written beside the first."""
    page = paths[0].with_suffix(".html")
    report(capsys, "html", *paths, "-o", page)
    return page.read_text()



def test_html_rows(program: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = html_page(capsys, program)
    # id, name, label (for a member of a cycle), index of its entry
    functions = embedded(page, "functions")
    assert isinstance(functions, list)
    label = {row[0]: row[2] or row[1] for row in functions}
    # Each links to its call graph entry, numbered as in CALL_GRAPH.
    assert {row[2] or row[1]: row[3] for row in functions} == {
        "main": 0, "B <cycle 1>": 2, "A <cycle 1>": 3, "q": 4, "leaf": 5, "p": 6}

    def named(cell: object) -> object:
        return {**cell, "f": label[cell["f"]]} if isinstance(cell, dict) else cell

    leaks = embedded(page, "rows-leaks")
    assert isinstance(leaks, list)
    first = leaks[0]["c"]
    assert first[:3] == ["1", "3,000", "(98)"]
    assert [named(part) for part in first[3][0]["p"]] == [
        {"f": name, "title": f"called at prog.c:{LINE_OF[address]}"}
        for name, address in (("main", MAIN_Q), ("q", Q_B), ("B <cycle 1>", B_LEAF), ("leaf", LEAF_MALLOC))]
    assert [row["c"][:3] for row in leaks] == [["1", "3,000", "(98)"], ["1", "40", "(1)"], ["1", "20", ""]]


def page_text(fragment: str) -> list[str]:
    """The text of each paragraph, term and description of an HTML fragment."""
    return [" ".join(html.unescape(re.sub("<[^>]+>", "", text)).split())
            for text in re.findall(r"<(?:p|dt|dd)\b[^>]*>(.*?)</(?:p|dt|dd)>", fragment, re.DOTALL)]


def test_html_rows_link_their_entries(program: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = html_page(capsys, program)
    functions = embedded(page, "functions")
    assert isinstance(functions, list)
    id_of = {row[1]: row[0] for row in functions}
    # A label only where it is not the name: the members of cycle 1.
    assert {row[1]: row[2] for row in functions} == {
        "main": None, "p": None, "q": None, "leaf": None, "A": "A <cycle 1>", "B": "B <cycle 1>"}
    rows = embedded(page, "rows-graph")
    assert isinstance(rows, list)
    # Each entry is the anchor its links name; its own name is not a link
    # ("v": "e"); a member's cycle links to the cycle's entry.
    assert [row["id"] for row in rows] == ["fn-{}".format(id_of["main"]), "cycle-1",
                                           *(f"fn-{id_of[name]}" for name in ("B", "A", "q", "leaf", "p"))]
    assert [row["c"][-1][0] for row in rows if row["id"] != "cycle-1"] == [
        {"f": id_of[name], "v": "e"} for name in ("main", "B", "A", "q", "leaf", "p")]
    member_rows = [row for row in rows if row["id"] in ("fn-{}".format(id_of["A"]), "fn-{}".format(id_of["B"]))]
    assert [row["c"][-1][1:3] for row in member_rows] == [[" ", {"t": "<cycle 1>", "h": "cycle-1"}]] * 2
    # The cycle's row says it is one (for the script) and is found by its members' names.
    [cycle] = [row for row in rows if row["id"] == "cycle-1"]
    assert (cycle["m"], cycle["f"]) == (1, "<cycle 1> A B")
    assert not any("m" in row or "f" in row for row in rows if row is not cycle)


def test_html_leak_rows_merge_by_function_and_mark_partial_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    at = {0x110: ("main", 5), 0x120: ("main", 6), 0x200: ("f", 10), 0x300: ("leaf", 0), 0x700: ("h", 3)}

    class WithLines(KnownFrames):
        def resolve(self, addresses: Iterable[int], progress: object = None) -> dict[int, list[Frame]]:
            return {a: [Frame(at[a][0], "prog.c", at[a][1], "/bin/prog", a, False)] for a in addresses}

    monkeypatch.setattr(profile_module, "Resolver", WithLines)
    path = tmp_path / "leaks.mprof"
    # Two paths main > f > leaf from two lines of main, one merged row as in
    # the text report; h > leaf does not reach main.  67 bytes kept in all.
    path.write_bytes(DataFileBuilder(exe=b"/bin/prog", leak_depth=5, summary=[3, 0, 67, 0] + [0] * (SUMMARY_FIELDS - 4),
                                     paths=[((0x300, 0x200, 0x110), 1, 0, (30, 0, 0, 0), (0,) * 4),
                                            ((0x300, 0x200, 0x120), 1, 0, (30, 0, 0, 0), (0,) * 4),
                                            ((0x300, 0x700), 1, 0, (7, 0, 0, 0), (0,) * 4)]).build())
    page = html_page(capsys, path)
    id_of = {row[1]: row[0] for row in embedded(page, "functions")}
    # A frame's title is where it made its call; leaf's line is unknown (0), so it has none.  The rows read apart
    # with their functions named short ("s").
    assert [row["c"] for row in embedded(page, "rows-leaks")] == [
        ["2", "60", "(89)", [{"p": [{"f": id_of["main"], "title": "called at prog.c:5"},
                                    {"f": id_of["f"], "title": "called at prog.c:10"}, id_of["leaf"]], "s": 1}]],
        ["1", "7", "(10)", [{"p": [{"f": id_of["h"], "title": "called at prog.c:3"}, id_of["leaf"]], "z": 1,
                             "s": 1}]]]


def test_html_never_freed_flame_graph(program: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = html_page(capsys, program)
    graph = page[page.index('id="leak-graph"'):]
    graph = graph[:graph.index("</div>")]
    frames = re.findall(r'<g class="f" data-x="([^"]*)" data-w="([^"]*)" data-d="(\d+)"\s+data-p="(-?\d+)" '
                        r'data-b="(\d+)">\s*<title>([^&]*)&#10;(.*?)</title>\s*<svg x="([^"]*)%" y="(\d+)" '
                        r'width="([^"]*)%"', graph, re.DOTALL)
    # The leak table's paths: main > q > B > leaf keeps 3,000 bytes, main >
    # p > A > B 40 and main > p > A 20, 3,060 in all; fractions to 7 places,
    # percentages to 4, 18 pixels a row.  Each: name, bytes, depth, parent,
    # x and width as fractions, then as percentages, and % in the title.
    expected = [("all", 3060, 0, -1, "0.0000000", "1.0000000", "0.0000", "100.0000", "100.0"),
                ("main", 3060, 1, 0, "0.0000000", "1.0000000", "0.0000", "100.0000", "100.0"),
                ("q", 3000, 2, 1, "0.0000000", "0.9803922", "0.0000", "98.0392", "98.0"),
                ("B", 3000, 3, 2, "0.0000000", "0.9803922", "0.0000", "98.0392", "98.0"),
                ("leaf", 3000, 4, 3, "0.0000000", "0.9803922", "0.0000", "98.0392", "98.0"),
                ("p", 60, 2, 1, "0.9803922", "0.0196078", "98.0392", "1.9608", "2.0"),
                ("A", 60, 3, 5, "0.9803922", "0.0196078", "98.0392", "1.9608", "2.0"),
                ("B", 40, 4, 6, "0.9803922", "0.0130719", "98.0392", "1.3072", "1.3")]
    assert frames == [(x, w, str(depth), str(parent), str(size), name,
                       f"{size:,} bytes, {share}% of all bytes never freed", svg_x, str(18 * depth), svg_w)
                      for name, size, depth, parent, x, w, svg_x, svg_w, share in expected]
    assert '<svg class="flame leak" width="100%" height="90"' in graph  # five rows
    # The allocation flame graph is there too, all 3,380 bytes at its root.
    allocation = page[page.index('id="allocation-graph"'):page.index('id="leak-graph"')]
    assert re.search(r'data-p="-1" data-b="3380">\s*<title>all&#10;3,380 bytes, 100.0% of all bytes allocated',
                     allocation)


def test_html_header_figures(program: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = html_page(capsys, program)
    header = page[page.index("<header>"):page.index("</header>")]
    # program_file(): 5 blocks, 3,380 bytes, 2 freed (320 bytes), most live
    # 4 blocks and 3,360 bytes, 2.5 s; KiB rounded to a tenth.
    assert page_text(header) == [
        "process 4242: prog run",
        "Run time 2.500 s",
        "3,380 bytes", "3.3 KiB in 5 objects, 676.0 bytes on average",
        "3,360 bytes", "3.3 KiB in 4 objects at once",
        "The peak: 3,360 bytes live at 1.250000 s, after 4 of 5 allocations.",
        "3,060 bytes", "3.0 KiB in 3 objects kept at exit",
        "Leak kinds: the blocks were not classified (no LEAK section in the data file); listed as never freed",
        "1,352 bytes/s", "1.3 KiB/s, 2 allocations/s",
        "allocations", "5 blocks, 3,380 bytes, 676.0 bytes on average",
        "frees", "2 blocks, 320 bytes",
        "kept at exit", "3 blocks, 3,060 bytes",
        "most live", "4 blocks, 3,360 bytes; the bytes at 1.250 s, allocation 4",
        "temporaries", "1 block freed before their thread allocated again, 20.0% of all allocations",
        "run time", "2.500 s, 1,352 bytes/s, 2 allocations/s",
        "calls", "malloc 5, free 5",
        "unusual", "none"]


def test_html_escapes_the_program_and_its_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "odd.mprof"
    path.write_bytes(program_file(exe=b"/bin/a<b>&c", cmdline=b"a<b>&c\0<i>\0").build())
    page = html_page(capsys, path)
    assert "<b>" not in page and "<i>" not in page
    header = page[page.index("<header>"):page.index("</header>")]
    assert '<h1>Memory profile of <span class="program">a&lt;b&gt;&amp;c</span></h1>' in header
    assert "<code>a&lt;b&gt;&amp;c &lt;i&gt;</code>" in header


@pytest.mark.parametrize(("value", "text"), [
    (0, "0 bytes"), (1023, "1,023 bytes"), (1024, "1.0 KiB"), (1536, "1.5 KiB"), (-1536, "-1.5 KiB"),
    (1024 ** 2 - 1, "1,024.0 KiB"), (1024 ** 2, "1.0 MiB"), (3 * 1024 ** 3, "3.0 GiB"), (1024 ** 4, "1.0 TiB"),
    (2048 * 1024 ** 4, "2,048.0 TiB"), (1023.6, "1,024 bytes")])
def test_sizes_a_person_reads(value: float, text: str) -> None:
    assert human_bytes(value) == text


def test_two_processes_in_the_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second, database = tmp_path / "1.mprof", tmp_path / "2.mprof", tmp_path / "both.db"
    first.write_bytes(program_file(pid=1).build())
    second.write_bytes(program_file(pid=2, ppid=1, flags=0x7).build())
    report(capsys, "db", first, second, "-o", database)
    raw = sqlite3.connect(database)
    # A's allocation site: 3 blocks (40 s, 300 l bytes), 2 freed (20 s,
    # 300 l), in each process.
    assert raw.execute("SELECT file, line, calls, frees, bytes_s, bytes_m, bytes_l, bytes_x, freed_s, freed_m, "
                       "freed_l, freed_x FROM sites WHERE offset = ?", (A_MALLOC,)).fetchall() == [
        ("prog.c", LINE_OF[A_MALLOC], 6, 4, 80, 0, 600, 0, 40, 0, 600, 0)]
    assert raw.execute("SELECT size, allocs, frees, bytes, bytes_freed FROM bins ORDER BY size").fetchall() == [
        (20, 4, 2, 80, 40), (40, 2, 0, 80, 0), (300, 2, 2, 600, 600), (1025, 2, 0, 6000, 0)]
    raw.close()
    runs = json.loads(report(capsys, "report", "--format", "json", database))["runs"]
    # Each process's own figures, as its file has them.
    assert [(run["figures"]["allocs"], run["figures"]["bytes_allocated"], run["figures"]["max_live_bytes"])
            for run in runs] == [(5, 3380, 3360), (5, 3380, 3360)]
    assert [{key: value for key, value in run.items() if key not in ("figures", "start_unix_ns", "timeline")}
            for run in runs] == [
        {"pid": 1, "ppid": 1, "program": "/bin/prog", "command_line": "prog run", "elapsed_ns": 2_500_000_000,
         "call_graph": True, "final": True, "checkpoint": False, "end_signal": 0, "forked": False, "leak_depth": 5,
         "lsan_suppressions": "", "running": False, "attached": False, "scan": None},
        {"pid": 2, "ppid": 1, "program": "/bin/prog", "command_line": "prog run", "elapsed_ns": 2_500_000_000,
         "call_graph": True, "final": True, "checkpoint": False, "end_signal": 0, "forked": True, "leak_depth": 5,
         "lsan_suppressions": "", "running": False, "attached": False, "scan": None}]


def test_a_missing_library_is_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    # The real resolver, this time: the library is gone, so its address
    # stays module+offset, and the warning says so once.
    monkeypatch.undo()
    gone = tmp_path / "libgone.so"
    path = tmp_path / "gone.mprof"
    path.write_bytes(DataFileBuilder(exe=b"/bin/prog", modules=[ModuleSpec(0, 0x1000, 0x2000,
                                                                           path=bytes(gone))],
                                     paths=[((0x1800,), 1, 0, (8, 0, 0, 0), (0,) * 4)]).build())
    assert main(["report", "--format", "json", str(path)]) == 0
    captured = capsys.readouterr()
    assert captured.err == f"mprof: warning: {gone}: file not found\n"
    # Named by the file and the address less the bias, as addr2line takes it.
    assert [row["function"] for row in json.loads(captured.out)["direct"]] == ["libgone.so+0x1800"]


def test_types_are_named_for_sizes_up_to_1024(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    class Types(KnownFrames):
        def types(self, module_path: str) -> list[tuple[int, str]]:
            return [(1024, "struct page"), (1025, "struct wide"), (1023, "struct odd")]

    monkeypatch.setattr(profile_module, "Resolver", Types)
    path = tmp_path / "sizes.mprof"
    path.write_bytes(DataFileBuilder(exe=b"/bin/prog", bins=[(1023, 1, 0, 1023, 0), (1024, 1, 0, 1024, 0),
                                                             (1025, 1, 0, 5000, 0)]).build())
    bins = json.loads(report(capsys, "report", "--format", "json", path))["bins"]
    assert [(b["size"], b["label"], b["types"]) for b in bins] == [
        (1023, "1023", ["struct odd"]), (1024, "1024", ["struct page"]), (1025, "> 1024", [])]
    page = html_page(capsys, path)
    assert [(row[0], row[-1]) for row in page_rows(page, "bins")[:-1]] == [
        ("1023", "struct odd"), ("1024", "struct page"), ("> 1024", "")]
    # Every type on hover.
    assert [row["c"][-1] and row["c"][-1]["title"] for row in embedded(page, "rows-bins")] == [  # type: ignore
        "struct odd", "struct page", ""]


def test_one_byte_in_all_and_no_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # One block of 1 byte, kept, in a run too short for the clock: the one
    # byte is 100% of everything; the rates are 0, not divided by nothing.
    path = tmp_path / "one.mprof"
    summary = [0] * SUMMARY_FIELDS
    summary[0:6] = [1, 0, 1, 0, 1, 1]
    path.write_bytes(DataFileBuilder(exe=b"/bin/prog", elapsed_ns=0, summary=summary, leak_depth=5,
                                     bins=[(1, 1, 0, 1, 0)],
                                     paths=[((LEAF_MALLOC, MAIN_Q), 1, 0, (1, 0, 0, 0), (0,) * 4)]).build())
    lines = report(capsys, "report", "--tables", "leaks,bins,summary", path).splitlines()
    assert "         1            1 (100)  main > leaf" in lines
    assert "      1          1             1 (100)          0             1 (100)" in lines
    assert summary_lines("\n".join(lines))[2:8] == [
        "  allocations   1 block, 1 bytes, 1.0 bytes on average", "  frees         0 blocks, 0 bytes",
        "  kept at exit  1 block, 1 bytes", "  most live     1 block, 1 bytes; the bytes at 0.000 s, allocation 0",
        "  temporaries   0 blocks freed before their thread allocated again, 0.0% of all allocations",
        "  run time      0.000 s, 0 bytes/s, 0 allocations/s"]


def test_mprof_minus_mode_says_the_graph_was_not_recorded(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "minus.mprof"
    path.write_bytes(DataFileBuilder(exe=b"/bin/prog", flags=0x2).build())
    assert report(capsys, "report", "--tables", "graph", path) == (
        "Allocation call graph: not recorded (the profile was taken in mprof- mode).\n")
    # The page has no call graph either, so no name links to an entry.
    path.write_bytes(program_file(flags=0x2).build())
    page = html_page(capsys, path)
    assert 'id="rows-graph"' not in page
    assert sorted((row[1], row[3]) for row in embedded(page, "functions")) == [
        ("A", None), ("B", None), ("leaf", None), ("main", None), ("p", None), ("q", None)]


def test_notes_of_runs_of_eleven_days(tmp_path: Path, capsys: pytest.CaptureFixture[str], utc: None) -> None:
    # 10^15 ns: seconds are nanoseconds / 10^9 exactly, to the last digit.
    paths = []
    for pid, flags in ((1, 0x1 | 0x8), (2, 0x1)):
        paths.append(tmp_path / f"{pid}.mprof")
        paths[-1].write_bytes(DataFileBuilder(pid=pid, flags=flags, elapsed_ns=10 ** 15 + 10 ** 12).build())
    lines = summary_lines(report(capsys, "report", "--tables", "summary", *paths))
    assert [line.split("  ")[-1] for line in lines[3:5]] == [
        # 1,001,000 s after 2023-11-14 22:13:20: 11 days, 14:03:20 later.
        "prog --flag (checkpoint of 2023-11-26 12:16:40, 1001000.000 s into the run: the process ended without "
        "writing its final file)",
        "prog --flag (snapshot at 1001000.000 s)"]


def test_leak_paths_of_equal_bytes_by_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    # main -> p keeps two blocks of 10 (of three), main -> q one of 20:
    # equal bytes kept, listed by path, in JSON too.
    path = tmp_path / "ties.mprof"
    path.write_bytes(DataFileBuilder(exe=b"/bin/prog", leak_depth=5, paths=[
        ((Q_A, MAIN_Q), 1, 0, (20, 0, 0, 0), (0,) * 4), ((P_A, MAIN_P), 3, 1, (30, 0, 0, 0), (10, 0, 0, 0))]).build())
    lines = report(capsys, "report", "--tables", "leaks", path).splitlines()
    assert lines[-2:] == ["         2           20        main > p", "         1           20        main > q"]
    leaks = json.loads(report(capsys, "report", "--format", "json", path))["leaks"]
    assert [(leak["path"], leak["kept_objects"]) for leak in leaks] == [("main > p", 2), ("main > q", 1)]


def test_long_leak_paths_keep_every_frame_of_the_programs_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # The text report folds paths longer than 100 characters (mprof(1)),
    # but never the program's own frames: main > b20 > c51 > d20 is 104,
    # all the program's own code, and stays whole; main > x120 keeps x120,
    # the allocating function, however long.
    names = {0x100: "main", 0x200: "b" * 20, 0x300: "c" * 51, 0x400: "d" * 20, 0x500: "main", 0x600: "x" * 120}
    resolve_by_name(monkeypatch, names)
    path = tmp_path / "long.mprof"
    path.write_bytes(DataFileBuilder(exe=b"/bin/prog", leak_depth=5, paths=[
        ((0x400, 0x300, 0x200, 0x100), 1, 0, (20, 0, 0, 0), (0,) * 4), ((0x600, 0x500), 1, 0, (10, 0, 0, 0), (0,) * 4)]
    ).build())
    lines = report(capsys, "report", "--tables", "leaks", path).splitlines()
    assert lines[-2:] == ["         1           20        main > " + "b" * 20 + " > " + "c" * 51 + " > " + "d" * 20,
                          "         1           10        main > " + "x" * 120]
    wide = report(capsys, "report", "--wide", "--tables", "leaks", path).splitlines()
    assert wide[-2:] == ["         1           20        main > " + " > ".join(names[a] for a in (0x200, 0x300, 0x400)),
                         "         1           10        main > " + "x" * 120]
    document = json.loads(report(capsys, "report", "--format", "json", path))
    assert [leak["path"] for leak in document["leaks"]] == [wide[-2].split(None, 2)[2], wide[-1].split(None, 2)[2]]


def test_paths_that_differ_where_they_fold_stay_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # main > a100 > mid > leaf and main > b100 > mid > leaf are each 120
    # characters: folded to 100 both would read "main > [1 frame] > mid >
    # leaf", but they are two paths with figures of their own (30 and 20
    # bytes), so each shows the frame that tells it apart.  The text report
    # once merged them into one row of 50.
    names = {0x100: "main", 0x200: "a" * 100, 0x300: "mid", 0x400: "leaf", 0x500: "b" * 100}
    resolve_by_name(monkeypatch, names)
    path = tmp_path / "cut.mprof"
    path.write_bytes(DataFileBuilder(exe=b"/bin/prog", leak_depth=5, paths=[
        ((0x400, 0x300, 0x200, 0x100), 3, 0, (30, 0, 0, 0), (0,) * 4),
        ((0x400, 0x300, 0x500, 0x100), 2, 0, (20, 0, 0, 0), (0,) * 4)]).build())
    lines = report(capsys, "report", "--tables", "leaks", path).splitlines()
    assert lines[-2:] == ["         3           30        main > " + "a" * 100 + " > mid > leaf",
                          "         2           20        main > " + "b" * 100 + " > mid > leaf"]


def test_main_allocating_through_an_inlined_function(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    # Two blocks of 16 bytes allocated by init(), inlined into main: no pair,
    # only the site, whose frames make the edge main -> init.
    class Init(KnownFrames):
        def resolve(self, addresses: Iterable[int], progress: object = None) -> dict[int, list[Frame]]:
            return {a: [Frame("init", "prog.h", 3, "/bin/prog", a, True), Frame("main", "prog.c", 9, "/bin/prog", a,
                                                                                 False)] for a in addresses}

    monkeypatch.setattr(profile_module, "Resolver", Init)
    path = tmp_path / "init.mprof"
    path.write_bytes(DataFileBuilder(exe=b"/bin/prog", paths=[((0x9100,), 2, 0, (32, 0, 0, 0), (0,) * 4)]).build())
    entries = graph_json(capsys, path)
    assert edges(entries["main"], "callees") == {"init": (2, 32)}
    assert (entries["init"]["self_bytes"], entries["main"]["self_bytes"]) == (32, 0)


# Two cycles: main calls f, g, u and w; g <-> h is cycle 1, u <-> v cycle
# 2, and h also calls u; f allocates through k.  (chain outermost first,
# size, blocks)
TWO_CYCLES = [(("main:f", "f:k", "k:malloc"), 14, 1),
              (("main:g", "g:h", "h:malloc"), 7, 1),
              (("main:g", "g:h", "h:g", "g:malloc"), 3, 1),
              (("main:g", "g:h", "h:u", "u:malloc"), 4, 1),
              (("main:u", "u:malloc"), 20, 5),
              (("main:w", "w:v", "v:u", "u:v", "v:malloc"), 60, 1)]


def chains_path(chains: list[tuple[tuple[str, ...], int, int]], path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The data file at path of chains (outermost first, size, blocks, none
    freed), each "caller:callee" one return address in the caller, its
    addresses resolved to their functions."""
    labels = sorted({label for chain, _, _ in chains for label in chain})
    address = {label: 0x1000 * (n + 1) for n, label in enumerate(labels)}
    path.write_bytes(recorded((tuple(address[label] for label in chain), size, blocks, 0)
                              for chain, size, blocks in chains).build())
    resolve_by_name(monkeypatch, {a: label.split(":")[0] for label, a in address.items()})
    return path


@pytest.fixture
def two_cycles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return chains_path(TWO_CYCLES, tmp_path / "cycles.mprof", monkeypatch)


# Worked out by hand from TWO_CYCLES: 188 bytes.  Cycle 2 (u, v) takes 100
# from main, 60 from w and 4 from h: 164, 87.2%; its outside callers are
# listed by bytes, main 100 (60% of 164), w 60, h 4.  Cycle 1 (g, h) is 14,
# as f is (through k): at equal totals, callers first (main), then by
# name, and "<cycle 1>" sorts before "f".  A cycle lists its members most self bytes
# first (h 7, g 3); cycles are numbered by their members' names, though
# {u, v} is found first (h calls u).
TWO_CYCLES_GRAPH = """\
index  self+desc          self   (%)    s   m   l   x    s   m   l   x             called  name
                                      -- size ------   -- frac ------
--------------------------------------------------------------------------------------------------------------
[0]        100.0             0                                                          0  main [0]
                           100        100               53                            5/7      u <cycle 2> [3]
                            60            100               31                        1/1      w [4]
                            14        100                7                            1/1      f [8]
                            14        100                7                            3/4      g <cycle 1> [6]
--------------------------------------------------------------------------------------------------------------
                           100        100               60                            5/7      main [0]
                            60            100               36                        1/7      w [4]
                             4        100                2                            1/7      h <cycle 1> [7]
[1]         87.2           164  (87)                                                  7+2  <cycle 2 as a whole> [1]
                           104        100                                             6+1      u <cycle 2> [3]
                            60            100                                         1+1      v <cycle 2> [2]
--------------------------------------------------------------------------------------------------------------
                                                                                      1/2      u <cycle 2> [3]
                            60            100              100                        1/2      w [4]
[2]         87.2            60  (31)      100                                         1+1  v <cycle 2> [2]
                                                                                      1/7      u <cycle 2> [3]
--------------------------------------------------------------------------------------------------------------
                           100        100               96                            5/7      main [0]
                                                                                      1/7      v <cycle 2> [2]
                             4        100                3                            1/7      h <cycle 1> [7]
[3]         87.2           104  (55)  100                                             6+1  u <cycle 2> [3]
                                                                                      1/2      v <cycle 2> [2]
--------------------------------------------------------------------------------------------------------------
                            60            100              100                        1/1      main [0]
[4]         31.9             0                                                          1  w [4]
                            60            100              100                        1/2      v <cycle 2> [2]
--------------------------------------------------------------------------------------------------------------
                            14        100              100                            3/3      main [0]
[5]          7.4            10   (5)                                                  3+4  <cycle 1 as a whole> [5]
                             7        100                                             0+3      h <cycle 1> [7]
                             3        100                                             3+1      g <cycle 1> [6]
--------------------------------------------------------------------------------------------------------------
                            14        100              100                            3/4      main [0]
                                                                                      1/4      h <cycle 1> [7]
[6]          7.4             3   (1)  100                                             3+1  g <cycle 1> [6]
                                                                                      3/3      h <cycle 1> [7]
--------------------------------------------------------------------------------------------------------------
                                                                                      3/3      g <cycle 1> [6]
[7]          7.4             7   (3)  100                                             0+3  h <cycle 1> [7]
                             4        100               28                            1/7      u <cycle 2> [3]
                                                                                      1/4      g <cycle 1> [6]
--------------------------------------------------------------------------------------------------------------
                            14        100              100                            1/1      main [0]
[8]          7.4             0                                                          1  f [8]
                            14        100              100                            1/1      k [9]
--------------------------------------------------------------------------------------------------------------
                            14        100              100                            1/1      f [8]
[9]          7.4            14   (7)  100                                               1  k [9]
--------------------------------------------------------------------------------------------------------------
"""


def test_two_cycles_call_graph(two_cycles: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = report(capsys, "report", "--all", "--tables", "graph", two_cycles)
    assert text[text.index("index  self+desc"):].splitlines() == TWO_CYCLES_GRAPH.splitlines()
    # At --cutoff 50, what has 94 bytes or more: main, cycle 2 and its members.
    text = report(capsys, "report", "--tables", "graph", "--cutoff", "50", two_cycles)
    assert [line[line.rindex("  ") + 2:] for line in text.splitlines() if line.startswith("[")] == [
        "main [0]", "<cycle 2 as a whole> [1]", "v <cycle 2> [2]", "u <cycle 2> [3]"]


def test_a_program_that_allocated_zero_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    # main -> a -> b -> a, and a calls malloc(0): no byte in all, so every
    # share is 0.0, none divided by nothing.
    names = {0x100: "main", 0x200: "a", 0x300: "b", 0x400: "a"}
    resolve_by_name(monkeypatch, names)
    path = tmp_path / "zero.mprof"
    summary = [0] * SUMMARY_FIELDS
    summary[0] = 1
    path.write_bytes(DataFileBuilder(
        exe=b"/bin/prog", summary=summary, paths=[((0x400, 0x300, 0x200, 0x100), 1, 0, (0,) * 4, (0,) * 4)]).build())
    text = report(capsys, "report", "--tables", "graph", path)
    entries = [line.split()[:2] for line in text.splitlines() if line.startswith("[")]
    assert entries == [["[0]", "0.0"], ["[1]", "0.0"], ["[2]", "0.0"], ["[3]", "0.0"]]
    assert [line[line.rindex("  ") + 2:] for line in text.splitlines() if line.startswith("[")] == [
        "main [0]", "<cycle 1 as a whole> [1]", "a <cycle 1> [2]", "b <cycle 1> [3]"]
    rows = embedded(html_page(capsys, path), "rows-graph")
    assert [row["c"][:2] for row in rows] == [["[0]", "0.0"], ["[1]", "0.0"], ["[2]", "0.0"], ["[3]", "0.0"]]


def test_a_leak_record_without_a_chain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A leak record of no address (the monitor could not unwind at all).
    path = tmp_path / "bare.mprof"
    path.write_bytes(DataFileBuilder(exe=b"/bin/prog", paths=[((), 1, 0, (8, 0, 0, 0), (0,) * 4)]).build())
    assert report(capsys, "report", "--tables", "leaks", path).splitlines()[-1] == (
        "         1            8        (no call chain)")
    assert json.loads(report(capsys, "report", "--format", "json", path))["leaks"][0]["path"] == "(no call chain)"
    assert embedded(html_page(capsys, path), "rows-leaks") == [{"c": ["1", "8", "", ["(no call chain)"]]}]


def test_cycles_are_numbered_by_their_members_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # {a, z} is cycle 1 and {b, c} cycle 2, in whatever order they are found.
    path = chains_path([(("main:a", "a:z", "z:a", "a:malloc"), 8, 1), (("main:b", "b:c", "c:b", "b:malloc"), 8, 1)],
                       tmp_path / "names.mprof", monkeypatch)
    assert {name: entry["cycle"] for name, entry in graph_json(capsys, path).items()} == {
        "main": None, "a <cycle 1>": 1, "z <cycle 1>": 1, "b <cycle 2>": 2, "c <cycle 2>": 2}


def test_recursive_calls_from_two_members(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    # a -> b -> c -> a is one cycle, and a also calls c: c's recursive calls
    # come from b once and from a once.
    path = chains_path([(("main:a", "a:b", "b:c", "c:a", "a:malloc"), 8, 1), (("main:a", "a:c", "c:malloc"), 8, 1)],
                       tmp_path / "three.mprof", monkeypatch)
    entries = graph_json(capsys, path)
    assert {name: (entry["called"], entry["recursive_calls"]) for name, entry in entries.items()} == {
        "main": (0, 0), "a <cycle 1>": (2, 1), "b <cycle 1>": (0, 1), "c <cycle 1>": (0, 2)}


def test_progress_of_the_real_resolver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.undo()
    path = tmp_path / "one.mprof"
    path.write_bytes(DataFileBuilder(exe=b"/bin/prog", paths=[((0x1800,), 1, 0, (8, 0, 0, 0), (0,) * 4)]).build())
    profile_module.reduce_files([datafile.read(path)], progress=Progress(True))
    # One address, resolved in one batch.
    assert "\r\033[Kmprof: resolving addresses of /bin/prog (pid 4242) 1/1" in capsys.readouterr().err


def test_outside_callers_of_equal_bytes_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    # x calls into the cycle {a, b} twice for 5 bytes each, y once for 10:
    # equal bytes, so x (first by name) comes first, not y (fewer calls).
    path = chains_path([(("main:x", "x:a", "a:b", "b:a", "a:malloc"), 5, 2),
                        (("main:y", "y:b", "b:a", "a:malloc"), 10, 1)], tmp_path / "equal.mprof", monkeypatch)
    lines = report(capsys, "report", "--all", "--tables", "graph", path).splitlines()
    cycle = next(n for n, line in enumerate(lines) if line.endswith("<cycle 1 as a whole> [1]"))
    assert [line.split()[-2] for line in lines[cycle - 2:cycle]] == ["x", "y"]
    assert [line.split()[0] for line in lines[cycle - 2:cycle]] == ["10", "10"]


def test_a_cycle_with_no_caller_tied_with_main(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    # A thread's routine a <-> b (no main above it) and main -> f, 8 bytes
    # each: two roots of equal totals, ordered by name, and "<cycle 1>"
    # sorts before "main".
    path = chains_path([(("main:f", "f:malloc"), 8, 1), (("a:b", "b:a", "a:malloc"), 8, 1)],
                       tmp_path / "roots.mprof", monkeypatch)
    text = report(capsys, "report", "--tables", "graph", path)
    assert [line[line.rindex("  ") + 2:] for line in text.splitlines() if line.startswith("[")] == [
        "<cycle 1 as a whole> [0]", "b <cycle 1> [1]", "a <cycle 1> [2]", "main [3]", "f [4]"]
    assert [line.split()[1] for line in text.splitlines() if line.startswith("[")] == ["50.0"] * 5


# The printed tables' columns, as their header lines name them; every column
# but the first and the last is right-aligned to its name's end.
GRAPH_COLUMNS = ["index", "self+desc", "self", "(%)", "s", "m", "l", "x", "s", "m", "l", "x", "called", "name"]
LEAK_COLUMNS = ["objects", "bytes", "(%)", "path"]
BIN_COLUMNS = ["size", "allocs", "bytes", "(%)", "frees", "kept", "(%)", "types"]
DIRECT_COLUMNS = ["% mem", "bytes", "s", "m", "l", "x", "bytes kept", "s", "m", "l", "x", "calls", "name"]


def printed_cells(table: str, columns: list[str]) -> list[list[str]]:
    """Each line of a printed table below its header, cut into its cells at
    the ends of the column names; separator lines are kept as ["-"], the
    call graph's "-- size --" line under its header is left out."""
    header, *lines = table.splitlines()
    ends, at = [], 0
    for name in columns[:-1]:
        at = header.index(name, at) + len(name)
        ends.append(at)
    bounds = list(zip([0, *ends], [*ends, None], strict=True))
    cells = []
    for line in lines:
        if set(line) == {"-"}:
            cells.append(["-"])
        elif not line.lstrip().startswith("--"):
            cells.append([line[a:b].strip() for a, b in bounds])
    return cells


def page_graph(page: str) -> list[list[list[str]]]:
    """The call graph's entries, each its callers, its own line, then its
    callees or a cycle's members."""
    text = cell_text(page)
    return [[[text(cell) for cell in line] for line in (*row["b"], row["c"], *row["a"])]
            for row in embedded(page, "rows-graph")]


def printed_graph(table: str) -> list[list[list[str]]]:
    """The printed call graph's lines between its separators."""
    blocks: list[list[list[str]]] = [[]]
    for line in printed_cells(table, GRAPH_COLUMNS):
        if line == ["-"]:
            blocks.append([])
        else:
            blocks[-1].append(line)
    return [block for block in blocks if block]


@pytest.mark.parametrize("scenario", ["program", "two_cycles"])
def test_the_html_tables_hold_the_printed_figures(scenario: str, request: pytest.FixtureRequest, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # The page's rows, cell for cell, are the hand-worked printed tables.
    page = html_page(capsys, request.getfixturevalue(scenario))
    assert page_graph(page) == printed_graph(CALL_GRAPH if scenario == "program" else TWO_CYCLES_GRAPH)
    if scenario == "program":
        assert page_rows(page, "leaks") == printed_cells(LEAK_TABLE, LEAK_COLUMNS)
        assert page_rows(page, "bins") == printed_cells(BIN_TABLE, BIN_COLUMNS)
        # The printed <total> line comes first.
        direct = printed_cells(DIRECT_TABLE, DIRECT_COLUMNS)
        assert page_rows(page, "direct") == [*direct[1:], direct[0]]


def test_every_summary_figure_keeps_its_name_in_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # SUMM's names in their order, as mprof(5) lists them, each given a
    # value of its own: the JSON summary must pair each name with its value.
    page = (Path(__file__).resolve().parents[2] / "man" / "mprof.5").read_text()
    spec = page[page.index(".SS SUMM"):page.index(".SS BINS")]
    names = [match[2] for match in re.finditer(r"^(\d+) (\w+)\t", spec, re.MULTILINE)]
    assert names[:6] == ["allocs", "frees", "bytes_allocated", "bytes_freed", "max_live_objects", "max_live_bytes"]
    assert len(names) == SUMMARY_FIELDS
    values = [1_000_000 - 1000 * n for n in range(SUMMARY_FIELDS)]
    values[2:4] = [500_000, 200_000]  # bytes allocated and freed
    path = tmp_path / "named.mprof"
    path.write_bytes(DataFileBuilder(exe=b"/bin/prog", summary=list(values)).build())
    summary = json.loads(report(capsys, "report", "--format", "json", path))["summary"]
    assert {name: summary[name] for name in names} == dict(zip(names, values, strict=True))
    # And what the report derives: 1,000 blocks and 300,000 bytes kept, half
    # a byte on average.
    assert (summary["kept_objects"], summary["kept_bytes"], summary["average_size"]) == (1000, 300_000, 0.5)


def test_the_report_opens_on_a_glance_cut_to_the_screen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The first lines name the leak table's first paths (this file has no peak's), cut to the terminal's columns
    where they must be: a long path keeps its inner end, its outer frames left out."""
    names = {0x100: "main", 0x200: "run_the_whole_service_loop", 0x300: "handle_one_request_of_a_client",
             0x400: "build_reply", 0x500: "main", 0x600: "keep"}
    resolve_by_name(monkeypatch, names)
    path = tmp_path / "glance.mprof"
    path.write_bytes(DataFileBuilder(exe=b"/bin/prog", leak_depth=5, paths=[
        ((0x400, 0x300, 0x200, 0x100), 3, 0, (300, 0, 0, 0), (0,) * 4),
        ((0x600, 0x500), 1, 0, (100, 0, 0, 0), (0,) * 4)]).build())
    monkeypatch.setenv("COLUMNS", "80")
    lines = report(capsys, "report", "--no-pager", "--tables", "summary,peak,leaks", path).splitlines()
    assert lines[:5] == ["At a glance: the first rows of the tables below the summary",
                         "  never freed        300 B        ... > build_reply",
                         "                     100 B        main > keep",
                         "",
                         "Program summary"]
    monkeypatch.setenv("COLUMNS", "120")
    wide = report(capsys, "report", "--no-pager", "--tables", "summary,peak,leaks", path).splitlines()
    assert wide[1] == ("  never freed        300 B        main > run_the_whole_service_loop > "
                       "handle_one_request_of_a_client > build_reply")
    # Without the summary, no glance: the tables asked for alone.
    assert report(capsys, "report", "--no-pager", "--tables", "peak", path).startswith("Peak table")
