"""The reducer and the mprof tables on real programs: figures read back
from the printed tables, names from the real libdw."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from e2e_support import BUILD, MPROF, Run, Targets, mprof, numbers, table
from test_tables_in_process import WIDGETS_TABLES

WIDGETS = BUILD / "widgets"
RED, BLUE = 4913, 5087


@pytest.fixture(scope="module")
def widgets_report(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The paper's report of widgets: its blocks not classified (--no-leak-check),
    so that the leak table is the paper's, of blocks never freed."""
    output = tmp_path_factory.mktemp("widgets") / "widgets.mprof"
    mprof("run", "--quiet", "--no-leak-check", "-o", output, WIDGETS)
    completed = mprof("report", output)
    assert completed.stderr == ""  # no progress or warnings when stderr is not a terminal
    return completed.stdout


def test_widgets_default_report_holds_the_papers_four_tables(widgets_report: str) -> None:
    """Figures 2 to 5, run and reported as a user does: the leak, bin, direct
    and call graph tables each as test_tables_in_process checks them line
    for line (its WIDGETS_TABLES, the same run reported in-process).  The
    paper's leak table is of blocks never freed: the run is not classified
    (--no-leak-check, as test_tables_in_process's MPROF_LEAK_CHECK=0)."""
    for table_text in WIDGETS_TABLES.split("\n\n"):
        assert table_text in widgets_report


# The cycle of three, `recursion three 100`, is test_tables_in_process's,
# whose cycle, graph and call graph table it checks whole.
@pytest.mark.parametrize("mode, size, cycle_members, inner_calls", [
    ("direct", 16, {"down"}, 500),
    ("mutual", 24, {"even", "odd"}, 600),
])
@pytest.mark.slow
def test_recursive_cycles_count_each_byte_once(targets: Targets, profile: Callable[..., Run], mode: str, size: int,
                                               cycle_members: set[str], inner_calls: int) -> None:
    run = profile([targets.build("recursion"), mode, "100"])
    data = json.loads(mprof("report", "--format", "json", run.output).stdout)
    [cycle] = data["cycles"]
    assert set(cycle["members"]) == cycle_members
    assert (cycle["total_bytes"], cycle["self_bytes"], cycle["called"], cycle["internal_calls"]) == (
        100 * size, 100 * size, 100, inner_calls)
    graph = {entry["function"].split(" <")[0]: entry for entry in data["call_graph"]}
    assert graph["main"]["total_bytes"] == 100 * size
    text = mprof("report", "--tables", "graph", run.output).stdout
    assert re.search(rf"\[\d+\]\s+100\.0\s+{100 * size:,} \(100\)\s+100\+{inner_calls:,}\s+<cycle 1 as a whole>",
                     text)


def test_recursion_through_a_library_callback(targets: Targets, profile: Callable[..., Run]) -> None:
    run = profile([targets.build("recursion"), "qsort", "100"])
    data = json.loads(mprof("report", "--format", "json", run.output).stdout)
    [cycle] = data["cycles"]
    # sort_words -> qsort (libc) -> compare -> sort_words: libc's frames are members.
    assert {"sort_words", "compare"} <= set(cycle["members"])
    assert any("qsort" in member for member in cycle["members"])
    assert cycle["total_bytes"] == 200 * 48 == data["summary"]["bytes_allocated"] - _libc_bytes(data)
    main = next(e for e in data["call_graph"] if e["function"] == "main")
    assert main["total_bytes"] == 200 * 48


def _libc_bytes(data: dict) -> int:
    return sum(d["bytes"] for d in data["direct"] if d["function"] != "compare <cycle 1>")


@pytest.mark.slow
def test_cxx_names_are_demangled_and_inlined_frames_expanded(targets: Targets, profile: Callable[..., Run]) -> None:
    run = profile([targets.build("templates")])
    full = mprof("report", "--all", "--tables", "leaks,direct,graph", "--full-names", run.output).stdout
    assert "main > shapes::make_label(int) > shapes::copy_text" in full
    assert "bool operator< <double, char>(shapes::Grid<double, 4> const&, shapes::Grid<char, 8> const&)" in full
    assert "shapes::Grid<double, 4>::grow()" in full
    # By default: no parameters and no template arguments, unless two
    # functions would then read the same (the two instances of grow).
    text = mprof("report", "--all", "--tables", "leaks,direct,graph", run.output).stdout
    assert "main > shapes::make_label > shapes::copy_text" in text
    assert "(shapes::" not in text and "operator< <> [" in text
    assert "shapes::Grid<double, 4>::grow [" in text and "shapes::Grid<char, 8>::grow [" in text
    data = json.loads(mprof("report", "--format", "json", run.output).stdout)
    copy = next(d for d in data["direct"] if d["function"] == "shapes::copy_text")
    assert (copy["bytes"], copy["kept_bytes"]) == (33, 33)
    [leak] = [leak for leak in data["leaks"] if leak["path"].endswith("copy_text")]
    assert [(frame["function"], frame["signature"]) for frame in leak["frames"]] == [
        ("main", "main"), ("shapes::make_label", "shapes::make_label(int)"), ("shapes::copy_text", "shapes::copy_text")]
    assert leak["frames"][-1]["file"].endswith("templates.cc")


