"""The leak kinds (mprof(5)'s LEAK) through the database, the reports and
the leak gate, from files built by hand: the issue's C program, whose
figures memcheck gives as definitely lost 1,064 bytes in 2 blocks,
indirectly lost 576 in 9, still reachable 6,400 in 100; here with 2
possibly lost blocks of 16 bytes besides."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from pathlib import Path

import pytest

from datafile_builder import DataFileBuilder
from hand_profiles import page_rows, recorded, report, resolve_by_name
from mprof.cli.main import main

MAIN_CACHE, MAIN_LIST, MAIN_BUFFER, MAIN_INNER = 0x1100, 0x1200, 0x1300, 0x1400
CACHE_MALLOC, LIST_MALLOC, BUFFER_MALLOC, INNER_MALLOC = 0x2100, 0x3100, 0x4100, 0x5100
FUNCTION_OF = {MAIN_CACHE: "main", MAIN_LIST: "main", MAIN_BUFFER: "main", MAIN_INNER: "main",
               CACHE_MALLOC: "make_cache", LIST_MALLOC: "make_list", BUFFER_MALLOC: "drop_buffer",
               INNER_MALLOC: "make_inner"}
# The paths in PATH's order: (chain outermost first, size, blocks, freed).
CHAINS = [((MAIN_CACHE, CACHE_MALLOC), 64, 100, 0), ((MAIN_LIST, LIST_MALLOC), 64, 10, 0),
          ((MAIN_BUFFER, BUFFER_MALLOC), 1000, 1, 0), ((MAIN_INNER, INNER_MALLOC), 16, 2, 0)]
# By path: definite blocks, bytes, indirect..., possible..., reachable...
KINDS = [(0, 0, 0, 0, 0, 0, 0, 100, 6400), (1, 1, 64, 9, 576, 0, 0, 0, 0), (2, 1, 1000, 0, 0, 0, 0, 0, 0),
         (3, 0, 0, 0, 0, 2, 32, 0, 0)]
SCAN = (0, 3, 0, 4096, 8072, 250_000)

LEAK_SUMMARY = [
    "  LEAK SUMMARY:",
    "    definitely lost: 1,064 bytes in 2 blocks",
    "    indirectly lost: 576 bytes in 9 blocks",
    "      possibly lost: 32 bytes in 2 blocks",
    "    still reachable: 6,400 bytes in 100 blocks",
]


@pytest.fixture(autouse=True)
def named(monkeypatch: pytest.MonkeyPatch) -> None:
    resolve_by_name(monkeypatch, FUNCTION_OF)


def classified(chains: list = CHAINS, kinds: list = KINDS, scan: tuple = SCAN, **fields: object) -> DataFileBuilder:
    return recorded(chains, leak=scan, leak_entries=list(kinds), **fields)


def written(tmp_path: Path, builder: DataFileBuilder, name: str = "prog.mprof") -> Path:
    path = tmp_path / name
    path.write_bytes(builder.build())
    return path


def run(capsys: pytest.CaptureFixture[str], *arguments: str | Path) -> tuple[int, str, str]:
    status = main([str(argument) for argument in arguments])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_the_database_holds_the_kinds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    database = tmp_path / "prog.db"
    report(capsys, "db", written(tmp_path, classified(scan=(3, 5, 2, 4096, 8072, 250_000))), "-o", database)
    db = sqlite3.connect(database)
    assert db.execute("SELECT classified, leak_flags, threads_stopped, threads_unstopped, root_bytes_scanned, "
                      "block_bytes_scanned, scan_ns FROM runs").fetchall() == [(1, 3, 5, 2, 4096, 8072, 250_000)]
    # One row per chain and kind: the lost first, each kind's most bytes first.
    assert db.execute("SELECT l.kind, l.blocks, l.bytes, f.name FROM leaks AS l JOIN leak_frames AS lf "
                      "ON lf.leak_id = l.id AND lf.position = 0 JOIN functions AS f ON f.id = lf.function_id "
                      "ORDER BY l.id").fetchall() == [
        ("definitely lost", 1, 1000, "drop_buffer"), ("definitely lost", 1, 64, "make_list"),
        ("indirectly lost", 9, 576, "make_list"), ("possibly lost", 2, 32, "make_inner"),
        ("still reachable", 100, 6400, "make_cache")]
    assert db.execute("SELECT f.name, definite_blocks, definite_bytes, indirect_blocks, indirect_bytes, "
                      "possible_blocks, possible_bytes, reachable_blocks, reachable_bytes FROM paths AS p "
                      "JOIN path_nodes AS n ON n.id = p.node_id JOIN functions AS f ON f.id = n.function_id "
                      "ORDER BY f.name").fetchall() == [
        ("drop_buffer", 1, 1000, 0, 0, 0, 0, 0, 0), ("make_cache", 0, 0, 0, 0, 0, 0, 100, 6400),
        ("make_inner", 0, 0, 0, 0, 2, 32, 0, 0), ("make_list", 1, 64, 9, 576, 0, 0, 0, 0)]


def test_an_unclassified_run_has_unknown_rows_and_zero_kinds(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    database = tmp_path / "prog.db"
    report(capsys, "db", written(tmp_path, recorded(CHAINS)), "-o", database)
    db = sqlite3.connect(database)
    assert db.execute("SELECT classified, leak_flags, scan_ns FROM runs").fetchall() == [(0, 0, 0)]
    assert db.execute("SELECT kind, blocks, bytes FROM leaks ORDER BY id").fetchall() == [
        ("unknown", 100, 6400), ("unknown", 1, 1000), ("unknown", 10, 640), ("unknown", 2, 32)]
    assert db.execute("SELECT SUM(definite_blocks + indirect_bytes + possible_bytes + reachable_blocks) "
                      "FROM paths").fetchone() == (0,)


LEAK_ROWS = [
    "   objects        bytes   (%)  kind             path",
    "         1        1,000  (12)  definitely lost  main > drop_buffer",
    "         9          576   (7)  indirectly lost  main > make_list",
    "         1           64        definitely lost  main > make_list",
    "  Possibly lost, not listed: 2 blocks, 32 bytes; --leak-kinds=possible lists them",
    "  Still reachable, not listed: 100 blocks, 6,400 bytes; --leak-kinds=reachable lists them",
]


def table(text: str) -> list[str]:
    """The leak table from its column header on."""
    lines = text.splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("   objects "))
    end = next((n for n in range(start, len(lines)) if not lines[n]), len(lines))
    return lines[start:end]


def test_the_leak_table_lists_the_lost_and_counts_the_rest(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert table(report(capsys, "report", "--tables", "leaks", written(tmp_path, classified()))) == LEAK_ROWS


@pytest.mark.parametrize(("kinds", "rows"), [
    ("all", [LEAK_ROWS[1], LEAK_ROWS[2], LEAK_ROWS[3],
             "         2           32        possibly lost    main > make_inner",
             "       100        6,400  (79)  still reachable  main > make_cache"]),
    ("reachable", ["       100        6,400  (79)  still reachable  main > make_cache",
                   "  Definitely lost, not listed: 2 blocks, 1,064 bytes; --leak-kinds=definite lists them",
                   "  Indirectly lost, not listed: 9 blocks, 576 bytes; --leak-kinds=indirect lists them",
                   LEAK_ROWS[4]]),
    ("definite,possible", [LEAK_ROWS[1], LEAK_ROWS[3], "         2           32        possibly lost    main > "
                           "make_inner", "  Indirectly lost, not listed: 9 blocks, 576 bytes; "
                           "--leak-kinds=indirect lists them", LEAK_ROWS[5]]),
])
def test_leak_kinds_chooses_the_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str], kinds: str,
                                     rows: list[str]) -> None:
    text = report(capsys, "report", "--tables", "leaks", "--leak-kinds", kinds, written(tmp_path, classified()))
    assert table(text) == [LEAK_ROWS[0], *rows]


def test_a_bad_leak_kinds_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(capsys, "report", "--leak-kinds", "definite,lost", written(tmp_path, classified()))
    assert (status, out) == (2, "")
    assert err.splitlines()[-1].endswith(
        "argument --leak-kinds: not a leak kind: 'lost' (definite, indirect, possible, reachable, all or none)")
    assert "Traceback" not in err


def test_the_summary_has_memchecks_leak_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = report(capsys, "report", "--tables", "summary", written(tmp_path, classified())).splitlines()
    assert lines[-5:] == LEAK_SUMMARY


def test_what_the_scan_could_not_look_at(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = written(tmp_path, classified(scan=(3, 5, 2, 4096, 8072, 250_000)))
    lines = report(capsys, "report", "--tables", "summary", path).splitlines()
    assert lines[-2:] == [
        "  Leak scan of process 4242: threads not stopped (the process was traced, or under a seccomp filter): 2 "
        "threads' stacks scanned whole, their registers not read",
        "  Leak scan of process 4242: memory of unknown contents (blocks from before the attach) taken as roots: "
        "a block it points to is never called lost"]


NOT_CLASSIFIED = "Leak kinds: the blocks were not classified (no LEAK section in the data file); listed as never freed"


def test_an_unclassified_file_is_reported_as_never_freed(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    text = report(capsys, "report", written(tmp_path, recorded(CHAINS)))
    assert "LEAK SUMMARY" not in text and text.count(NOT_CLASSIFIED) == 1
    assert table(text) == ["   objects        bytes   (%)  path",
                           "       100        6,400  (79)  main > make_cache",
                           "         1        1,000  (12)  main > drop_buffer",
                           "        10          640   (7)  main > make_list",
                           "         2           32        main > make_inner"]


@pytest.mark.parametrize(("options", "status", "why"), [
    ([], 23, "mprof: 1,640 bytes definitely lost or indirectly lost, more than --fail-on-leak=0\n"),
    (["--fail-on-leak=1640"], 0, ""),
    (["--fail-on-leak-kinds", "definite"], 23, "mprof: 1,064 bytes definitely lost, more than --fail-on-leak=0\n"),
    (["--fail-on-leak-kinds", "all", "--fail-on-leak=8039"], 23,
     "mprof: 8,072 bytes definitely lost or indirectly lost or possibly lost or still reachable, more than "
     "--fail-on-leak=8,039\n"),
    (["--fail-on-leak-kinds", "none"], 0, ""),
])
def test_the_gate_counts_the_kinds_asked_for(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             options: list[str], status: int, why: str) -> None:
    path = written(tmp_path, classified())
    assert run(capsys, "report", path, "--no-pager", "--tables", "summary", "--fail-on-leak", *options)[::2] == (
        status, why)


def test_a_bare_gate_before_the_file_takes_it_as_the_file(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = written(tmp_path, classified())
    assert run(capsys, "report", "--no-pager", "--tables", "summary", "--fail-on-leak", path)[::2] == (
        23, "mprof: 1,640 bytes definitely lost or indirectly lost, more than --fail-on-leak=0\n")
    assert run(capsys, "report", "--no-pager", "--fail-on-leak", "1,640", "--tables", "summary", path)[::2] == (0, "")


def test_a_program_whose_blocks_are_all_reachable_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = written(tmp_path, classified(CHAINS[:1], KINDS[:1]))
    assert run(capsys, "report", path, "--no-pager", "--tables", "summary", "--fail-on-leak")[::2] == (0, "")
    # The same file not classified: its 6,400 bytes were never freed.
    path = written(tmp_path, recorded(CHAINS[:1]), "old.mprof")
    assert run(capsys, "report", path, "--no-pager", "--tables", "summary", "--fail-on-leak")[::2] == (
        23, "mprof: 6,400 bytes never freed, more than --fail-on-leak=0; the blocks were not classified (the data "
            "files have no LEAK section)\n")


def test_suppressions_apply_to_the_kinds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suppressions = tmp_path / "lsan.supp"
    suppressions.write_text("leak:drop_buffer\n")
    path = written(tmp_path, classified())
    assert run(capsys, "report", path, "--no-pager", "--tables", "leaks", "--suppressions", suppressions,
               "--fail-on-leak")[::2] == (
        23, "mprof: 640 bytes definitely lost or indirectly lost, more than --fail-on-leak=0\n")


def test_json_names_each_rows_kind_and_the_leak_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = json.loads(report(capsys, "report", "--format", "json", written(tmp_path, classified())))
    assert [(leak["path"], leak["kind"], leak["kept_objects"], leak["kept_bytes"]) for leak in document["leaks"]] == [
        ("main > drop_buffer", "definitely lost", 1, 1000), ("main > make_list", "indirectly lost", 9, 576),
        ("main > make_list", "definitely lost", 1, 64), ("main > make_inner", "possibly lost", 2, 32),
        ("main > make_cache", "still reachable", 100, 6400)]
    assert document["leak_summary"] == {
        "definitely lost": {"blocks": 2, "bytes": 1064}, "indirectly lost": {"blocks": 9, "bytes": 576},
        "possibly lost": {"blocks": 2, "bytes": 32}, "still reachable": {"blocks": 100, "bytes": 6400}}
    assert document["runs"][0]["scan"] == {"flags": 0, "threads_stopped": 3, "threads_unstopped": 0,
                                           "root_bytes": 4096, "block_bytes": 8072, "ns": 250_000}


def test_the_collapsed_export_counts_the_lost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "leaks.folded"
    report(capsys, "export", "--format", "collapsed", "--sample", "leak_space", "-o", out,
           written(tmp_path, classified()))
    assert sorted(out.read_text().splitlines()) == ["main;drop_buffer 1000", "main;make_list 640"]


@pytest.mark.parametrize("kinds, expected", [
    ("all", ["main;drop_buffer 1000", "main;make_cache 6400", "main;make_inner 32", "main;make_list 640"]),
    ("reachable", ["main;make_cache 6400"]),
    ("definite,possible", ["main;drop_buffer 1000", "main;make_inner 32", "main;make_list 64"]),
    ("none", [])])
def test_leak_kinds_chooses_what_the_export_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str], kinds: str,
                                                   expected: list[str]) -> None:
    # As memcheck's --show-leak-kinds: make_list's 640 bytes are 64 definitely lost and 576 indirectly.
    file = written(tmp_path, classified())
    folded = report(capsys, "export", "--format", "collapsed", "--sample", "leak_space", "--leak-kinds", kinds, file)
    assert sorted(folded.splitlines()) == expected
    counted = report(capsys, "export", "--format", "collapsed", "--sample", "leak_objects", "--leak-kinds", kinds, file)
    blocks = {"main;drop_buffer": 1, "main;make_cache": 100, "main;make_inner": 2,
              "main;make_list": 1 if kinds == "definite,possible" else 10}
    assert sorted(counted.splitlines()) == [f"{line.split()[0]} {blocks[line.split()[0]]}" for line in expected]


def test_diff_compares_the_lost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The new run frees its buffer: 1,000 bytes less lost, the rest alike.
    fixed = [entry for entry in KINDS if entry[0] != 2]
    new = classified([*CHAINS[:2], (CHAINS[2][0], 1000, 1, 1), CHAINS[3]], fixed, pid=4343)
    lines = report(capsys, "diff", "--no-pager", written(tmp_path, classified()),
                   written(tmp_path, new, "new.mprof")).splitlines()
    assert f"{'bytes leaked':23}  {1640:>13,}  {640:>13,}  {'-1,000':>13}  -61.0%" in lines
    assert f"{'blocks leaked':23}  {11:>13,}  {10:>13,}  {'-1':>13}  -9.1%" in lines
    # --leak-kinds chooses what they count, as the export's: with every kind, the still reachable and the
    # possibly lost (6,432 bytes in 102 blocks) too, on both sides.
    lines = report(capsys, "diff", "--no-pager", "--leak-kinds", "all", written(tmp_path, classified()),
                   written(tmp_path, new, "new.mprof")).splitlines()
    assert f"{'bytes leaked':23}  {8072:>13,}  {7072:>13,}  {'-1,000':>13}  -12.4%" in lines
    assert f"{'blocks leaked':23}  {113:>13,}  {112:>13,}  {'-1':>13}  -0.9%" in lines


def test_a_mixed_profile_counts_the_unclassified_as_never_freed(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    old = written(tmp_path, dataclasses.replace(recorded(CHAINS[:1]), pid=4343), "old.mprof")
    lines = report(capsys, "report", "--tables", "summary", written(tmp_path, classified()), old).splitlines()
    assert lines[-6:] == [*LEAK_SUMMARY, "  Leak kinds: the blocks of 1 of the 2 processes were not classified (no "
                          "LEAK section in the data file); listed as never freed"]
    assert run(capsys, "report", old, written(tmp_path, classified(), "new.mprof"), "--no-pager", "--tables",
               "summary", "--fail-on-leak")[::2] == (
        23, "mprof: 8,040 bytes definitely lost or indirectly lost, more than --fail-on-leak=0\n")


def test_the_pages_card_says_lost_with_the_reachable_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "prog.html"
    report(capsys, "html", written(tmp_path, classified()), "-o", page)
    card = page.read_text().split('<div class="card leak">', 1)[1].split("</div>", 1)[0]
    assert "<h2>Lost</h2>" in card and '<p class="figure" id="kept-bytes">1,640 bytes</p>' in card
    assert " ".join(card.split()).count("in 11 objects definitely or indirectly lost") == 1
    assert " ".join(card.split("reachable-bytes")[1].split()).startswith(
        '">and 6,400 bytes still reachable, 32 possibly lost, not counted</p>')
    report(capsys, "html", written(tmp_path, recorded(CHAINS), "old.mprof"), "-o", page)
    card = page.read_text().split('<div class="card leak">', 1)[1].split("</div>", 1)[0]
    assert "<h2>Never freed</h2>" in card and '<p class="figure" id="kept-bytes">8,072 bytes</p>' in card
    assert NOT_CLASSIFIED in card


def test_the_pages_leak_table_marks_the_kinds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "prog.html"
    report(capsys, "html", written(tmp_path, classified()), "-o", page, "--leak-kinds", "definite,reachable")
    assert page_rows(page.read_text(), "leaks") == [
        ["1", "1,000", "(12)", "main > drop_buffer  [definitely lost]"],
        ["1", "64", "", "main > make_list  [definitely lost]"],
        ["100", "6,400", "(79)", "main > make_cache  [still reachable]"]]
