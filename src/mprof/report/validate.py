"""Checks a profile database before the reports read it, so that one edited
by hand or by another tool is refused in one line that names the table and
the problem, rather than ending a report in a traceback.

The checks are derived from schema.sql itself, created in an in-memory
database: its tables, their columns, declared types and primary keys
(PRAGMA table_info), unique keys (PRAGMA index_list), NOT NULL columns and
the REFERENCES clauses the reports follow (PRAGMA foreign_key_list).  The
file must have each table with those columns and unique keys, and:

- no NULL in a NOT NULL column, whatever the file's own schema says (a
  tool may have recreated a table without its constraints);
- INTEGER columns hold integers, REAL ones numbers, TEXT ones text or,
  as the schema's header says, a BLOB of the bytes of non-UTF-8 text;
- counts, byte figures and ids lie between 0 and 2^53, what a report's
  JSON and JavaScript hold exactly; times in nanoseconds (a column, or a
  summary figure, named ns or *_ns) between 0 and 2^63 - 1; addresses,
  biases and offsets, stored as signed two's complement (the schema's
  header), anywhere in 64 bits;
- every reference names a row that exists; a path node's parent comes
  before it (the schema says so, and a report walks up to the root);
- the summary of a profile holds every figure the reports read.

A sound database costs one query for its shape and one scan of each table,
which leaves out what SQLite has made sure of: the types of a STRICT
table's values, and a key that is its table's rowid, whose range its
least and greatest values give.  Only a faulty database is looked at
again, to say what is wrong.  Text stored as TEXT that is not UTF-8 is
read as the reducer's own BLOB text is read (store._read_row): its bytes,
undecodable ones as surrogates.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from .. import leak_kinds
from ..forked import InChild
from ..reducer import store
from ..reducer.errors import MprofError
from ..reducer.records import Summary
from . import suppressions

EXACT = 1 << 53  # the largest count or byte figure a report holds exactly
INT64_MAX = (1 << 63) - 1
# Unsigned 64-bit values stored as signed two's complement (the schema's
# header): any INTEGER is one.
SIGNED = frozenset({("modules", "bias"), ("modules", "start"), ("modules", "end"), ("sites", "offset"),
                    ("replays", "live_digest")})
# The whole-program figures the reports read by name: mprof(5)'s SUMM
# fields, and the longest run's elapsed_ns.
SUMMARY_NAMES = (*Summary.field_names(), "elapsed_ns")
# The TEXT columns of mprof's own words, not the program's: never a BLOB,
# and printable.
WORDS = (("modules", "build_id"), ("summary", "name"), ("run_figures", "name"),
         ("leaks", "kind"), ("leaks", "runtime"), ("paths", "runtime"), ("replays", "event_order"),
         ("replay_allocators", "allocator"))
# The tables of a name and a value each: a value's range is its name's.
NAMED_VALUES = ("summary", "run_figures")


class Problem(Exception):
    """What is wrong with a database, as its one line says it."""


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # as declared: INTEGER, TEXT, REAL
    not_null: bool  # NOT NULL, or in the primary key
    key: int  # its place in the primary key, from 1; 0: none


@dataclass(frozen=True)
class Reference:
    columns: tuple[str, ...]
    table: str
    to: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    unique: frozenset[tuple[str, ...]]  # the columns of each unique index
    references: tuple[Reference, ...]


@dataclass(frozen=True)
class Shape:
    """A table as a file declares it."""
    columns: tuple[Column, ...]
    unique: frozenset[tuple[str, ...]]  # the columns of each unique index
    # Its primary key is one INTEGER column that is the table's rowid, so
    # an integer in every row: not one declared DESC, nor of a table
    # WITHOUT ROWID, which have an index of their key and hold any value.
    keyed_by_rowid: bool
    # STRICT: SQLite has refused any value of another type than its
    # column's (NULL aside).
    strict: bool


def _shape(db: sqlite3.Connection) -> dict[str, Shape]:
    """Each table's columns and unique keys, in four queries."""
    columns: dict[str, list[Column]] = {}
    for table, name, declared, not_null, key in db.execute(
            "SELECT m.name, p.name, p.type, p.\"notnull\", p.pk FROM sqlite_master AS m "
            "JOIN pragma_table_info(m.name) AS p WHERE m.type = 'table' ORDER BY m.name, p.cid"):
        # A key's columns hold no NULL, though SQLite lets a TEXT PRIMARY KEY.
        columns.setdefault(table, []).append(Column(name, declared.upper(), bool(not_null) or key > 0, key))
    keys: dict[tuple[str, str], list[str]] = {}
    for table, index, name in db.execute(
            "SELECT m.name, l.name, i.name FROM sqlite_master AS m JOIN pragma_index_list(m.name) AS l "
            "JOIN pragma_index_info(l.name) AS i WHERE m.type = 'table' AND l.\"unique\" ORDER BY m.name, l.name, "
            "i.seqno"):
        keys.setdefault((table, index), []).append(name)
    key_indexed = {table for (table,) in db.execute(
        "SELECT m.name FROM sqlite_master AS m JOIN pragma_index_list(m.name) AS l "
        "WHERE m.type = 'table' AND l.origin = 'pk'")}
    strict = {table for (table,) in db.execute(
        "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND strict")}
    return {table: Shape(tuple(found), frozenset(tuple(key) for (owner, _), key in keys.items() if owner == table),
                         table not in key_indexed and [(c.type, c.key) for c in found if c.key] == [("INTEGER", 1)],
                         table in strict)
            for table, found in columns.items()}


