"""The profile named on a command line: data files are reduced first (into
a temporary database), a database is used as it is.  Reports read only the
database.  Each input is opened and read once, so a pipe (<(cat app.mprof))
serves as well as a file."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..reducer import datafile, store
from ..reducer.errors import MprofError
from ..reducer.profile import reduce_files
from ..reducer.records import DataFile
from ..report.model import Model, load


@dataclass
class Inputs:
    files: list[DataFile]
    database: Path | None  # a profile database, given alone


def _read_once(path: Path) -> tuple[bytes, bool]:
    """The input's bytes, or for a regular SQLite file only its first ones
    (SQLite opens it itself); and whether it is a regular file."""
    try:
        with open(path, "rb") as file:
            regular = stat.S_ISREG(os.fstat(file.fileno()).st_mode)
            start = file.read(len(store.SQLITE_MAGIC))
            if regular and start == store.SQLITE_MAGIC:
                return start, True
            return start + file.read(), regular
    except OSError as error:
        raise MprofError(f"{path}: cannot open: {error.strerror or error}") from None


@contextmanager
def read_inputs(paths: list[Path]) -> Iterator[Inputs]:
    """Data files parsed, or one database: a database that came through a
    pipe is copied to a temporary file for SQLite, which must seek."""
    contents = [(path, *_read_once(path)) for path in paths]
    databases = [(path, data, regular) for path, data, regular in contents if data.startswith(store.SQLITE_MAGIC)]
    if databases and len(paths) > 1:
        raise MprofError(f"{databases[0][0]}: a profile database must be reported alone")
    if not databases:
        yield Inputs([datafile.parse(data, path) for path, data, _ in contents], None)
        return
    path, data, regular = databases[0]
    if regular:
        yield Inputs([], path)
        return
    with tempfile.TemporaryDirectory(prefix="mprof-") as directory:
        copy = Path(directory) / "input.db"
        copy.write_bytes(data)
        yield Inputs([], copy)


def load_profile(paths: list[Path]) -> Model:
    with read_inputs(paths) as inputs:
        if inputs.database:
            with store.open_database(inputs.database) as db:
                return load(db)
        return _reduce_and_load(inputs.files)


def reduce_into(files: list[DataFile], database: Path) -> None:
    """Reduces the data files into the database, then prints the warnings
    found on the way: an input refused gets only its error."""
    profile = reduce_files(files)
    store.write_database(profile, database)
    profile.warnings.print()


def _reduce_and_load(files: list[DataFile]) -> Model:
    with tempfile.TemporaryDirectory(prefix="mprof-") as directory:
        database = Path(directory) / "profile.db"
        reduce_into(files, database)
        db = store.open_database(database)
        try:
            return load(db)
        finally:
            db.close()
