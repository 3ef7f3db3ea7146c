"""A profile database edited by hand or by another tool: mprof report,
html, diff and export refuse one whose types or references are wrong in one
line that names the file, the table and the problem (report/validate.py),
and read one whose text is not UTF-8 as the reducer's own BLOB text is
read.  Each edit is made to a database of a real run of build/widgets; the
commands run in this process through the command line's main()."""

from __future__ import annotations

import os
import resource
import shutil
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest

from database_edits import edit_database, widgets_database
from mprof.cli.main import main
from mprof.reducer.errors import MprofError
from mprof.reducer.records import Summary
from mprof.report import validate

pytestmark = pytest.mark.usefixtures("fresh_validation")

REPO_ROOT = Path(__file__).resolve().parents[2]
MPROF = REPO_ROOT / "mprof"
COMMANDS = ("report", "html", "diff", "export")


@pytest.fixture(scope="module")
def real_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The database of a real run of widgets, made by mprof db."""
    return widgets_database(tmp_path_factory.mktemp("real"), "untouched.db")



@pytest.fixture
def edit(real_database: Path, tmp_path: Path) -> Edit:
    return Edit(real_database, tmp_path)


class Edit:
    """A copy of the real database, edited with SQL."""

    def __init__(self, untouched: Path, directory: Path) -> None:
        self.untouched = untouched
        self.directory = directory
        self.path = directory / "prof.db"
        shutil.copyfile(untouched, self.path)

    def __call__(self, *statements: str, loosened: bool = False) -> Edit:
        """Runs statements on the copy; loosened first takes the NOT NULL
        constraints and STRICT out of its schema, as a tool that recreated
        its tables might, so that a NULL, or a value of any type, can be
        stored anywhere."""
        edit_database(self.path, statements, loosened)
        return self

    def value(self, query: str) -> object:
        db = sqlite3.connect(self.path)
        try:
            return db.execute(query).fetchone()[0]
        finally:
            db.close()

    def arguments(self, command: str) -> list[str]:
        return {"report": ["report", "--no-pager", str(self.path)],
                "html": ["html", str(self.path), "-o", str(self.directory / "page.html")],
                "diff": ["diff", "--no-pager", str(self.untouched), str(self.path)],
                "export": ["export", "--format", "pprof", "-o", str(self.directory / "profile.pb.gz"),
                           str(self.path)]}[command]


def run(capsys: pytest.CaptureFixture[str], arguments: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(arguments)
    out, err = capsys.readouterr()
    return code, out, err


def assert_refused(edit: Edit, capsys: pytest.CaptureFixture[str], problem: str) -> None:
    """Every command exits 1 with exactly the one line
    `mprof: FILE: PROBLEM`, and writes nothing."""
    for output in (edit.directory / "page.html", edit.directory / "profile.pb.gz"):
        output.unlink(missing_ok=True)
    for command in COMMANDS:
        code, out, err = run(capsys, edit.arguments(command))
        assert (code, err) == (1, f"mprof: {edit.path}: {problem}\n"), command
        assert out == ""
    assert not (edit.directory / "page.html").exists() and not (edit.directory / "profile.pb.gz").exists()


def assert_read(edit: Edit, capsys: pytest.CaptureFixture[str]) -> str:
    """Every command succeeds; the report's text."""
    for command in COMMANDS:
        code, out, err = run(capsys, edit.arguments(command))
        assert (code, err) == (0, ""), command
        if command == "report":
            report = out
    assert (edit.directory / "page.html").stat().st_size and (edit.directory / "profile.pb.gz").stat().st_size
    return report


@pytest.mark.slow
def test_the_untouched_database_is_read(edit: Edit, capsys: pytest.CaptureFixture[str]) -> None:
    report = assert_read(edit, capsys)
    assert "make_red_widget" in report and "Memory leak table" in report
    # Nor does a database whose NOT NULL constraints are gone differ while
    # its values are sound.
    assert assert_read(edit(loosened=True), capsys) == report


def test_a_function_name_that_is_null(edit: Edit, capsys: pytest.CaptureFixture[str]) -> None:
    edit("UPDATE functions SET name = NULL WHERE name = 'make_widget'", loosened=True)
    assert_refused(edit, capsys, "table functions: name is NULL in 1 row")


def test_allocs_that_are_null(edit: Edit, capsys: pytest.CaptureFixture[str]) -> None:
    edit("UPDATE paths SET allocs = NULL", loosened=True)
    assert_refused(edit, capsys, "table paths: allocs is NULL in 2 rows")


