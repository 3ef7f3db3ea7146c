"""Writes a reduced profile into SQLite (schema.sql) and opens one for reading."""

from __future__ import annotations

import functools
import itertools
import os
import sqlite3
import urllib.parse
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import leak_kinds
from . import core, runtime_blocks
from .errors import MprofError
from .escape import printable
from .liveness import still_running

if TYPE_CHECKING:  # a report of a database imports none of the reduction
    from .callgraph import Leak
    from .pathtree import PathTree
    from .profile import Profile, Run

SCHEMA = Path(__file__).with_name("schema.sql")
SQLITE_MAGIC = b"SQLite format 3\0"


def _schema_pragma(name: str) -> int:
    for line in SCHEMA.read_text().splitlines():
        if line.startswith(f"PRAGMA {name}"):
            return int(line.split("=")[1].strip(" ;"))
    raise AssertionError(f"schema.sql sets no {name}")


def schema_version() -> int:
    return _schema_pragma("user_version")


def application_id() -> int:
    return _schema_pragma("application_id")


def _stored(value: object) -> object:
    """Text from the program's world exactly as it was: TEXT when it is
    UTF-8, else a BLOB of its bytes (undecodable bytes arrive from the
    data file as surrogates; SQLite's TEXT cannot hold them).  A 64-bit
    value past SQLite's signed INTEGER (a bias of a library loaded below its
    link address) as its two's complement."""
    if isinstance(value, int) and value >= 1 << 63:
        return value - (1 << 64)
    if isinstance(value, str):
        return _lossless_text(value)
    return value


def _lossless_text(text: str) -> str | bytes:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape")
    return text


def _read_row(cursor: sqlite3.Cursor, row: tuple[object, ...]) -> tuple[object, ...]:
    return tuple(value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value for value in row)


class _LosslessConnection(sqlite3.Connection):
    """Stores every text value losslessly (see _stored)."""

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        return super().execute(sql, tuple(map(_stored, parameters)) if isinstance(parameters, tuple) else parameters)

    def executemany(self, sql: str, rows: Any, /) -> sqlite3.Cursor:
        rows = rows if isinstance(rows, list) else list(rows)
        if _stored_as_they_are(rows):
            return super().executemany(sql, rows)
        return super().executemany(sql, (tuple(map(_stored, row)) for row in rows))


def _stored_as_they_are(rows: list[Any]) -> bool:
    """No value of the rows needs _stored: a look at each value is several
    times cheaper than a call of _stored for each, and most rows are numbers."""
    for row in rows:
        for value in row:
            kind = type(value)
            if kind is int:
                if value >= 1 << 63:
                    return False
            elif kind is str and not value.isascii():
                return False
    return True


def connect_for_writing(path: Path | str) -> sqlite3.Connection:
    """A connection that stores every text value losslessly (see _stored)."""
    return sqlite3.connect(path, factory=_LosslessConnection)


def read_only_uri(path: Path) -> str:
    """SQLite's URI for reading path: quoted, so that a ? or # in a name
    is part of the name, not the start of the URI's query or fragment."""
    return f"file:{urllib.parse.quote(os.fsencode(path))}?mode=ro"


def open_database(path: Path) -> sqlite3.Connection:
    """A profile database for reading; refuses one written by a newer mprof."""
    try:
        connection = sqlite3.connect(read_only_uri(path), uri=True)
        application = connection.execute("PRAGMA application_id").fetchone()[0]
        version = connection.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.Error as error:
        raise MprofError(f"{path}: not a readable profile database ({error})") from None
    if application != application_id():
        connection.close()
        raise MprofError(f"{path}: not an mprof profile database (an SQLite file of another application)")
    if version > schema_version():
        connection.close()
        raise MprofError(f"{path}: profile schema version {version} is newer than this mprof understands "
                         f"({schema_version()})")
    if version < 1:
        connection.close()
        raise MprofError(f"{path}: not an mprof profile database")
    if version < schema_version():
        connection.close()
        raise MprofError(f"{path}: profile schema version {version} is older than this mprof reads "
                         f"({schema_version()}); make it again from the data files with mprof db")
    connection.row_factory = _read_row
    return connection


def write_database(profile: Profile, path: Path) -> None:
    """Makes the database in path, a new or empty file: a temporary one that
    the caller puts in place (mprof db through cli.output, which alone
    decides how a command's file replaces what was there)."""
    with DatabaseWriter(path) as writer:
        writer.finish(profile)


