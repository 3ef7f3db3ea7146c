"""Errors that mprof reports to its user as one line, without a traceback."""

from __future__ import annotations

import os


def _one_line(text: str) -> str:
    # A path may hold newlines; a message must stay one line so that scripts
    # reading stderr line by line see one error per line.
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


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
        return _one_line(self.message)


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
