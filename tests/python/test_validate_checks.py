"""report/validate.py's checks called in the test's own process, on copies
of a database the real reducer wrote from a real run of build/widgets,
edited with sqlite3 as a hand edit, another tool or a truncation would
leave it: each check's one line (the whole line, as a report prints it
after the file's name), or its acceptance.  test_database_validation.py
runs the same refusals through the commands; these call check() and its
parts directly, so that a mutation test sees which of them tells what.

widgets 200's database: one run, 9 modules, 4 functions (1 main,
2 make_blue_widget, 3 make_red_widget, 4 make_widget), no cycles, 6 path
nodes (1 main > 2 make_blue_widget > 3 make_widget, 4 main >
5 make_red_widget > 6 make_widget), 2 paths, 1 leak of 3 frames (the red
widgets', unknown: not classified; the blue ones were all freed),
4 edges, 1 site, 1 bin, 2 timeline points, 39 run figures, 40 summary
figures, no replays.
"""

from __future__ import annotations

import shutil
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from database_edits import edit_database, widgets_database
from mprof.reducer.errors import MprofError
from mprof.report import validate

pytestmark = pytest.mark.usefixtures("fresh_validation")


@pytest.fixture(scope="module")
def untouched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The database of a real run of widgets, made by mprof db."""
    return widgets_database(tmp_path_factory.mktemp("widgets"), "w.db")


class Copy:
    """A copy of the real database, edited with SQL and checked."""

    def __init__(self, untouched: Path, directory: Path) -> None:
        self.path = directory / "prof.db"
        shutil.copyfile(untouched, self.path)

    def edit(self, *statements: str, loosened: bool = False) -> Copy:
        """Runs statements on the copy; loosened first takes NOT NULL and
        STRICT out of its schema, as a tool that made its tables again
        might, so that any value can be stored anywhere."""
        edit_database(self.path, statements, loosened)
        return self

    def declared(self, table: str, before: str, after: str, *statements: str) -> Copy:
        """Runs statements while table's schema says after where it says
        before, then puts before back: a column's type changed for the
        edit, so that a value keeps a type its column would have turned it
        from (an integer in a TEXT column), as another tool's might."""
        self._rewrite(table, before, after)
        self.edit(*statements)
        self._rewrite(table, after, before)
        return self

    def _rewrite(self, table: str, before: str, after: str) -> None:
        db = sqlite3.connect(self.path)
        try:
            db.execute("PRAGMA writable_schema = ON")
            (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
            assert sql.count(before) == 1, (sql, before)
            db.execute("UPDATE sqlite_master SET sql = ? WHERE name = ?", (sql.replace(before, after), table))
            db.commit()
        finally:
            db.close()

    def connect(self) -> sqlite3.Connection:
        """A connection as validate's own (_checked): text as str, whatever its bytes."""
        db = sqlite3.connect(self.path)
        db.text_factory = validate._lossless_text
        return db

    def problem(self) -> str | None:
        """check()'s line, or None for a database it accepts."""
        db = self.connect()
        try:
            validate.check(db)
        except validate.Problem as problem:
            return str(problem)
        finally:
            db.close()
        return None

    def quickly(self) -> bool:
        """Whether the one scan of each table finds the database sound
        (_sound_quickly), where a Problem it raises counts as not."""
        db = self.connect()
        try:
            shapes = validate._check_shape(db)
            filled = {table.name: bool(db.execute(f'SELECT EXISTS (SELECT 1 FROM "{table.name}")').fetchone()[0])
                      for table in validate.schema()}
            try:
                return validate._sound_quickly(db, filled, shapes)
            except validate.Problem:
                return False
        finally:
            db.close()



@pytest.fixture
def copy(untouched: Path, tmp_path: Path) -> Copy:
    return Copy(untouched, tmp_path)


def test_the_untouched_database_is_sound(copy: Copy) -> None:
    assert copy.problem() is None
    assert copy.quickly() is True



# An edit and the one line check() refuses it with.
REFUSED = [
    # The shape: schema.sql's tables, columns, types, order, keys.
    pytest.param(["DROP TABLE leak_frames"], "table leak_frames is missing", id="a_dropped_table"),
    pytest.param(["ALTER TABLE sites DROP COLUMN temporaries"], "table sites: column temporaries is missing",
                 id="a_dropped_column"),
    pytest.param(["ALTER TABLE bins ADD COLUMN colour TEXT"], "table bins: column colour is not in schema.sql",
                 id="an_added_column"),
    pytest.param(["DROP INDEX functions_identity"],
                 "table functions: has no unique key (name, module) as schema.sql's has", id="a_dropped_unique_key"),
    pytest.param(["DROP INDEX functions_identity", "CREATE INDEX functions_identity ON functions(name, module)"],
                 "table functions: has no unique key (name, module) as schema.sql's has",
                 id="a_unique_key_made_again_not_unique"),
    pytest.param(["DROP INDEX functions_identity", "CREATE UNIQUE INDEX functions_identity ON functions(module, name)"],
                 "table functions: has no unique key (name, module) as schema.sql's has",
                 id="a_unique_key_of_its_columns_in_another_order"),
    pytest.param(["DROP INDEX functions_identity", "CREATE UNIQUE INDEX functions_name ON functions(name)"],
                 "table functions: has no unique key (name, module) as schema.sql's has",
                 id="a_unique_key_of_one_of_its_columns"),
    pytest.param(["ALTER TABLE cycles RENAME TO old", "CREATE TABLE cycles (id INTEGER PRIMARY KEY, "
                  "total_bytes INTEGER NOT NULL, self_bytes INTEGER NOT NULL, called INTEGER NOT NULL, "
                  "internal_calls INTEGER NOT NULL)", "DROP TABLE old"],
                 "table cycles: its columns are not in schema.sql's order, or not its primary key",
                 id="columns_in_another_order"),
    pytest.param(["ALTER TABLE cycles RENAME TO old", "CREATE TABLE cycles (id INTEGER, self_bytes INTEGER NOT NULL, "
                  "total_bytes INTEGER NOT NULL, called INTEGER NOT NULL, internal_calls INTEGER NOT NULL)",
                  "DROP TABLE old"],
                 "table cycles: its columns are not in schema.sql's order, or not its primary key",
                 id="a_table_without_its_primary_key"),
    pytest.param(["ALTER TABLE leak_frames RENAME TO old", "CREATE TABLE leak_frames (leak_id INTEGER NOT NULL, "
                  "position INTEGER NOT NULL, function_id INTEGER NOT NULL, file TEXT NOT NULL, "
                  "line INTEGER NOT NULL, PRIMARY KEY (position, leak_id))",
                  "INSERT INTO leak_frames SELECT * FROM old", "DROP TABLE old"],
                 "table leak_frames: its columns are not in schema.sql's order, or not its primary key",
                 id="a_primary_key_of_its_columns_in_another_order"),
    # Values: NULL, types and ranges.
    pytest.param(["UPDATE functions SET name = NULL WHERE id = 4"], "table functions: name is NULL in 1 row",
                 id="a_null_name"),
    pytest.param(["UPDATE paths SET allocs = NULL"], "table paths: allocs is NULL in 2 rows", id="null_allocs"),
    pytest.param(["UPDATE summary SET name = NULL WHERE name = 'frees'"], "table summary: name is NULL in 1 row",
                 id="a_null_text_key"),
    pytest.param(["UPDATE functions SET line = 'many' WHERE id = 1"],
                 "table functions: line is not an integer in 1 row: text 'many'", id="a_line_that_is_text"),
    pytest.param(["UPDATE functions SET line = 2.5 WHERE id > 2"],
                 "table functions: line is not an integer in 2 rows: real 2.5", id="lines_that_are_real"),
    pytest.param(["UPDATE functions SET line = x'0102' WHERE id = 1"],
                 "table functions: line is not an integer in 1 row: blob 2 bytes", id="a_line_that_is_a_blob"),
    pytest.param(["UPDATE paths SET allocs = -1 WHERE rowid = 1"],
                 "table paths: allocs is out of range (0 to 2^53) in 1 row: -1", id="negative_allocs"),
    pytest.param(["UPDATE paths SET peak_bytes = 9007199254740993 WHERE rowid = 1"],
                 "table paths: peak_bytes is out of range (0 to 2^53) in 1 row: 9007199254740993",
                 id="a_byte_figure_past_2_53"),
    pytest.param(["UPDATE runs SET start_unix_ns = -1"],
                 "table runs: start_unix_ns is out of range (0 to 2^63 - 1) in 1 row: -1", id="a_negative_time"),
    pytest.param(["UPDATE timeline SET ns = -3 WHERE rowid = 2"],
                 "table timeline: ns is out of range (0 to 2^63 - 1) in 1 row: -3", id="a_negative_time_named_ns"),
    pytest.param(["UPDATE summary SET value = 9007199254740993 WHERE name = 'allocs'"],
                 "table summary: value is out of range (0 to 2^53, or 2^63 - 1 for a time) in 1 row: "
                 "9007199254740993 ('allocs')", id="a_summary_count_past_2_53"),
    pytest.param(["UPDATE summary SET value = -1 WHERE name = 'elapsed_ns'"],
                 "table summary: value is out of range (0 to 2^53, or 2^63 - 1 for a time) in 1 row: -1 "
                 "('elapsed_ns')", id="a_negative_summary_time"),
    pytest.param(["UPDATE run_figures SET value = 'x' WHERE name = 'frees'"],
                 "table run_figures: value is not an integer in 1 row: text 'x' ('frees')",
                 id="a_run_figure_that_is_text"),
    pytest.param(["UPDATE run_figures SET value = -2 WHERE name = 'frees'"],
                 "table run_figures: value is out of range (0 to 2^53, or 2^63 - 1 for a time) in 1 row: -2 "
                 "('frees')", id="a_negative_run_figure"),
    pytest.param(["UPDATE functions SET name = 'x' || printf('%.50c', 'y') WHERE id = 1",
                  "UPDATE functions SET line = 'main' || printf('%.50c', 'n') WHERE id = 1"],
                 "table functions: line is not an integer in 1 row: text 'mainnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn...'",
                 id="a_long_text_shown_to_40_characters"),
    # References.
    pytest.param(["UPDATE edges SET callee_id = 99 WHERE rowid = 1"],
                 "table edges: callee_id names no row of functions in 1 row: 99", id="a_dangling_callee"),
    pytest.param(["UPDATE leak_frames SET function_id = 77 WHERE position = 0"],
                 "table leak_frames: function_id names no row of functions in 1 row: 77",
                 id="dangling_functions_in_leak_frames"),
    pytest.param(["DELETE FROM path_nodes WHERE id = 5"],
                 "table path_nodes: parent_id names no row of path_nodes in 1 row: 5", id="a_deleted_middle_node"),
    pytest.param(["DELETE FROM functions WHERE id = 2"],
                 "table edges: caller_id names no row of functions in 1 row: 2", id="a_deleted_middle_function"),
    pytest.param(["UPDATE functions SET cycle_id = 3 WHERE id = 4"],
                 "table functions: cycle_id names no row of cycles in 1 row: 3", id="a_cycle_of_an_empty_table"),
    pytest.param(["UPDATE modules SET run_id = 2 WHERE rowid = 3"],
                 "table modules: run_id names no row of runs in 1 row: 2", id="a_module_of_no_run"),
    # The rows' own rules.
    pytest.param(["UPDATE path_nodes SET parent_id = 3 WHERE id = 2"],
                 "table path_nodes: a node's parent is not before it in 1 row: 2", id="a_loop_of_parents"),
    pytest.param(["UPDATE path_nodes SET parent_id = id WHERE id IN (2, 5)"],
                 "table path_nodes: a node's parent is not before it in 2 rows: 2", id="nodes_their_own_parents"),
    pytest.param(["UPDATE paths SET same_functions_id = node_id + 1 WHERE node_id = 3"],
                 "table paths: same_functions_id comes after node_id, or is NULL where node_id is not in 1 row: 3",
                 id="paths_merged_with_a_later_node"),
    pytest.param(["UPDATE paths SET same_functions_id = NULL WHERE node_id = 6"],
                 "table paths: same_functions_id comes after node_id, or is NULL where node_id is not in 1 row: 6",
                 id="a_path_merged_with_no_node"),
    pytest.param(["INSERT INTO cycles VALUES (4, 10, 10, 1, 1)"],
                 "table cycles: id is no function's cycle_id in 1 row: 4", id="a_cycle_without_members"),
    # mprof's own words, the summary, the program's suppressions.
    pytest.param(["UPDATE leaks SET runtime = 'stdio' || char(10)"],
                 "table leaks: runtime is not printable UTF-8 text in 1 row: 'stdio\n'",
                 id="a_runtime_word_with_a_newline"),
    pytest.param(["UPDATE paths SET runtime = CAST(x'ff' AS TEXT) WHERE rowid = 1"],
                 "table paths: runtime is not printable UTF-8 text in 1 row: '\udcff'",
                 id="a_runtime_word_not_utf8"),
    pytest.param(["UPDATE modules SET build_id = x'41' WHERE rowid = 1"],
                 "table modules: build_id is not printable UTF-8 text in 1 row: 1 bytes",
                 id="a_build_id_that_is_a_blob"),
    pytest.param(["DELETE FROM summary WHERE name = 'free_null'"], "table summary: has no row for free_null",
                 id="a_summary_without_one_figure"),
    pytest.param(["DELETE FROM summary WHERE name IN ('elapsed_ns', 'frees')"],
                 "table summary: has no row for frees and 1 more of the figures the reports read",
                 id="a_summary_without_two_figures"),
    pytest.param(["UPDATE runs SET lsan_suppressions = 'leak:ok' || char(10) || 'nonsense'"],
                 "table runs: lsan_suppressions:2: not a suppression (TYPE:PATTERN): 'nonsense' (row 1)",
                 id="suppressions_that_are_not_suppressions"),
    pytest.param(["UPDATE runs SET lsan_suppressions = CAST('leak:x' || char(10) || 'caf' || x'e9' AS BLOB)"],
                 "table runs: lsan_suppressions:2: not a suppression (TYPE:PATTERN): 'caf\udce9' (row 1)",
                 id="suppressions_in_a_blob"),
]


@pytest.mark.parametrize(("statements", "line"), REFUSED)
def test_an_edit_is_refused_in_one_line(untouched: Path, tmp_path: Path, statements: list[str], line: str) -> None:
    """In the database as the reducer made it, where SQLite lets the edit
    be made, and in one whose tables were made again without NOT NULL and
    STRICT."""
    refused = 0
    for loosened in (False, True):
        (tmp_path / str(loosened)).mkdir()
        copy = Copy(untouched, tmp_path / str(loosened))
        try:
            copy.edit(*statements, loosened=loosened)
        except sqlite3.IntegrityError:
            assert not loosened
            continue
        assert copy.problem() == line, loosened
        refused += 1
    assert refused


def test_a_column_declared_of_another_type(copy: Copy) -> None:
    """A table made again with a column of another type, or of none,
    which SQLite lets hold any value: refused by its declaration."""
    copy._rewrite("bins", "types TEXT NOT NULL", "types BLOB NOT NULL")
    assert copy.problem() == "table bins: column types is declared BLOB, not TEXT"
    copy._rewrite("bins", "types BLOB NOT NULL", "types NOT NULL")
    assert copy.problem() == "table bins: column types is declared without a type, not TEXT"


def test_a_number_in_a_text_column(copy: Copy) -> None:
    # SQLite turns a number stored in a TEXT column into text: another
    # tool's table declared otherwise keeps it a number.
    copy.declared("functions", "name TEXT NOT NULL", "name NOT NULL", "UPDATE functions SET name = 5 WHERE id = 2")
    assert copy.problem() == "table functions: name is not text in 1 row: integer 5"


def test_a_real_in_a_text_column(copy: Copy) -> None:
    copy.declared("bins", "types TEXT NOT NULL", "types NOT NULL", "UPDATE bins SET types = 2.5")
    assert copy.problem() == "table bins: types is not text in 1 row: real 2.5"


def test_a_number_as_a_nodes_file(copy: Copy) -> None:
    """path_nodes is STRICT and its file ANY, which holds any type: the
    one column of the table whose type is checked."""
    copy.edit("UPDATE path_nodes SET file = 7 WHERE id > 3")
    assert copy.problem() == "table path_nodes: file is not text in 3 rows: integer 7"


def test_a_nodes_file_that_is_a_blob_is_text(copy: Copy) -> None:
    copy.edit("UPDATE path_nodes SET file = x'ff2e63' WHERE id = 1")
    assert copy.problem() is None
    assert copy.quickly() is True


def test_text_that_is_not_utf8_is_read_as_its_bytes(copy: Copy) -> None:
    copy.edit("UPDATE functions SET name = CAST(x'6d616b65ff' AS TEXT) WHERE id = 4",
              "UPDATE functions SET line = CAST(x'6d616b65ff' AS TEXT) WHERE id = 3")
    assert copy.problem() == "table functions: line is not an integer in 1 row: text 'make\udcff'"


REPLAY = ("INSERT INTO replays VALUES (1, 'synthetic', 1, 'threads', 1, 0, 10, 1, 5, 5, 0, 500, 300, 3, 0, 0, 100, -7)",
          "INSERT INTO replay_allocators VALUES (1, 0, 'glibc', 'libc.so.6', 1, 1000, 900, 100, 12.5, NULL, 3, "
          "4096, 8192, 300, 0.9, 0.8, 13.6)",
          "INSERT INTO replay_samples VALUES (1, 0, 0, 10, 300, 4096, 8192)")


def test_replays_are_read_with_the_profile(copy: Copy) -> None:
    copy.edit(*REPLAY)
    assert copy.problem() is None
    assert copy.quickly() is True


def test_replays_alone_need_no_summary(copy: Copy) -> None:
    """A database of replays alone (mprof replay --db) has no profile,
    and no summary; one of a profile's tables filled needs it whole."""
    copy.edit(*(f'DELETE FROM "{table.name}"' for table in validate.schema()), *REPLAY)
    assert copy.problem() is None
    assert copy.quickly() is True
    copy.edit("INSERT INTO bins VALUES (8, 1, 0, 8, 0, 0, 0, 0, '')")
    assert copy.problem() == (f"table summary: has no row for allocs and {len(validate.SUMMARY_NAMES) - 1} more of "
                              "the figures the reports read")
    copy.edit("DELETE FROM bins", "INSERT INTO runs SELECT 1, 'f', 1, 1, 'p', 'p', 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, '', "
              "0, 0, 0, 0, 0, 0, 0, 0")
    assert copy.problem() == (f"table summary: has no row for allocs and {len(validate.SUMMARY_NAMES) - 1} more of "
                              "the figures the reports read")


@pytest.mark.parametrize(("statement", "line"), [
    pytest.param("UPDATE replay_allocators SET ns_per_malloc = 'fast'",
                 "table replay_allocators: ns_per_malloc is not a number in 1 row: text 'fast'", id="text"),
    pytest.param("UPDATE replay_allocators SET ns_per_free = x'00'",
                 "table replay_allocators: ns_per_free is not a number in 1 row: blob 1 bytes", id="a_blob"),
    pytest.param("UPDATE replay_allocators SET heap_expansion = 1e300",
                 "table replay_allocators: heap_expansion is out of range (-2^53 to 2^53) in 1 row: 1e+300",
                 id="huge"),
    pytest.param("UPDATE replay_allocators SET average_waste = -9007199254740994.0",
                 "table replay_allocators: average_waste is out of range (-2^53 to 2^53) in 1 row: "
                 "-9007199254740994.0", id="below_minus_2_53"),
    pytest.param("UPDATE replay_allocators SET waste_at_peak = 9007199254740994.0",
                 "table replay_allocators: waste_at_peak is out of range (-2^53 to 2^53) in 1 row: "
                 "9007199254740994.0", id="past_2_53"),
    pytest.param("UPDATE replays SET event_order = 'threads' || char(9)",
                 "table replays: event_order is not printable UTF-8 text in 1 row: 'threads\t'", id="a_tab_in_a_word"),
    pytest.param("UPDATE replay_allocators SET allocator = x'676c69'",
                 "table replay_allocators: allocator is not printable UTF-8 text in 1 row: 3 bytes",
                 id="an_allocator_as_a_blob"),
    pytest.param("UPDATE replay_samples SET position = 7",
                 "table replay_samples: replay_id, position names no row of replay_allocators in 1 row: 1, 7",
                 id="a_sample_of_no_allocator"),
    pytest.param("UPDATE replay_samples SET replay_id = 2",
                 "table replay_samples: replay_id, position names no row of replay_allocators in 1 row: 2, 0",
                 id="a_sample_of_no_replay"),
    pytest.param("UPDATE replay_allocators SET replay_id = 3",
                 "table replay_allocators: replay_id names no row of replays in 1 row: 3",
                 id="an_allocator_of_no_replay"),
    pytest.param("UPDATE replays SET duration_ns = -1",
                 "table replays: duration_ns is out of range (0 to 2^63 - 1) in 1 row: -1", id="a_negative_duration"),
])
def test_a_replay_edit_is_refused(copy: Copy, statement: str, line: str) -> None:
    copy.edit(*REPLAY, statement)
    assert copy.problem() == line


def test_figures_at_their_bounds_are_read(copy: Copy) -> None:
    """2^53 is a count the reports hold exactly; a time may take 63 bits;
    an address, bias or offset any 64, stored as its two's complement."""
    copy.edit(*REPLAY,
              "UPDATE paths SET peak_bytes = 9007199254740992, allocs = 0",
              "UPDATE runs SET start_unix_ns = 9223372036854775807, elapsed_ns = 0",
              "UPDATE timeline SET ns = 9223372036854775807 WHERE rowid = 2",
              "UPDATE summary SET value = 9223372036854775807 WHERE name = 'elapsed_ns'",
              "UPDATE summary SET value = 9007199254740992 WHERE name = 'allocs'",
              "INSERT INTO run_figures VALUES (1, 'ns', 9223372036854775807)",
              "INSERT INTO run_figures VALUES (1, 'wait_ns', 9223372036854775807)",
              "UPDATE modules SET bias = -9223372036854775808, start = -1, end = 9223372036854775807",
              "UPDATE sites SET offset = -9223372036854775808",
              "UPDATE replays SET live_digest = -9223372036854775808, duration_ns = 9223372036854775807",
              "UPDATE replay_allocators SET ns_per_malloc = 9007199254740992.0, ns_per_free = -9007199254740992.0, "
              "ns_per_realloc = 0",
              # Keys of 0 and 2^53: the least and greatest of a table keyed
              # by its rowid are in range, its rows read in the one scan.
              "INSERT INTO leaks VALUES (0, 'unknown', 1, 8, '', 1, 0, 8, 0)",
              "INSERT INTO leaks VALUES (9007199254740992, 'unknown', 1, 8, '', 1, 0, 8, 0)")
    assert copy.problem() is None
    assert copy.quickly() is True


@pytest.mark.parametrize(("name", "line"), [
    # A time is named ns or *_ns: not one whose name merely ends in ns.
    pytest.param("turns", "table run_figures: value is out of range (0 to 2^53, or 2^63 - 1 for a time) in 1 row: "
                          "9007199254740993 ('turns')", id="turns"),
    pytest.param("wait-ns", "table run_figures: value is out of range (0 to 2^53, or 2^63 - 1 for a time) in 1 row: "
                            "9007199254740993 ('wait-ns')", id="wait-ns"),
    pytest.param("ns_total", "table run_figures: value is out of range (0 to 2^53, or 2^63 - 1 for a time) in 1 row: "
                             "9007199254740993 ('ns_total')", id="ns_total"),
    pytest.param("ns", None, id="ns"),
    pytest.param("x_ns", None, id="x_ns"),
])
def test_a_figure_past_2_53_is_a_time_by_its_name(copy: Copy, name: str, line: str | None) -> None:
    copy.edit(f"INSERT INTO run_figures VALUES (1, '{name}', 9007199254740993)")
    assert copy.problem() == line


def test_a_negative_key(copy: Copy) -> None:
    # A rowid may be negative: the least key is looked up, not every row's.
    copy.edit("INSERT INTO path_nodes SELECT -5, NULL, function_id, file, line, inlined FROM path_nodes LIMIT 1")
    assert copy.problem() == "table path_nodes: id is out of range (0 to 2^53) in 1 row: -5"
    assert copy.quickly() is False


def test_a_key_past_2_53(copy: Copy) -> None:
    copy.edit("INSERT INTO leaks VALUES (9007199254740993, 'unknown', 1, 8, '', 1, 0, 8, 0)")
    assert copy.problem() == "table leaks: id is out of range (0 to 2^53) in 1 row: 9007199254740993"
    assert copy.quickly() is False


def test_keys_that_leave_a_gap(copy: Copy) -> None:
    """Ids that are not every integer from the least to the greatest are
    looked up one by one: a reference between them to none is refused."""
    copy.edit("UPDATE path_nodes SET id = id + 10 WHERE id >= 4", "UPDATE path_nodes SET parent_id = 14 WHERE id = 15",
              "UPDATE paths SET node_id = 16, same_functions_id = 16 WHERE node_id = 6")
    assert copy.problem() == "table path_nodes: parent_id names no row of path_nodes in 1 row: 5"
    copy.edit("UPDATE path_nodes SET parent_id = 15 WHERE id = 16")
    assert copy.problem() is None
    assert copy.quickly() is True


def traced(copy: Copy) -> list[str]:
    """The statements check() runs on the copy, which it finds sound."""
    statements: list[str] = []
    db = copy.connect()
    try:
        db.set_trace_callback(statements.append)
        validate.check(db)
    finally:
        db.close()
    return statements


def test_references_to_every_id_between_are_not_looked_up(copy: Copy) -> None:
    """The ids of runs, functions, leaks and path_nodes are every integer
    from the least to the greatest: the one scan of a table that names
    them checks its references by that range.  Only functions' cycle_id,
    whose cycles is empty, is looked up (as NOT EXISTS, in one query)."""
    looked_up = [statement for statement in traced(copy) if " NOT EXISTS " in statement]
    assert len(looked_up) == 1 and 'FROM "functions" AS c' in looked_up[0] and 'FROM "cycles" AS p' in looked_up[0]


def scans(copy: Copy) -> dict[str, str]:
    """The query of check()'s one scan of each table, by its table."""
    return {statement.split('"')[1]: statement for statement in traced(copy)
            if statement.startswith('SELECT EXISTS (SELECT 1 FROM "') and '" WHERE NOT (' in statement}


def test_a_strict_tables_types_are_left_to_sqlite(copy: Copy) -> None:
    """paths and path_nodes are STRICT: their scan checks the type of no
    column but path_nodes' file, which is ANY (text or a BLOB), where the
    same tables made again without STRICT have each column's checked."""
    strict = scans(copy)
    assert "typeof(" not in strict["paths"]
    assert strict["path_nodes"].count("typeof(") == 1 and 'typeof("file")' in strict["path_nodes"]
    loosened = scans(copy.edit(loosened=True))
    assert 'typeof("allocs")' in loosened["paths"] and 'typeof("function_id")' in loosened["path_nodes"]


def test_keys_that_leave_two_gaps(copy: Copy) -> None:
    """Four nodes of ids 1 to 6 (2 and 5 gone) are not every id between:
    the references to the two deleted, from their children 3 and 6, are
    refused."""
    copy.edit("DELETE FROM path_nodes WHERE id IN (2, 5)")
    assert copy.problem() == "table path_nodes: parent_id names no row of path_nodes in 2 rows: 2"
    assert copy.quickly() is False


@pytest.mark.parametrize("key", ["id INTEGER PRIMARY KEY DESC", "id INTEGER PRIMARY KEY"])
def test_a_key_that_is_not_the_rowid(copy: Copy, key: str) -> None:
    """A key declared DESC, or of a table WITHOUT ROWID, is no alias of the
    rowid and may hold any value: each row's is checked."""
    copy.edit("ALTER TABLE leaks RENAME TO old",
              f"CREATE TABLE leaks ({key}, kind TEXT NOT NULL, blocks INTEGER NOT NULL, bytes INTEGER NOT NULL, "
              "runtime TEXT NOT NULL, chain_allocs INTEGER NOT NULL, chain_frees INTEGER NOT NULL, "
              f"chain_bytes INTEGER NOT NULL, chain_bytes_freed INTEGER NOT NULL)"
              f"{'' if 'DESC' in key else ' WITHOUT ROWID'}",
              "INSERT INTO leaks SELECT * FROM old", "DROP TABLE old")
    assert copy.problem() is None
    assert copy.quickly() is True
    copy.edit("INSERT INTO leaks VALUES ('x', 'unknown', 1, 1, '', 1, 0, 1, 0)")
    assert copy.problem() == "table leaks: id is not an integer in 1 row: text 'x'"
    copy.edit("UPDATE leaks SET id = -4 WHERE id = 'x'")
    assert copy.problem() == "table leaks: id is out of range (0 to 2^53) in 1 row: -4"


def test_a_strict_table_is_trusted_with_its_types(copy: Copy) -> None:
    """What makes a table's key its rowid and its types sure, as its file
    declares it."""
    db = copy.connect()
    try:
        shapes = validate._shape(db)
    finally:
        db.close()
    assert {name for name, shape in shapes.items() if shape.strict} == {"path_nodes", "paths"}
    assert {name for name, shape in shapes.items() if shape.keyed_by_rowid} == {
        "runs", "cycles", "functions", "sites", "bins", "leaks", "path_nodes", "replays"}
    assert shapes["functions"].unique == {("name", "module")}
    assert shapes["paths"].unique == {("node_id",)}
    assert shapes["modules"].unique == {("run_id", "start", "path")}
    assert shapes["summary"].columns == (validate.Column("name", "TEXT", True, 1),
                                         validate.Column("value", "INTEGER", True, 0))
    copy.edit(loosened=True)
    db = copy.connect()
    try:
        loosened = validate._shape(db)
    finally:
        db.close()
    assert {name for name, shape in loosened.items() if shape.strict} == set()
    assert loosened["summary"].columns == (validate.Column("name", "TEXT", True, 1),
                                           validate.Column("value", "INTEGER", False, 0))


def test_checked_says_what_is_wrong(copy: Copy, tmp_path: Path) -> None:
    """_checked(): None for a sound database, the Problem of a faulty one,
    SQLite's error for a file that is no database; never raises."""
    assert validate._checked(copy.path) is None
    copy.edit("UPDATE bins SET frees = -1")
    problem = validate._checked(copy.path)
    assert isinstance(problem, validate.Problem)
    assert str(problem) == "table bins: frees is out of range (0 to 2^53) in 1 row: -1"
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not SQLite at all, " * 300)
    error = validate._checked(garbage)
    assert isinstance(error, sqlite3.DatabaseError) and str(error) == "file is not a database"
    missing = validate._checked(tmp_path / "missing.db")
    assert isinstance(missing, sqlite3.OperationalError) and str(missing) == "unable to open database file"


def test_checked_reads_text_as_its_bytes(copy: Copy) -> None:
    # _checked's own connection reads text that is not UTF-8 without an
    # error (a decoding error would say the file is not readable).
    copy.edit("UPDATE leaks SET runtime = CAST(x'ff' AS TEXT)")
    assert str(validate._checked(copy.path)) == "table leaks: runtime is not printable UTF-8 text in 1 row: '\udcff'"


def test_validated_refuses_in_one_line_naming_the_file_as_given(copy: Copy) -> None:
    with validate.validated(copy.path, "given.db") as db:
        assert db.execute("SELECT COUNT(*) FROM functions").fetchone() == (4,)
    copy.edit("UPDATE edges SET calls = 'x' WHERE rowid = 1")
    with pytest.raises(MprofError) as refused:
        with validate.validated(copy.path, "given.db") as db:
            pass
    assert refused.value.message == "given.db: table edges: calls is not an integer in 1 row: text 'x'"
    assert refused.value.exit_code == 1


def test_validated_puts_the_check_before_the_readers_error(copy: Copy) -> None:
    """A reader that fails on a faulty database gets the check's line; on
    a sound one its own error, an SQLite error in one line."""
    with pytest.raises(ValueError, match="^the reader's own$"):
        with validate.validated(copy.path, "given.db"):
            raise ValueError("the reader's own")
    with pytest.raises(MprofError) as unreadable:
        with validate.validated(copy.path, "given.db") as db:
            db.execute("SELECT no_such_column FROM paths")
    assert unreadable.value.message == "given.db: not a readable profile database (no such column: no_such_column)"
    copy.edit("UPDATE paths SET allocs = 'many' WHERE node_id = 3", loosened=True)
    line = "given.db: table paths: allocs is not an integer in 1 row: text 'many'"
    for error in (ValueError("the reader's own"), sqlite3.OperationalError("no such column")):
        with pytest.raises(MprofError) as refused:
            with validate.validated(copy.path, "given.db"):
                raise error
        assert refused.value.message == line


def test_validated_waits_for_a_check_started_before(copy: Copy) -> None:
    copy.edit("UPDATE sites SET line = -2")
    with ThreadPoolExecutor(1) as pool:
        checking = validate.start_checking(copy.path, pool)
        with pytest.raises(MprofError) as refused:
            with validate.validated(copy.path, "given.db", checking):
                pass
    assert refused.value.message == "given.db: table sites: line is out of range (0 to 2^53) in 1 row: -2"


def test_a_file_that_is_no_database_is_refused_in_one_line(copy: Copy, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not SQLite at all, " * 300)
    with pytest.raises(MprofError) as refused:
        with validate.validated(garbage, "given.db"):
            pass
    assert refused.value.message == "given.db: not a readable profile database (file is not a database)"
    # The check's SQLite error is said after a read that went well.
    with ThreadPoolExecutor(1) as pool:
        checking = validate.start_checking(garbage, pool)
        with pytest.raises(MprofError) as refused:
            with validate.validated(copy.path, "given.db", checking):
                pass
    assert refused.value.message == "given.db: not a readable profile database (file is not a database)"


def test_another_applications_database_names_the_file_as_given(tmp_path: Path) -> None:
    """A database through a pipe is read from a copy: its refusal names the
    pipe, not the copy."""
    foreign = tmp_path / "copy.db"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE t (x)")
    db.close()
    for name in ("/dev/fd/63", foreign):
        with pytest.raises(MprofError) as refused:
            with validate.validated(foreign, name):
                pass
        assert refused.value.message == f"{name}: not an mprof profile database (an SQLite file of another application)"
        with pytest.raises(MprofError) as refused:
            validate.read_checked(foreign, name, lambda db: 1)
        assert refused.value.message == f"{name}: not an mprof profile database (an SQLite file of another application)"


def test_a_newer_database_names_the_file_as_given(copy: Copy) -> None:
    copy.edit("PRAGMA user_version = 99")
    with pytest.raises(MprofError) as refused:
        with validate.validated(copy.path, "given.db"):
            pass
    assert refused.value.message == "given.db: profile schema version 99 is newer than this mprof understands (15)"


def test_read_checked_gives_what_read_gives(copy: Copy) -> None:
    assert validate.read_checked(copy.path, "given.db", lambda db: db.execute("SELECT COUNT(*) FROM paths").fetchone()
                                 ) == (2,)
    with pytest.raises(MprofError) as unreadable:
        validate.read_checked(copy.path, "given.db", lambda db: db.execute("SELECT no_such_column FROM paths"))
    assert unreadable.value.message == "given.db: not a readable profile database (no such column: no_such_column)"
    copy.edit("UPDATE path_nodes SET parent_id = id WHERE id = 2")
    with pytest.raises(MprofError) as refused:
        validate.read_checked(copy.path, "given.db", lambda db: db.execute("SELECT no_such_column FROM paths"))
    assert refused.value.message == "given.db: table path_nodes: a node's parent is not before it in 1 row: 2"


def test_a_schemas_shape_is_found_once(copy: Copy) -> None:
    """The shape of a schema already read is kept: a second check of the
    same file runs no PRAGMA table_info, the slowest of the checks of a
    small database."""
    assert any("pragma_table_info" in statement for statement in traced(copy))
    assert not any("pragma_table_info" in statement for statement in traced(copy))


@pytest.mark.parametrize(("kept", "after"), [(100, 101), (101, 1)])
def test_the_shapes_kept_are_at_most_a_hundred_and_one(copy: Copy, kept: int, after: int) -> None:
    """_check_shape keeps each schema's shape, and forgets them all before
    it would keep a 102nd: a process that reads many databases of edited
    schemas grows no further."""
    for n in range(kept):
        validate._SHAPES[(("table", f"t{n}", ""),)] = {}
    db = copy.connect()
    try:
        validate._check_shape(db)
    finally:
        db.close()
    assert len(validate._SHAPES) == after


@pytest.mark.parametrize(("length", "shown"), [(40, "'" + "y" * 40 + "'"), (41, "'" + "y" * 40 + "...'")])
def test_a_text_is_shown_to_40_characters(copy: Copy, length: int, shown: str) -> None:
    copy.edit(f"UPDATE functions SET line = printf('%.{length}c', 'y') WHERE id = 1")
    assert copy.problem() == f"table functions: line is not an integer in 1 row: text {shown}"


def test_a_read_that_fails_on_its_own_is_named(copy: Copy) -> None:
    """A read that raises what it should not (a bug) fails in the forked
    process that ran it: its error names the report of the file as given."""
    with pytest.raises(RuntimeError) as bug:
        validate.read_checked(copy.path, "given.db", lambda db: 1 // 0)
    assert str(bug.value).splitlines()[0] == "the report of given.db failed:"
    assert str(bug.value).splitlines()[-1] == "ZeroDivisionError: integer division or modulo by zero"