def test_stripped_binary_falls_back_to_module_offsets(targets: Targets, profile: Callable[..., Run],
                                                      tmp_path: Path) -> None:
    stripped = tmp_path / "widgets-stripped"
    shutil.copy(WIDGETS, stripped)
    subprocess.run(["strip", stripped], check=True)
    run = profile([stripped, "1000"])
    completed = mprof("report", "--format", "json", run.output)
    data = json.loads(completed.stdout)
    [direct] = data["direct"]
    assert re.fullmatch(r"widgets-stripped\+0x[0-9a-f]+", direct["function"])
    assert direct["calls"] == 1000
    [bin_row] = data["bins"]
    assert bin_row["types"] == []


def test_functions_of_a_dlclosed_library_resolve(targets: Targets, profile: Callable[..., Run]) -> None:
    plugin = targets.build("plugin.so", source="plugin.c", shared=True)
    run = profile([targets.build("dlclose_main", "-ldl"), plugin])
    data = json.loads(mprof("report", "--format", "json", run.output).stdout)
    direct = {d["function"]: d for d in data["direct"]}
    assert (direct["plugin_allocate"]["calls"], direct["plugin_allocate"]["kept_bytes"]) == (3, 77)
    assert any(leak["path"] == "main > plugin_allocate" and leak["kept_bytes"] == 77 for leak in data["leaks"])


def test_missing_binary_is_a_warning(targets: Targets, profile: Callable[..., Run], tmp_path: Path) -> None:
    doomed = tmp_path / "doomed"
    shutil.copy(targets.build("leaf"), doomed)
    run = profile([doomed])
    doomed.unlink()
    completed = mprof("report", "--format", "json", run.output)
    assert completed.stderr.count("\n") == 1
    assert completed.stderr.startswith(f"mprof: warning: {doomed}")
    [direct] = [d for d in json.loads(completed.stdout)["direct"] if d["calls"] == 40]
    assert direct["function"].startswith("doomed+0x")


def test_changed_binary_is_a_warning(targets: Targets, profile: Callable[..., Run], tmp_path: Path) -> None:
    changing = tmp_path / "changing"
    shutil.copy(targets.build("leaf"), changing)
    run = profile([changing])
    subprocess.run(["gcc", "-O0", "-g", "-o", changing, "-x", "c", "-", "-DCHANGED"], check=True,
                   input="int main(void) { return 0; }\n", text=True)
    completed = mprof("report", run.output)
    assert "build-id" in completed.stderr and completed.stderr.count("\n") == 1


@pytest.mark.slow
def test_database_is_deterministic_and_several_processes_merge(targets: Targets, profile: Callable[..., Run],
                                                               tmp_path: Path) -> None:
    run = profile([targets.build("forkexec"), targets.build("leaf")])
    files = run.files()
    assert len(files) == 4
    first, second = tmp_path / "one.db", tmp_path / "two.db"
    mprof("db", *files, "-o", first)
    mprof("db", *files, "-o", second)
    assert first.read_bytes() == second.read_bytes()
    with sqlite3.connect(first) as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone()[0] == 4
        summary = dict(db.execute("SELECT name, value FROM summary"))
        sizes = dict(db.execute("SELECT size, allocs FROM bins WHERE size IN (100, 200, 300, 400)"))
    assert sizes == {100: 15, 200: 20, 300: 30, 400: 40}
    assert summary["allocs"] == 16 + 20 + 30 + 40 and summary["inherited_frees"] == 1
    report = json.loads(mprof("report", "--format", "json", first).stdout)
    assert report["summary"]["allocs"] == 106 and len(report["runs"]) == 4


def through_a_pipe(source: Path, *arguments: str | Path) -> subprocess.CompletedProcess[str]:
    """mprof ARGUMENTS /dev/fd/N, with source's bytes coming through a pipe,
    as `mprof report <(cat source)` gives them."""
    reading, writing = os.pipe()
    feeder = threading.Thread(target=lambda: (os.write(writing, source.read_bytes()), os.close(writing)))
    feeder.start()
    try:
        return subprocess.run([MPROF, *map(str, arguments), f"/dev/fd/{reading}"], pass_fds=(reading,),
                              capture_output=True, text=True, timeout=120)
    finally:
        feeder.join()
        os.close(reading)


