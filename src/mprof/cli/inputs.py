"""The profile named on a command line: data files are reduced first (into
a temporary database), a database is used as it is.  Reports read only the
database.  Each input is opened and read once, so a pipe (<(cat app.mprof))
serves as well as a file, and read a piece at a time as far as it is
sound, so that no input (/dev/zero, a huge sparse file) takes more memory
or time than its valid bytes would."""

from __future__ import annotations

import argparse
import functools
import os
import sqlite3
import stat
import sys
import tempfile
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TypeVar

from ..forked import InChild
from ..leak_kinds import LOST
from ..reducer import datafile, store
from ..reducer.errors import MprofError
from ..reducer.records import DataFile
from ..reducer.symbolize import Progress, WarningSink
from ..report import leak_summary, suppressions
from ..report.model import Model, RunInfo, load
from ..report.tables import leak_total
from ..report.validate import Checking, read_checked, start_checking, validated
from .arguments import LEAK_EXIT_STATUS

if TYPE_CHECKING:
    from ..reducer.profile import Profile


@dataclass(frozen=True)
class Selection:
    """The processes a report is about: those with one of pids, or running
    one of programs (an executable's name or path); all when both are
    empty."""
    pids: tuple[int, ...] = ()
    programs: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.pids or self.programs)

    def holds(self, data: DataFile) -> bool:
        exe = data.program.exe
        names = {exe, os.path.basename(exe)}
        if data.program.argv:
            names.add(os.path.basename(data.program.argv[0]))
        return data.header.pid in self.pids or any(program in names for program in self.programs)


def suppressed(model: Model, args: argparse.Namespace) -> Model:
    """The model less what the suppression files of args take, and what
    the program's own __lsan_default_suppressions does, as LeakSanitizer
    applies both."""
    rules = suppressions.read(args.suppressions)
    for run in model.runs:
        if run.lsan_suppressions:
            source = f"{os.path.basename(run.program)}'s __lsan_default_suppressions"
            rules += [rule for rule in suppressions.parse(run.lsan_suppressions, source) if rule not in rules]
    return suppressions.suppress(model, rules)


def leak_verdict(model: Model, limit: int | None, kinds: Collection[str] = LOST) -> tuple[int, str]:
    """LEAK_EXIT_STATUS and a line saying why when the leaks of kinds
    exceed limit, else (0, "").  Where no run was classified, the bytes
    never freed, as before the leak kinds."""
    if limit is None:
        return 0, ""
    if not leak_summary.classified(model):
        leaked = leak_total(model, runtime=False)
        if leaked <= limit:
            return 0, ""
        return LEAK_EXIT_STATUS, (f"{leaked:,} bytes never freed, more than --fail-on-leak={limit:,}; "
                                  "the blocks were not classified (the data files have no LEAK section)")
    leaked = leak_summary.counted(model, kinds)[1]
    if leaked <= limit:
        return 0, ""
    return LEAK_EXIT_STATUS, (f"{leaked:,} bytes {leak_summary.kinds_words(kinds)}, more than "
                              f"--fail-on-leak={limit:,}")


def selection(args: argparse.Namespace) -> Selection:
    return Selection(tuple(args.pid), tuple(args.program))


def selected(files: list[DataFile], chosen: Selection) -> list[DataFile]:
    """The data files of the chosen processes; none chosen is an error that
    names the processes there are."""
    if not chosen:
        return files
    kept = [data for data in files if chosen.holds(data)]
    if not kept:
        asked = ", ".join([f"--pid {pid}" for pid in chosen.pids] + [f"--program {name}" for name in chosen.programs])
        there = ", ".join(f"pid {data.header.pid} ({os.path.basename(data.program.exe) or '?'})" for data in files)
        raise MprofError(f"{files[0].path if len(files) == 1 else 'the data files'}: no process matches {asked}; "
                         f"there are {there}")
    return kept


@dataclass
class Inputs:
    files: list[DataFile]
    database: Path | None  # a profile database, given alone


# A profile database given through a pipe is copied to a file for SQLite,
# as far as its header's size and never past this.
PIPED_DATABASE_LIMIT = 4 << 30
_SQLITE_HEADER = 100


def _open(path: Path) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as error:
        raise MprofError(f"{path}: cannot open: {error.strerror or error}") from None


def _read(file: BinaryIO, path: Path, size: int) -> bytes:
    """Up to size bytes: fewer only where the file ends."""
    try:
        data = b""
        while len(data) < size:
            piece = file.read(size - len(data))
            if not piece:
                break
            data += piece
        return data
    except OSError as error:
        raise MprofError(f"{path}: cannot read: {error.strerror or error}") from None


