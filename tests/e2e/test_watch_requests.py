"""The watch protocol (mprof(5), WATCHING A RUNNING PROCESS) used the way
it can be misused: requests left behind by a viewer that was killed, and
dated in the future.  Each test is of a real program under the real
monitor, asked by hand as mprof(5) says."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from e2e_support import Targets, monitor_env


def request_of(pid: int) -> Path:
    """mprof(5)'s request of the process."""
    return Path(f"/tmp/mprof-watch.{pid}")


def write_request(request: Path, target: Path) -> None:
    """Writes a request naming target, whole: made aside, renamed into place."""
    aside = request.with_name(f".{request.name}.aside")
    aside.write_text(f"{target}\n")
    aside.rename(request)


def wait_for(found: Callable[[], bool], what: str, within_s: float = 30.0) -> None:
    """Polls until found(); the bound only catches a hang."""
    deadline = time.monotonic() + within_s
    while not found():
        assert time.monotonic() < deadline, f"not within {within_s} s: {what}"
        time.sleep(0.02)


def threads_of(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


@pytest.fixture
def grower(targets: Targets, tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Starts tests/targets/grower.c under the monitor (kept, its stop file
    and its log in tmp_path), with the monitor's settings given; kills what
    is still running at the end, and removes its requests."""
    program = targets.build("grower")
    started: list[subprocess.Popen[str]] = []

    def start(output: Path, **settings: str) -> subprocess.Popen[str]:
        log = tmp_path / "grower.log"
        process = subprocess.Popen([program, log, tmp_path / "stop"], env=monitor_env(output, **settings),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started.append(process)
        wait_for(lambda: log.exists() and len(log.read_text().splitlines()) >= 2, "the program's first steps")
        return process

    yield start
    for process in started:
        request_of(process.pid).unlink(missing_ok=True)
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.mark.slow
def test_a_request_naming_a_file_that_cannot_be_written_never_reaches_the_programs_stderr(
        grower: Callable[..., subprocess.Popen[str]], tmp_path: Path) -> None:
    """A request left by a viewer whose directory has gone (or that names a
    directory, not a file) gets no answer and says nothing: the program's
    stderr has only the line of the process's own failure, its final data
    file's, which the stale requests must not have used up."""
    kept = tmp_path / "kept"
    kept.mkdir()
    # No checkpoint: the final data file is the process's only write.
    program = grower(kept / "grower.mprof", MPROF_CHECKPOINT_GROWTH="off", MPROF_CHECKPOINT_INTERVAL="off")
    request = request_of(program.pid)
    # The answer's directory has gone: the monitor cannot create its temporary file.
    write_request(request, tmp_path / "gone" / "answer.mprof")
    wait_for(lambda: threads_of(program.pid) == 2, "the monitor's answering thread")
    # A directory in the answer's place: the temporary file is made, and
    # removed as the rename is refused, which changes its directory.
    (tmp_path / "directory" / "answer.mprof").mkdir(parents=True)
    before = (tmp_path / "directory").stat().st_mtime_ns
    write_request(request, tmp_path / "directory" / "answer.mprof")
    wait_for(lambda: (tmp_path / "directory").stat().st_mtime_ns != before, "the answer's attempt")
    # Then a request that can be answered: the thread is still answering.
    write_request(request, tmp_path / "answer.mprof")
    wait_for((tmp_path / "answer.mprof").exists, "the answer")
    request.unlink()

    # The process's own file cannot be written: that is said, once.
    shutil.rmtree(kept)
    (tmp_path / "stop").touch()
    out, err = program.communicate(timeout=60)
    assert program.returncode == 3
    assert err == f"mprof: cannot create {kept}/grower.mprof.tmp.{program.pid}.0: No such file or directory\n"


@pytest.mark.slow
def test_a_request_dated_in_the_future_does_not_stop_the_answers_after_it(
        grower: Callable[..., subprocess.Popen[str]], tmp_path: Path) -> None:
    """A request whose modification time is a day ahead (a clock stepped
    back since, a file restored from elsewhere) is answered, and so is
    each change after it, though every later time is earlier."""
    program = grower(tmp_path / "grower.mprof")
    request, answer = request_of(program.pid), tmp_path / "answer.mprof"
    aside = tmp_path / "request"
    aside.write_text(f"{answer}\n")
    ahead = time.time() + 86400
    os.utime(aside, (ahead, ahead))
    aside.rename(request)
    wait_for(answer.exists, "the answer to the request dated ahead")
    for asked in range(3):
        answer.unlink()
        os.utime(request)  # asked again as mprof top asks: now, a day before the request's date
        wait_for(answer.exists, f"the answer to request {asked + 2}")
