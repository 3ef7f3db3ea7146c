"""Work done in a forked process of its own while this one goes on: the
reports' Python takes turns at one lock in threads, and a second
processor is only used by a second process."""

from __future__ import annotations

import os
import pickle
import signal
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import Generic, TypeVar

Result = TypeVar("Result")


class InChild(Generic[Result]):
    """work() started in a forked child, which writes nothing but what
    work gave: the parent's buffered output and temporary files stay the
    parent's.  Where no process can be made, work runs here when its
    result is asked for.  Leaving the with block reaps a child whose result
    was never taken (the parent failed meanwhile), killed first."""

    def __init__(self, work: Callable[[], Result], what: str) -> None:
        self._what = what  # the work, in a few words, for a bug's message
        self._work: Callable[[], Result] | None = None
        self._child = 0
        reader, writer = os.pipe()
        try:
            child = os.fork()
        except OSError:
            os.close(reader)
            os.close(writer)
            self._work = work
            return
        if child == 0:
            os.close(reader)
            outcome: tuple[Result | None, str | None]
            try:
                outcome = (work(), None)
            except BaseException:
                outcome = (None, traceback.format_exc())
            try:
                with os.fdopen(writer, "wb") as out:
                    out.write(pickle.dumps(outcome, pickle.HIGHEST_PROTOCOL))
            finally:
                os._exit(0)
        os.close(writer)
        self._child, self._reader = child, reader

    def result(self) -> Result:
        """What work gave, which must pickle; what it raised is a bug, raised
        again as a RuntimeError with the child's traceback."""
        if self._work is not None:
            return self._work()
        assert self._child, "a result is taken once"
        with os.fdopen(self._reader, "rb") as source:
            found = source.read()
        _, status = os.waitpid(self._child, 0)
        self._child = 0
        if not found:
            raise RuntimeError(f"{self._what} ended without an answer (wait status {status})")
        value, failure = pickle.loads(found)
        if failure:
            raise RuntimeError(f"{self._what} failed:\n{failure}")
        return value  # type: ignore[no-any-return]

    def __enter__(self) -> InChild[Result]:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._child:
            os.kill(self._child, signal.SIGKILL)
            os.waitpid(self._child, 0)
            os.close(self._reader)
            self._child = 0