@functools.cache
def schema() -> tuple[Table, ...]:
    """schema.sql's tables as SQLite made them, in the order it creates them."""
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(store.SCHEMA.read_text())
        shapes = _shape(db)
        tables = []
        for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                                  "ORDER BY rowid").fetchall():
            references: dict[int, list[tuple[str, str, str]]] = {}
            for number, _, parent, child, to, *_ in db.execute(f'PRAGMA foreign_key_list("{name}")'):
                references.setdefault(number, []).append((parent, child, to))
            # In the order of their columns (SQLite numbers them last first).
            order = [column.name for column in shapes[name].columns]
            tables.append(Table(name, shapes[name].columns, shapes[name].unique, tuple(
                Reference(tuple(child for _, child, _ in pairs), pairs[0][0], tuple(to for _, _, to in pairs))
                for pairs in sorted(references.values(), key=lambda pairs: order.index(pairs[0][1])))))
        return tuple(tables)
    finally:
        db.close()


def _quoted(name: str) -> str:
    return f'"{name}"'


def _integer_bounds(table: str, column: str) -> tuple[str, str, str] | None:
    """The least and greatest value of an INTEGER column, as SQL, and the
    range in words; None for a signed 64-bit value, which may be any."""
    if (table, column) in SIGNED:
        return None
    if column == "ns" or column.endswith("_ns"):
        return "0", str(INT64_MAX), "0 to 2^63 - 1"
    if table in NAMED_VALUES and column == "value":
        # A time by its name, else a count or byte figure.
        return ("0", f"(CASE WHEN name = 'ns' OR name LIKE '%\\_ns' ESCAPE '\\' THEN {INT64_MAX} ELSE {EXACT} END)",
                "0 to 2^53, or 2^63 - 1 for a time")
    return "0", str(EXACT), "0 to 2^53"


@dataclass(frozen=True)
class Check:
    """One check of one column: the SQL condition of a row that fails it."""
    column: str
    problem: str
    failing: str
    typed: bool  # a message names the failing value's type


@functools.cache
def _checks(table: Table) -> list[Check]:
    """Each check of each column, in the order they are reported."""
    checks = []
    for column in table.columns:
        c = _quoted(column.name)
        if column.not_null:
            checks.append(Check(column.name, "is NULL", f"{c} IS NULL", False))
        if column.type == "INTEGER":
            checks.append(Check(column.name, "is not an integer", f"typeof({c}) NOT IN ('integer', 'null')", True))
            bounds = _integer_bounds(table.name, column.name)
            if bounds is not None:
                low, high, words = bounds
                checks.append(Check(column.name, f"is out of range ({words})",
                                    f"typeof({c}) = 'integer' AND {c} NOT BETWEEN {low} AND {high}", False))
        elif column.type == "REAL":
            checks.append(Check(column.name, "is not a number", f"typeof({c}) NOT IN ('real', 'integer', 'null')",
                                True))
            checks.append(Check(column.name, "is out of range (-2^53 to 2^53)",
                                f"typeof({c}) IN ('real', 'integer') AND {c} NOT BETWEEN {-EXACT} AND {EXACT}", False))
        elif column.type in ("TEXT", "ANY"):  # ANY: a STRICT table's text that may be a BLOB
            checks.append(Check(column.name, "is not text", f"typeof({c}) NOT IN ('text', 'blob', 'null')", True))
    return checks