def _copy_database(file: BinaryIO, start: bytes, path: Path, copy: Path) -> None:
    """A database that comes through a pipe, into copy, a piece at a time:
    as many bytes as its header says it has (SQLite's in-header size), at
    most PIPED_DATABASE_LIMIT."""
    header = start + _read(file, path, _SQLITE_HEADER - len(start))
    claimed = None
    if len(header) == _SQLITE_HEADER:
        page = int.from_bytes(header[16:18], "big")
        page = 65536 if page == 1 else page
        if page < 512 or page & (page - 1):
            raise MprofError(f"{path}: not a readable profile database (page size {page})")
        pages = int.from_bytes(header[28:32], "big")
        # SQLite trusts the size only where the change counter agrees.
        if pages and header[24:28] == header[92:96]:
            claimed = page * pages
    limit = PIPED_DATABASE_LIMIT
    if claimed is not None and claimed > limit:
        raise MprofError(f"{path}: a database of {claimed:,} bytes through a pipe, more than mprof copies "
                         f"({limit:,}): give it as a file")
    bound = claimed if claimed is not None else limit
    copied = len(header)
    try:
        with open(copy, "wb") as out:
            out.write(header[:bound])
            while copied < bound:
                piece = _read(file, path, min(datafile.CHUNK, bound - copied))
                if not piece:
                    break
                out.write(piece)
                copied += len(piece)
    except OSError as error:
        raise MprofError(f"{path}: cannot copy the database to {copy}: {error.strerror or error}") from None
    if claimed is None and copied >= limit and _read(file, path, 1):
        raise MprofError(f"{path}: a database of more than {limit:,} bytes through a pipe: give it as a file")


@contextmanager
def read_inputs(paths: list[Path]) -> Iterator[Inputs]:
    """Data files parsed, or one database.  Each input is read once, as far
    as its first bytes say it may be: a data file as datafile.gather()
    judges it, a database that comes through a pipe copied to a temporary
    file for SQLite, which must seek; a regular database file is left to
    SQLite."""
    files = []
    database = None
    with ExitStack() as stack:
        for path in paths:
            with _open(path) as file:
                start = _read(file, path, len(store.SQLITE_MAGIC))
                if start != store.SQLITE_MAGIC:
                    files.append(datafile.parse(datafile.gather(file, path, start), path))
                    continue
                if len(paths) > 1:
                    raise MprofError(f"{path}: a profile database must be reported alone")
                if stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                    database = path
                    continue
                directory = stack.enter_context(tempfile.TemporaryDirectory(prefix="mprof-"))
                database = Path(directory) / "input.db"
                _copy_database(file, start, path, database)
        yield Inputs(files, database)


@dataclass
class Prepared:
    """A profile made ready to load: its data files reduced into a
    database, or the database given (one that came through a pipe copied),
    or the error that stopped it; with the warnings found on the way."""
    paths: list[Path]
    warnings: WarningSink = field(default_factory=WarningSink)
    database: Path | None = None
    reduced: bool = False  # the database is the reducer's, not one given
    directory: tempfile.TemporaryDirectory[str] | None = None  # holds a database made or copied
    error: MprofError | None = None
    leaks_and_calls: bool = True  # load's: False leaves them out
    checking: Checking | None = None  # the given database's check, started early

    def result(self) -> Model:
        """The profile, loaded in this thread (its SQLite objects stay in
        it), after the warnings; or the error, after them."""
        self.warnings.print()
        try:
            if self.error is not None:
                raise self.error
            assert self.database is not None
            if not self.reduced:
                with validated(self.database, self.paths[0], self.checking) as given:
                    return load(given, self.leaks_and_calls)
            db = store.open_database(self.database)
            try:
                return load(db, self.leaks_and_calls)
            finally:
                db.close()
        finally:
            if self.directory is not None:
                self.directory.cleanup()


def _prepare(prepared: Prepared) -> None:
    """Reduces prepared's data files into a database in its directory, or
    takes the database given; or notes the error that stops it."""
    assert prepared.directory is not None
    try:
        with read_inputs(prepared.paths) as inputs:
            ours = Path(prepared.directory.name) / "profile.db"
            if inputs.database:
                # One copied from a pipe goes when read_inputs ends: keep it.
                prepared.database = inputs.database if inputs.database in prepared.paths else ours
                if prepared.database == ours:
                    os.replace(inputs.database, ours)
                return
            profile = _reduce(inputs.files, ours, Progress(False))
            prepared.warnings, prepared.database, prepared.reduced = profile.warnings, ours, True
    except MprofError as error:
        prepared.error = error


def _prepared(prepared: Prepared) -> tuple[list[str], Path | None, bool, tuple[str, int] | None]:
    """_prepare, and what it found: warnings, database, whether reduced,
    and the error's message and exit code, if one stopped it."""
    _prepare(prepared)
    error = prepared.error
    return (prepared.warnings.messages, prepared.database, prepared.reduced,
            None if error is None else (error.message, error.exit_code))