# Edits each refused in one line, as the reports say it: (SQL, the line).
REFUSED_EDITS = [
    pytest.param("UPDATE functions SET line = 'many' WHERE id = 1",
                 "table functions: line is not an integer in 1 row: text 'many'",
                 id="a_line_that_is_text"),
    pytest.param("UPDATE functions SET line = 1.5e300 WHERE id = 1",
                 "table functions: line is not an integer in 1 row: real 1.5e+300",
                 id="a_line_that_is_a_huge_float"),
    pytest.param("UPDATE paths SET bytes_l = 9223372036854775807 WHERE rowid = 2",
                 "table paths: bytes_l is out of range (0 to 2^53) in 1 row: 9223372036854775807",
                 id="a_byte_count_of_int64_max"),
    pytest.param("UPDATE paths SET allocs = -1 WHERE rowid = 1",
                 "table paths: allocs is out of range (0 to 2^53) in 1 row: -1",
                 id="negative_allocs"),
    pytest.param("DELETE FROM summary WHERE name = 'free_null'",
                 "table summary: has no row for free_null",
                 id="a_summary_without_one_figure"),
    pytest.param("UPDATE edges SET callee_id = 99 WHERE rowid = 1",
                 "table edges: callee_id names no row of functions in 1 row: 99",
                 id="a_dangling_function_in_edges"),
    # The leak path that kept blocks (one whose blocks were all freed has no row): its make_widget.
    pytest.param("UPDATE leak_frames SET function_id = 77 WHERE position = 0",
                 "table leak_frames: function_id names no row of functions in 1 row: 77",
                 id="a_dangling_function_in_leak_frames"),
    pytest.param("DROP TABLE bins",
                 "table bins is missing",
                 id="a_dropped_table"),
    pytest.param("ALTER TABLE sites DROP COLUMN temporaries",
                 "table sites: column temporaries is missing",
                 id="a_dropped_column"),
    pytest.param("DROP INDEX functions_identity",
                 "table functions: has no unique key (name, module) as schema.sql's has",
                 id="a_dropped_unique_key"),
    pytest.param("INSERT INTO cycles VALUES (4, 10, 10, 1, 1)",
                 "table cycles: id is no function's cycle_id in 1 row: 4",
                 id="a_cycle_without_members"),
    pytest.param("UPDATE paths SET runtime = CAST(x'ff' AS TEXT) WHERE rowid = 1",
                 "table paths: runtime is not printable UTF-8 text in 1 row: '\\xff'",
                 id="a_runtime_word_that_is_not_text"),
    pytest.param("UPDATE runs SET lsan_suppressions = 'leak:ok\nnonsense'",
                 "table runs: lsan_suppressions:2: not a suppression (TYPE:PATTERN): 'nonsense' (row 1)",
                 id="suppressions_that_are_not_suppressions"),
]


@pytest.mark.parametrize(("sql", "line"), REFUSED_EDITS)
def test_an_edit_is_refused_in_one_line(edit: Edit, capsys: pytest.CaptureFixture[str], sql: str, line: str) -> None:
    edit(sql)
    assert_refused(edit, capsys, line)


def test_a_negative_node_id(edit: Edit, capsys: pytest.CaptureFixture[str]) -> None:
    # A rowid may be negative; the least id is looked up, not every row's.
    edit("INSERT INTO path_nodes SELECT -5, NULL, function_id, file, line, inlined FROM path_nodes LIMIT 1")
    assert_refused(edit, capsys, "table path_nodes: id is out of range (0 to 2^53) in 1 row: -5")


@pytest.mark.parametrize("key", ["id INTEGER PRIMARY KEY DESC", "id INTEGER PRIMARY KEY"])
def test_a_key_that_is_not_the_rowid(edit: Edit, capsys: pytest.CaptureFixture[str], key: str) -> None:
    """A key declared DESC, or of a table WITHOUT ROWID, is no alias of the
    rowid and may hold any value: each row's is checked."""
    edit("ALTER TABLE cycles RENAME TO old_cycles",
         f"CREATE TABLE cycles ({key}, self_bytes INTEGER NOT NULL, total_bytes INTEGER NOT NULL, "
         f"called INTEGER NOT NULL, internal_calls INTEGER NOT NULL){'' if 'DESC' in key else ' WITHOUT ROWID'}",
         "INSERT INTO cycles SELECT * FROM old_cycles",
         "DROP TABLE old_cycles",
         "INSERT INTO cycles VALUES ('x', 1, 1, 1, 1)")
    assert_refused(edit, capsys, "table cycles: id is not an integer in 1 row: text 'x'")