def _sound(table: Table, shape: Shape | None = None, ids: Mapping[str, tuple[int, int]] | None = None) -> str:
    """The SQL condition of a row that passes every check of _checks, as
    one expression.  Given the file's shape of the table, it leaves out
    what SQLite has made sure of: the key of a table keyed by its rowid,
    an integer in every row (its range is checked from its least and
    greatest values, which SQLite finds in its b-tree), and the types of
    a STRICT table's columns.  ids narrows a column's range to the ids it
    refers to, which lie between 0 and 2^53."""
    typed = shape is not None and shape.strict
    terms = []
    for column in table.columns:
        if shape is not None and shape.keyed_by_rowid and column.key:
            continue
        c = _quoted(column.name)
        kind, bounds = None, None
        if column.type == "INTEGER":
            kind = f"typeof({c}) = 'integer'"
            found = (ids or {}).get(column.name) or _integer_bounds(table.name, column.name)
            bounds = f"{c} BETWEEN {found[0]} AND {found[1]}" if found else None
        elif column.type == "REAL":
            kind, bounds = f"typeof({c}) IN ('real', 'integer')", f"{c} BETWEEN {-EXACT} AND {EXACT}"
        elif column.type in ("TEXT", "ANY"):
            kind = f"typeof({c}) IN ('text', 'blob')"
        if typed and column.type != "ANY":
            kind = None
        term = " AND ".join(part for part in (kind, bounds) if part)
        if column.not_null:
            terms.append(f"({term})" if kind else f"({c} IS NOT NULL{' AND ' + term if term else ''})")
        elif term:
            terms.append(f"({c} IS NULL OR {term})")
    return " AND ".join(terms) or "1"


def _dangling(table: Table, reference: Reference) -> str:
    """FROM and WHERE of the rows of table whose reference names no row."""
    present = " AND ".join(f"c.{_quoted(column)} IS NOT NULL" for column in reference.columns)
    match = " AND ".join(f"p.{_quoted(to)} = c.{_quoted(column)}"
                         for column, to in zip(reference.columns, reference.to, strict=True))
    return (f"FROM {_quoted(table.name)} AS c WHERE {present} AND NOT EXISTS "
            f"(SELECT 1 FROM {_quoted(reference.table)} AS p WHERE {match})")


# Rows the reports cannot read whatever their types: (table, what is wrong
# with a row, FROM and WHERE of those rows, the column that tells one).
# A node its own parent, or after it (a loop of parents has one), would
# send a report walking up to the root round the loop for ever.
ROWS = (("path_nodes", "a node's parent is not before it", "FROM path_nodes WHERE parent_id >= id", "id"),
        # The first node of a path's functions is at or before its own.
        ("paths", "same_functions_id comes after node_id, or is NULL where node_id is not",
         "FROM paths WHERE same_functions_id > node_id OR (same_functions_id IS NULL) != (node_id IS NULL)",
         "node_id"),
        # The reports know the leak kinds by their words.
        ("leaks", "kind is not a leak kind",
         f"FROM leaks WHERE kind NOT IN ({', '.join(repr(kind) for kind in leak_kinds.ALL)})", "id"),
        # A report ranks a cycle by its first member.
        ("cycles", "id is no function's cycle_id",
         "FROM cycles WHERE id NOT IN (SELECT cycle_id FROM functions WHERE cycle_id IS NOT NULL)", "id"))


def _rows(count: int) -> str:
    return f"{count} row{'s' if count != 1 else ''}"


def _shown(value: object) -> str:
    """A stored value as a message shows it."""
    if isinstance(value, bytes):
        return f"{len(value)} bytes"
    if isinstance(value, str):
        # Raw: the message is escaped once, as every message is, when printed.
        return f"'{value}'" if len(value) <= 40 else f"'{value[:40]}...'"
    return repr(value) if isinstance(value, float) else str(value)


