"""mprof-inject's command line, which a mutation audit found unchecked
(make mutate): too few or too many arguments, or --helper with no file
after it, are a usage error (status 2) that touches no process; three or
four go on to the process.  And what it says: the helper asked for, and a
reason cut to its room; how it finds the C library and the helper in a
process's memory map, and refuses a process it cannot trace or that ends
meanwhile (issue 48's audit of inject/target.c and safe_point.c)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e_support import INJECT, INJECT_HELPER, Targets, ask_line, inject_probe, injection

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
        done = subprocess.run([INJECT, "--loaded", "--helper", INJECT_HELPER, str(napper.pid), library, "f"],
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
        done = subprocess.run([INJECT, "--helper", INJECT_HELPER, str(napper.pid), library, "probe_exec", program],
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
    copy_into(directory, INJECT_HELPER, "libmprof-inject.so")
    pid = no_process()
    completed = subprocess.run(["./mprof-inject", pid, "lib.so", "f"], cwd=directory, capture_output=True, text=True,
                               timeout=60)
    assert (completed.returncode, completed.stdout, completed.stderr) == (status, "", said.format(pid=pid))


# What the mutation audit of inject/target.c and inject/safe_point.c found
# unchecked (issue 48): how the C library and the helper are found in the
# process's memory map, and refusals and endings it had not met.


@contextlib.contextmanager
def started(program: Path) -> Iterator[subprocess.Popen[str]]:
    """A test program once it says "ready"; killed after."""
    process = subprocess.Popen([program], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        yield process
    finally:
        process.kill()
        process.wait()


def test_the_c_library_is_found_at_its_start_not_at_another_mapping_of_its_file(targets: Targets) -> None:
    """libc_aside maps its C library's second page again, at 1 MiB, the
    first line of its memory map: dlopen is found from the mapping of the
    file's start (offset 0), and the call goes as anywhere else."""
    with started(targets.build("libc_aside")) as process:
        maps = Path(f"/proc/{process.pid}/maps").read_text().splitlines()
        assert maps[0].startswith("00100000-00101000 r--p 00001000 ") and "libc.so" in maps[0], maps[0]
        done = subprocess.run(injection(process.pid, INJECT_HELPER, inject_probe(targets), "probe_twice", "4"),
                              capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stdout, done.stderr) == (0, "9\n", "")
        assert ask_line(process, "x") == "line"


def test_a_helper_and_library_named_through_a_symbolic_link_are_found(targets: Targets, tmp_path: Path) -> None:
    """The memory map names the files the links lead to: the helper loaded
    and the library --loaded asks for are found by the file they name (as
    where TMPDIR is a link, /tmp to /private/tmp)."""
    real = tmp_path / "real"
    real.mkdir()
    shutil.copyfile(INJECT_HELPER, real / INJECT_HELPER.name)
    shutil.copyfile(inject_probe(targets), real / "libprobe.so")
    (tmp_path / "link").symlink_to(real)
    helper, library = tmp_path / "link" / INJECT_HELPER.name, tmp_path / "link" / "libprobe.so"
    with started(targets.build("napper")) as napper:
        for n, loaded in enumerate([False, True]):
            done = subprocess.run(injection(napper.pid, helper, library, "probe_twice", str(n), loaded=loaded),
                                  capture_output=True, text=True, timeout=120)
            assert (done.returncode, done.stdout, done.stderr) == (0, f"{2 * n + 1}\n", ""), n
        assert str(real / INJECT_HELPER.name) in Path(f"/proc/{napper.pid}/maps").read_text()
        assert ask_line(napper, "count") == "failed 0"