@pytest.mark.parametrize(("value", "line"), [
    ("'many'", "table paths: allocs is not an integer in 1 row: text 'many'"),
    ("1.5e300", "table paths: allocs is not an integer in 1 row: real 1.5e+300")])
def test_a_path_figure_of_another_type(edit: Edit, capsys: pytest.CaptureFixture[str], value: str, line: str) -> None:
    """The path tables are STRICT: SQLite refuses the edit; a tool that
    made them again without it gets the report's refusal."""
    with pytest.raises(sqlite3.IntegrityError, match="cannot store .* value in INTEGER column paths.allocs"):
        edit(f"UPDATE paths SET allocs = {value} WHERE rowid = 1")
    edit(f"UPDATE paths SET allocs = {value} WHERE rowid = 1", loosened=True)
    assert_refused(edit, capsys, line)


def test_figures_at_the_bounds_are_read(edit: Edit, capsys: pytest.CaptureFixture[str]) -> None:
    # 2^53 is a count the reports hold exactly; a time may take 63 bits, an
    # address all 64, stored as its two's complement.
    edit("UPDATE paths SET peak_bytes = 9007199254740992 WHERE rowid = 1",
         "UPDATE runs SET start_unix_ns = 9223372036854775807",
         "UPDATE summary SET value = 9223372036854775807 WHERE name = 'elapsed_ns'",
         "UPDATE modules SET bias = -9223372036854775808")
    assert_read(edit, capsys)
    edit("UPDATE summary SET value = 9007199254740993 WHERE name = 'allocs'")
    assert_refused(edit, capsys, "table summary: value is out of range (0 to 2^53, or 2^63 - 1 for a time) in 1 row: "
                                 "9007199254740993 ('allocs')")


def test_a_deleted_path_node(edit: Edit, capsys: pytest.CaptureFixture[str]) -> None:
    innermost = edit.value("SELECT MAX(node_id) FROM paths")
    edit(f"DELETE FROM path_nodes WHERE id = {innermost}")
    assert_refused(edit, capsys, f"table paths: node_id names no row of path_nodes in 1 row: {innermost}")


def test_a_deleted_parent_node(edit: Edit, capsys: pytest.CaptureFixture[str]) -> None:
    edit("DELETE FROM path_nodes WHERE id = 1")  # main, the outermost frame of the blue widgets' path
    assert edit.value("SELECT COUNT(*) FROM path_nodes WHERE parent_id = 1") == 1
    assert_refused(edit, capsys, "table path_nodes: parent_id names no row of path_nodes in 1 row: 1")


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.slow
@pytest.mark.parametrize(("sql", "rows", "first"), [
    pytest.param("UPDATE path_nodes SET parent_id = 3 WHERE id = 2", 1, 2, id="a_loop_of_two"),
    pytest.param("UPDATE path_nodes SET parent_id = id WHERE id = 5", 1, 5, id="its_own_parent"),
    # 1 -> 3 -> 2 -> 1, and 4 -> 6 -> 5 -> 4: two loops of three.
    pytest.param("UPDATE path_nodes SET parent_id = id + 2 WHERE parent_id IS NULL", 2, 1, id="two_loops_of_three"),
])
def test_a_parent_that_is_not_before_its_child(edit: Edit, sql: str, rows: int, first: int) -> None:
    # widgets' tree: main (1) > make_blue_widget (2) > make_widget (3), and
    # main (4) > make_red_widget (5) > make_widget (6).
    assert edit.value("SELECT group_concat(id || ':' || coalesce(parent_id, '-'), ' ') FROM path_nodes") == \
        "1:- 2:1 3:2 4:- 5:4 6:5"
    # A loop of parents would make a report walk up forever, growing a
    # list: the commands run as programs, within 1 GB and a minute.
    edit(sql)
    for command in COMMANDS:
        completed = subprocess.run([MPROF, *edit.arguments(command)], capture_output=True, text=True, timeout=60,
                                   preexec_fn=limited)
        assert (completed.returncode, completed.stdout) == (1, ""), command
        assert completed.stderr == f"mprof: {edit.path}: table path_nodes: a node's parent is not before it in " \
                                   f"{rows} row{'s' if rows > 1 else ''}: {first}\n"