# The shapes of the files read so far, by their schema's SQL, which
# decides them: PRAGMA table_info takes longer than all the other checks of
# a small database.
_SHAPES: dict[tuple[tuple[str, str, str], ...], dict[str, Shape]] = {}


def _check_shape(db: sqlite3.Connection) -> dict[str, Shape]:
    """The file's tables, once they are found to be schema.sql's."""
    statements = tuple(db.execute("SELECT type, name, sql FROM sqlite_master ORDER BY rowid"))
    shapes = _SHAPES.get(statements)
    if shapes is None:
        if len(_SHAPES) > 100:
            _SHAPES.clear()
        shapes = _SHAPES[statements] = _shape(db)
    for table in schema():
        if table.name not in shapes:
            raise Problem(f"table {table.name} is missing")
        columns, unique = shapes[table.name].columns, shapes[table.name].unique
        declared = {column.name: column.type for column in columns}
        for column in table.columns:
            if column.name not in declared:
                raise Problem(f"table {table.name}: column {column.name} is missing")
        expected = {column.name for column in table.columns}
        for column in columns:
            if column.name not in expected:
                raise Problem(f"table {table.name}: column {column.name} is not in schema.sql")
        for column in table.columns:
            if declared[column.name] != column.type:
                raise Problem(f"table {table.name}: column {column.name} is declared "
                              f"{declared[column.name] or 'without a type'}, not {column.type}")
        if [(c.name, c.key) for c in columns] != [(c.name, c.key) for c in table.columns]:
            raise Problem(f"table {table.name}: its columns are not in schema.sql's order, or not its primary key")
        for key in sorted(table.unique - unique):
            raise Problem(f"table {table.name}: has no unique key ({', '.join(key)}) as schema.sql's has")
    return shapes


def _check_values(db: sqlite3.Connection, table: Table) -> None:
    checks = _checks(table)
    counts = db.execute(f"SELECT {', '.join(f'TOTAL({check.failing})' for check in checks)} "
                        f"FROM {_quoted(table.name)}").fetchone()
    for check, count in zip(checks, counts, strict=True):
        if count:
            named = table.name in NAMED_VALUES and check.column == "value"
            value, kind, name = db.execute(
                f"SELECT {_quoted(check.column)}, typeof({_quoted(check.column)}), {'name' if named else 'NULL'} "
                f"FROM {_quoted(table.name)} WHERE {check.failing} LIMIT 1").fetchone()
            example = "" if value is None else f": {kind} {_shown(value)}" if check.typed else f": {_shown(value)}"
            if named:
                example += f" ({_shown(name)})"
            raise Problem(f"table {table.name}: {check.column} {check.problem} in {_rows(int(count))}{example}")


def _check_reference(db: sqlite3.Connection, table: Table, reference: Reference) -> None:
    dangling = _dangling(table, reference)
    (found,) = db.execute(f"SELECT EXISTS (SELECT 1 {dangling})").fetchone()
    if found:
        (count,) = db.execute(f"SELECT COUNT(*) {dangling}").fetchone()
        example = db.execute(f"SELECT {', '.join(f'c.{_quoted(c)}' for c in reference.columns)} {dangling} "
                             "LIMIT 1").fetchone()
        raise Problem(f"table {table.name}: {', '.join(reference.columns)} names no row of {reference.table} in "
                      f"{_rows(count)}: {', '.join(map(_shown, example))}")


def _check_words(db: sqlite3.Connection) -> None:
    """mprof's own words are printable UTF-8 text, where the program's
    (names, paths) may be any bytes."""
    for table, column in WORDS:
        for value, count in db.execute(f'SELECT "{column}", COUNT(*) FROM "{table}" GROUP BY 1'):
            if not isinstance(value, str) or not value.isprintable():
                raise Problem(f"table {table}: {column} is not printable UTF-8 text in {_rows(count)}: "
                              f"{_shown(value)}")


def _check_summary(db: sqlite3.Connection, filled: set[str]) -> None:
    """A database that holds a profile, not replays alone (mprof replay
    --db), has every figure of its summary."""
    if filled - {table.name for table in schema() if table.name.startswith("replay")}:
        stored = {name for (name,) in db.execute("SELECT name FROM summary")}
        missing = [name for name in SUMMARY_NAMES if name not in stored]
        if missing:
            more = f" and {len(missing) - 1} more of the figures the reports read" if len(missing) > 1 else ""
            raise Problem(f"table summary: has no row for {missing[0]}{more}")