@pytest.mark.slow
def test_inputs_are_read_once_so_pipes_work(tmp_path: Path) -> None:
    output = tmp_path / "w.mprof"
    mprof("run", "--quiet", "-o", output, WIDGETS, "100")
    database = tmp_path / "w.db"
    mprof("db", output, "-o", database)
    expected = mprof("report", output).stdout
    assert "main > make_red_widget > make_widget" in expected
    for source in (output, database):
        completed = through_a_pipe(source, "report")
        assert (completed.returncode, completed.stderr) == (0, "")
        assert completed.stdout == expected
    html = through_a_pipe(output, "html", "-o", tmp_path / "w.html")
    assert html.returncode == 0 and "make_red_widget" in (tmp_path / "w.html").read_text()
    again = through_a_pipe(output, "db", "-o", tmp_path / "again.db")
    assert again.returncode == 0 and mprof("report", tmp_path / "again.db").stdout == expected


@pytest.mark.slow
def test_control_characters_never_reach_the_terminal(tmp_path: Path) -> None:
    # A directory that clears the screen and sets colours, an argument that
    # retitles the window and breaks the line.
    directory = tmp_path / "odd\x1b[2J\x1b[31mdir"
    directory.mkdir()
    program = directory / "widgets"
    shutil.copy(WIDGETS, program)
    output = tmp_path / "odd.mprof"
    mprof("run", "--quiet", "-o", output, program, "100", "\x1b]0;owned\x07\nnext line\\x07")
    text = mprof("report", output).stdout
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", text)
    shown = ("odd\\x1b[2J\\x1b[31mdir/widgets 100 \\x1b]0;owned\\x07\\x0anext line\\\\x07")
    assert f"process {datafile_pid(output)}: {tmp_path}/{shown}" in text
    assert "main > make_red_widget > make_widget" in text
    dumped = mprof("dump", output).stdout
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", dumped) and "\\x1b]0;owned" in dumped


@pytest.mark.slow
def test_an_argument_that_is_not_utf8(tmp_path: Path) -> None:
    output = tmp_path / "bytes.mprof"
    # Latin-1 "café" and two bytes no encoding decodes, as a real argument.
    subprocess.run([MPROF, "run", "--quiet", "-o", output, WIDGETS, "100", b"caf\xe9\xff\xfe"], check=True,
                   capture_output=True)
    shown = "100 caf\\xe9\\xff\\xfe"
    text = mprof("report", output)
    assert text.stderr == "" and f"widgets {shown}" in text.stdout
    runs = json.loads(mprof("report", "--format", "json", output).stdout)["runs"]
    assert runs[0]["command_line"].endswith(shown)
    mprof("html", output, "-o", tmp_path / "bytes.html")
    assert f"widgets {shown}" in (tmp_path / "bytes.html").read_text(encoding="utf-8")
    mprof("db", output, "-o", tmp_path / "bytes.db")
    with sqlite3.connect(tmp_path / "bytes.db") as db:
        [(stored,)] = db.execute("SELECT command_line FROM runs").fetchall()
    assert stored == str(WIDGETS).encode() + b" 100 caf\xe9\xff\xfe"  # the bytes themselves, as a BLOB


def datafile_pid(path: Path) -> int:
    return int(json.loads(mprof("dump", "--format", "json", path).stdout)["header"]["pid"])


def test_another_applications_database_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.executescript("PRAGMA user_version = 1; CREATE TABLE runs (id INTEGER); CREATE TABLE notes (text TEXT);")
    for command in ("report", "html"):
        arguments = [command, other] + (["-o", tmp_path / "o.html"] if command == "html" else [])
        completed = mprof(*arguments, check=False)
        assert (completed.returncode, completed.stderr) == (
            1, f"mprof: {other}: not an mprof profile database (an SQLite file of another application)\n")


def test_failed_reduction_keeps_the_previous_database(tmp_path: Path) -> None:
    database = tmp_path / "keep.db"
    database.write_bytes(b"precious")
    broken = tmp_path / "broken.mprof"
    broken.write_bytes(b"MPROFDAT" + b"\0" * 10)
    completed = mprof("db", broken, "-o", database, check=False)
    assert completed.returncode == 1 and completed.stderr.count("\n") == 1
    assert database.read_bytes() == b"precious"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_cutoff_and_table_selection(widgets_report: str, tmp_path: Path) -> None:
    output = tmp_path / "w.mprof"
    mprof("run", "--quiet", "-o", output, WIDGETS)
    text = mprof("report", "--tables", "graph", "--cutoff", "50", output).stdout
    entries = [line.split()[-2] for line in text.splitlines() if line.startswith("[")]
    assert entries == ["main", "make_widget", "make_blue_widget"]  # make_red_widget is at 49.1%
    assert "Memory leak table" not in text and "Program summary" not in text