def test_a_node_deleted_between_the_first_and_the_last(edit: Edit, capsys: pytest.CaptureFixture[str]) -> None:
    """The ids left are not every integer from the least to the greatest:
    the references to the table are looked up, not checked by its range."""
    assert edit.value("SELECT group_concat(id, ' ') FROM path_nodes WHERE parent_id = 5") == "6"
    edit("DELETE FROM path_nodes WHERE id = 5")  # make_red_widget's node, between 1 and 6
    assert_refused(edit, capsys, "table path_nodes: parent_id names no row of path_nodes in 1 row: 5")


def test_a_function_deleted_between_the_first_and_the_last(edit: Edit, capsys: pytest.CaptureFixture[str]) -> None:
    # The first table that names make_blue_widget (2 of 1 to 4) is edges,
    # as its caller of make_widget.
    assert edit.value("SELECT group_concat(id || ':' || name, ' ') FROM functions") == \
        "1:main 2:make_blue_widget 3:make_red_widget 4:make_widget"
    assert edit.value("SELECT COUNT(*) FROM edges WHERE caller_id = 2") == 1
    edit("DELETE FROM functions WHERE id = 2")
    assert_refused(edit, capsys, "table edges: caller_id names no row of functions in 1 row: 2")


def test_paths_merged_with_a_later_node(edit: Edit, capsys: pytest.CaptureFixture[str]) -> None:
    # The first node of a path's functions is never after the path's own.
    first = edit.value("SELECT MIN(node_id) FROM paths")
    edit(f"UPDATE paths SET same_functions_id = {first} + 1 WHERE node_id = {first}")
    assert_refused(edit, capsys, "table paths: same_functions_id comes after node_id, or is NULL where node_id is "
                                 f"not in 1 row: {first}")
    edit(f"UPDATE paths SET same_functions_id = NULL WHERE node_id = {first}")
    assert_refused(edit, capsys, "table paths: same_functions_id comes after node_id, or is NULL where node_id is "
                                 f"not in 1 row: {first}")


def test_an_empty_summary(edit: Edit, capsys: pytest.CaptureFixture[str]) -> None:
    edit("DELETE FROM summary")
    more = len(Summary.field_names())  # and elapsed_ns, less the one named
    assert_refused(edit, capsys, f"table summary: has no row for allocs and {more} more of the figures the reports "
                                 "read")


def test_a_profile_without_its_runs_nor_summary(edit: Edit, capsys: pytest.CaptureFixture[str]) -> None:
    # Only a database of replays alone (mprof replay --db) may have none.
    edit(*(f"DELETE FROM {table}" for table in ("runs", "modules", "timeline", "run_figures", "summary")))
    more = len(Summary.field_names())
    assert_refused(edit, capsys, f"table summary: has no row for allocs and {more} more of the figures the reports "
                                 "read")


def test_replays_alone_need_no_summary(edit: Edit, capsys: pytest.CaptureFixture[str]) -> None:
    edit(*(f"DELETE FROM {table.name}" for table in validate.schema()),
         "INSERT INTO replays VALUES (1, 'synthetic', 1, 'threads', 1, 0, 10, 1, 5, 5, 0, 500, 300, 3, 0, 0, 100, -7)",
         "INSERT INTO replay_allocators VALUES (1, 0, 'glibc', 'libc.so.6', 1, 1000, 900, 100, 12.5, NULL, 3.25, "
         "4096, 8192, 300, 0.9, 0.8, 13.6)")
    code, _, err = run(capsys, edit.arguments("html"))
    assert (code, err) == (0, "")
    assert "libc.so.6" in (edit.directory / "page.html").read_text()
    code, _, err = run(capsys, edit.arguments("report"))
    assert (code, err) == (1, f"mprof: {edit.path}: holds replays alone (mprof replay --db), no profile to report: "
                              "mprof html shows them, sqlite3 reads them\n")
    edit("UPDATE replay_allocators SET ns_per_malloc = 1e300")
    code, _, err = run(capsys, edit.arguments("html"))
    assert (code, err) == (1, f"mprof: {edit.path}: table replay_allocators: ns_per_malloc is out of range "
                              "(-2^53 to 2^53) in 1 row: 1e+300\n")


def test_the_summary_names_are_what_the_reducer_writes(edit: Edit) -> None:
    db = sqlite3.connect(edit.path)
    try:
        assert {name for (name,) in db.execute("SELECT name FROM summary")} == set(validate.SUMMARY_NAMES)
    finally:
        db.close()