def _check_suppressions(db: sqlite3.Connection) -> None:
    """The program's own leak suppressions, which the reports apply."""
    for run, text in db.execute("SELECT id, lsan_suppressions FROM runs WHERE lsan_suppressions != ''"):
        try:
            suppressions.parse(_lossless_text(text) if isinstance(text, bytes) else text, "lsan_suppressions")
        except MprofError as error:
            raise Problem(f"table runs: {error.message} (row {run})") from None


def _key_range(db: sqlite3.Connection, table: Table) -> tuple[int, int, int]:
    """The rows of a table keyed by its rowid, and its least and greatest
    key: three lookups, where MIN and MAX together would scan it."""
    key = _quoted(next(column.name for column in table.columns if column.key))
    (count,) = db.execute(f"SELECT COUNT(*) FROM {_quoted(table.name)}").fetchone()
    (low,) = db.execute(f"SELECT MIN({key}) FROM {_quoted(table.name)}").fetchone()
    (high,) = db.execute(f"SELECT MAX({key}) FROM {_quoted(table.name)}").fetchone()
    return count, low, high


def _by_range(reference: Reference, dense: dict[str, tuple[int, int]]) -> bool:
    return reference.to == ("id",) and len(reference.columns) == 1 and reference.table in dense


def _sound_quickly(db: sqlite3.Connection, filled: dict[str, bool], shapes: dict[str, Shape]) -> bool:
    """Whether every table's values, its references to tables of dense ids
    and its rows' own rules pass, one scan of each table: the usual case,
    where check() need look no further than the references to other
    tables.  False says only that check() must look closer."""
    dense = {}  # the least and greatest id of a table whose ids are every integer between
    for table in schema():
        if filled[table.name] and shapes[table.name].keyed_by_rowid:
            count, low, high = _key_range(db, table)
            if not 0 <= low <= high <= EXACT:
                return False
            if high - low + 1 == count and [c.name for c in table.columns if c.key] == ["id"]:
                dense[table.name] = (low, high)
    # Each table's rule is part of its one scan (the cycles' subquery is
    # made once, not per row).
    rules = {table_name: f"NOT ({rows.split(' WHERE ', 1)[1]})" for table_name, _, rows, _ in ROWS}
    for table in schema():
        if not filled[table.name]:
            continue
        terms = [_sound(table, shapes[table.name], {reference.columns[0]: dense[reference.table]
                                                    for reference in table.references if _by_range(reference, dense)})]
        if table.name in rules:
            terms.append(f"coalesce({rules[table.name]}, 1)")
        (unsound,) = db.execute(f"SELECT EXISTS (SELECT 1 FROM {_quoted(table.name)} WHERE NOT "
                                f"({' AND '.join(terms)}))").fetchone()
        if unsound:
            return False
    for table in schema():
        for reference in table.references if filled[table.name] else ():
            if not _by_range(reference, dense):
                _check_reference(db, table, reference)
    return True


def check(db: sqlite3.Connection) -> None:
    """Raises Problem, saying what is wrong with the database, if anything.
    db must read text as str, whatever its bytes (_lossless_text), and rows
    as tuples."""
    shapes = _check_shape(db)
    filled = db.execute("SELECT " + ", ".join(f"EXISTS (SELECT 1 FROM {_quoted(table.name)})" for table in schema())
                        ).fetchone()
    try:
        if _sound_quickly(db, {table.name: bool(rows) for table, rows in zip(schema(), filled, strict=True)},
                          shapes):
            _check_words(db)
            _check_summary(db, {table.name for table, rows in zip(schema(), filled, strict=True) if rows})
            _check_suppressions(db)
            return
    except Problem:
        pass  # the checks below find the first problem, in their order
    for table, rows in zip(schema(), filled, strict=True):
        if not rows:
            continue
        (unsound,) = db.execute(f"SELECT EXISTS (SELECT 1 FROM {_quoted(table.name)} WHERE NOT ({_sound(table)}))"
                                ).fetchone()
        if unsound:
            _check_values(db, table)
            raise AssertionError(f"table {table.name}: a row fails {_sound(table)} but no single check")
    for table, rows in zip(schema(), filled, strict=True):
        for reference in table.references if rows else ():
            _check_reference(db, table, reference)
    for table_name, problem, rows, column in ROWS:
        count, example = db.execute(f"SELECT COUNT(*), MIN({column}) {rows}").fetchone()
        if count:
            raise Problem(f"table {table_name}: {problem} in {_rows(count)}: {_shown(example)}")
    _check_words(db)
    _check_summary(db, {table.name for table, rows in zip(schema(), filled, strict=True) if rows})
    _check_suppressions(db)


