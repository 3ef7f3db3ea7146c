"""Work done in a forked process of its own while this one goes on: the
reports' Python takes turns at one lock in threads, and a second
processor is only used by a second process."""

from __future__ import annotations

import os
import pickle
import signal
import threading
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import Generic, TypeVar

Result = TypeVar("Result")


class InChild(Generic[Result]):
    """work() started in a forked child, which writes nothing but what
    work gave, or the exception of an expected type it raised: the parent's
    buffered output and temporary files stay the parent's.  Where no
    process can be made, or should not be (other threads run), work runs
    here when its result is asked for.  Leaving the with block reaps a
    child whose result was never taken (the parent failed meanwhile),
    killed first."""

    def __init__(self, work: Callable[[], Result], what: str,
                 expected: tuple[type[Exception], ...] = ()) -> None:
        self._what = what  # the work, in a few words, for a bug's message
        self._work: Callable[[], Result] | None = work
        self._child = 0
        # A fork copies only the thread that calls it: a lock another thread
        # holds then (SQLite's, the allocator's) stays held in the child for
        # ever.  With other threads, the work waits for its result here.
        if threading.active_count() > 1:
            return
        reader, writer = os.pipe()
        try:
            child = os.fork()
        except OSError:
            os.close(reader)
            os.close(writer)
            return
        if child == 0:
            os.close(reader)
            outcome: tuple[Result | None, Exception | None, str | None]
            try:
                outcome = (work(), None, None)
            except expected as error:
                outcome = (None, error, traceback.format_exc())
            except BaseException:
                outcome = (None, None, traceback.format_exc())
            try:
                try:
                    found = pickle.dumps(outcome, pickle.HIGHEST_PROTOCOL)
                except Exception:  # what work gave or raised does not pickle
                    found = pickle.dumps((None, None, traceback.format_exc()), pickle.HIGHEST_PROTOCOL)
                with os.fdopen(writer, "wb") as out:
                    out.write(found)
            finally:
                os._exit(0)
        os.close(writer)
        self._work = None
        self._child, self._reader = child, reader

    def result(self) -> Result:
        """What work gave, which must pickle; what it raised, if expected, is
        raised again here, with the child's traceback as a note; anything
        else is a bug, raised as a RuntimeError with the child's traceback."""
        if self._work is not None:
            return self._work()
        assert self._child, "a result is taken once"
        try:
            with os.fdopen(self._reader, "rb") as source:
                found = source.read()
        finally:
            self._reader = -1  # closed, even if the read was interrupted
        _, status = os.waitpid(self._child, 0)
        self._child = 0
        if not found:
            raise RuntimeError(f"{self._what} ended without an answer (wait status {status})")
        value, error, failure = pickle.loads(found)
        if error is not None:
            error.add_note(f"in {self._what}, forked:\n{failure}")
            raise error
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
            if self._reader >= 0:
                os.close(self._reader)
            self._child = 0