def test_a_library_that_is_not_there_is_not_taken_for_one_of_the_same_length(targets: Targets) -> None:
    """--loaded with a file that does not exist looks for its name in the
    memory map: a mapped file whose name is as long (the program's own,
    one letter changed) is not it, so it is not loaded, and nothing is
    called."""
    program = targets.build("napper")
    missing = program.with_name(program.name[:-1] + ("X" if program.name[-1] != "X" else "Y"))
    assert not missing.exists() and len(str(missing)) == len(str(program))
    with started(program) as napper:
        done = subprocess.run(injection(napper.pid, INJECT_HELPER, missing, "probe_twice", "1", loaded=True),
                              capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stdout, done.stderr) == (
            3, "", f"process {napper.pid}: cannot load {missing}: not loaded\n")
        assert str(INJECT_HELPER) not in Path(f"/proc/{napper.pid}/maps").read_text()
        assert ask_line(napper, "count") == "failed 0"


def user_namespaces() -> bool:
    return subprocess.run(["unshare", "--user", "--map-root-user", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not user_namespaces(), reason="unshare --user is not permitted here")
def test_a_process_outside_a_user_namespace_is_refused_as_in_a_container(targets: Targets) -> None:
    """From a user namespace of its own (as in a container), mprof-inject
    may neither read the map of a process outside it nor trace it, though
    it is root there and the process has no tracer: on a kernel without
    Yama (no kernel.yama.ptrace_scope to blame), that is what it says."""
    assert not Path("/proc/sys/kernel/yama").exists(), "a kernel with Yama: its scope would be said"
    with started(targets.build("napper")) as napper:
        refused = subprocess.run(["unshare", "--user", "--map-root-user",
                                  *injection(napper.pid, INJECT_HELPER, inject_probe(targets), "probe_twice", "1")],
                                 capture_output=True, text=True, timeout=120)
        assert (refused.returncode, refused.stdout, refused.stderr) == (
            1, "", f"process {napper.pid}: ptrace is not permitted here (a container without CAP_SYS_PTRACE, or a "
                   "seccomp filter): run the container with --cap-add=SYS_PTRACE, or start the program under mprof "
                   "run\n")
        assert ask_line(napper, "count") == "failed 0"


# Run as process 1 of a pid namespace: starts spinner, then mprof-inject on
# it; once mprof-inject pauses between its looks for a thread at a safe
# point (the only sleep it makes: nanosleep, 35, or clock_nanosleep, 230),
# kills and reaps spinner; prints spinner's pid, then mprof-inject's status
# and what it said.
ENDING_WHILE_LOOKED_FOR = """
import subprocess, sys, time
from pathlib import Path
spinner = subprocess.Popen([sys.argv[1]], stdout=subprocess.PIPE, text=True)
assert spinner.stdout.readline() == "ready\\n"
inject = subprocess.Popen([*sys.argv[2:5], str(spinner.pid), *sys.argv[5:]], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
deadline = time.monotonic() + 60
while Path(f"/proc/{inject.pid}/syscall").read_text().split()[0] not in ("35", "230"):
    assert inject.poll() is None and time.monotonic() < deadline, "mprof-inject never paused"
    time.sleep(0.001)
spinner.kill()
spinner.wait()
out, err = inject.communicate(timeout=120)
print(spinner.pid)
print(inject.returncode)
print(out + err, end="")
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="a pid namespace of its own needs root")
def test_a_process_that_ends_while_its_threads_are_looked_at_is_no_such_process(targets: Targets) -> None:
    """spinner never waits in a system call; it is killed while
    mprof-inject looks for a thread of it at a safe point: gone, it is
    refused as no such process (status 1), and no other process is taken
    in its place (process 1 of the namespace, which waits in a system
    call meanwhile)."""
    init = subprocess.run(["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", sys.executable, "-c",
                           ENDING_WHILE_LOOKED_FOR, targets.build("spinner"),
                           *injection(0, INJECT_HELPER, inject_probe(targets), "probe_twice", "1")[:3],
                           *map(str, [inject_probe(targets), "probe_twice", "1"])],
                          capture_output=True, text=True, timeout=300)
    assert init.returncode == 0, init.stderr
    pid, status, said = init.stdout.split("\n", 2)
    assert (status, said) == ("1", f"process {pid}: no such process\n")
