"""mprof run ends as its program ended, by whatever signal, so that a shell
reports the same status (128 + N), and a job stops as the program does."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from e2e_support import MPROF, Targets, in_module, module_named
from mprof.reducer import datafile, tree
from mprof.reducer.errors import MprofError

MIB = 1 << 20
# The status of mprof run as the shell reports it, after what it printed.
# The shell's own word on a signal ("Killed") goes to its own stderr, which
# is not mprof run's: the subshell execs mprof run with that redirection.
SHELL = 'exec 3>&2 2>/dev/null; ("$@") 2>&3 3>&-; echo "exit $?"'


def in_shell(arguments: list[str | Path], cwd: Path, launcher: tuple[str, ...] = (),
             **settings: str) -> subprocess.Popen[str]:
    """`mprof run ARGUMENTS` started by sh (itself by launcher, which execs
    it), which prints its status."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MPROF_") and k != "LD_PRELOAD"} | settings
    return subprocess.Popen([*launcher, "/bin/sh", "-c", SHELL, "sh", str(MPROF), "run", *map(str, arguments)], cwd=cwd,
                            env=env, process_group=0, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def end(started: subprocess.Popen[str]) -> None:
    """Kills what is left of a test's processes (all of them: they are a
    process group of their own) when it failed half way."""
    if started.returncode is None:
        try:
            os.killpg(started.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        started.wait()


def only_child(pid: int) -> int:
    [child] = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return int(child)


def program_in(shell: subprocess.Popen[str]) -> int:
    """The program's pid: sh started mprof run, which started the program."""
    return only_child(only_child(shell.pid))


def killed_after(shell: subprocess.Popen[str], line: str, number: int,
                 ready: Callable[[], object] = lambda: None) -> tuple[int, str, str]:
    """Sends the program the signal once it has printed line (and ready()
    has returned); its pid, and what the shell printed on stdout and stderr."""
    try:
        assert shell.stdout is not None and shell.stdout.readline() == line
        ready()
        pid = program_in(shell)
        os.kill(pid, number)
        stdout, stderr = shell.communicate(timeout=60)
    finally:
        end(shell)
    return pid, stdout, stderr


def state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def wait_for_state(pid: int, wanted: str) -> None:
    deadline = time.monotonic() + 30
    while state(pid) != wanted:
        assert time.monotonic() < deadline, f"pid {pid} is {state(pid)}, not {wanted}"
        time.sleep(0.01)


def listed(output: Path, program: Path, note: str = "") -> str:
    """A pattern of what mprof run prints for a run that wrote one file."""
    return (rf"mprof: the run wrote 1 data file:\n  {re.escape(str(output))} \(pid \d+, "
            rf"{re.escape(str(program))}{re.escape(note)}\)\n")


CHECKPOINT = ", a checkpoint: it never wrote its final file"


def assert_peak_checkpoint(output: Path, program: Path) -> None:
    """endings peak 8 holds 8 blocks of 1 MiB, all in the checkpoint."""
    data = datafile.read(output)
    assert data.header.checkpoint and not data.header.final and data.header.end_signal == 0
    module = module_named(data, program)
    [held] = [s for s in tree.totals(data).sites if in_module(s.addr, module) and s.calls == 8]
    assert (held.frees, sum(held.bytes)) == (0, 8 * MIB)


def checkpointed_peak(output: Path, program: Path) -> Callable[[], None]:
    """Waits until a checkpoint holds endings' peak: the monitor spaces its
    checkpoints by the time they take to write, so on a loaded machine the
    first after the peak can come later than the half second endings churns
    before it prints "peak"."""
    def ready() -> None:
        deadline = time.monotonic() + 60
        while True:
            try:
                assert_peak_checkpoint(output, program)
                return
            except (AssertionError, ValueError, OSError, MprofError):
                assert time.monotonic() < deadline, "no checkpoint holds the peak"
                time.sleep(0.05)
    return ready


@pytest.mark.slow
def test_a_sigkilled_program_leaves_its_checkpoint_and_137(targets: Targets, tmp_path: Path) -> None:
    # What the OOM killer does.  The 0.1 s interval: the churn after the
    # peak has checkpoints holding all of it.
    program = targets.build("endings")
    shell = in_shell(["-o", "k.mprof", program, "peak", "8"], tmp_path, MPROF_CHECKPOINT_INTERVAL="0.1")
    _, stdout, stderr = killed_after(shell, "peak\n", signal.SIGKILL, checkpointed_peak(tmp_path / "k.mprof", program))
    assert stdout == "exit 137\n"
    assert re.fullmatch(listed(tmp_path / "k.mprof", program, CHECKPOINT), stderr), stderr
    assert_peak_checkpoint(tmp_path / "k.mprof", program)


@pytest.mark.parametrize(("how", "status", "number"), [("abort", 134, signal.SIGABRT),
                                                       ("segv", 139, signal.SIGSEGV)])
def test_a_crash_gives_the_shell_128_plus_its_signal(targets: Targets, tmp_path: Path, how: str, status: int,
                                                     number: int) -> None:
    program = targets.build("endings")
    stdout, stderr = in_shell(["-o", "c.mprof", program, how], tmp_path).communicate(timeout=60)
    assert stdout == f"exit {status}\n"
    assert re.fullmatch(listed(tmp_path / "c.mprof", program), stderr), stderr
    data = datafile.read(tmp_path / "c.mprof")
    assert data.header.final and data.header.end_signal == number
    # keep(): 100 blocks of 64 bytes, 40 freed.
    assert [(b.size, b.allocs, b.frees) for b in data.bins if b.size == 64] == [(64, 100, 40)]


def test_sigterm_sent_to_the_program_gives_143(targets: Targets, tmp_path: Path) -> None:
    program = targets.build("sleeper")
    _, stdout, stderr = killed_after(in_shell(["-o", "t.mprof", program], tmp_path), "ready\n", signal.SIGTERM)
    assert stdout == "exit 143\n"
    assert re.fullmatch(listed(tmp_path / "t.mprof", program), stderr), stderr
    data = datafile.read(tmp_path / "t.mprof")
    assert data.header.final and data.header.end_signal == signal.SIGTERM
    assert [(b.size, b.allocs) for b in data.bins if b.size == 55] == [(55, 1000)]


# Beside those above: a signal mprof run ignores while it waits (SIGINT),
# those it would forward, one that dumps core, and those Python cannot
# catch: glibc's own 32 and 33, and the real-time ones, behind which the
# monitor does not stand (monitor/signals.c): the sleeper's 55,000 bytes
# are below the first checkpoint, so those leave no file.
WRITES_ITS_FILE = [signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1, signal.SIGPIPE, signal.SIGALRM,
                   signal.SIGXCPU]
LEAVES_NO_FILE = [32, 33, signal.SIGRTMIN, signal.SIGRTMAX]


@pytest.mark.parametrize("number", WRITES_ITS_FILE + LEAVES_NO_FILE, ids=str)
def test_every_signal_ends_mprof_run_as_it_ended_the_program(targets: Targets, tmp_path: Path, number: int) -> None:
    program = targets.build("sleeper")
    # GNU make gives what it runs glibc's 32 and 33 ignored: as the program
    # would ignore them too, they go back to their default first.
    shell = in_shell(["--quiet", "-o", "s.mprof", program], tmp_path,
                     launcher=(str(targets.build("default_signals")),))
    pid, stdout, stderr = killed_after(shell, "ready\n", number)
    if number in WRITES_ITS_FILE:
        assert (stdout, stderr) == (f"exit {128 + number}\n", "")
        data = datafile.read(tmp_path / "s.mprof")
        assert data.header.final and data.header.end_signal == number
    else:
        assert stdout == f"exit {128 + number}\n"
        assert stderr == f"mprof: warning: pid {pid} ({program}) left no data file\n"


def test_a_program_stopped_and_continued_ends_with_status_0(targets: Targets, tmp_path: Path) -> None:
    # Stopped alone (kill -STOP PID), the program leaves mprof run waiting,
    # not stopped: continued alone, it ends the run.  (sh waits without job
    # control: a stopped mprof run would leave it waiting for ever.)
    program = targets.build("sleeper")
    shell = in_shell(["-o", "c.mprof", program], tmp_path)
    try:
        assert shell.stdout is not None and shell.stdout.readline() == "ready\n"
        pid = program_in(shell)
        os.kill(pid, signal.SIGSTOP)
        wait_for_state(pid, "T")
        os.kill(pid, signal.SIGCONT)
        stdout, stderr = shell.communicate("\n", timeout=60)
    finally:
        end(shell)
    assert stdout == "exit 0\n"
    assert re.fullmatch(listed(tmp_path / "c.mprof", program), stderr), stderr
    data = datafile.read(tmp_path / "c.mprof")
    assert data.header.final and data.header.end_signal == 0
    assert [(b.size, b.allocs) for b in data.bins if b.size == 55] == [(55, 2000)]


@pytest.mark.slow
def test_a_program_killed_while_stopped_gives_137(targets: Targets, tmp_path: Path) -> None:
    program = targets.build("endings")
    shell = in_shell(["-o", "k.mprof", program, "peak", "8"], tmp_path, MPROF_CHECKPOINT_INTERVAL="0.1")
    try:
        assert shell.stdout is not None and shell.stdout.readline() == "peak\n"
        checkpointed_peak(tmp_path / "k.mprof", program)()
        pid = program_in(shell)
        os.kill(pid, signal.SIGSTOP)
        wait_for_state(pid, "T")
        os.kill(pid, signal.SIGKILL)
        stdout, stderr = shell.communicate(timeout=60)
    finally:
        end(shell)
    assert stdout == "exit 137\n"
    assert re.fullmatch(listed(tmp_path / "k.mprof", program, CHECKPOINT), stderr), stderr
    assert_peak_checkpoint(tmp_path / "k.mprof", program)


def start_job(program: Path, *arguments: str, cwd: Path) -> subprocess.Popen[str]:
    """mprof run as a job control shell starts it: in a process group of
    its own, which a terminal's ^Z signals whole."""
    return subprocess.Popen([str(MPROF), "run", "--quiet", "-o", "j.mprof", str(program), *arguments], cwd=cwd,
                            process_group=0, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def reap(job: subprocess.Popen[str]) -> int:
    """The job's next change as a job control shell waits for it: a stop or
    its end."""
    _, status = os.waitpid(job.pid, os.WUNTRACED)
    if not os.WIFSTOPPED(status):
        job.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    return status


def test_a_suspended_job_stops_once_the_program_has_stopped(targets: Targets, tmp_path: Path) -> None:
    job = start_job(targets.build("jobstop"), cwd=tmp_path)
    try:
        assert job.stdout is not None and job.stdin is not None
        assert job.stdout.readline() == "ready\n"
        program = only_child(job.pid)
        os.killpg(job.pid, signal.SIGTSTP)  # ^Z
        status = reap(job)
        # mprof run stopped by the program's signal, after the program's
        # handler had done its 300 ms of work and the program had stopped.
        assert os.WIFSTOPPED(status) and os.WSTOPSIG(status) == signal.SIGTSTP
        assert state(program) == "T"
        assert job.stdout.readline() == "stopping\n"
        os.killpg(job.pid, signal.SIGCONT)  # fg
        assert job.stdout.readline() == "continued\n"
        job.stdin.write("\n")
        job.stdin.flush()
        status = reap(job)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        assert job.stderr is not None and job.stderr.read() == ""
    finally:
        end(job)
    data = datafile.read(tmp_path / "j.mprof")
    assert data.header.final and [(b.size, b.allocs) for b in data.bins if b.size == 33] == [(33, 10)]


def test_a_job_whose_program_ignores_the_suspend_goes_on(targets: Targets, tmp_path: Path) -> None:
    job = start_job(targets.build("jobstop"), "ignore", cwd=tmp_path)
    try:
        assert job.stdout is not None and job.stdin is not None
        assert job.stdout.readline() == "ready\n"
        os.killpg(job.pid, signal.SIGTSTP)  # ^Z, which the program ignores
        job.stdin.write("\n")
        job.stdin.flush()
        # Its end, not a stop of mprof run.
        status = reap(job)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    finally:
        end(job)
    assert datafile.read(tmp_path / "j.mprof").header.final