class DatabaseWriter:
    """Makes a profile database in path, a new or empty file: the schema
    now, the path tables as soon as the reduction has its paths (hundreds
    of thousands of rows, written by libmprof-reduce through a connection
    and on a thread of its own), the rest of the tables once it is done."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._ids: dict[tuple[str, str], int] = {}
        self._paths_written: core.Writing | None = None
        self._connection = connect_for_writing(path)
        try:
            # A database being made, put in place only once whole: nothing to roll back or to sync.  Pages of
            # 16 KB, not 4: a big program's path tables go in a third faster, and read as fast.
            self._connection.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; "
                                           "PRAGMA page_size = 16384")
            self._connection.executescript(SCHEMA.read_text())
            self._connection.commit()  # before the library's connection writes
        except BaseException:
            self._close()
            raise

    def __enter__(self) -> DatabaseWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        try:
            self._close()
        except Exception:
            if kind is None:
                raise  # else the error that stopped the reduction is the one to tell

    def start_paths(self, profile: Profile) -> None:
        """Starts writing the path tables: profile has every function and
        path, though its call graph's cycles and totals are yet to come."""
        self._ids = {key: number for number, key in enumerate(sorted(profile.graph.functions), start=1)}
        self._paths_written = _start_paths(self._path, profile.paths, self._ids)

    def finish(self, profile: Profile) -> None:
        """Writes the other tables, once the path tables are in."""
        try:
            if self._paths_written is None:
                self.start_paths(profile)
            assert self._paths_written is not None and len(self._ids) == len(profile.graph.functions)
            _insert(self._connection, profile, self._ids, self._paths_written)
            self._connection.commit()
        except OverflowError:
            # Each file's sections are checked to add up within 64 bits;
            # only several absurd files together get here.
            names = ", ".join(str(run.path) for run in profile.runs)
            raise MprofError(f"{names}: figures add up past 64 bits, more than any run allocates") from None
        finally:
            self._close()

    def _close(self) -> None:
        """Waits for the path tables' thread, then closes."""
        try:
            if self._paths_written is not None:
                self._paths_written.finish()
        finally:
            self._connection.close()


def _insert(db: sqlite3.Connection, profile: Profile, ids: dict[tuple[str, str], int],
            paths_written: core.Writing) -> None:
    """The tables other than the path tables: their rows are made while
    the path tables are written, and go in once they are."""
    graph = profile.graph
    cycles = [(c.number, c.self_bytes, c.total_bytes, c.called, c.internal_calls) for c in graph.cycles]
    functions = [(ids[key], f.name, f.module, f.file, f.line, f.cycle, f.self_calls, *f.self_bytes,
                  *f.kept_bytes, f.kept_objects, f.total_bytes, f.called, f.recursive_calls)
                 for key, f in sorted(graph.functions.items())]
    edges = sorted((ids[caller], ids[callee], e.calls, *e.bytes) for (caller, callee), e in graph.edges.items())
    sites = sorted(graph.sites.values(), key=lambda s: (s.module, s.offset))
    site_rows = [(n, ids[s.function], s.module, s.offset, s.file, s.line, s.calls, s.frees, *s.bytes, *s.freed,
                  s.temporaries, s.peak_blocks, s.peak_bytes) for n, s in enumerate(sites, start=1)]
    bins = [(b.size, b.allocs, b.frees, b.bytes, b.bytes_freed, b.temporaries, b.peak_blocks, b.peak_bytes,
             ", ".join(b.types)) for b in sorted(profile.bins.values(), key=lambda b: b.size)]
    leak_rows, leak_frames = _leak_rows(graph.leaks.values(), ids)
    paths_written.finish()
    for number, run in enumerate(profile.runs, start=1):
        _insert_run(db, number, run)
    for table, rows in (("summary", sorted(profile.summary.items())), ("cycles", cycles), ("functions", functions),
                        ("edges", edges), ("sites", site_rows), ("bins", bins), ("leaks", leak_rows),
                        ("leak_frames", leak_frames)):
        _insert_rows(db, table, rows)


# Rows go in this many to a statement: bound through one statement run,
# not one each, cc1plus's 39,000 leak frames go in twice as fast.
_ROWS_AT_ONCE = 64


def _insert_rows(db: sqlite3.Connection, table: str, rows: Sequence[tuple[object, ...]]) -> None:
    """rows into table, which they alone fill: as they are, and only where
    SQLite refuses one of them (text that is not UTF-8, a number past 63
    bits: rare) all of them again, each value _stored.  A look at every
    value in Python took as long as SQLite's inserting them."""
    try:
        _insert_as_they_are(db, table, rows)
    except (OverflowError, UnicodeEncodeError):
        # A database being made has no journal to roll back (DatabaseWriter).
        db.execute(f"DELETE FROM {table}")
        _insert_as_they_are(db, table, [tuple(map(_stored, row)) for row in rows])


def _insert_as_they_are(db: sqlite3.Connection, table: str, rows: Sequence[tuple[object, ...]]) -> None:
    """rows into table, _ROWS_AT_ONCE to a statement, through sqlite3's own
    executemany."""
    if not rows:
        return
    insert = functools.partial(sqlite3.Connection.executemany, db)
    row = "(" + ", ".join("?" * len(rows[0])) + ")"
    whole = len(rows) - len(rows) % _ROWS_AT_ONCE
    if whole:
        insert(f"INSERT INTO {table} VALUES " + ", ".join([row] * _ROWS_AT_ONCE),
               [tuple(itertools.chain.from_iterable(rows[at:at + _ROWS_AT_ONCE]))
                for at in range(0, whole, _ROWS_AT_ONCE)])
    insert(f"INSERT INTO {table} VALUES {row}", rows[whole:])


