"""Hand edits of a profile database, for the tests of its validation: the
statements run as sqlite3 runs them, on the schema as made or loosened."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def edit_database(path: Path, statements: tuple[str, ...], loosened: bool = False) -> None:
    """Runs statements on the database; loosened first takes the NOT NULL
    constraints and STRICT out of its schema, as a tool that recreated its
    tables might, so that a NULL, or a value of any type, can be stored
    anywhere."""
    db = sqlite3.connect(path)
    try:
        if loosened:
            db.execute("PRAGMA writable_schema = ON")
            db.execute("UPDATE sqlite_master SET sql = replace(replace(sql, 'NOT NULL', ''), ') STRICT', ')') "
                       "WHERE type = 'table'")
            db.commit()
            db.close()
            db = sqlite3.connect(path)
        for statement in statements:
            db.execute(statement)
        db.commit()
    finally:
        db.close()
