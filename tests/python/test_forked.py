"""Work in a forked child (src/mprof/forked.py): what it gives comes back,
what it raises is a bug that says where, a child whose result nobody takes
is not left behind, and the parent's unwritten output is not written
twice."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from mprof.forked import InChild
from mprof.reducer.errors import MprofError


def test_the_result_comes_from_another_process() -> None:
    with InChild(lambda: (os.getpid(), [1, 2, "three"]), "a list") as child:
        pid, value = child.result()
    assert value == [1, 2, "three"] and pid != os.getpid()


def test_what_the_child_raises_comes_back_as_a_bug_with_its_traceback() -> None:
    def broken() -> int:
        raise ValueError("the cells do not add up")

    with InChild(broken, "the call graph's tables") as child, pytest.raises(RuntimeError) as raised:
        child.result()
    message = str(raised.value)
    assert message.startswith("the call graph's tables failed:\n")
    assert "in broken" in message and "ValueError: the cells do not add up" in message


def test_a_child_whose_result_is_not_taken_is_ended_and_reaped() -> None:
    started = time.monotonic()
    with pytest.raises(KeyError), InChild(lambda: time.sleep(60), "a sleep") as child:
        pid = child._child
        raise KeyError("the parent failed first")
    assert time.monotonic() - started < 10
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # already reaped: no such child


def test_without_a_process_the_work_runs_here(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    with InChild(os.getpid, "a pid") as child:
        assert child.result() == os.getpid()


def test_output_the_parent_had_not_written_is_written_once(capfd: pytest.CaptureFixture[str]) -> None:
    sys.stdout.write("before the fork")  # still in the buffer
    with InChild(lambda: 7, "seven") as child:
        assert child.result() == 7
    sys.stdout.flush()
    assert capfd.readouterr().out == "before the fork"


def test_while_another_thread_runs_the_work_runs_here() -> None:
    # A fork would copy none of that thread, and none of the locks it holds
    # would ever be let go of in the child.
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        with InChild(os.getpid, "a pid") as child:
            assert child.result() == os.getpid()
    finally:
        stop.set()
        other.join()


def test_an_expected_error_comes_back_as_it_is() -> None:
    def refused() -> int:
        raise MprofError("prof.db: holds no profile to export", 3)

    with InChild(refused, "an export", expected=(MprofError,)) as child, pytest.raises(MprofError) as raised:
        child.result()
    assert (raised.value.message, raised.value.exit_code) == ("prof.db: holds no profile to export", 3)
    assert any("in refused" in note for note in raised.value.__notes__)