def load_profiles(sides: list[list[Path]], leaks_and_calls: bool = True) -> list[Prepared]:
    """Each side's data files reduced side by side, each but the first in
    a process of its own.  Taking each one's result in turn says what
    loading one after the other would have said, in its order: a side's
    warnings, then its error.  leaks_and_calls as model.load's."""
    prepared = [Prepared(paths, directory=tempfile.TemporaryDirectory(prefix="mprof-"),
                         leaks_and_calls=leaks_and_calls) for paths in sides]
    with ExitStack() as stack:
        # Two reductions on threads of one process take turns at Python's lock.
        children = [stack.enter_context(InChild(functools.partial(_prepared, side),
                                                f"the reduction of {', '.join(map(str, side.paths))}"))
                    for side in prepared[1:]]
        _prepare(prepared[0])
        for side, child in zip(prepared[1:], children, strict=True):
            side.warnings.messages, side.database, side.reduced, error = child.result()
            side.error = None if error is None else MprofError(*error)
    # The given databases are checked side by side, each on a thread, and
    # each side's result() reads while they run.
    given = [side for side in prepared if side.error is None and not side.reduced]
    if len(given) > 1:
        pool = ThreadPoolExecutor(len(given))
        for side in given:
            assert side.database is not None
            side.checking = start_checking(side.database, pool)
        pool.shutdown(wait=False)  # the checks run on; each result() waits for its own
    return prepared


def load_profile(paths: list[Path], chosen: Selection = Selection(), leaks_and_calls: bool = True) -> Model:
    """The profile of paths' data files or database; leaks_and_calls as
    model.load's."""
    with read_inputs(paths) as inputs:
        if inputs.database:
            _refuse_selection(paths, chosen)
            with validated(inputs.database, paths[0]) as db:
                return load(db, leaks_and_calls)
        return _reduce_and_load(selected(inputs.files, chosen), leaks_and_calls)


Made = TypeVar("Made")


def made_of_profile(paths: list[Path], make: Callable[[Model], Made], chosen: Selection = Selection(),
                    leaks_and_calls: bool = True) -> Made:
    """make() of load_profile's profile.  Of a database, the profile is
    loaded and made in a process of its own while this one checks the
    database (validate.read_checked): make() must write nothing, and what
    it gives must pickle."""
    with read_inputs(paths) as inputs:
        if inputs.database:
            _refuse_selection(paths, chosen)
            return read_checked(inputs.database, paths[0], lambda db: make(load(db, leaks_and_calls)))
        return make(_reduce_and_load(selected(inputs.files, chosen), leaks_and_calls))


def _refuse_selection(paths: list[Path], chosen: Selection) -> None:
    if chosen:
        raise MprofError(f"{paths[0]}: a profile database holds its processes merged: choose them when "
                         f"making it (mprof db --pid/--program) or report their data files")


def _reduce(files: list[DataFile], database: Path, progress: Progress | None = None) -> Profile:
    """The data files reduced and written into the database, the path
    tables from as soon as the reduction has them."""
    from ..reducer.profile import reduce_files  # not for a report of a database

    with store.DatabaseWriter(database) as writer:
        profile = reduce_files(files, progress=progress, paths_ready=writer.start_paths)
        writer.finish(profile)
    return profile


def reduce_into(files: list[DataFile], database: Path) -> None:
    """Reduces the data files into the database, then prints the warnings
    found on the way: an input refused gets only its error."""
    _reduce(files, database).warnings.print()


def profile_of_snapshot(path: Path) -> tuple[Model, list[str]]:
    """A data file's profile without leak rows and call graph, and the
    reduction's warnings unprinted: for a view that owns the terminal."""
    with read_inputs([path]) as inputs, _reduced(inputs.files, Progress(False)) as (db, warnings):
        return load(db, leaks_and_calls=False), warnings.messages


def _reduce_and_load(files: list[DataFile], leaks_and_calls: bool) -> Model:
    with _reduced(files) as (db, warnings):
        warnings.print()
        return load(db, leaks_and_calls)


@contextmanager
def _reduced(files: list[DataFile], progress: Progress | None = None) -> Iterator[tuple[sqlite3.Connection,
                                                                                         WarningSink]]:
    """The files reduced into a temporary database, open, and the
    reduction's warnings."""
    with tempfile.TemporaryDirectory(prefix="mprof-") as directory:
        database = Path(directory) / "profile.db"
        warnings = _reduce(files, database, progress).warnings
        db = store.open_database(database)
        try:
            yield db, warnings
        finally:
            db.close()


def warn_of_partial_paths(runs: Sequence[RunInfo], path: Path) -> None:
    """Says on stderr, once, that a profile taken in mprof- mode has paths
    only as deep as its leak records: what is made of them is partial."""
    partial = [run for run in runs if not run.call_graph]
    if partial:
        depth = max(run.leak_depth for run in partial)
        print(f"mprof: warning: {path}: taken in mprof- mode (--no-call-graph): its call paths stop after "
              f"{depth} return address{'es' if depth != 1 else ''}, the callers above unknown", file=sys.stderr)
