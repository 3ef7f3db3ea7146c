"""Adds a comparison to a profile database (schema.sql's replay tables):
one made by mprof db, or a new one that holds replays alone."""

from __future__ import annotations

import os
import sqlite3
import tempfile
import time
from dataclasses import astuple, fields
from pathlib import Path

from ..reducer import store
from ..reducer.errors import MprofError
from .figures import Comparison, Figures

# replay_allocators' columns: the figures keep their names in the database.
ALLOCATOR_COLUMNS = ("replay_id", "position", "allocator", "library", "median_round",
                     *(field.name for field in fields(Figures)))


def add(comparison: Comparison, path: Path) -> None:
    """Writes a copy beside path with the rows added, then renames it over
    path: a reader never sees half a database, and a failure leaves the old
    one as it was."""
    exists = path.exists()
    if exists:
        store.open_database(path).close()  # refuses another application's file, or another version
    directory = path.parent if str(path.parent) else Path(".")
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as error:
        raise MprofError(f"{path}: cannot write: {error.strerror}") from None
    os.close(descriptor)
    try:
        connection = store.connect_for_writing(temporary)
        try:
            if exists:
                source = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
                try:
                    source.backup(connection)
                finally:
                    source.close()
            else:
                connection.executescript(store.SCHEMA.read_text())
            insert(connection, comparison, time.time_ns())
            connection.commit()
        finally:
            connection.close()
        if exists:
            os.chmod(temporary, os.stat(path).st_mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def insert(db: sqlite3.Connection, comparison: Comparison, start_unix_ns: int) -> int:
    """The rows of one comparison; returns its replays.id."""
    w = comparison.workload
    cursor = db.execute(
        "INSERT INTO replays (source, synthetic, event_order, repeats, start_unix_ns, events, threads, allocations, "
        "frees, reallocs, bytes_allocated, peak_live_bytes, peak_live_blocks, unmatched_frees, duration_ns, max_size, "
        "live_digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (comparison.source, int(comparison.synthetic), comparison.order, comparison.repeat, start_unix_ns, w.events,
         w.threads, w.allocations, w.frees, w.reallocs, w.bytes_allocated, w.peak_live_bytes, w.peak_live_blocks,
         w.unmatched_frees, w.duration_ns, w.max_size, w.live_digest))
    replay_id = cursor.lastrowid
    assert replay_id is not None
    db.executemany(f"INSERT INTO replay_allocators ({', '.join(ALLOCATOR_COLUMNS)}) "
                   f"VALUES ({', '.join('?' * len(ALLOCATOR_COLUMNS))})",
                   [(replay_id, position, allocator.name, allocator.library, allocator.median_run + 1,
                     *astuple(allocator.median))
                    for position, allocator in enumerate(comparison.allocators)])
    db.executemany("INSERT INTO replay_samples VALUES (?, ?, ?, ?, ?, ?, ?)",
                   [(replay_id, position, number, *astuple(sample))
                    for position, allocator in enumerate(comparison.allocators)
                    for number, sample in enumerate(allocator.samples)])
    return replay_id