def test_a_name_that_is_invalid_utf8_text(edit: Edit, capsys: pytest.CaptureFixture[str]) -> None:
    # Read as the reducer's BLOB of non-UTF-8 bytes is: shown escaped.
    edit("UPDATE functions SET name = CAST(x'6d616b65ff' AS TEXT) WHERE name = 'make_widget'")
    report = assert_read(edit, capsys)
    assert "make\\xff" in report and "make_widget" not in report
    code, out, _ = run(capsys, ["export", "--format", "collapsed", str(edit.path)])
    assert code == 0 and "main;make_red_widget;make\\xff " in out


def test_the_message_names_the_file_as_given(edit: Edit, capsys: pytest.CaptureFixture[str]) -> None:
    """A database through a pipe is copied to a temporary file for SQLite;
    the message names the pipe."""
    edit("UPDATE paths SET frees = -5 WHERE rowid = 1")
    fifo = edit.directory / "fifo.db"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(edit.path.read_bytes()))
    writer.start()
    code, _, err = run(capsys, ["report", "--no-pager", str(fifo)])
    writer.join()
    assert (code, err) == (1, f"mprof: {fifo}: table paths: frees is out of range (0 to 2^53) in 1 row: -5\n")


@pytest.mark.slow
def test_the_command_ends_in_one_line(edit: Edit) -> None:
    """As a user runs it: the launcher, one line, exit 1, no traceback."""
    edit("DELETE FROM path_nodes WHERE id = 1")
    for command in COMMANDS:
        completed = subprocess.run([MPROF, *edit.arguments(command)], capture_output=True, text=True, timeout=60)
        assert (completed.returncode, completed.stdout) == (1, ""), command
        assert completed.stderr == f"mprof: {edit.path}: table path_nodes: parent_id names no row of path_nodes in " \
                                   f"1 row: 1\n"


def test_the_schema_declares_the_references_the_reports_follow() -> None:
    references = {(table.name, reference.columns, reference.table, reference.to)
                  for table in validate.schema() for reference in table.references}
    for child, column, parent in (("path_nodes", "parent_id", "path_nodes"), ("path_nodes", "function_id", "functions"),
                                  ("paths", "node_id", "path_nodes"), ("leak_frames", "function_id", "functions"),
                                  ("leak_frames", "leak_id", "leaks"), ("edges", "caller_id", "functions"),
                                  ("edges", "callee_id", "functions"), ("sites", "function_id", "functions"),
                                  ("functions", "cycle_id", "cycles"), ("run_figures", "run_id", "runs"),
                                  ("timeline", "run_id", "runs"), ("modules", "run_id", "runs")):
        assert (child, (column,), parent, ("id",)) in references, (child, column)
    assert ("replay_samples", ("replay_id", "position"), "replay_allocators", ("replay_id", "position")) in references


def test_the_signed_columns_exist() -> None:
    """The columns allowed any 64-bit value are the schema's addresses,
    biases and offsets (and the replays' digest): no name goes stale."""
    columns = {(table.name, column.name) for table in validate.schema() for column in table.columns}
    assert validate.SIGNED <= columns
    assert set(validate.WORDS) <= columns


def _validation_work(path: Path) -> tuple[int, int]:
    """SQLite's virtual machine instructions (in thousands) and statements
    that check() runs on a database: a count of work that does not vary
    with the machine's load, as a time would."""
    db = sqlite3.connect(path)
    db.text_factory = lambda value: value.decode("utf-8", "surrogateescape")
    steps, statements = [0], [0]

    def step() -> int:
        steps[0] += 1
        return 0

    db.set_progress_handler(step, 1000)
    db.set_trace_callback(lambda _: statements.__setitem__(0, statements[0] + 1))
    try:
        validate.check(db)
    except validate.Problem:
        pass
    finally:
        db.close()
    return steps[0], statements[0]


