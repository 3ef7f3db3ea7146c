"""Calling the monitor's attach and detach functions inside a running
process, through mprof-inject (inject/inject.c): each attach loads a copy
of libmprof of its own (a library loaded twice under one name is one
library, and a detached monitor does not start again), in a directory
kept until the mprof attach that made it ends, with a copy of
mprof-inject's helper library beside it."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from .. import source_tree
from ..reducer.errors import MprofError

# The directory of a copy: the monitor knows by it that it was loaded to be
# attached, not preloaded (monitor.c, loaded_by_attach).
COPY_PREFIX = "mprof-attach-"
# mprof-inject's helper library, beside it (make install too), and copied
# beside each copy of libmprof, where the process's user can read it.
HELPER = "libmprof-inject.so"
# Made in a copy's directory by mprof detach before it detaches, so that the
# mprof attach that waits can tell its detach from an exec's.
DETACHING = "detaching"
# mprof_attach's results (monitor/attach.c).
ATTACHED, ALREADY, CANNOT_START, PARTLY_ROUTED = 0, 1, 2, 3
# The signals that end mprof: each waits while mprof-inject has a thread of
# the process stopped.
_DEFERRED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# How long an injection may take before mprof-inject is killed: the
# process survives that too (its thread returns by itself).
_INJECT_TIMEOUT_S = 120


def injector_path() -> Path:
    return source_tree.built("MPROF_INJECT", "mprof-inject", "mprof-inject")


def helper_path() -> Path:
    """The library mprof-inject has the process load to make its calls."""
    return injector_path().parent / HELPER


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP noted meanwhile and raised again after,
    to whatever handled them before: a Ctrl-C must not end mprof, nor
    subprocess kill mprof-inject, while a thread of the process is in its
    calls."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []

    def note(number: int, frame: object) -> None:
        came.append(number)

    before = {number: signal.signal(number, note) for number in _DEFERRED}
    try:
        yield
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)
        for deferred in dict.fromkeys(came):
            signal.raise_signal(deferred)


def _call(pid: int, library: Path, function: str, argument: str, loaded: bool) -> int:
    """function(argument)'s result in the process; a refusal or failure as
    mprof-inject said it, in one line.  mprof-inject runs in a session of
    its own, so that the terminal's Ctrl-C reaches mprof alone."""
    helper = library.parent / HELPER
    command = [str(injector_path()), *(["--loaded"] if loaded else []),
               *(["--helper", str(helper)] if own_directory(library.parent) else []),
               str(pid), str(library), function, argument]
    try:
        with _signals_deferred():
            done = subprocess.run(command, capture_output=True, text=True, timeout=_INJECT_TIMEOUT_S,
                                  start_new_session=True)
    except subprocess.TimeoutExpired:
        raise MprofError(f"process {pid}: mprof-inject did not finish in {_INJECT_TIMEOUT_S} s") from None
    said = done.stdout.split()
    # A signal deferred while it worked ends mprof-inject once it has said
    # what the call returned.
    if said and said[-1].lstrip("-").isdigit() and (done.returncode == 0 or done.returncode < 0):
        return int(said[-1])
    complaint = done.stderr.strip().splitlines()
    if complaint:
        raise MprofError(complaint[-1])
    if done.returncode < 0:
        raise MprofError(f"process {pid}: mprof-inject was ended by signal {-done.returncode}")
    raise MprofError(f"process {pid}: mprof-inject failed with status {done.returncode}")


def own_directory(directory: Path) -> bool:
    """Whether directory is a copy's that this user made and no other can
    have changed since (its helper is loaded by mprof-inject, and a mark is
    made in it): a directory of /tmp removed and made again by another user
    is not."""
    try:
        made, helper = directory.lstat(), (directory / HELPER).lstat()
    except OSError:
        return False
    return (stat.S_ISDIR(made.st_mode) and made.st_uid == os.geteuid() and not made.st_mode & 0o022
            and stat.S_ISREG(helper.st_mode) and helper.st_uid == os.geteuid())


def mark_detaching(copy: Path) -> Path | None:
    """The mark that tells the mprof attach that waits on copy that mprof
    detach, not an exec, ended it; None where it cannot be made.  Nothing
    is written, and no link followed, whoever made the directory."""
    mark = copy.parent / DETACHING
    try:
        os.close(os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644))
    except OSError:
        return None
    return mark


def monitor_of_run(pid: int) -> bool:
    """Whether the process has libmprof from its start (mprof run, or
    linked in): a copy mprof attach loaded lies in a directory of its own."""
    for path in mapped_libraries(pid):
        if path.name == "libmprof.so" and not path.parent.name.startswith(COPY_PREFIX):
            return True
    return False


def mapped_libraries(pid: int) -> list[Path]:
    """The files mapped into the process, in the order of their addresses."""
    try:
        with open(f"/proc/{pid}/maps", "rb") as maps:
            lines = maps.read().decode(errors="replace").splitlines()
    except FileNotFoundError:
        raise MprofError(f"process {pid}: no such process") from None
    except OSError as error:
        raise MprofError(f"process {pid}: cannot read its memory map: {error.strerror}") from None
    paths = []
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].startswith("/"):
            path = Path(fields[5].removesuffix(" (deleted)"))
            if path not in paths:
                paths.append(path)
    return paths


def attach(pid: int, library: Path, output: Path) -> tuple[Path, int]:
    """Loads a copy of library into the process and starts it writing
    output; the copy and mprof_attach's result."""
    directory = Path(tempfile.mkdtemp(prefix=COPY_PREFIX))
    copy = directory / "libmprof.so"
    try:
        shutil.copyfile(library, copy)
        shutil.copyfile(helper_path(), directory / HELPER)
        os.chmod(directory, 0o755)  # the process may run as another user than root, who attaches it
        result = _call(pid, copy, "mprof_attach", str(output), loaded=False)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    return copy, result


def attached_copies(pid: int) -> list[Path]:
    """The copies mprof attach loaded into the process, oldest first."""
    return [path for path in mapped_libraries(pid)
            if path.name == "libmprof.so" and path.parent.name.startswith(COPY_PREFIX)]


def attached_now(pid: int) -> bool:
    """Whether a copy of the monitor is attached to the process: asked of
    the newest copy whose directory an mprof attach still keeps (it removes
    it as it ends), none asked when there is none."""
    for copy in reversed(attached_copies(pid)):
        if copy.is_file():
            return _call(pid, copy, "mprof_attached", "", loaded=True) == 1
    return False


def detach(pid: int, copy: Path) -> bool:
    """Whether the copy was attached; it has written its file if so."""
    return _call(pid, copy, "mprof_detach", "", loaded=True) == ATTACHED


def remove_copy(copy: Path) -> None:
    """The copy's directory, once the process no longer needs the file: the
    mapping outlives it."""
    if copy.parent.name.startswith(COPY_PREFIX):
        shutil.rmtree(copy.parent, ignore_errors=True)
