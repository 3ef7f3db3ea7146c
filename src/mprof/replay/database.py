"""Adds a comparison to a profile database (schema.sql's replay tables):
one made by mprof db, or a new one that holds replays alone."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import astuple, fields
from pathlib import Path

from ..reducer import store
from .figures import Comparison, Figures

# replay_allocators' columns: the figures keep their names in the database.
ALLOCATOR_COLUMNS = ("replay_id", "position", "allocator", "library", "median_round",
                     *(field.name for field in fields(Figures)))


def add(comparison: Comparison, path: Path, existing: Path | None = None) -> None:
    """Makes the database in path, a new or empty file: a copy of the
    profile database existing, when there is one, with the rows of the
    comparison added, else one that holds replays alone.  mprof replay makes
    it in a temporary file that cli.output puts in place, so that a reader
    never sees half a database and a failure leaves the old one as it was."""
    if existing is not None:
        store.open_database(existing).close()  # refuses another application's file, or another version
    connection = store.connect_for_writing(path)
    try:
        if existing is not None:
            source = sqlite3.connect(store.read_only_uri(existing), uri=True)
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
