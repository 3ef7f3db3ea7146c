"""The profile named on a command line: data files are reduced first (into
a temporary database), a database is used as it is.  Reports read only the
database."""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..reducer import datafile, store
from ..reducer.errors import MprofError
from ..reducer.profile import reduce_files
from ..report.model import Model, load


def check_inputs(paths: list[Path]) -> list[Path]:
    for path in paths:
        if not path.exists():
            raise MprofError(f"{path}: cannot open: No such file or directory")
    databases = [p for p in paths if store.is_database(p)]
    if databases and len(paths) > 1:
        raise MprofError(f"{databases[0]}: a profile database must be reported alone")
    for path in paths:
        if not databases and not datafile.is_data_file(path):
            datafile.read(path)  # raises the one-line reason
    return paths


def load_profile(paths: list[Path]) -> Model:
    check_inputs(paths)
    if store.is_database(paths[0]):
        with store.open_database(paths[0]) as db:
            return load(db)
    with tempfile.TemporaryDirectory(prefix="mprof-") as directory:
        database = Path(directory) / "profile.db"
        store.write_database(reduce_files(paths), database)
        db = store.open_database(database)
        try:
            return load(db)
        finally:
            db.close()
