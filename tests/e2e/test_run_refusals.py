"""What mprof run refuses before the program starts, and what the monitor
keeps out of the program's output: a setting the monitor would not accept
is one line from mprof run (never the monitor's words in the program's
stderr); a program that cannot be found or executed gets the shell's 127 or
126; a problem the monitor meets (a file it cannot write) is said by mprof
run after the program, not printed into the program's stderr; and the list
of files written escapes names as the reports do."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
from pathlib import Path

import pytest

from e2e_support import MPROF, Targets, monitor_env
from mprof.cli import run_settings
from mprof.reducer import datafile
from mprof.reducer.errors import MprofError


def mprof_run(*arguments: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(MPROF), "run", *map(str, arguments)], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.mark.parametrize(("options", "said"), [
    (["--depth", "5000"], "--depth 5000: the monitor takes 1 to 1024"),
    (["--depth", "0"], "--depth 0: the monitor takes 1 to 1024"),
    (["--leak-depth", "100000"], "--leak-depth 100000: the monitor takes 1 to 64"),
    (["--dump-signal", "KILL"], "--dump-signal KILL: the monitor takes USR1, USR2, HUP, PROF, WINCH, URG or a "
                                "number a program can catch"),
    (["--dump-signal", "19"], "--dump-signal 19: the monitor takes USR1, USR2, HUP, PROF, WINCH, URG or a "
                              "number a program can catch"),
])
def test_a_value_the_monitor_would_not_take_is_refused_before_the_program_starts(
        tmp_path: Path, options: list[str], said: str) -> None:
    marker = tmp_path / "started"
    completed = mprof_run(*options, "--", "/bin/sh", "-c", f"touch {marker}", cwd=tmp_path)
    assert (completed.returncode, completed.stdout) == (2, "")
    assert completed.stderr == f"mprof: {said}; the program was not started\n"
    assert not marker.exists() and not list(tmp_path.glob("mprof.out.*"))


def test_a_bad_variable_in_the_environment_is_refused_too(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    env = {**os.environ, "MPROF_CHECKPOINT_GROWTH": "0.5"}
    completed = mprof_run("--", "/bin/sh", "-c", f"touch {marker}", cwd=tmp_path, env=env)
    assert completed.returncode == 2 and not marker.exists()
    assert completed.stderr == ("mprof: MPROF_CHECKPOINT_GROWTH=0.5 in the environment: the monitor takes off, 0, "
                                "or 1.01 to 1000000; the program was not started\n")
    # An option of mprof run wins over the variable, so the variable is not judged.
    env = {**os.environ, "MPROF_DEPTH": "deep"}
    completed = mprof_run("--quiet", "--depth", "9", "-o", "f.mprof", "--", "/bin/true", cwd=tmp_path, env=env)
    assert (completed.returncode, completed.stderr) == (0, "")
    assert datafile.read(tmp_path / "f.mprof").header.stack_depth == 9


# Values around each of mprof(1)'s bounds and spellings: mprof run's
# verdict on each must be the monitor's own.
VALUES = {
    "MPROF_DEPTH": ["0", "1", "01", "1024", "1025", "5000", "abc", "", "-1", " 5", "7 ", "0" * 30 + "7",
                    "9" * 30],
    "MPROF_LEAK_DEPTH": ["1", "64", "65", "0"],
    "MPROF_DUMP_SIGNAL": ["KILL", "9", "19", "STOP", "USR1", "sigusr2", "SIGHUP", "SIG10", "10", "64", "65", "0",
                          "", "usr3", "SIG", "urg"],
    "MPROF_CHECKPOINT_GROWTH": ["1.01", "1.009", "1.0100001", "1", "0", "off", "OFF", "1000000", "1000000.001",
                                "1.5x", ".5", "2.", ""],
    "MPROF_CHECKPOINT_INTERVAL": ["0", "4000000", "4000000.001", "4000000.0009", "0.0005", "off", "x", "1e3"],
    "MPROF_CALL_GRAPH": ["yes", "No", "TRUE", "2", ""],
    "MPROF_FOLLOW": ["on", "maybe"],
    "MPROF_VERBOSE": ["0", "verbose"],
    "MPROF_UNWINDER": ["rules", "libunwind", "Rules", "fast", ""],
    "MPROF_BLOCKS": ["headers", "map", "heap", ""],
}


def _run_refuses(name: str, value: str) -> bool:
    try:
        run_settings.check(None, None, None, "/tmp/out.mprof", False, {name: value})
    except MprofError:
        return True
    return False


def test_mprof_run_refuses_exactly_what_the_monitor_refuses(targets: Targets, tmp_path: Path) -> None:
    leaf = targets.build("leaf")
    output = tmp_path / "leaf.mprof"
    disagreements, refused = [], 0
    for name, values in VALUES.items():
        for value in values:
            completed = subprocess.run([leaf], env=monitor_env(output, **{name: value}), capture_output=True,
                                       text=True, check=True)
            by_monitor = datafile.read(output).program.refused_settings == (f"{name}={value}",)
            refused += by_monitor
            if by_monitor != _run_refuses(name, value):
                disagreements.append(f"{name}={value!r}: the monitor {'refuses' if by_monitor else 'takes'} it")
            if name != "MPROF_VERBOSE" or value == "0":
                assert completed.stderr == "", (name, value)
    assert disagreements == []
    # Both verdicts occur, and the bounds mprof(1) states hold.
    assert 20 < refused < sum(map(len, VALUES.values())) - 20
    assert not _run_refuses("MPROF_DEPTH", "1024") and _run_refuses("MPROF_DEPTH", "1025")
    assert not _run_refuses("MPROF_CHECKPOINT_GROWTH", "1.01") and _run_refuses("MPROF_CHECKPOINT_GROWTH", "1.009")


def _shell_status(command: str, cwd: Path) -> int:
    return subprocess.run(["/bin/sh", "-c", command], cwd=cwd, capture_output=True).returncode


def test_a_program_that_cannot_be_found_or_run_ends_as_in_a_shell(tmp_path: Path) -> None:
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\nexit 0\n")
    for program, said in ((tmp_path / "missing", f"{tmp_path}/missing: cannot run: No such file or directory"),
                          ("no-such-command-anywhere", "no-such-command-anywhere: command not found"),
                          (script, f"{script}: cannot run: Permission denied")):
        completed = mprof_run("--", program, cwd=tmp_path)
        assert completed.returncode == _shell_status(f"'{program}'", tmp_path), program
        assert completed.stderr == f"mprof: {said}\n"
    assert [mprof_run("--", program, cwd=tmp_path).returncode
            for program in (tmp_path / "missing", script)] == [127, 126]


@pytest.mark.parametrize("kind", ["fifo", "socket", "directory"])
def test_an_output_that_is_not_a_regular_file_is_refused_and_kept(tmp_path: Path, kind: str) -> None:
    output = tmp_path / "out"
    if kind == "fifo":
        os.mkfifo(output)
    elif kind == "socket":
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(output))
    else:
        output.mkdir()
    marker = tmp_path / "started"
    completed = mprof_run("-o", output, "--", "/bin/sh", "-c", f"touch {marker}", cwd=tmp_path)
    named = {"fifo": "a FIFO", "socket": "a socket", "directory": "a directory"}[kind]
    assert completed.returncode == 2 and not marker.exists()
    assert completed.stderr == (f"mprof: {output}: is {named}, and the monitor replaces only a regular file; the "
                                f"program was not started\n")
    test = {"fifo": stat.S_ISFIFO, "socket": stat.S_ISSOCK, "directory": stat.S_ISDIR}[kind]
    assert test(os.lstat(output).st_mode)


def test_the_monitor_without_mprof_run_leaves_a_fifo_as_it_was(targets: Targets, tmp_path: Path) -> None:
    output = tmp_path / "out"
    os.mkfifo(output)
    completed = subprocess.run([targets.build("leaf")], env=monitor_env(output), capture_output=True, text=True)
    assert completed.returncode == 0 and stat.S_ISFIFO(os.lstat(output).st_mode)
    # Without mprof run nothing else could say the profile was lost.
    assert completed.stderr == (f"mprof: cannot write {output}: it is not a regular file, and only a regular file "
                                f"is replaced\n")
    assert [path.name for path in tmp_path.iterdir()] == ["out"]


def test_a_problem_of_the_monitor_is_said_by_mprof_run_not_in_the_programs_stderr(tmp_path: Path) -> None:
    output = tmp_path / "missing-directory" / "out.mprof"
    completed = mprof_run("-o", output, "--", "/bin/sh", "-c", "echo own words >&2", cwd=tmp_path)
    assert completed.returncode == 0
    lines = completed.stderr.splitlines()
    # The program's own line first, as it wrote it; then mprof run's, after
    # the program: nothing of the monitor's in between.
    assert lines[0] == "own words"
    [pid] = {line.split()[3] for line in lines[1:] if line.startswith("mprof: warning: pid ")}
    assert lines[1:] == [
        "mprof: the run wrote no data file",
        f"mprof: warning: pid {pid} (/usr/bin/dash): cannot create {output}.tmp.{pid}.0: No such file or directory",
        f"mprof: warning: pid {pid} (/usr/bin/dash) left no data file",
    ]


def test_the_list_of_files_escapes_names_as_the_reports_do(targets: Targets, tmp_path: Path) -> None:
    odd = os.fsdecode(b"odd\nname\x01\xff")
    directory = tmp_path / odd
    directory.mkdir()
    program = directory / "leaf"
    shutil.copy(targets.build("leaf"), program)
    completed = subprocess.run([str(MPROF), "run", "-o", f"{directory}/out.mprof", "--", str(program)],
                               cwd=tmp_path, capture_output=True, timeout=120)
    assert completed.returncode == 0
    shown = f"{tmp_path}/odd\\x0aname\\x01\\xff"
    [pid] = [line.split(b"(pid ")[1].split(b",")[0].decode() for line in completed.stderr.splitlines()[1:]]
    assert completed.stderr.decode() == (f"mprof: the run wrote 1 data file:\n"
                                         f"  {shown}/out.mprof (pid {pid}, {shown}/leaf)\n")
    assert datafile.read(directory / "out.mprof").summary.allocs == 40