def test_progress_on_a_terminal_only(tmp_path: Path) -> None:
    import os
    import pty

    output = tmp_path / "w.mprof"
    mprof("run", "--quiet", "-o", output, WIDGETS, "100")
    controller, terminal = pty.openpty()
    try:
        completed = subprocess.run([MPROF, "db", output, "-o", tmp_path / "w.db"], stderr=terminal,
                                   stdout=subprocess.DEVNULL)
        os.close(terminal)
        shown = b""
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(controller)
    assert completed.returncode == 0
    text = shown.decode()
    assert f"mprof: building the call graph of {output}" in text and "resolving addresses of" in text
    assert "merging cycles" in text
    assert text.endswith("\r\x1b[K")  # the progress line is wiped at the end


def test_separate_debug_file_through_debuglink(profile: Callable[..., Run], tmp_path: Path) -> None:
    # Symbols and lines only in w.debug, found through .gnu_debuglink.
    program = tmp_path / "w"
    shutil.copy(WIDGETS, program)
    subprocess.run(["objcopy", "--only-keep-debug", program, tmp_path / "w.debug"], check=True)
    subprocess.run(["strip", "--strip-all", program], check=True)
    subprocess.run(["objcopy", f"--add-gnu-debuglink={tmp_path / 'w.debug'}", program], check=True, cwd=tmp_path)
    run = profile([program, "1000"])
    data = json.loads(mprof("report", "--format", "json", run.output).stdout)
    [leak] = data["leaks"]
    assert leak["path"] == "main > make_red_widget > make_widget"
    assert leak["frames"][-1]["file"].endswith("widgets.c") and leak["frames"][-1]["line"] > 0


def test_call_sites_in_leak_paths(tmp_path: Path) -> None:
    output = tmp_path / "w.mprof"
    mprof("run", "--quiet", "-o", output, WIDGETS, "1000")
    source = (BUILD.parent / "examples" / "widgets.c").read_text().splitlines()
    text = mprof("report", "--tables", "leaks", "--call-sites", output).stdout
    [row] = table(text, "Memory leak table")
    # The red widgets are definitely lost, as memcheck says (104,244 bytes in 511 blocks of widgets 1000).
    kind, path = row.split(")  ")[1].split("  ")
    assert (numbers(row)[:2], kind) == ([511, 104_244], "definitely lost")
    functions_and_lines = [part.removesuffix(")").split(" (widgets.c:") for part in path.split(" > ")]
    assert [name for name, _ in functions_and_lines] == ["main", "make_red_widget", "make_widget"]
    # Each line is that frame's call: main calls make_red_widget, which calls make_widget, which calls malloc.
    called = ["make_red_widget()", "make_widget()", "malloc("]
    for (_, line), callee in zip(functions_and_lines, called, strict=True):
        assert callee in source[int(line) - 1]


def test_minus_mode_profiles_report_everything_but_the_graph(tmp_path: Path) -> None:
    output = tmp_path / "w.mprof"
    mprof("run", "--quiet", "--no-call-graph", "-o", output, WIDGETS)
    text = mprof("report", output).stdout
    assert "Allocation call graph: not recorded (the profile was taken in mprof- mode)." in text
    [row] = table(text, "Memory leak table")
    assert row.endswith("main > make_red_widget > make_widget") and f"{RED * 204:,}" in row
    assert table(text, "Direct allocation table")[1].split()[-1] == "make_widget"


@pytest.mark.slow
def test_long_leak_paths_keep_every_frame_of_the_programs_own(targets: Targets, tmp_path: Path) -> None:
    output = tmp_path / "long.mprof"
    mprof("run", "--quiet", "-o", output, targets.build("long_names"))
    inner, middle, outer = ("innermost_function_with_a_forty_char_nam", "middle_function_with_a_name_of_forty_cha",
                            "outer_function_with_a_name_of_forty_char")
    whole = f"main > {outer} > {middle} > {inner}"
    assert len(whole) == 133
    # The block stays pointed to from a global: still reachable, as memcheck
    # says (64 bytes in 1 blocks), so that the leak table lists it only with
    # every kind (--leak-kinds all).
    every_kind = ("report", "--tables", "leaks", "--leak-kinds", "all")
    # All the program's own code: nothing folds, however long.
    [row] = table(mprof(*every_kind, output).stdout, "Memory leak table")
    assert row.split(None, 3) == ["1", "64", "(100)", f"still reachable  {whole}"]
    [row] = table(mprof(*every_kind, "--wide", output).stdout, "Memory leak table")
    assert row.split()[3:] == ["still", "reachable", *whole.split()]
    [leak] = json.loads(mprof("report", "--format", "json", output).stdout)["leaks"]
    assert (leak["path"], leak["kind"]) == (whole, "still reachable")