def _start_paths(path: Path, tree: PathTree, ids: dict[tuple[str, str], int]) -> core.Writing:
    """Starts writing the nodes on some path (start-up frames above main
    are on none when every path reaches main), numbered from 1 in their
    order, and the paths with what keeps their blocks on purpose
    (runtime_blocks), through libmprof-reduce, which writes them on a thread
    of its own."""
    functions = tree.names.functions
    numbered = tree.tree.numbered([runtime_blocks.groups_of(name) for name, _ in functions],
                                  [not runtime_blocks.in_stdcxx(module) for _, module in functions])
    runtimes: dict[str, int] = {}
    runtime = []
    for innermost, groups, outside in zip(numbered.chain_innermost, numbered.chain_groups, numbered.chain_outside,
                                          strict=True):
        kept_by = runtime_blocks.kept_by(runtime_blocks.Chain(
            functions[innermost], groups, functions[outside] if outside >= 0 else None)) if innermost >= 0 else ""
        runtime.append(runtimes.setdefault(kept_by, len(runtimes)))
    # The paths' names are sorted as the reports print them.
    shown = [printable(name) for name, _ in functions]
    rank = {name: place for place, name in enumerate(sorted(set(shown)))}
    # Functions of start-up code only are on no node written.
    function_ids = [ids.get(key, 0) for key in functions]
    ranks = [rank[name] for name in shown]
    files = [_lossless_text(name) for name in tree.names.files]
    return numbered.start_writing(path, function_ids, ranks, files, runtime, list(runtimes))


# The kinds' rows of a chain in memcheck's order, lost first, as its
# loss records are.
_KIND_ORDER = {kind: rank for rank, kind in enumerate((*leak_kinds.KINDS, leak_kinds.UNKNOWN))}
# Kinds whose blocks a runtime may keep on purpose: a lost block is a leak
# whoever allocated it.
_RUNTIME_KINDS = frozenset((leak_kinds.REACHABLE, leak_kinds.UNKNOWN))


def _leak_rows(leaks: Iterable[Leak], ids: dict[tuple[str, str], int]) -> tuple[list[tuple[Any, ...]],
                                                                                          list[tuple[Any, ...]]]:
    """The leaks table's rows, one per chain and kind, and leak_frames': the
    lost first, then the most bytes."""
    rows = sorted(((kind, blocks, size, leak) for leak in leaks for kind, (blocks, size) in leak.kinds.items()),
                  key=lambda row: (_KIND_ORDER[row[0]], -row[2], -row[1],
                                   [(ids[f], line) for f, _, line in row[3].frames]))
    leak_rows = [(n, kind, blocks, size,
                  runtime_blocks.kept_by(runtime_blocks.chain_of([function for function, _, _ in leak.frames]))
                  if kind in _RUNTIME_KINDS else "", leak.allocs, leak.frees, leak.bytes, leak.bytes_freed)
                 for n, (kind, blocks, size, leak) in enumerate(rows, 1)]
    leak_frames = [(n, position, ids[function], file, line) for n, (_, _, _, leak) in enumerate(rows, 1)
                   for position, (function, file, line) in enumerate(leak.frames)]
    return leak_rows, leak_frames


def _insert_run(db: sqlite3.Connection, number: int, run: Run) -> None:
    h = run.data.header
    running = h.checkpoint and still_running(h.pid, h.start_unix_ns, run.data.program.exe)
    scan = run.data.leaks
    scanned = (1, scan.flags, scan.threads_stopped, scan.threads_unstopped, scan.root_bytes, scan.block_bytes,
               scan.scan_ns) if scan else (0,) * 7
    db.execute(f"INSERT INTO runs VALUES ({', '.join('?' * 25)})",
               (number, run.path, h.pid, h.ppid, run.data.program.exe, " ".join(run.data.program.argv),
                h.start_unix_ns, h.elapsed_ns, int(h.call_graph), int(h.final), int(h.checkpoint), int(running),
                h.end_signal,
                int(h.forked), h.stack_depth, h.leak_depth, run.data.program.lsan_suppressions, int(h.attached),
                *scanned))
    db.executemany("INSERT OR REPLACE INTO timeline VALUES (?, ?, ?, ?, ?, ?)",
                   [(number, point.ns, point.live_bytes, point.live_blocks, point.resident_bytes, point.mapped_bytes)
                    for point in run.data.timeline])
    db.executemany("INSERT INTO run_figures VALUES (?, ?, ?)",
                   [(number, name, value) for name, value in sorted(run.data.summary.items())])
    db.executemany("INSERT OR IGNORE INTO modules VALUES (?, ?, ?, ?, ?, ?, ?)",
                   [(number, m.path, m.bias, m.start, m.end, m.build_id.hex(), int(m.unloaded))
                    for m in run.data.modules])
