"""mprof-inject's command line, which a mutation audit found unchecked
(make mutate): too few or too many arguments, or --helper with no file
after it, are a usage error (status 2) that touches no process; three or
four go on to the process.  And what it says: the helper asked for, and a
reason cut to its room."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from e2e_support import BUILD, Targets, ask_line

INJECT = BUILD / "mprof-inject"
HELPER = BUILD / "libmprof-inject.so"
USAGE = "usage: mprof-inject [--loaded] [--helper FILE] PID LIBRARY FUNCTION [ARGUMENT]\n"


def no_process() -> str:
    """A process id no process can have: above the kernel's largest."""
    return str(int(Path("/proc/sys/kernel/pid_max").read_text()) + 1)


@pytest.mark.parametrize("arguments", [
    ["--loaded"], ["--helper"], ["--loaded", "--helper"], ["PID", "lib.so"], ["PID", "lib.so", "f", "argument", "more"],
    ["--loaded", "PID", "lib.so", "f", "argument", "more"],
    # A helper's name longer than any path (PATH_MAX, 4096 bytes with its
    # end), or just so: not taken, so five arguments.
    ["--helper", "/" + "h" * 5000, "PID", "lib.so", "f"], ["--helper", "/" + "h" * 4095, "PID", "lib.so", "f"]])
def test_a_wrong_command_line_is_a_usage_error(arguments: list[str]) -> None:
    completed = subprocess.run([INJECT, *(no_process() if a == "PID" else a for a in arguments)],
                               capture_output=True, text=True, timeout=60)
    assert (completed.returncode, completed.stdout, completed.stderr) == (2, "", USAGE)


@pytest.mark.parametrize(("options", "rest"), [([], ["lib.so", "f"]), ([], ["lib.so", "f", "argument"]),
                                               (["--loaded"], ["lib.so", "f"])])
def test_a_right_command_line_goes_on_to_the_process(options: list[str], rest: list[str]) -> None:
    """Three or four arguments after the options are no usage error: it
    goes on, to find no such process."""
    pid = no_process()
    completed = subprocess.run([INJECT, *options, pid, *rest], capture_output=True, text=True, timeout=60)
    assert completed.returncode != 2 and completed.stderr.startswith(f"process {pid}: "), completed


def test_a_helper_of_one_character_is_the_one_taken() -> None:
    """--helper / names a helper of one character, which is no library: it
    is refused as the helper asked for, not replaced by the default one
    beside mprof-inject (which would go on to find no such process)."""
    pid = no_process()
    completed = subprocess.run([INJECT, "--helper", "/", pid, "lib.so", "f"], capture_output=True, text=True,
                               timeout=60)
    assert (completed.returncode, completed.stdout, completed.stderr) == (
        4, "", f"process {pid}: / is not mprof-inject's helper library (run make first)\n")


def test_a_reason_longer_than_its_room_is_cut_to_it(targets: Targets) -> None:
    """The reason is said from a room of 512 bytes: --loaded with a library
    of a 600-character name, which napper has not loaded, is refused with
    the reason's first 511 bytes."""
    library = "/" + "l" * 596 + ".so"
    napper = subprocess.Popen([targets.build("napper")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert napper.stdout is not None and napper.stdout.readline() == "ready\n"
        done = subprocess.run([INJECT, "--loaded", "--helper", HELPER, str(napper.pid), library, "f"],
                              capture_output=True, text=True, timeout=120)
        reason = f"cannot load {library}: not loaded"
        assert len(reason) > 511
        assert (done.returncode, done.stdout, done.stderr) == (3, "", f"process {napper.pid}: {reason[:511]}\n")
        assert ask_line(napper, "count") == "failed 0"
    finally:
        napper.kill()
        napper.wait()


def test_a_process_that_executes_another_program_during_the_call_is_let_go(targets: Targets) -> None:
    """probe_exec has a thread of its own execute napper anew while the
    thread mprof-inject stopped, napper's only one, waits for it: that
    thread ends with the old program, and its id passes to the thread that
    executed, which mprof-inject does not trace (its wait for the thread
    fails, ECHILD).  mprof-inject says so with status 4 and ends, and the
    new napper goes on.  (The timeout is far above the second this takes,
    there only to catch a wait that never ends.)"""
    library = targets.build("libinject_probe.so", source="inject_probe.c", shared=True)
    program = targets.build("napper")
    napper = subprocess.Popen([program], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert napper.stdout is not None and napper.stdout.readline() == "ready\n"
        done = subprocess.run([INJECT, "--helper", HELPER, str(napper.pid), library, "probe_exec", program],
                              capture_output=True, text=True, timeout=60)
        assert (done.returncode, done.stdout, done.stderr) == (
            4, "", f"process {napper.pid}: thread {napper.pid} did not come back from the helper: the process ended "
                   "or executed another program\n")
        assert napper.stdout.readline() == "ready\n"
        assert ask_line(napper, "count") == "failed 0"
    finally:
        napper.kill()
        napper.wait()


def directory_of_length(base: Path, length: int) -> Path:
    """A directory under base whose path is length bytes long, made of
    names of at most 200 bytes."""
    path = base
    while (left := length - len(str(path))) > 0:
        name = min(200, left - 1)
        if left - 1 - name == 1:  # no room would be left for a last name after its slash
            name -= 1
        path = path / ("d" * name)
    assert len(str(path)) == length
    path.mkdir(parents=True)
    return path


def copy_into(directory: Path, source: Path, name: str) -> None:
    """source copied to directory/name, executable, by a name relative to
    the directory (whose path and name together may pass PATH_MAX)."""
    at = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        copy = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o755, dir_fd=at)
        with os.fdopen(copy, "wb") as written:
            written.write(source.read_bytes())
    finally:
        os.close(at)


@pytest.mark.parametrize(("length", "status", "said"), [
    (4063, 1, "process {pid}: no such process\n"),
    (4064, 4, "mprof-inject: cannot find its own directory\n"),
    (4090, 4, "mprof-inject: cannot find its own directory\n")], ids=["whole", "perhaps-cut", "cut"])
def test_its_own_path_is_read_whole_or_not_at_all(tmp_path: Path, length: int, status: int, said: str) -> None:
    """mprof-inject finds its helper beside itself from /proc/self/exe,
    read into the room its buffer (PATH_MAX) keeps beside the helper's
    name, 4064 bytes: a path that fills that room may be cut short, its
    directory too (readlink says no more), so mprof-inject refuses it
    rather than take a helper from another directory (one of its own
    path's, where it was cut: 4090 bytes; the kernel refuses to read one
    longer than PATH_MAX); one a byte shorter, whole, finds it (and goes on
    to find no such process).  The copy is run by a relative name, from a
    directory as deep as that."""
    directory = directory_of_length(tmp_path, length - len("/mprof-inject"))
    copy_into(directory, INJECT, "mprof-inject")
    copy_into(directory, HELPER, "libmprof-inject.so")
    pid = no_process()
    completed = subprocess.run(["./mprof-inject", pid, "lib.so", "f"], cwd=directory, capture_output=True, text=True,
                               timeout=60)
    assert (completed.returncode, completed.stdout, completed.stderr) == (status, "", said.format(pid=pid))
