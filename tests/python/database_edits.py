"""The profile database the tests of its validation start from, a real
run's, and the hand edits they make of it: statements run as sqlite3 runs
them, on the schema as made or loosened."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
MPROF = REPO_ROOT / "mprof"


def widgets_database(directory: Path, name: str) -> Path:
    """The database of a real run of widgets 200, made by mprof db into
    directory."""
    data, database = directory / "w.mprof", directory / name
    subprocess.run([MPROF, "run", "--quiet", "-o", data, REPO_ROOT / "build" / "widgets", "200"], check=True,
                   capture_output=True, timeout=60)
    subprocess.run([MPROF, "db", data, "-o", database], check=True, capture_output=True, timeout=60)
    return database


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