def _lossless_text(value: bytes) -> str:
    return value.decode("utf-8", "surrogateescape")


def _checked(path: Path) -> Problem | sqlite3.Error | None:
    """What is wrong with the database at path, if anything, found on a
    connection of the calling thread's own."""
    try:
        db = sqlite3.connect(store.read_only_uri(path), uri=True)
    except sqlite3.Error as error:
        return error
    try:
        db.text_factory = _lossless_text
        check(db)
    except (Problem, sqlite3.Error) as error:
        return error
    finally:
        db.close()
    return None


Checking = Future[Problem | sqlite3.Error | None]


def start_checking(path: Path, pool: Executor) -> Checking:
    """The check validated() waits for, started on a thread of pool: SQLite
    lets Python's other threads run while it scans, so the checks of two
    databases, started together, take the time of one on two processors."""
    return pool.submit(_checked, path)


def _opened(path: Path, name: str | Path) -> sqlite3.Connection:
    """The profile database at path for reading (store.open_database), or
    its refusal, which names name, the file as its user gave it."""
    try:
        return store.open_database(path)
    except MprofError as error:
        # A database through a pipe is read from a copy: name the pipe.
        if error.message.startswith(f"{path}: ") and str(path) != str(name):
            raise MprofError(f"{name}: {error.message[len(str(path)) + 2:]}", error.exit_code) from None
        raise


@contextmanager
def validated(path: Path, name: str | Path, checking: Checking | None = None) -> Iterator[sqlite3.Connection]:
    """The profile database at path for reading (store.open_database),
    refused in one line that names name, the file as its user gave it,
    unless it holds what the reports read.  An SQLite error while it is
    read, too, ends in one line.

    It is checked on a thread of its own while the caller reads it (or
    checking, one start_checking() started): SQLite lets Python's other
    thread run while it scans, and the reading is done by then.  The
    caller must write nothing before the block ends: only then is the
    check's word known, and it comes before any error that reading a
    faulty database ran into."""
    db = _opened(path, name)
    with ExitStack() as stack:
        if checking is None:
            checking = start_checking(path, stack.enter_context(ThreadPoolExecutor(1)))
        try:
            yield db
        except sqlite3.Error as error:
            _refused(checking.result(), name)
            raise MprofError(f"{name}: not a readable profile database ({error})") from None
        except Exception:
            _refused(checking.result(), name)
            raise
        finally:
            db.close()
        _refused(checking.result(), name)


Read = TypeVar("Read")


def read_checked(path: Path, name: str | Path, read: Callable[[sqlite3.Connection], Read]) -> Read:
    """What read() gives of the profile database at path, refused as
    validated() refuses it.  read() runs in a process of its own while this
    one checks the database, and must write nothing: a read that a faulty
    database sends astray (a loop of parents, walked for ever) ends with
    the refusal, as the check comes first.  What read() gives, or an
    MprofError or SQLite error it raises, must pickle."""
    _opened(path, name).close()  # not a profile database, or a newer one's: said at once

    def in_child() -> Read:
        db = store.open_database(path)
        try:
            return read(db)
        finally:
            db.close()

    with InChild(in_child, f"the report of {name}", expected=(MprofError, sqlite3.Error)) as reading:
        _refused(_checked(path), name)
        try:
            return reading.result()
        except sqlite3.Error as error:
            raise MprofError(f"{name}: not a readable profile database ({error})") from None


def _refused(problem: Problem | sqlite3.Error | None, name: str | Path) -> None:
    if isinstance(problem, Problem):
        raise MprofError(f"{name}: {problem}") from None
    if problem is not None:
        raise MprofError(f"{name}: not a readable profile database ({problem})") from None
