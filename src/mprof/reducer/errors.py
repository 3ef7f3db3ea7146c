"""Errors that mprof reports to its user as one line, without a traceback."""

from __future__ import annotations

import os

from .escape import printable


class MprofError(Exception):
    """An expected failure: the command line tool prints it and exits.

    Every error meant for the user derives from this, so that the command
    line catches one type and everything else stays a visible bug.
    """

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code

    def __str__(self) -> str:
        # One line, escaped once, whatever bytes the paths in it hold: a
        # newline in a path must not end the line for a script reading
        # stderr line by line.
        return printable(self.message)

    def __reduce__(self) -> tuple[type[MprofError], tuple[str, int]]:
        # From a forked child (forked.py) with its exit code: pickle's
        # default passes only what Exception.__init__ was given.
        return MprofError, (self.message, self.exit_code)


class DataFileError(MprofError):
    """A data file that cannot be read or is not a valid mprof data file."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = os.fspath(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class FormatProblem(Exception):
    """Raised by the decoding code, which does not know the file's name.

    datafile.parse() turns it into a DataFileError; it never reaches the user
    on its own.
    """