@pytest.mark.slow
def test_validation_is_one_scan_of_each_table(edit: Edit, tmp_path: Path) -> None:
    """Linear in the rows, in as many statements whatever their number,
    and a fault found as cheaply."""
    def paths(count: int) -> Path:
        # count path nodes and as many paths over 5,000 functions.
        (tmp_path / str(count)).mkdir()
        copy = Edit(edit.untouched, tmp_path / str(count))
        copy("WITH RECURSIVE n(i) AS (SELECT 10 UNION ALL SELECT i + 1 FROM n WHERE i < 5009) "
             "INSERT INTO functions SELECT i, 'f' || i, 'm', 'f.c', i, NULL, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0 "
             "FROM n",
             f"WITH RECURSIVE n(i) AS (SELECT 10 UNION ALL SELECT i + 1 FROM n WHERE i < {count + 9}) "
             "INSERT INTO path_nodes SELECT i, CASE WHEN i % 10 THEN i - 1 END, 10 + i % 5000, 'f.c', i, 0 FROM n",
             "INSERT INTO paths SELECT id, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, '', id, id "
             "FROM path_nodes "
             "WHERE id >= 10")
        return copy.path

    base = paths(0)
    _validation_work(base)  # after the shape of the schema is known
    base_steps, base_statements = _validation_work(base)
    small_steps, small_statements = _validation_work(paths(20_000))
    large = paths(80_000)
    large_steps, large_statements = _validation_work(large)
    assert base_statements == small_statements == large_statements
    # Four times the nodes and paths, four times the work.
    assert 3.8 < (large_steps - base_steps) / (small_steps - base_steps) < 4.2
    # One scan of each: about 110 instructions of SQLite's for a node's
    # checks and as many for a path's (a second scan of either would add
    # as many again).
    assert (large_steps - base_steps) * 1000 / 80_000 < 260
    db = sqlite3.connect(large)
    db.execute("UPDATE paths SET allocs = -1 WHERE node_id = 80000")
    db.commit()
    db.close()
    with pytest.raises(MprofError, match="allocs is out of range"):
        with validate.validated(large, large):
            pass
    faulty_steps, _ = _validation_work(large)
    # One more scan, of a count per check: paths' 21 figures make it five
    # times the quick one at most.
    assert faulty_steps < 5 * large_steps


def test_the_check_comes_before_what_reading_ran_into(edit: Edit) -> None:
    """The database is read while it is checked: a reader that fails on
    a faulty one gets the check's line, on a sound one its own error."""
    with pytest.raises(ValueError, match="the reader's own"):
        with validate.validated(edit.path, edit.path):
            raise ValueError("the reader's own")
    edit("UPDATE paths SET allocs = 'many' WHERE rowid = 1", loosened=True)
    with pytest.raises(MprofError, match="allocs is not an integer in 1 row"):
        with validate.validated(edit.path, edit.path) as db:
            int(db.execute("SELECT allocs FROM paths WHERE rowid = 1").fetchone()[0])
    with pytest.raises(MprofError, match="allocs is not an integer in 1 row"):
        with validate.validated(edit.path, edit.path) as db:
            db.execute("SELECT no_such_column FROM paths")


def test_a_database_that_is_not_sqlite_inside(edit: Edit, capsys: pytest.CaptureFixture[str]) -> None:
    """Pages past the header overwritten: SQLite's own error, in one line."""
    data = bytearray(edit.path.read_bytes())
    data[4096:] = b"\x55" * (len(data) - 4096)
    edit.path.write_bytes(bytes(data))
    for command in COMMANDS:
        code, out, err = run(capsys, edit.arguments(command))
        assert code == 1 and err.startswith(f"mprof: {edit.path}: ") and err.count("\n") == 1, (command, err)


def test_the_reducers_database_is_not_validated_again(monkeypatch: pytest.MonkeyPatch, real_database: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """A report of data files reads the database it has just written
    without the checks; one of a database, with them."""
    checked = []
    monkeypatch.setattr(validate, "check", lambda db: checked.append(db))
    data = real_database.parent / "w.mprof"
    assert run(capsys, ["report", "--no-pager", str(data)])[0] == 0
    assert checked == []
    assert run(capsys, ["report", "--no-pager", str(real_database)])[0] == 0
    assert len(checked) == 1


def test_a_null_text_key(edit: Edit, capsys: pytest.CaptureFixture[str]) -> None:
    """SQLite lets a TEXT PRIMARY KEY hold NULL; the schema means none."""
    edit("UPDATE summary SET name = NULL WHERE name = 'frees'")
    assert_refused(edit, capsys, "table summary: name is NULL in 1 row")


def test_a_newer_database_through_a_pipe_is_named_as_given(edit: Edit, capsys: pytest.CaptureFixture[str]) -> None:
    edit("PRAGMA user_version = 99")
    fifo = edit.directory / "fifo.db"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(edit.path.read_bytes()))
    writer.start()
    code, _, err = run(capsys, ["report", "--no-pager", str(fifo)])
    writer.join()
    assert code == 1 and err.startswith(f"mprof: {fifo}: profile schema version 99 is newer than this mprof "), err
