"""mprof-inject's command line, which a mutation audit found unchecked
(make mutate): too few or too many arguments, or --helper with no file
after it, are a usage error (status 2) that touches no process; three or
four go on to the process.  And how it finds the C library and the helper
in a process's memory map, and refuses a process it cannot trace or that
ends meanwhile (issue 48's audit of inject/target.c and safe_point.c)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e_support import BUILD, Targets, ask_line

INJECT = BUILD / "mprof-inject"
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


# What the mutation audit of inject/target.c and inject/safe_point.c found
# unchecked (issue 48): how the C library and the helper are found in the
# process's memory map, and refusals and endings it had not met.

HELPER = BUILD / "libmprof-inject.so"


def probe(targets: Targets) -> Path:
    return targets.build("libinject_probe.so", source="inject_probe.c", shared=True)


def injection(pid: int, helper: Path, *call: str | Path, loaded: bool = False) -> list[str]:
    return [str(INJECT), *(["--loaded"] if loaded else []), "--helper", str(helper), str(pid), *map(str, call)]


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
        done = subprocess.run(injection(process.pid, HELPER, probe(targets), "probe_twice", "4"),
                              capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stdout, done.stderr) == (0, "9\n", "")
        assert ask_line(process, "x") == "line"


def test_a_helper_and_library_named_through_a_symbolic_link_are_found(targets: Targets, tmp_path: Path) -> None:
    """The memory map names the files the links lead to: the helper loaded
    and the library --loaded asks for are found by the file they name (as
    where TMPDIR is a link, /tmp to /private/tmp)."""
    real = tmp_path / "real"
    real.mkdir()
    shutil.copyfile(HELPER, real / HELPER.name)
    shutil.copyfile(probe(targets), real / "libprobe.so")
    (tmp_path / "link").symlink_to(real)
    helper, library = tmp_path / "link" / HELPER.name, tmp_path / "link" / "libprobe.so"
    with started(targets.build("napper")) as napper:
        for n, loaded in enumerate([False, True]):
            done = subprocess.run(injection(napper.pid, helper, library, "probe_twice", str(n), loaded=loaded),
                                  capture_output=True, text=True, timeout=120)
            assert (done.returncode, done.stdout, done.stderr) == (0, f"{2 * n + 1}\n", ""), n
        assert str(real / HELPER.name) in Path(f"/proc/{napper.pid}/maps").read_text()
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
        done = subprocess.run(injection(napper.pid, HELPER, missing, "probe_twice", "1", loaded=True),
                              capture_output=True, text=True, timeout=120)
        assert (done.returncode, done.stdout, done.stderr) == (
            3, "", f"process {napper.pid}: cannot load {missing}: not loaded\n")
        assert str(HELPER) not in Path(f"/proc/{napper.pid}/maps").read_text()
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
                                  *injection(napper.pid, HELPER, probe(targets), "probe_twice", "1")],
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
                           *injection(0, HELPER, probe(targets), "probe_twice", "1")[:3],
                           *map(str, [probe(targets), "probe_twice", "1"])],
                          capture_output=True, text=True, timeout=300)
    assert init.returncode == 0, init.stderr
    pid, status, said = init.stdout.split("\n", 2)
    assert (status, said) == ("1", f"process {pid}: no such process\n")
