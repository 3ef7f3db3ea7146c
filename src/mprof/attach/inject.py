"""Calling the monitor's attach and detach functions inside a running
process, through mprof-inject (inject/inject.c): each attach loads a copy
of libmprof of its own (a library loaded twice under one name is one
library, and a detached monitor does not start again), in a directory
kept until the detach."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .. import source_tree
from ..reducer.errors import MprofError

# The directory of a copy: the monitor knows by it that it was loaded to be
# attached, not preloaded (monitor.c, loaded_by_attach).
COPY_PREFIX = "mprof-attach-"
# mprof-inject's helper library, beside it (make install too), and copied
# beside each copy of libmprof.
HELPER = "libmprof-inject.so"
# mprof_attach's results (monitor/attach.c).
ATTACHED, ALREADY, CANNOT_START, PARTLY_ROUTED = 0, 1, 2, 3


def injector_path() -> Path:
    return source_tree.built("MPROF_INJECT", "mprof-inject", "mprof-inject")


def helper_path() -> Path:
    """The library mprof-inject has the process load to make its calls."""
    return injector_path().parent / HELPER


def _call(pid: int, library: Path, function: str, argument: str, loaded: bool) -> int:
    """function(argument)'s result in the process; a refusal or failure as
    mprof-inject said it, in one line."""
    helper = library.parent / HELPER
    command = [str(injector_path()), *(["--loaded"] if loaded else []),
               *(["--helper", str(helper)] if helper.is_file() else []), str(pid), str(library), function, argument]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        raise MprofError(said[-1] if said else f"mprof-inject failed with status {done.returncode}")
    return int(done.stdout.split()[-1])


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


def detach(pid: int, copy: Path) -> bool:
    """Whether the copy was attached; it has written its file if so."""
    return _call(pid, copy, "mprof_detach", "", loaded=True) == ATTACHED


def remove_copy(copy: Path) -> None:
    """The copy's directory, once the process no longer needs the file: the
    mapping outlives it."""
    if copy.parent.name.startswith(COPY_PREFIX):
        shutil.rmtree(copy.parent, ignore_errors=True)
